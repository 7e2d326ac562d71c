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
    // An operand already stored as the transposed matrix is read transposed, not permuted.
    p.a_trans = p.a_keep == cat(batch, k, m) && p.a_keep != cat(batch, m, k);
    p.b_trans = p.b_keep == cat(batch, n, k) && p.b_keep != cat(batch, k, n);
    p.a_order = p.a_trans ? cat(batch, k, m) : cat(batch, m, k);
    p.b_order = p.b_trans ? cat(batch, n, k) : cat(batch, k, n);
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

GemmCall GemmPlan::call() const {
    // Row-major C[m][n] is column-major C^T (n x m): C^T = op(B) · op(A) with B row-major
    // [k][n] = column-major n x k (ld n), or [n][k] read transposed (ld k); A row-major
    // [m][k] = column-major k x m (ld k), or [k][m] read transposed (ld m).
    GemmCall c;
    c.trans_first = b_trans;
    c.trans_second = a_trans;
    c.M = n;
    c.N = m;
    c.K = k;
    c.ld_first = b_trans ? k : n;
    c.ld_second = a_trans ? m : k;
    c.ldc = n;
    c.stride_first = k * n;
    c.stride_second = m * k;
    c.stride_c = m * n;
    c.batch = batch;
    return c;
}

void gemm_colmajor_reference(const GemmCall& g, const double* first, const double* second,
                             double* c) {
    auto at = [](const double* x, bool t, std::int64_t ld, std::int64_t r, std::int64_t col) {
        return t ? x[col + r * ld] : x[r + col * ld];
    };
    for (std::int64_t b = 0; b < g.batch; ++b)
        for (std::int64_t j = 0; j < g.N; ++j)
            for (std::int64_t i = 0; i < g.M; ++i) {
                double acc = 0;
                for (std::int64_t q = 0; q < g.K; ++q)
                    acc += at(first + b * g.stride_first, g.trans_first, g.ld_first, i, q) *
                           at(second + b * g.stride_second, g.trans_second, g.ld_second, q, j);
                c[b * g.stride_c + i + j * g.ldc] = acc;
            }
}

} // namespace shardscope::exec
