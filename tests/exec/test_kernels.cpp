// The executor's local kernels against naive loops written here: einsum over every label
// assignment, and the layout, elementwise, reduction and softmax kernels on known values.
#include "exec/kernels.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

using namespace shardscope::exec;

namespace {

using Dims = std::vector<std::int64_t>;

enum : int { I = 0, J = 1, K = 2, L = 3, M = 4, N = 5, B = 6 };

template <class T>
Tensor<T> make(Dims shape, std::vector<int> labels, std::vector<double> values) {
    Tensor<T> t{std::move(shape), std::move(labels), {}};
    for (double v : values)
        t.data.push_back(static_cast<T>(v));
    REQUIRE(static_cast<std::int64_t>(t.data.size()) == t.size());
    return t;
}

template <class T>
Tensor<T> random_tensor(Dims shape, std::vector<int> labels, std::mt19937& rng) {
    Tensor<T> t = Tensor<T>::zeros(std::move(shape), std::move(labels));
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    for (auto& v : t.data)
        v = static_cast<T>(u(rng));
    return t;
}

/// The reference result and, per element, the sum of the terms' magnitudes (for tolerances).
struct Reference {
    Dims shape;
    std::vector<double> value, magnitude;
};

/// Einsum by brute force: every assignment of every label, one product per assignment.
template <class T>
Reference naive_einsum(const std::vector<const Tensor<T>*>& in, const std::vector<int>& out) {
    std::vector<int> all;
    Dims ext;
    for (const auto* t : in)
        for (std::size_t d = 0; d < t->labels.size(); ++d)
            if (std::find(all.begin(), all.end(), t->labels[d]) == all.end()) {
                all.push_back(t->labels[d]);
                ext.push_back(t->shape[d]);
            }
    auto pos = [&](int l) {
        return static_cast<std::size_t>(std::find(all.begin(), all.end(), l) - all.begin());
    };
    Reference r;
    for (int l : out)
        r.shape.push_back(ext[pos(l)]);
    const std::int64_t size =
        std::accumulate(r.shape.begin(), r.shape.end(), std::int64_t(1), std::multiplies<>());
    r.value.assign(static_cast<std::size_t>(size), 0.0);
    r.magnitude.assign(static_cast<std::size_t>(size), 0.0);
    for (auto e : ext)
        if (e == 0) return r;
    auto offset = [&](const std::vector<int>& labels, const Dims& shape, const Dims& idx) {
        std::int64_t o = 0;
        for (std::size_t d = 0; d < labels.size(); ++d)
            o = o * shape[d] + idx[pos(labels[d])];
        return static_cast<std::size_t>(o);
    };
    Dims idx(all.size(), 0);
    for (;;) {
        double p = 1;
        for (const auto* t : in)
            p *= static_cast<double>(t->data[offset(t->labels, t->shape, idx)]);
        const std::size_t o = offset(out, r.shape, idx);
        r.value[o] += p;
        r.magnitude[o] += std::abs(p);
        std::size_t d = all.size();
        for (;;) {
            if (d == 0) return r;
            --d;
            if (++idx[d] < ext[d]) break;
            idx[d] = 0;
        }
    }
}

template <class T>
double tolerance() {
    return std::is_same_v<T, float> ? 1e-5 : 1e-12;
}

template <class T>
void check_einsum(const std::vector<const Tensor<T>*>& in, const std::vector<int>& out) {
    const Tensor<T> got = einsum(in, out);
    const Reference want = naive_einsum(in, out);
    REQUIRE(got.labels == out);
    REQUIRE(got.shape == want.shape);
    REQUIRE(got.data.size() == want.value.size());
    for (std::size_t i = 0; i < want.value.size(); ++i) {
        INFO("element " << i);
        CHECK(std::abs(static_cast<double>(got.data[i]) - want.value[i]) <=
              tolerance<T>() * (1 + want.magnitude[i]) * 4);
    }
}

template <class T>
void check_values(const Tensor<T>& got, const std::vector<double>& want, double tol = 1e-6) {
    REQUIRE(got.data.size() == want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
        INFO("element " << i);
        CHECK(static_cast<double>(got.data[i]) == doctest::Approx(want[i]).epsilon(tol));
    }
}

} // namespace

TEST_CASE_TEMPLATE("einsum: matmul and transposed operands", T, float, double) {
    std::mt19937 rng(1);
    const auto a_ik = random_tensor<T>({5, 7}, {I, K}, rng);
    const auto a_ki = random_tensor<T>({7, 5}, {K, I}, rng);
    const auto b_kj = random_tensor<T>({7, 3}, {K, J}, rng);
    const auto b_jk = random_tensor<T>({3, 7}, {J, K}, rng);
    for (const auto* a : {&a_ik, &a_ki})
        for (const auto* b : {&b_kj, &b_jk})
            for (const std::vector<int>& out : {std::vector<int>{I, J}, std::vector<int>{J, I}}) {
                CAPTURE(a->labels[0]);
                CAPTURE(b->labels[0]);
                CAPTURE(out[0]);
                check_einsum<T>({a, b}, out);
                check_einsum<T>({b, a}, out);
            }

    SUBCASE("known values") {
        const auto a = make<T>({2, 2}, {I, K}, {1, 2, 3, 4});
        const auto b = make<T>({2, 2}, {K, J}, {5, 6, 7, 8});
        check_values(einsum<T>({&a, &b}, {I, J}), {19, 22, 43, 50});
        check_values(einsum<T>({&a, &b}, {J, I}), {19, 43, 22, 50});
    }
    SUBCASE("matrix-vector and dot product") {
        const auto v = random_tensor<T>({7}, {K}, rng);
        check_einsum<T>({&a_ik, &v}, {I});
        check_einsum<T>({&v, &a_ki}, {I});
        const auto w = random_tensor<T>({7}, {K}, rng);
        check_einsum<T>({&v, &w}, {});
    }
    SUBCASE("multi-label groups, flattened in place or permuted") {
        const auto a = random_tensor<T>({2, 3, 4, 5}, {I, J, K, L}, rng);
        const auto b = random_tensor<T>({4, 5, 3}, {K, L, M}, rng);
        check_einsum<T>({&a, &b}, {I, J, M});
        check_einsum<T>({&a, &b}, {J, I, M});
        check_einsum<T>({&a, &b}, {M, I, J});
        check_einsum<T>({&a, &b}, {I, M, J});
        const auto c = random_tensor<T>({5, 3, 4}, {L, M, K}, rng);
        check_einsum<T>({&a, &c}, {I, J, M});
    }
}

TEST_CASE_TEMPLATE("einsum: batch matmul with the batch label anywhere", T, float, double) {
    std::mt19937 rng(2);
    const std::vector<std::vector<int>> a_orders = {{B, I, K}, {I, B, K}, {I, K, B}, {K, I, B}};
    const std::vector<std::vector<int>> b_orders = {{B, K, J}, {K, B, J}, {J, K, B}, {K, J, B}};
    const std::vector<std::vector<int>> outs = {{B, I, J}, {I, B, J}, {I, J, B}, {J, B, I}};
    auto extents = [](const std::vector<int>& labels) {
        Dims s;
        for (int l : labels)
            s.push_back(l == B ? 3 : l == I ? 4 : l == K ? 5 : 2);
        return s;
    };
    for (const auto& ao : a_orders)
        for (const auto& bo : b_orders)
            for (const auto& out : outs) {
                const auto a = random_tensor<T>(extents(ao), ao, rng);
                const auto b = random_tensor<T>(extents(bo), bo, rng);
                check_einsum<T>({&a, &b}, out);
            }
    SUBCASE("two batch labels") {
        const auto a = random_tensor<T>({2, 3, 4, 5}, {B, L, I, K}, rng);
        const auto b = random_tensor<T>({3, 5, 2, 6}, {L, K, B, J}, rng);
        check_einsum<T>({&a, &b}, {B, L, I, J});
        check_einsum<T>({&a, &b}, {L, J, I, B});
    }
}

TEST_CASE_TEMPLATE("einsum: outer product, chains, private sums, scalars", T, float, double) {
    std::mt19937 rng(3);
    SUBCASE("outer product") {
        const auto u = make<T>({2}, {I}, {1, 2});
        const auto v = make<T>({3}, {J}, {3, 4, 5});
        check_values(einsum<T>({&u, &v}, {I, J}), {3, 4, 5, 6, 8, 10});
        check_values(einsum<T>({&u, &v}, {J, I}), {3, 6, 4, 8, 5, 10});
        const auto x = random_tensor<T>({3, 2}, {I, K}, rng);
        const auto y = random_tensor<T>({4}, {J}, rng);
        check_einsum<T>({&x, &y}, {K, J, I});
    }
    SUBCASE("three-operand chain") {
        const auto a = random_tensor<T>({3, 4}, {I, J}, rng);
        const auto b = random_tensor<T>({4, 5}, {J, K}, rng);
        const auto c = random_tensor<T>({5, 2}, {K, L}, rng);
        check_einsum<T>({&a, &b, &c}, {I, L});
        check_einsum<T>({&a, &b, &c}, {L, I});
        check_einsum<T>({&c, &a, &b}, {I, K, L});
        const auto d = random_tensor<T>({2, 3}, {L, I}, rng);
        check_einsum<T>({&a, &b, &c, &d}, {}); // a trace around a ring
    }
    SUBCASE("a label summed from one operand only") {
        const auto a = make<T>({2, 3}, {I, L}, {1, 2, 3, 4, 5, 6}); // L: only in a, not kept
        const auto b = make<T>({2}, {I}, {10, 100});
        check_values(einsum<T>({&a, &b}, {I}), {60, 1500});
        const auto x = random_tensor<T>({3, 4, 5}, {I, K, L}, rng);
        const auto y = random_tensor<T>({4, 2, 6}, {K, J, M}, rng);
        check_einsum<T>({&x, &y}, {I, J});
        check_einsum<T>({&x, &y}, {});
    }
    SUBCASE("scalar times tensor") {
        const auto s = Tensor<T>::scalar(T(3));
        const auto t = make<T>({2, 2}, {I, J}, {1, 2, 3, 4});
        check_values(einsum<T>({&s, &t}, {I, J}), {3, 6, 9, 12});
        check_values(einsum<T>({&t, &s}, {J, I}), {3, 9, 6, 12});
        const auto u = Tensor<T>::scalar(T(-2));
        const auto r = einsum<T>({&s, &u}, {});
        CHECK(r.shape.empty());
        check_values(r, {-6});
    }
    SUBCASE("one input: transpose and sum") {
        const auto t = make<T>({2, 3}, {I, J}, {1, 2, 3, 4, 5, 6});
        check_values(einsum<T>({&t}, {J, I}), {1, 4, 2, 5, 3, 6});
        check_values(einsum<T>({&t}, {J}), {5, 7, 9});
        check_values(einsum<T>({&t}, {I}), {6, 15});
        check_values(einsum<T>({&t}, {}), {21});
        const auto x = random_tensor<T>({3, 4, 5}, {I, J, K}, rng);
        check_einsum<T>({&x}, {K, I});
    }
}

TEST_CASE_TEMPLATE("einsum: extent-0 dimensions", T, float, double) {
    std::mt19937 rng(4);
    const auto a = random_tensor<T>({3, 0}, {I, K}, rng);
    const auto b = random_tensor<T>({0, 4}, {K, J}, rng);
    const auto r = einsum<T>({&a, &b}, {I, J}); // contracted over an empty range: zeros
    CHECK(r.shape == Dims{3, 4});
    check_values(r, std::vector<double>(12, 0.0));
    const auto c = random_tensor<T>({0, 5}, {I, K}, rng);
    const auto d = random_tensor<T>({5, 4}, {K, J}, rng);
    const auto e = einsum<T>({&c, &d}, {J, I});
    CHECK(e.shape == Dims{4, 0});
    CHECK(e.data.empty());
    check_einsum<T>({&a, &b}, {J, I});
    const auto s = einsum<T>({&a}, {I});
    check_values(s, {0, 0, 0});
}

TEST_CASE_TEMPLATE("einsum: every layout of a two-operand contraction", T, float, double) {
    // Each of batch (B), free-left (I), contracted (K), free-right (J) present or not, every
    // order of both operands and of the result: in-place views, CblasTrans, the Cᵀ = BᵀAᵀ form,
    // copies and the final permute are all reached.
    std::mt19937 rng(8);
    for (const Dims& ext : {Dims{2, 3, 4, 5}, Dims{3, 1, 2, 1}}) {
        auto extent = [&](int l) {
            return l == B ? ext[0] : l == I ? ext[1] : l == K ? ext[2] : ext[3];
        };
        for (int mask = 0; mask < 16; ++mask) {
            std::vector<int> la, lb, lo;
            if (mask & 1) la.push_back(B), lb.push_back(B), lo.push_back(B);
            if (mask & 2) la.push_back(I), lo.push_back(I);
            if (mask & 4) la.push_back(K), lb.push_back(K);
            if (mask & 8) lb.push_back(J), lo.push_back(J);
            std::sort(la.begin(), la.end());
            do {
                Dims sa;
                for (int l : la)
                    sa.push_back(extent(l));
                const auto a = random_tensor<T>(sa, la, rng);
                std::sort(lb.begin(), lb.end());
                do {
                    Dims sb;
                    for (int l : lb)
                        sb.push_back(extent(l));
                    const auto b = random_tensor<T>(sb, lb, rng);
                    std::sort(lo.begin(), lo.end());
                    do {
                        CAPTURE(mask);
                        check_einsum<T>({&a, &b}, lo);
                    } while (std::next_permutation(lo.begin(), lo.end()));
                } while (std::next_permutation(lb.begin(), lb.end()));
            } while (std::next_permutation(la.begin(), la.end()));
        }
    }
}

TEST_CASE_TEMPLATE("einsum: random expressions against the naive loop", T, float, double) {
    std::mt19937 rng(42);
    for (int trial = 0; trial < 200; ++trial) {
        const int nlabels = std::uniform_int_distribution<int>(1, 5)(rng);
        Dims ext(static_cast<std::size_t>(nlabels));
        for (auto& e : ext) // extent 0 one time in ten
            e = std::uniform_int_distribution<int>(0, 9)(rng) == 0
                    ? 0
                    : std::uniform_int_distribution<int>(1, 5)(rng);
        const int nops = std::uniform_int_distribution<int>(2, 3)(rng);
        std::vector<Tensor<T>> ops;
        std::vector<int> used;
        for (int o = 0; o < nops; ++o) {
            std::vector<int> labels(static_cast<std::size_t>(nlabels));
            std::iota(labels.begin(), labels.end(), 0);
            std::shuffle(labels.begin(), labels.end(), rng);
            labels.resize(std::uniform_int_distribution<std::size_t>(0, labels.size())(rng));
            Dims shape;
            for (int l : labels) {
                shape.push_back(ext[static_cast<std::size_t>(l)]);
                if (std::find(used.begin(), used.end(), l) == used.end()) used.push_back(l);
            }
            ops.push_back(random_tensor<T>(shape, labels, rng));
        }
        std::shuffle(used.begin(), used.end(), rng);
        std::vector<int> out = used;
        out.resize(std::uniform_int_distribution<std::size_t>(0, out.size())(rng));
        std::vector<const Tensor<T>*> in;
        std::string text;
        for (const auto& t : ops) {
            in.push_back(&t);
            text += "[";
            for (std::size_t d = 0; d < t.labels.size(); ++d)
                text += std::to_string(t.labels[d]) + ":" + std::to_string(t.shape[d]) + " ";
            text += "] ";
        }
        text += "->";
        for (int l : out)
            text += " " + std::to_string(l);
        INFO("trial " << trial << ": " << text);
        check_einsum<T>(in, out);
    }
}

TEST_CASE("einsum: bad arguments throw ExecError") {
    const auto a = Tensor<float>::zeros({2, 3}, {I, K});
    const auto b = Tensor<float>::zeros({4, 5}, {K, J});
    const auto c = Tensor<float>::zeros({3, 5}, {K, J});
    CHECK_THROWS_AS(einsum<float>({&a, &b}, {I, J}), ExecError); // K: 3 vs 4
    CHECK_THROWS_WITH_AS(einsum<float>({&a, &c}, {I, L}), doctest::Contains("label 3"),
                         ExecError); // L in no input
    CHECK_THROWS_AS(einsum<float>({&a, &c}, {I, I}), ExecError);
    CHECK_THROWS_AS(einsum<float>({}, {}), ExecError);
    CHECK_THROWS_AS(einsum<float>({&a, nullptr}, {I}), ExecError);
    const auto dup = Tensor<float>::zeros({2, 2}, {I, I});
    CHECK_THROWS_AS(einsum<float>({&dup, &c}, {I}), ExecError);
    Tensor<float> short_data{{2, 2}, {I, J}, {1, 2, 3}};
    CHECK_THROWS_AS(einsum<float>({&short_data, &c}, {I}), ExecError);
    CHECK_NOTHROW(einsum<float>({&a, &c}, {I, J}));
}

TEST_CASE_TEMPLATE("permute", T, float, double) {
    const auto x = make<T>({2, 3, 2}, {I, J, K}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
    const auto y = permute(x, {K, I, J});
    CHECK(y.labels == std::vector<int>{K, I, J});
    CHECK(y.shape == Dims{2, 2, 3});
    check_values(y, {0, 2, 4, 6, 8, 10, 1, 3, 5, 7, 9, 11});
    check_values(permute(x, {I, J, K}), {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});

    SUBCASE("large transposes (the tiled path) against index arithmetic") {
        std::mt19937 rng(5);
        const auto t = random_tensor<T>({3, 70, 45}, {I, J, K}, rng);
        for (const std::vector<int>& order :
             {std::vector<int>{I, K, J}, {K, J, I}, {J, K, I}, {K, I, J}, {J, I, K}}) {
            const auto p = permute(t, order);
            const auto back = permute(p, {I, J, K});
            CHECK(back.data == t.data);
            auto ext = [&](int l) { return t.shape[static_cast<std::size_t>(t.dim_of(l))]; };
            bool same = true;
            for (std::int64_t i = 0; i < 3; ++i)
                for (std::int64_t j = 0; j < 70; ++j)
                    for (std::int64_t k = 0; k < 45; ++k) {
                        std::int64_t o = 0;
                        for (int l : order)
                            o = o * ext(l) + (l == I ? i : l == J ? j : k);
                        same = same && p.data[static_cast<std::size_t>(o)] ==
                                           t.data[static_cast<std::size_t>((i * 70 + j) * 45 + k)];
                    }
            CHECK(same);
        }
    }
    SUBCASE("extent 0 and bad orders") {
        const auto e = Tensor<T>::zeros({0, 3}, {I, J});
        const auto p = permute(e, {J, I});
        CHECK(p.shape == Dims{3, 0});
        CHECK_THROWS_AS(permute(x, {I, J}), ExecError);
        CHECK_THROWS_AS(permute(x, {I, J, L}), ExecError);
        CHECK_THROWS_AS(permute(x, {I, J, J}), ExecError);
    }
}

TEST_CASE_TEMPLATE("reduce and accumulate", T, float, double) {
    const auto x = make<T>({2, 3}, {I, J}, {1, -5, 3, 4, 2, -6});
    check_values(reduce(x, {I}, PartialOp::Sum), {-1, 0});
    check_values(reduce(x, {J}, PartialOp::Sum), {5, -3, -3});
    check_values(reduce(x, {}, PartialOp::Sum), {-1});
    check_values(reduce(x, {I}, PartialOp::Max), {3, 4});
    check_values(reduce(x, {J}, PartialOp::Max), {4, 2, 3});
    check_values(reduce(x, {}, PartialOp::Max), {4});
    check_values(reduce(x, {J, I}, PartialOp::Sum), {1, 4, -5, 2, 3, -6});

    const auto y = make<T>({2, 3, 2}, {I, J, K}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
    const auto r = reduce(y, {K, I}, PartialOp::Sum);
    CHECK(r.labels == std::vector<int>{K, I});
    check_values(r, {9, 27, 12, 30});

    const auto empty = Tensor<T>::zeros({2, 0}, {I, J});
    const auto m = reduce(empty, {I}, PartialOp::Max);
    REQUIRE(m.data.size() == 2);
    CHECK(m.data[0] == -std::numeric_limits<T>::infinity());
    CHECK(m.data[1] == -std::numeric_limits<T>::infinity());
    check_values(reduce(empty, {I}, PartialOp::Sum), {0, 0});
    CHECK_THROWS_AS(reduce(x, {K}, PartialOp::Sum), ExecError);
    CHECK_THROWS_AS(reduce(x, {I, I}, PartialOp::Sum), ExecError);

    SUBCASE("accumulate") {
        auto acc = make<T>({2, 2}, {I, J}, {1, 5, -2, 0});
        const auto add = make<T>({2, 2}, {I, J}, {3, 1, -1, -4});
        accumulate(acc, add, PartialOp::Sum);
        check_values(acc, {4, 6, -3, -4});
        accumulate(acc, make<T>({2, 2}, {I, J}, {0, 10, -5, -1}), PartialOp::Max);
        check_values(acc, {4, 10, -3, -1});
        CHECK_THROWS_AS(accumulate(acc, make<T>({2, 2}, {J, I}, {0, 0, 0, 0}), PartialOp::Sum),
                        ExecError);
        CHECK_THROWS_AS(accumulate(acc, make<T>({2, 1}, {I, J}, {0, 0}), PartialOp::Sum),
                        ExecError);
    }
}

TEST_CASE_TEMPLATE("binary with broadcasting by label", T, float, double) {
    const auto a = make<T>({2, 3}, {I, J}, {1, 2, 3, 4, 5, 6});
    const auto b = make<T>({2, 3}, {I, J}, {6, 5, 4, 3, 2, 1});
    check_values(binary(a, b, Binary::Add, {I, J}), {7, 7, 7, 7, 7, 7});
    check_values(binary(a, b, Binary::Sub, {I, J}), {-5, -3, -1, 1, 3, 5});
    check_values(binary(a, b, Binary::Mul, {I, J}), {6, 10, 12, 12, 10, 6});
    check_values(binary(a, b, Binary::Div, {I, J}), {1.0 / 6, 0.4, 0.75, 4.0 / 3, 2.5, 6});
    check_values(binary(a, b, Binary::Sub, {J, I}), {-5, 1, -3, 3, -1, 5});

    const auto row = make<T>({3}, {J}, {10, 20, 30});
    const auto col = make<T>({2}, {I}, {100, 200});
    check_values(binary(a, row, Binary::Add, {I, J}), {11, 22, 33, 14, 25, 36}); // b broadcast
    check_values(binary(row, a, Binary::Sub, {I, J}), {9, 18, 27, 6, 15, 24});   // a broadcast
    check_values(binary(col, row, Binary::Mul, {J, I}), {1000, 2000, 2000, 4000, 3000, 6000});
    check_values(binary(a, col, Binary::Div, {J, I}), {0.01, 0.02, 0.02, 0.025, 0.03, 0.03});
    check_values(binary(a, Tensor<T>::scalar(T(2)), Binary::Mul, {I, J}), {2, 4, 6, 8, 10, 12});

    const auto wrong = make<T>({2}, {J}, {1, 2});
    CHECK_THROWS_AS(binary(a, wrong, Binary::Add, {I, J}), ExecError);
    CHECK_THROWS_AS(binary(a, row, Binary::Add, {I}), ExecError);
    CHECK_THROWS_AS(binary(a, row, Binary::Add, {I, J, K}), ExecError);
    CHECK_THROWS_AS(binary(a, row, Binary::Add, {I, J, J}), ExecError);
}

TEST_CASE_TEMPLATE("softmax", T, float, double) {
    std::mt19937 rng(6);
    auto x = random_tensor<T>({3, 4, 5}, {I, J, K}, rng);
    const auto orig = x;
    softmax(x, J);
    const auto sums = reduce(x, {I, K}, PartialOp::Sum);
    for (auto s : sums.data)
        CHECK(static_cast<double>(s) == doctest::Approx(1.0).epsilon(1e-6));
    // Against the textbook formula along J.
    for (std::int64_t i = 0; i < 3; ++i)
        for (std::int64_t k = 0; k < 5; ++k) {
            double z = 0;
            for (std::int64_t j = 0; j < 4; ++j)
                z += std::exp(static_cast<double>(orig.data[(i * 4 + j) * 5 + k]));
            for (std::int64_t j = 0; j < 4; ++j) {
                const auto at = static_cast<std::size_t>((i * 4 + j) * 5 + k);
                CHECK(static_cast<double>(x.data[at]) ==
                      doctest::Approx(std::exp(static_cast<double>(orig.data[at])) / z)
                          .epsilon(1e-5));
            }
        }

    auto big = make<T>({2, 3}, {I, J}, {1000, 1001, 1002, -1000, -1001, -1000});
    softmax(big, J);
    for (auto v : big.data)
        CHECK(std::isfinite(static_cast<double>(v)));
    const double e1 = std::exp(-1.0), e2 = std::exp(-2.0);
    check_values(big,
                 {e2 / (1 + e1 + e2), e1 / (1 + e1 + e2), 1 / (1 + e1 + e2), 1 / (2 + e1),
                  e1 / (2 + e1), 1 / (2 + e1)},
                 1e-5);
    CHECK_THROWS_AS(softmax(big, K), ExecError);
}

TEST_CASE_TEMPLATE("slice and concat", T, float, double) {
    std::mt19937 rng(7);
    const auto x = random_tensor<T>({3, 7, 2}, {I, J, K}, rng);
    const auto a = slice(x, J, 0, 2);
    const auto b = slice(x, J, 2, 2);
    const auto c = slice(x, J, 2, 7);
    CHECK(a.shape == Dims{3, 2, 2});
    CHECK(b.shape == Dims{3, 0, 2});
    CHECK(c.shape == Dims{3, 5, 2});
    CHECK(a.data[2] == x.data[2]);       // (0, 1, 0)
    CHECK(c.data[0] == x.data[4]);       // (0, 2, 0)
    CHECK(c.data[10] == x.data[14 + 4]); // (1, 2, 0)
    const auto y = concat(std::vector<Tensor<T>>{a, b, c}, J);
    CHECK(y.labels == x.labels);
    CHECK(y.shape == x.shape);
    CHECK(y.data == x.data);
    const auto z = concat(std::vector<Tensor<T>>{slice(x, I, 1, 3), slice(x, I, 0, 1)}, I);
    CHECK(std::equal(z.data.begin(), z.data.begin() + 28, x.data.begin() + 14));
    CHECK(std::equal(z.data.begin() + 28, z.data.end(), x.data.begin()));
    const auto k = slice(x, K, 1, 2);
    CHECK(k.shape == Dims{3, 7, 1});
    CHECK(k.data[5] == x.data[11]);

    CHECK_THROWS_AS(slice(x, J, 3, 2), ExecError);
    CHECK_THROWS_AS(slice(x, J, 0, 8), ExecError);
    CHECK_THROWS_AS(slice(x, L, 0, 1), ExecError);
    CHECK_THROWS_AS(concat(std::vector<Tensor<T>>{a, slice(x, I, 0, 1)}, J), ExecError);
    CHECK_THROWS_AS(concat(std::vector<Tensor<T>>{a, permute(a, {J, I, K})}, J), ExecError);
    CHECK_THROWS_AS(concat(std::vector<Tensor<T>>{}, J), ExecError);
}

TEST_CASE("convert keeps labels and shape") {
    const auto d = make<double>({2, 1}, {J, I}, {0.1, -2.5});
    const auto f = convert<float>(d);
    CHECK(f.labels == d.labels);
    CHECK(f.shape == d.shape);
    CHECK(f.data[0] == 0.1f);
    CHECK(f.data[1] == -2.5f);
    const auto back = convert<double>(f);
    CHECK(back.data[0] == static_cast<double>(0.1f));
    CHECK(back.data[1] == -2.5);
}

TEST_CASE_TEMPLATE("unary functions and scale", T, float, double) {
    auto at = [](Unary f, double v) {
        auto t = Tensor<T>::scalar(static_cast<T>(v));
        apply(t, f);
        return static_cast<double>(t.data[0]);
    };
    const double eps = std::is_same_v<T, float> ? 1e-6 : 1e-14;
    auto near = [&](double got, double want) { CHECK(got == doctest::Approx(want).epsilon(eps)); };
    near(at(Unary::Identity, 1.5), 1.5);
    near(at(Unary::Neg, 1.5), -1.5);
    near(at(Unary::Relu, -2), 0);
    near(at(Unary::Relu, 2), 2);
    near(at(Unary::Gelu, 1), 0.8413447460685429);
    near(at(Unary::Gelu, -1), -0.15865525393145707);
    near(at(Unary::Gelu, 0), 0);
    near(at(Unary::Silu, 1), 0.7310585786300049);
    near(at(Unary::Silu, -2), -0.23840584404423515);
    near(at(Unary::Sigmoid, 0), 0.5);
    near(at(Unary::Sigmoid, 2), 0.8807970779778823);
    near(at(Unary::Sigmoid, -2), 0.11920292202211755);
    CHECK(at(Unary::Sigmoid, -1000) >= 0.0);
    CHECK(at(Unary::Sigmoid, -1000) < 1e-30);
    near(at(Unary::Sigmoid, 1000), 1);
    near(at(Unary::Tanh, 0.5), 0.46211715726000974);
    near(at(Unary::Exp, 1), 2.718281828459045);
    near(at(Unary::Log, 2), 0.6931471805599453);
    near(at(Unary::Sqrt, 2), 1.4142135623730951);
    CHECK(std::isnan(at(Unary::Sqrt, -1)));

    auto t = make<T>({3}, {I}, {1, -2, 4});
    apply(t, Unary::Neg);
    check_values(t, {-1, 2, -4});
    scale(t, T(0.5));
    check_values(t, {-0.5, 1, -2});
}
