// Host index math for the device kernels (see einsum_plan.hpp).
#include "exec/einsum_plan.hpp"

#include "exec/tensor.hpp"

#include <algorithm>
#include <string>

namespace shardscope::exec {

namespace {

bool has(const std::vector<int>& v, int l) {
    return std::find(v.begin(), v.end(), l) != v.end();
}

std::vector<std::int64_t> row_major_strides(const std::vector<std::int64_t>& shape) {
    std::vector<std::int64_t> s(shape.size(), 1);
    for (std::size_t d = shape.size(); d-- > 1;)
        s[d - 1] = s[d] * shape[d];
    return s;
}

std::int64_t extent_of(const std::vector<std::int64_t>& shape, const std::vector<int>& labels,
                       int l) {
    for (std::size_t d = 0; d < labels.size(); ++d)
        if (labels[d] == l) return shape[d];
    throw ExecError("einsum plan: label " + std::to_string(l) + " is in neither operand");
}

} // namespace

std::vector<std::int64_t> strides_for(const std::vector<std::int64_t>& shape,
                                      const std::vector<int>& labels, const std::vector<int>& out,
                                      bool allow_missing) {
    if (shape.size() != labels.size())
        throw ExecError("strides_for: " + std::to_string(shape.size()) + " extents for " +
                        std::to_string(labels.size()) + " labels");
    if (!allow_missing)
        for (int l : labels)
            if (!has(out, l))
                throw ExecError("strides_for: label " + std::to_string(l) +
                                " is not among the output labels");
    const auto s = row_major_strides(shape);
    std::vector<std::int64_t> r;
    for (int l : out) {
        std::int64_t st = 0;
        for (std::size_t d = 0; d < labels.size(); ++d)
            if (labels[d] == l) st = s[d];
        r.push_back(st);
    }
    return r;
}

ReducePlan plan_reduce(const std::vector<std::int64_t>& shape, const std::vector<int>& labels,
                       const std::vector<int>& out) {
    ReducePlan p;
    const auto s = row_major_strides(shape);
    for (int l : out) {
        bool found = false;
        for (std::size_t d = 0; d < labels.size(); ++d)
            if (labels[d] == l) {
                p.out_shape.push_back(shape[d]);
                p.out_strides.push_back(s[d]);
                p.out_count *= shape[d];
                found = true;
            }
        if (!found)
            throw ExecError("reduce plan: output label " + std::to_string(l) +
                            " is not in the input");
    }
    for (std::size_t d = 0; d < labels.size(); ++d)
        if (!has(out, labels[d])) {
            p.red_shape.push_back(shape[d]);
            p.red_strides.push_back(s[d]);
            p.red_count *= shape[d];
        }
    return p;
}

GemmPlan plan_gemm(const std::vector<std::int64_t>& a_shape, const std::vector<int>& a_labels,
                   const std::vector<std::int64_t>& b_shape, const std::vector<int>& b_labels,
                   const std::vector<int>& out) {
    for (int l : a_labels)
        if (has(b_labels, l) && extent_of(a_shape, a_labels, l) != extent_of(b_shape, b_labels, l))
            throw ExecError("einsum plan: label " + std::to_string(l) +
                            " has different extents in the two operands");
    for (int l : out)
        if (!has(a_labels, l) && !has(b_labels, l))
            throw ExecError("einsum plan: output label " + std::to_string(l) +
                            " is in neither operand");
    GemmPlan p;
    std::vector<int> batch, m, n, k;
    for (int l : a_labels) {
        if (has(b_labels, l))
            (has(out, l) ? batch : k).push_back(l);
        else if (has(out, l))
            m.push_back(l);
    }
    for (int l : b_labels)
        if (!has(a_labels, l) && has(out, l)) n.push_back(l);
    // Batch, m and n in out's order, so that C is often out already (no final permute).
    auto in_out_order = [&](std::vector<int>& v) {
        std::vector<int> r;
        for (int l : out)
            if (has(v, l)) r.push_back(l);
        v = r;
    };
    in_out_order(batch);
    in_out_order(m);
    in_out_order(n);
    for (int l : a_labels)
        if (has(b_labels, l) || has(out, l)) p.a_keep.push_back(l);
    for (int l : b_labels)
        if (has(a_labels, l) || has(out, l)) p.b_keep.push_back(l);
    auto cat = [](std::vector<int> x, const std::vector<int>& y, const std::vector<int>& z) {
        x.insert(x.end(), y.begin(), y.end());
        x.insert(x.end(), z.begin(), z.end());
        return x;
    };
    p.a_order = cat(batch, m, k);
    p.b_order = cat(batch, k, n);
    p.c_labels = cat(batch, m, n);
    auto ext = [&](int l) {
        return has(a_labels, l) ? extent_of(a_shape, a_labels, l) : extent_of(b_shape, b_labels, l);
    };
    for (int l : p.c_labels)
        p.c_shape.push_back(ext(l));
    for (int l : batch)
        p.batch *= ext(l);
    for (int l : m)
        p.m *= ext(l);
    for (int l : n)
        p.n *= ext(l);
    for (int l : k)
        p.k *= ext(l);
    return p;
}

void gemm_colmajor_reference(std::int64_t M, std::int64_t N, std::int64_t K, const double* A,
                             std::int64_t lda, std::int64_t sa, const double* B, std::int64_t ldb,
                             std::int64_t sb, double* C, std::int64_t ldc, std::int64_t sc,
                             std::int64_t batch) {
    for (std::int64_t b = 0; b < batch; ++b)
        for (std::int64_t j = 0; j < N; ++j)
            for (std::int64_t i = 0; i < M; ++i) {
                double acc = 0;
                for (std::int64_t q = 0; q < K; ++q)
                    acc += A[b * sa + i + q * lda] * B[b * sb + q + j * ldb];
                C[b * sc + i + j * ldc] = acc;
            }
}

} // namespace shardscope::exec
