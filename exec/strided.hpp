// The strided walk every layout change of the host kernels goes through: unit dims dropped,
// dims contiguous in every operand merged, an odometer over the rest, and a tiled copy for
// transposes. Internal to exec/kernels.cpp (templates, so a header).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace shardscope::exec::strided {

using Index = std::int64_t;
using Dims = std::vector<Index>;

/// Dims of a walk after dropping unit dims and merging neighbours contiguous in every operand.
template <std::size_t N>
struct Walk {
    Dims ext;
    std::array<Dims, N> st;
};

template <std::size_t N>
Walk<N> coalesce(const Dims& ext, const std::array<Dims, N>& st) {
    Walk<N> w;
    for (std::size_t d = 0; d < ext.size(); ++d) {
        if (ext[d] == 1) continue;
        bool merge = !w.ext.empty();
        for (std::size_t k = 0; k < N && merge; ++k)
            merge = w.st[k].back() == st[k][d] * ext[d];
        if (merge) {
            w.ext.back() *= ext[d];
            for (std::size_t k = 0; k < N; ++k)
                w.st[k].back() = st[k][d];
            continue;
        }
        w.ext.push_back(ext[d]);
        for (std::size_t k = 0; k < N; ++k)
            w.st[k].push_back(st[k][d]);
    }
    return w;
}

/// Visits every index of `ext` (operand k's offset being the dot product with st[k]) as runs
/// along the innermost coalesced dim: inner(offsets, run length, per-step increments).
template <std::size_t N, class F>
void walk(const Dims& ext, const std::array<Dims, N>& st, F&& inner) {
    for (auto e : ext)
        if (e == 0) return;
    const Walk<N> w = coalesce(ext, st);
    std::array<Index, N> off{};
    std::array<Index, N> inc{};
    if (w.ext.empty()) {
        inner(off, Index(1), inc);
        return;
    }
    const std::size_t D = w.ext.size();
    for (std::size_t k = 0; k < N; ++k)
        inc[k] = w.st[k][D - 1];
    const Index n = w.ext[D - 1];
    Dims idx(D - 1, 0);
    for (;;) {
        inner(off, n, inc);
        std::size_t d = D - 1;
        for (;;) {
            if (d == 0) return;
            --d;
            if (++idx[d] < w.ext[d]) {
                for (std::size_t k = 0; k < N; ++k)
                    off[k] += w.st[k][d];
                break;
            }
            for (std::size_t k = 0; k < N; ++k)
                off[k] -= w.st[k][d] * (w.ext[d] - 1);
            idx[d] = 0;
        }
    }
}

/// dst[i·ds] = src[i·ss] over the index space `ext`. When the innermost dim is strided in the
/// source but another dim is contiguous there (a transpose), copies in square tiles.
template <class T>
void strided_copy(const T* src, T* dst, const Dims& ext, const Dims& ss, const Dims& ds) {
    for (auto e : ext)
        if (e == 0) return;
    const Walk<2> w = coalesce<2>(ext, {ss, ds});
    const std::size_t D = w.ext.size();
    if (D >= 2 && w.st[0][D - 1] != 1 && w.st[1][D - 1] == 1) {
        std::size_t p = D;
        for (std::size_t d = 0; d + 1 < D; ++d)
            if (w.st[0][d] == 1) p = d;
        if (p < D) {
            const Index P = w.ext[p], L = w.ext[D - 1];
            const Index sl = w.st[0][D - 1], dp = w.st[1][p];
            Dims oext;
            std::array<Dims, 2> ost;
            for (std::size_t d = 0; d + 1 < D; ++d) {
                if (d == p) continue;
                oext.push_back(w.ext[d]);
                ost[0].push_back(w.st[0][d]);
                ost[1].push_back(w.st[1][d]);
            }
            constexpr Index B = 32;
            auto tile = [&](const T* s, T* t) {
                for (Index pb = 0; pb < P; pb += B)
                    for (Index lb = 0; lb < L; lb += B) {
                        const Index pe = std::min(P, pb + B), le = std::min(L, lb + B);
                        for (Index i = pb; i < pe; ++i)
                            for (Index j = lb; j < le; ++j)
                                t[i * dp + j] = s[i + j * sl];
                    }
            };
            walk<2>(oext, ost, [&](const std::array<Index, 2>& off, Index n, const auto& inc) {
                for (Index i = 0; i < n; ++i)
                    tile(src + off[0] + i * inc[0], dst + off[1] + i * inc[1]);
            });
            return;
        }
    }
    walk<2>(ext, {ss, ds}, [&](const std::array<Index, 2>& off, Index n, const auto& inc) {
        const T* s = src + off[0];
        T* t = dst + off[1];
        if (inc[0] == 1 && inc[1] == 1) {
            std::copy(s, s + n, t);
        } else {
            for (Index i = 0; i < n; ++i)
                t[i * inc[1]] = s[i * inc[0]];
        }
    });
}

} // namespace shardscope::exec::strided
