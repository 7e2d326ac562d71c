// Local compute kernels: see kernels.hpp. Layout changes go through one strided walk (unit dims
// dropped, dims contiguous in every operand merged, an odometer over the rest); einsum views
// its operands as batched matrices in place whenever their layout allows and calls GEMM.
#include "exec/kernels.hpp"

#include "exec/blas.hpp"
#include "exec/strided.hpp"

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <deque>
#include <limits>
#include <string>
#include <utility>

namespace shardscope::exec {
namespace {

using Index = std::int64_t;
using Dims = std::vector<Index>;
using strided::strided_copy;
using strided::walk;

std::string list_text(const std::vector<int>& labels) {
    std::string s = "[";
    for (std::size_t i = 0; i < labels.size(); ++i)
        s += (i ? " " : "") + std::to_string(labels[i]);
    return s + "]";
}

[[noreturn]] void fail(const char* fn, const std::string& what) {
    throw ExecError(std::string(fn) + ": " + what);
}

bool contains(const std::vector<int>& labels, int l) {
    return std::find(labels.begin(), labels.end(), l) != labels.end();
}

void check_distinct(const char* fn, const std::vector<int>& labels, const char* what) {
    for (std::size_t i = 0; i < labels.size(); ++i)
        for (std::size_t j = i + 1; j < labels.size(); ++j)
            if (labels[i] == labels[j])
                fail(fn, std::string("label ") + std::to_string(labels[i]) + " occurs twice in " +
                             what + " " + list_text(labels));
}

/// Shape, labels and data agree; extents are not negative; labels are distinct.
template <class T>
void check_tensor(const char* fn, const Tensor<T>& x, const char* what) {
    if (x.shape.size() != x.labels.size())
        fail(fn, std::string(what) + " has " + std::to_string(x.shape.size()) + " extents but " +
                     std::to_string(x.labels.size()) + " labels");
    for (auto e : x.shape)
        if (e < 0) fail(fn, std::string(what) + " has a negative extent");
    check_distinct(fn, x.labels, what);
    if (static_cast<Index>(x.data.size()) != x.size())
        fail(fn, std::string(what) + " holds " + std::to_string(x.data.size()) +
                     " values but its shape has " + std::to_string(x.size()));
}

int dim_or_fail(const char* fn, const std::vector<int>& labels, int l, const char* what) {
    for (std::size_t d = 0; d < labels.size(); ++d)
        if (labels[d] == l) return static_cast<int>(d);
    fail(fn, "label " + std::to_string(l) + " is not in " + what + " " + list_text(labels));
}

Dims strides_of(const Dims& shape) {
    Dims s(shape.size(), 1);
    for (std::size_t d = shape.size(); d-- > 1;)
        s[d - 1] = s[d] * shape[d];
    return s;
}

Index product(const Dims& shape) {
    Index n = 1;
    for (auto e : shape)
        n *= e;
    return n;
}

/// Permute without argument checks (labels is a permutation of x.labels).
template <class T>
Tensor<T> permute_unchecked(const Tensor<T>& x, const std::vector<int>& labels) {
    if (labels == x.labels) return x;
    const Dims xs = strides_of(x.shape);
    Dims shape(labels.size()), ss(labels.size());
    for (std::size_t i = 0; i < labels.size(); ++i) {
        const int d = x.dim_of(labels[i]);
        shape[i] = x.shape[d];
        ss[i] = xs[d];
    }
    Tensor<T> r{shape, labels, std::vector<T>(static_cast<std::size_t>(product(shape)))};
    strided_copy(x.data.data(), r.data.data(), shape, ss, strides_of(shape));
    return r;
}

/// Reduce without argument checks (out ⊆ x.labels, distinct).
template <class T>
Tensor<T> reduce_unchecked(const Tensor<T>& x, const std::vector<int>& out, PartialOp r) {
    if (out.size() == x.labels.size()) return permute_unchecked(x, out);
    Dims shape(out.size());
    for (std::size_t i = 0; i < out.size(); ++i)
        shape[i] = x.shape[x.dim_of(out[i])];
    const T init = r == PartialOp::Sum ? T(0) : -std::numeric_limits<T>::infinity();
    Tensor<T> res{shape, out, std::vector<T>(static_cast<std::size_t>(product(shape)), init)};
    const Dims rs = strides_of(shape);
    Dims os(x.labels.size(), 0);
    for (std::size_t d = 0; d < x.labels.size(); ++d)
        for (std::size_t i = 0; i < out.size(); ++i)
            if (out[i] == x.labels[d]) os[d] = rs[i];
    const T* src = x.data.data();
    T* dst = res.data.data();
    walk<2>(x.shape, {strides_of(x.shape), os},
            [&](const std::array<Index, 2>& off, Index n, const std::array<Index, 2>& inc) {
                const T* s = src + off[0];
                T* t = dst + off[1];
                if (r == PartialOp::Sum) {
                    if (inc[1] == 0) {
                        T acc = *t;
                        for (Index i = 0; i < n; ++i)
                            acc += s[i * inc[0]];
                        *t = acc;
                    } else {
                        for (Index i = 0; i < n; ++i)
                            t[i * inc[1]] += s[i * inc[0]];
                    }
                } else {
                    for (Index i = 0; i < n; ++i) {
                        const T v = s[i * inc[0]];
                        T& a = t[i * inc[1]];
                        if (v > a || std::isnan(v)) a = v;
                    }
                }
            });
    return res;
}

// ---- einsum ---------------------------------------------------------------------------------

int blas_int(Index v) {
    if (v > INT_MAX) fail("einsum", "a matrix dimension exceeds the BLAS integer range");
    return static_cast<int>(v);
}

/// A tensor seen as a batch of matrices: element (batch β, row i, col j) at
/// Σ batch[b]·β_b + i·rs + j·cs, with rs == 1 or cs == 1.
struct MatView {
    bool ok = false;
    Index rs = 0, cs = 0;
    Dims batch;
};

/// The stride of `group` flattened in the given order: its dims (unit dims ignored) must appear
/// in that order with no other non-unit dim between them. -1: the group has no non-unit dim.
bool group_stride(const std::vector<int>& labels, const Dims& shape, const Dims& st,
                  const std::vector<int>& group, Index& stride, Index& extent) {
    int prev = -1;
    stride = -1;
    extent = 1;
    for (int l : group) {
        const int d = static_cast<int>(std::find(labels.begin(), labels.end(), l) - labels.begin());
        extent *= shape[d];
        if (shape[d] == 1) continue;
        if (prev >= 0 && (d <= prev || st[prev] != st[d] * shape[d])) return false;
        prev = d;
        stride = st[d];
    }
    return true;
}

MatView mat_view(const std::vector<int>& labels, const Dims& shape, const std::vector<int>& batch,
                 const std::vector<int>& rows, const std::vector<int>& cols) {
    MatView v;
    const Dims st = strides_of(shape);
    Index nrows = 1, ncols = 1;
    if (!group_stride(labels, shape, st, rows, v.rs, nrows) ||
        !group_stride(labels, shape, st, cols, v.cs, ncols))
        return v;
    // A group without a non-unit dim only ever has index 0: give it the stride that keeps the
    // leading dimension valid whichever of the two unit strides the GEMM call uses (cs == 1
    // needs rs >= ncols, rs == 1 needs cs >= nrows).
    if (v.rs >= 0 && v.cs >= 0) {
        if (v.rs != 1 && v.cs != 1) return v;
    } else if (v.rs < 0 && v.cs < 0) {
        v.rs = v.cs = 1;
    } else if (v.cs < 0) {
        v.cs = v.rs == 1 ? std::max<Index>(1, nrows) : 1;
    } else {
        v.rs = v.cs == 1 ? std::max<Index>(1, ncols) : 1;
    }
    for (int l : batch) {
        const auto it = std::find(labels.begin(), labels.end(), l);
        v.batch.push_back(it == labels.end() ? 0 : st[it - labels.begin()]);
    }
    v.ok = true;
    return v;
}

/// C = A·B for one batch element, in whichever orientation C's layout needs.
template <class T>
void gemm_views(const T* a, const MatView& va, const T* b, const MatView& vb, T* c,
                const MatView& vc, Index m, Index n, Index k) {
    const auto N = CblasNoTrans, Tr = CblasTrans;
    if (vc.cs == 1) {
        // C (m×n) = A (m×k) · B (k×n).
        const bool an = va.cs == 1, bn = vb.cs == 1;
        gemm(an ? N : Tr, bn ? N : Tr, blas_int(m), blas_int(n), blas_int(k), a,
             blas_int(an ? va.rs : va.cs), b, blas_int(bn ? vb.rs : vb.cs), c, blas_int(vc.rs));
    } else {
        // Cᵀ (n×m) = Bᵀ (n×k) · Aᵀ (k×m); Xᵀ has row stride X.cs and column stride X.rs.
        const bool bn = vb.rs == 1, an = va.rs == 1;
        gemm(bn ? N : Tr, an ? N : Tr, blas_int(n), blas_int(m), blas_int(k), b,
             blas_int(bn ? vb.cs : vb.rs), a, blas_int(an ? va.cs : va.rs), c, blas_int(vc.cs));
    }
}

std::vector<int> cat(std::vector<int> a, const std::vector<int>& b, const std::vector<int>& c) {
    a.insert(a.end(), b.begin(), b.end());
    a.insert(a.end(), c.begin(), c.end());
    return a;
}

/// Two validated operands (consistent extents; out ⊆ their labels, distinct) -> out order.
template <class T>
Tensor<T> contract2(const Tensor<T>& a0, const Tensor<T>& b0, const std::vector<int>& out) {
    auto extent = [&](int l) {
        const int d = a0.dim_of(l);
        return d >= 0 ? a0.shape[d] : b0.shape[b0.dim_of(l)];
    };
    Dims oshape;
    for (int l : out)
        oshape.push_back(extent(l));
    for (auto e : a0.shape)
        if (e == 0) return Tensor<T>::zeros(oshape, out);
    for (auto e : b0.shape)
        if (e == 0) return Tensor<T>::zeros(oshape, out);

    // Sum out the labels only one operand has and nothing keeps.
    Tensor<T> as, bs;
    auto private_sum = [&](const Tensor<T>& x, const Tensor<T>& y,
                           Tensor<T>& store) -> const Tensor<T>* {
        std::vector<int> keep;
        for (int l : x.labels)
            if (y.dim_of(l) >= 0 || contains(out, l)) keep.push_back(l);
        if (keep.size() == x.labels.size()) return &x;
        store = reduce_unchecked(x, keep, PartialOp::Sum);
        return &store;
    };
    const Tensor<T>* a = private_sum(a0, b0, as);
    const Tensor<T>* b = private_sum(b0, a0, bs);

    std::vector<int> batch, m_out, n_out, m_a, n_b, k_a, k_b;
    for (int l : out) {
        const bool ia = a->dim_of(l) >= 0, ib = b->dim_of(l) >= 0;
        (ia && ib ? batch : ia ? m_out : n_out).push_back(l);
    }
    for (int l : a->labels) {
        if (b->dim_of(l) < 0)
            m_a.push_back(l);
        else if (!contains(out, l))
            k_a.push_back(l);
    }
    for (int l : b->labels) {
        if (a->dim_of(l) < 0)
            n_b.push_back(l);
        else if (!contains(out, l))
            k_b.push_back(l);
    }

    // Pick the group orders that copy the fewest elements: each operand and the result either
    // admit a matrix view in place or are permuted to [batch, rows, cols].
    const Index size_a = a->size(), size_b = b->size(), size_c = product(oshape);
    std::vector<int> mo, no, ko;
    bool ok_a = false, ok_b = false, ok_c = false;
    Index best = -1;
    for (const auto* m : {&m_out, &m_a})
        for (const auto* n : {&n_out, &n_b})
            for (const auto* k : {&k_a, &k_b}) {
                const bool va = mat_view(a->labels, a->shape, batch, *m, *k).ok;
                const bool vb = mat_view(b->labels, b->shape, batch, *k, *n).ok;
                const bool vc = mat_view(out, oshape, batch, *m, *n).ok;
                const Index cost = (va ? 0 : size_a) + (vb ? 0 : size_b) + (vc ? 0 : size_c);
                if (best < 0 || cost < best) {
                    best = cost;
                    mo = *m, no = *n, ko = *k;
                    ok_a = va, ok_b = vb, ok_c = vc;
                }
            }

    Tensor<T> ap, bp;
    if (!ok_a) a = &(ap = permute_unchecked(*a, cat(batch, mo, ko)));
    if (!ok_b) b = &(bp = permute_unchecked(*b, cat(batch, ko, no)));
    Tensor<T> c;
    if (ok_c) {
        c = Tensor<T>{oshape, out, std::vector<T>(static_cast<std::size_t>(size_c))};
    } else {
        c.labels = cat(batch, mo, no);
        for (int l : c.labels)
            c.shape.push_back(extent(l));
        c.data.resize(static_cast<std::size_t>(size_c));
    }
    const MatView va = mat_view(a->labels, a->shape, batch, mo, ko);
    const MatView vb = mat_view(b->labels, b->shape, batch, ko, no);
    const MatView vc = mat_view(c.labels, c.shape, batch, mo, no);
    Index m = 1, n = 1, k = 1;
    for (int l : mo)
        m *= extent(l);
    for (int l : no)
        n *= extent(l);
    for (int l : ko)
        k *= extent(l);
    Dims bext;
    for (int l : batch)
        bext.push_back(extent(l));
    const T* pa = a->data.data();
    const T* pb = b->data.data();
    T* pc = c.data.data();
    walk<3>(bext, {va.batch, vb.batch, vc.batch},
            [&](const std::array<Index, 3>& off, Index count, const std::array<Index, 3>& inc) {
                for (Index i = 0; i < count; ++i)
                    gemm_views(pa + off[0] + i * inc[0], va, pb + off[1] + i * inc[1], vb,
                               pc + off[2] + i * inc[2], vc, m, n, k);
            });
    if (ok_c) return c; // (a conditional expression would copy c)
    return permute_unchecked(c, out);
}

// ---- elementwise ----------------------------------------------------------------------------

template <class T, class F>
void map_in_place(Tensor<T>& x, F f) {
    for (auto& v : x.data)
        v = f(v);
}

template <class T>
T sigmoid(T v) {
    if (v >= T(0)) return T(1) / (T(1) + std::exp(-v));
    const T e = std::exp(v);
    return e / (T(1) + e);
}

} // namespace

template <class T>
Tensor<T> einsum(const std::vector<const Tensor<T>*>& inputs, const std::vector<int>& out) {
    const char* fn = "einsum";
    if (inputs.empty()) fail(fn, "no inputs");
    std::vector<std::pair<int, Index>> extents;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        if (!inputs[i]) fail(fn, "input " + std::to_string(i) + " is null");
        const std::string what = "input " + std::to_string(i);
        check_tensor(fn, *inputs[i], what.c_str());
        for (std::size_t d = 0; d < inputs[i]->labels.size(); ++d) {
            const int l = inputs[i]->labels[d];
            const Index e = inputs[i]->shape[d];
            const auto it = std::find_if(extents.begin(), extents.end(),
                                         [&](const auto& p) { return p.first == l; });
            if (it == extents.end())
                extents.emplace_back(l, e);
            else if (it->second != e)
                fail(fn, "label " + std::to_string(l) + " has extent " + std::to_string(e) +
                             " in input " + std::to_string(i) + " but " +
                             std::to_string(it->second) + " in an earlier input");
        }
    }
    check_distinct(fn, out, "the output labels");
    for (int l : out)
        if (std::find_if(extents.begin(), extents.end(),
                         [&](const auto& p) { return p.first == l; }) == extents.end())
            fail(fn, "output label " + std::to_string(l) + " occurs in no input");

    if (inputs.size() == 1) return reduce_unchecked(*inputs[0], out, PartialOp::Sum);

    std::deque<Tensor<T>> owned;
    std::vector<const Tensor<T>*> ops = inputs;
    while (ops.size() > 2) {
        std::size_t bi = 0, bj = 1;
        double best = -1;
        for (std::size_t i = 0; i < ops.size(); ++i)
            for (std::size_t j = i + 1; j < ops.size(); ++j) {
                double cost = 1;
                for (std::size_t d = 0; d < ops[i]->labels.size(); ++d)
                    cost *= static_cast<double>(ops[i]->shape[d]);
                for (std::size_t d = 0; d < ops[j]->labels.size(); ++d)
                    if (ops[i]->dim_of(ops[j]->labels[d]) < 0)
                        cost *= static_cast<double>(ops[j]->shape[d]);
                if (best < 0 || cost < best) best = cost, bi = i, bj = j;
            }
        auto needed = [&](int l) {
            if (contains(out, l)) return true;
            for (std::size_t o = 0; o < ops.size(); ++o)
                if (o != bi && o != bj && ops[o]->dim_of(l) >= 0) return true;
            return false;
        };
        std::vector<int> keep;
        for (int l : ops[bi]->labels)
            if (needed(l)) keep.push_back(l);
        for (int l : ops[bj]->labels)
            if (ops[bi]->dim_of(l) < 0 && needed(l)) keep.push_back(l);
        owned.push_back(contract2(*ops[bi], *ops[bj], keep));
        ops.erase(ops.begin() + static_cast<std::ptrdiff_t>(bj));
        ops.erase(ops.begin() + static_cast<std::ptrdiff_t>(bi));
        ops.push_back(&owned.back());
    }
    return contract2(*ops[0], *ops[1], out);
}

template <class T>
Tensor<T> permute(const Tensor<T>& x, const std::vector<int>& labels) {
    const char* fn = "permute";
    check_tensor(fn, x, "the tensor");
    check_distinct(fn, labels, "the new order");
    if (labels.size() != x.labels.size())
        fail(fn, list_text(labels) + " is not a permutation of " + list_text(x.labels));
    for (int l : labels)
        dim_or_fail(fn, x.labels, l, "the tensor's labels");
    return permute_unchecked(x, labels);
}

template <class T>
void apply(Tensor<T>& x, Unary f) {
    switch (f) {
    case Unary::Identity:
        return;
    case Unary::Neg:
        return map_in_place(x, [](T v) { return -v; });
    case Unary::Relu:
        return map_in_place(x, [](T v) { return v > T(0) ? v : T(0); });
    case Unary::Gelu:
        return map_in_place(
            x, [](T v) { return T(0.5) * v * (T(1) + std::erf(v * T(0.70710678118654752440))); });
    case Unary::Silu:
        return map_in_place(x, [](T v) { return v * sigmoid(v); });
    case Unary::Sigmoid:
        return map_in_place(x, [](T v) { return sigmoid(v); });
    case Unary::Tanh:
        return map_in_place(x, [](T v) { return std::tanh(v); });
    case Unary::Exp:
        return map_in_place(x, [](T v) { return std::exp(v); });
    case Unary::Log:
        return map_in_place(x, [](T v) { return std::log(v); });
    case Unary::Sqrt:
        return map_in_place(x, [](T v) { return std::sqrt(v); });
    }
    fail("apply", "unknown unary function");
}

template <class T>
void scale(Tensor<T>& x, T factor) {
    for (auto& v : x.data)
        v *= factor;
}

template <class T>
Tensor<T> reduce(const Tensor<T>& x, const std::vector<int>& out, PartialOp r) {
    const char* fn = "reduce";
    check_tensor(fn, x, "the tensor");
    check_distinct(fn, out, "the output labels");
    for (int l : out)
        dim_or_fail(fn, x.labels, l, "the tensor's labels");
    return reduce_unchecked(x, out, r);
}

template <class T>
void accumulate(Tensor<T>& acc, const Tensor<T>& x, PartialOp r) {
    const char* fn = "accumulate";
    check_tensor(fn, acc, "the accumulator");
    check_tensor(fn, x, "the addend");
    if (acc.labels != x.labels)
        fail(fn, "labels " + list_text(x.labels) + " differ from the accumulator's " +
                     list_text(acc.labels));
    if (acc.shape != x.shape) fail(fn, "the shapes differ");
    const std::size_t n = acc.data.size();
    T* a = acc.data.data();
    const T* b = x.data.data();
    if (r == PartialOp::Sum) {
        for (std::size_t i = 0; i < n; ++i)
            a[i] += b[i];
    } else {
        for (std::size_t i = 0; i < n; ++i)
            if (b[i] > a[i] || std::isnan(b[i])) a[i] = b[i];
    }
}

template <class T>
Tensor<T> binary(const Tensor<T>& a, const Tensor<T>& b, Binary op, const std::vector<int>& out) {
    const char* fn = "binary";
    check_tensor(fn, a, "the left operand");
    check_tensor(fn, b, "the right operand");
    check_distinct(fn, out, "the output labels");
    Dims shape(out.size());
    Dims sa(out.size(), 0), sb(out.size(), 0);
    const Dims as = strides_of(a.shape), bs = strides_of(b.shape);
    for (std::size_t i = 0; i < out.size(); ++i) {
        const int da = a.dim_of(out[i]), db = b.dim_of(out[i]);
        if (da < 0 && db < 0)
            fail(fn, "output label " + std::to_string(out[i]) + " is in neither operand");
        if (da >= 0 && db >= 0 && a.shape[da] != b.shape[db])
            fail(fn, "label " + std::to_string(out[i]) + " has extent " +
                         std::to_string(a.shape[da]) + " on the left but " +
                         std::to_string(b.shape[db]) + " on the right");
        shape[i] = da >= 0 ? a.shape[da] : b.shape[db];
        if (da >= 0) sa[i] = as[da];
        if (db >= 0) sb[i] = bs[db];
    }
    for (int l : a.labels)
        if (!contains(out, l))
            fail(fn, "label " + std::to_string(l) + " of the left operand is not in the output " +
                         list_text(out));
    for (int l : b.labels)
        if (!contains(out, l))
            fail(fn, "label " + std::to_string(l) + " of the right operand is not in the output " +
                         list_text(out));
    Tensor<T> r{shape, out, std::vector<T>(static_cast<std::size_t>(product(shape)))};
    const T* pa = a.data.data();
    const T* pb = b.data.data();
    T* pr = r.data.data();
    auto run = [&](auto f) {
        walk<3>(shape, {sa, sb, strides_of(shape)},
                [&](const std::array<Index, 3>& off, Index n, const std::array<Index, 3>& inc) {
                    const T* x = pa + off[0];
                    const T* y = pb + off[1];
                    T* z = pr + off[2];
                    if (inc[0] == 1 && inc[1] == 1 && inc[2] == 1) {
                        for (Index i = 0; i < n; ++i)
                            z[i] = f(x[i], y[i]);
                    } else {
                        for (Index i = 0; i < n; ++i)
                            z[i * inc[2]] = f(x[i * inc[0]], y[i * inc[1]]);
                    }
                });
    };
    switch (op) {
    case Binary::Add:
        run([](T x, T y) { return x + y; });
        break;
    case Binary::Sub:
        run([](T x, T y) { return x - y; });
        break;
    case Binary::Mul:
        run([](T x, T y) { return x * y; });
        break;
    case Binary::Div:
        run([](T x, T y) { return x / y; });
        break;
    }
    return r;
}

template <class T>
void softmax(Tensor<T>& x, int label) {
    const char* fn = "softmax";
    check_tensor(fn, x, "the tensor");
    const int d = dim_or_fail(fn, x.labels, label, "the tensor's labels");
    Index outer = 1, inner = 1;
    for (int i = 0; i < d; ++i)
        outer *= x.shape[i];
    for (std::size_t i = d + 1; i < x.shape.size(); ++i)
        inner *= x.shape[i];
    const Index n = x.shape[d];
    if (n == 0 || outer == 0 || inner == 0) return;
    // Rows of `inner` contiguous lines at once, so every pass reads memory in order.
    std::vector<T> mx(static_cast<std::size_t>(inner)), sum(static_cast<std::size_t>(inner));
    for (Index o = 0; o < outer; ++o) {
        T* base = x.data.data() + o * n * inner;
        std::fill(mx.begin(), mx.end(), -std::numeric_limits<T>::infinity());
        std::fill(sum.begin(), sum.end(), T(0));
        for (Index j = 0; j < n; ++j)
            for (Index i = 0; i < inner; ++i)
                mx[i] = std::max(mx[i], base[j * inner + i]);
        for (Index j = 0; j < n; ++j)
            for (Index i = 0; i < inner; ++i) {
                T& v = base[j * inner + i];
                v = std::exp(v - mx[i]);
                sum[i] += v;
            }
        for (Index j = 0; j < n; ++j)
            for (Index i = 0; i < inner; ++i)
                base[j * inner + i] /= sum[i];
    }
}

template <class T>
Tensor<T> slice(const Tensor<T>& x, int label, std::int64_t begin, std::int64_t end) {
    const char* fn = "slice";
    check_tensor(fn, x, "the tensor");
    const int d = dim_or_fail(fn, x.labels, label, "the tensor's labels");
    const Index e = x.shape[d];
    if (begin < 0 || end < begin || end > e)
        fail(fn, "range [" + std::to_string(begin) + ", " + std::to_string(end) +
                     ") is not within [0, " + std::to_string(e) + "] of label " +
                     std::to_string(label));
    Index outer = 1, inner = 1;
    for (int i = 0; i < d; ++i)
        outer *= x.shape[i];
    for (std::size_t i = d + 1; i < x.shape.size(); ++i)
        inner *= x.shape[i];
    Tensor<T> r{x.shape, x.labels, {}};
    r.shape[d] = end - begin;
    r.data.resize(static_cast<std::size_t>(r.size()));
    const Index run = (end - begin) * inner;
    for (Index o = 0; o < outer && run > 0; ++o) {
        const T* s = x.data.data() + (o * e + begin) * inner;
        std::copy(s, s + run, r.data.data() + o * run);
    }
    return r;
}

template <class T>
Tensor<T> concat(const std::vector<Tensor<T>>& parts, int label) {
    const char* fn = "concat";
    if (parts.empty()) fail(fn, "no parts");
    const Tensor<T>& first = parts[0];
    check_tensor(fn, first, "part 0");
    const int d = dim_or_fail(fn, first.labels, label, "the labels of part 0");
    Index total = 0;
    for (std::size_t p = 0; p < parts.size(); ++p) {
        const std::string what = "part " + std::to_string(p);
        check_tensor(fn, parts[p], what.c_str());
        if (parts[p].labels != first.labels)
            fail(fn, what + " has labels " + list_text(parts[p].labels) + " but part 0 has " +
                         list_text(first.labels));
        for (std::size_t i = 0; i < first.shape.size(); ++i)
            if (static_cast<int>(i) != d && parts[p].shape[i] != first.shape[i])
                fail(fn, what + " has extent " + std::to_string(parts[p].shape[i]) + " for label " +
                             std::to_string(first.labels[i]) + " but part 0 has " +
                             std::to_string(first.shape[i]));
        total += parts[p].shape[d];
    }
    Index outer = 1, inner = 1;
    for (int i = 0; i < d; ++i)
        outer *= first.shape[i];
    for (std::size_t i = d + 1; i < first.shape.size(); ++i)
        inner *= first.shape[i];
    Tensor<T> r{first.shape, first.labels, {}};
    r.shape[d] = total;
    r.data.resize(static_cast<std::size_t>(r.size()));
    T* dst = r.data.data();
    for (Index o = 0; o < outer; ++o)
        for (const auto& part : parts) {
            const Index run = part.shape[d] * inner;
            const T* s = part.data.data() + o * run;
            dst = std::copy(s, s + run, dst);
        }
    return r;
}

template <class To, class From>
Tensor<To> convert(const Tensor<From>& x) {
    check_tensor("convert", x, "the tensor");
    Tensor<To> r{x.shape, x.labels, std::vector<To>(x.data.size())};
    std::transform(x.data.begin(), x.data.end(), r.data.begin(),
                   [](From v) { return static_cast<To>(v); });
    return r;
}

#define SHARDSCOPE_KERNELS(T)                                                                      \
    template Tensor<T> einsum(const std::vector<const Tensor<T>*>&, const std::vector<int>&);      \
    template Tensor<T> permute(const Tensor<T>&, const std::vector<int>&);                         \
    template void apply(Tensor<T>&, Unary);                                                        \
    template void scale(Tensor<T>&, T);                                                            \
    template Tensor<T> reduce(const Tensor<T>&, const std::vector<int>&, PartialOp);               \
    template void accumulate(Tensor<T>&, const Tensor<T>&, PartialOp);                             \
    template Tensor<T> binary(const Tensor<T>&, const Tensor<T>&, Binary,                          \
                              const std::vector<int>&);                                            \
    template void softmax(Tensor<T>&, int);                                                        \
    template Tensor<T> slice(const Tensor<T>&, int, std::int64_t, std::int64_t);                   \
    template Tensor<T> concat(const std::vector<Tensor<T>>&, int);
SHARDSCOPE_KERNELS(float)
SHARDSCOPE_KERNELS(double)
#undef SHARDSCOPE_KERNELS

template Tensor<float> convert(const Tensor<double>&);
template Tensor<double> convert(const Tensor<float>&);
template Tensor<float> convert(const Tensor<float>&);
template Tensor<double> convert(const Tensor<double>&);

} // namespace shardscope::exec
