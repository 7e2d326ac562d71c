// The GPU backends' host side, where no GPU is needed: the index math of the device kernels
// (strides, reductions, the einsum as one strided batched GEMM with cuBLAS's column-major
// arguments) executed by loops here against kernels.hpp; the LocalCompute seam of the
// interpreter; the GPU-count messages; and, without a GPU, that the cuda entry points refuse
// with a DeviceError instead of running or hanging.
#include "exec/compute.hpp"
#include "exec/device.hpp"
#include "exec/einsum_plan.hpp"
#include "exec/interpreter.hpp"
#include "exec/kernels.hpp"
#include "exec/layout.hpp"
#include "frontend/document.hpp"
#include "parser/parser.hpp"
#include "semantics/checker.hpp"
#include "semantics/report.hpp"
#include "tests/exec/mock_device.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <random>
#include <string>
#include <vector>

using namespace shardscope;
using namespace shardscope::exec;

namespace {

using Dims = std::vector<std::int64_t>;

Tensor<double> random_tensor(Dims shape, std::vector<int> labels, std::mt19937& rng) {
    auto t = Tensor<double>::zeros(std::move(shape), std::move(labels));
    std::uniform_real_distribution<double> u(-1, 1);
    for (auto& v : t.data)
        v = u(rng);
    return t;
}

/// The walk of the device kernels (cuda_kernels.cu): output position i, row-major over
/// `shape`, reads the input at Σ digit_d · strides[d].
std::int64_t walk_offset(const Dims& shape, const Dims& strides, std::int64_t i) {
    std::int64_t off = 0;
    for (std::size_t d = shape.size(); d-- > 0;) {
        off += (i % shape[d]) * strides[d];
        i /= shape[d];
    }
    return off;
}

Tensor<double> permute_by_walk(const Tensor<double>& x, const std::vector<int>& to) {
    Dims shape;
    for (int l : to)
        shape.push_back(x.shape[static_cast<std::size_t>(x.dim_of(l))]);
    auto r = Tensor<double>::zeros(shape, to);
    const auto s = strides_for(x.shape, x.labels, to);
    for (std::int64_t i = 0; i < r.size(); ++i)
        r.data[static_cast<std::size_t>(i)] =
            x.data[static_cast<std::size_t>(walk_offset(shape, s, i))];
    return r;
}

Tensor<double> reduce_by_walk(const Tensor<double>& x, const std::vector<int>& out) {
    const auto p = plan_reduce(x.shape, x.labels, out);
    auto r = Tensor<double>::zeros(p.out_shape, out);
    for (std::int64_t i = 0; i < p.out_count; ++i) {
        const auto base = walk_offset(p.out_shape, p.out_strides, i);
        double acc = 0;
        for (std::int64_t q = 0; q < p.red_count; ++q)
            acc +=
                x.data[static_cast<std::size_t>(base + walk_offset(p.red_shape, p.red_strides, q))];
        r.data[static_cast<std::size_t>(i)] = acc;
    }
    return r;
}

/// What cuda::einsum does for two operands, with loops for its kernels and the column-major
/// GEMM called with exactly the arguments cuda_compute.cpp passes to cuBLAS.
Tensor<double> einsum_by_plan(const Tensor<double>& a0, const Tensor<double>& b0,
                              const std::vector<int>& out) {
    const auto p = plan_gemm(a0.shape, a0.labels, b0.shape, b0.labels, out);
    const auto a = permute_by_walk(reduce_by_walk(a0, p.a_keep), p.a_order);
    const auto b = permute_by_walk(reduce_by_walk(b0, p.b_keep), p.b_order);
    auto c = Tensor<double>::zeros(p.c_shape, p.c_labels);
    REQUIRE(a.labels == p.a_order);
    REQUIRE(b.labels == p.b_order);
    REQUIRE(a.size() == p.batch * p.m * p.k);
    REQUIRE(b.size() == p.batch * p.k * p.n);
    REQUIRE(c.size() == p.batch * p.m * p.n);
    gemm_colmajor_reference(p.call(), b.data.data(), a.data.data(), c.data.data());
    return permute_by_walk(c, out);
}

double max_diff(const Tensor<double>& x, const Tensor<double>& y) {
    REQUIRE(x.shape == y.shape);
    REQUIRE(x.labels == y.labels);
    double d = 0;
    for (std::size_t i = 0; i < x.data.size(); ++i)
        d = std::max(d, std::abs(x.data[i] - y.data[i]));
    return d;
}

} // namespace

TEST_CASE("einsum plan: permute and reduce walks match kernels.hpp") {
    std::mt19937 rng(7);
    const auto x = random_tensor({2, 3, 4, 5}, {10, 11, 12, 13}, rng);
    for (const std::vector<int>& to :
         {std::vector<int>{13, 12, 11, 10}, {11, 10, 13, 12}, {10, 11, 12, 13}})
        CHECK(max_diff(permute_by_walk(x, to), permute(x, to)) == 0);
    for (const std::vector<int>& out : {std::vector<int>{12}, {13, 10}, {}, {11, 12, 13, 10}})
        CHECK(max_diff(reduce_by_walk(x, out), reduce(x, out, PartialOp::Sum)) < 1e-12);
    // Broadcast: a label of out that x lacks has stride 0.
    CHECK(strides_for({3, 4}, {1, 2}, {2, 9, 1}, true) == Dims{1, 0, 4});
    CHECK_THROWS_AS(strides_for({3, 4}, {1, 2}, {2}), ExecError);
    CHECK_THROWS_AS(plan_reduce({3}, {1}, {2}), ExecError);
}

TEST_CASE("einsum plan: matmul, batched, transposed and scalar cases as one GEMM") {
    // ij,jk->ik: no batch, m=i, k=j, n=k; cuBLAS computes C^T = B^T A^T (M=n, N=m).
    const auto p = plan_gemm({2, 3}, {0, 1}, {3, 5}, {1, 2}, {0, 2});
    CHECK(p.batch == 1);
    CHECK(p.m == 2);
    CHECK(p.k == 3);
    CHECK(p.n == 5);
    CHECK(p.call().M == 5);
    CHECK(p.call().N == 2);
    CHECK(!p.a_trans);
    CHECK(!p.b_trans);
    CHECK(p.c_labels == std::vector<int>{0, 2});
    // bsd,fd->bsf (a weight stored [out, in], as nn.Linear keeps it): B is read transposed.
    const auto w = plan_gemm({2, 3, 4}, {8, 9, 2}, {5, 4}, {3, 2}, {8, 9, 3});
    CHECK(w.b_trans);
    CHECK(w.b_order == std::vector<int>{3, 2});
    CHECK(w.call().trans_first);
    CHECK(w.call().ld_first == 4);
    // ji,jk->ik: A stored [k][m] is read transposed.
    const auto t = plan_gemm({3, 2}, {1, 0}, {3, 5}, {1, 2}, {0, 2});
    CHECK(t.a_trans);
    CHECK(t.call().ld_second == 2);
    // bij,bjk->bki: batch b, result permuted afterwards.
    const auto q = plan_gemm({4, 2, 3}, {9, 0, 1}, {4, 3, 5}, {9, 1, 2}, {9, 2, 0});
    CHECK(q.batch == 4);
    CHECK(q.c_labels == std::vector<int>{9, 0, 2});
    CHECK(q.call().stride_c == 10);
    // Private labels are summed out first: ij,k->i keeps i of a, and b becomes a scalar.
    const auto r = plan_gemm({2, 3}, {0, 1}, {4}, {2}, {0});
    CHECK(r.a_keep == std::vector<int>{0});
    CHECK(r.b_keep.empty());
    CHECK(r.k == 1);
    CHECK_THROWS_AS(plan_gemm({2}, {0}, {3}, {0}, {0}), ExecError);
    CHECK_THROWS_AS(plan_gemm({2}, {0}, {3}, {1}, {7}), ExecError);
}

TEST_CASE("einsum plan: random two-operand einsums through the GEMM arguments match einsum") {
    std::mt19937 rng(11);
    int transposed = 0; // trials where an operand is read transposed instead of permuted
    for (int trial = 0; trial < 400; ++trial) {
        // Up to six labels with extents 0..3 (0: empty shards), random operands and output.
        std::vector<std::int64_t> ext(6);
        for (auto& e : ext)
            e = std::uniform_int_distribution<int>(trial % 7 == 0 ? 0 : 1, 3)(rng);
        auto pick = [&] {
            std::vector<int> ls;
            for (int l = 0; l < 6; ++l)
                if (rng() % 2) ls.push_back(l);
            std::shuffle(ls.begin(), ls.end(), rng);
            return ls;
        };
        const auto la = pick(), lb = pick();
        Dims sa, sb;
        for (int l : la)
            sa.push_back(ext[static_cast<std::size_t>(l)]);
        for (int l : lb)
            sb.push_back(ext[static_cast<std::size_t>(l)]);
        std::vector<int> both = la;
        for (int l : lb)
            if (std::find(both.begin(), both.end(), l) == both.end()) both.push_back(l);
        std::vector<int> out;
        for (int l : both)
            if (rng() % 2) out.push_back(l);
        std::shuffle(out.begin(), out.end(), rng);
        const auto a = random_tensor(sa, la, rng), b = random_tensor(sb, lb, rng);
        const auto want = einsum<double>({&a, &b}, out);
        const auto got = einsum_by_plan(a, b, out);
        INFO("trial " << trial);
        CHECK(max_diff(got, want) < 1e-9);
        const auto p = plan_gemm(sa, la, sb, lb, out);
        transposed += p.a_trans || p.b_trans;
    }
    CHECK(transposed >= 20);
}

TEST_CASE("functions: fn_of keeps the notation's conventions") {
    CHECK(fn_of("phi", false) == Fn::Gelu);
    CHECK(fn_of("gelu", true) == Fn::Gelu);
    CHECK(fn_of("scale", false) == Fn::Half);
    CHECK(fn_of("mine", true) == Fn::Half);    // a declared linear function
    CHECK(fn_of("mine", false) == Fn::Tanh);   // a declared elementwise one
    CHECK(fn_of("dmine", false) == Fn::Dtanh); // its derivative
    CHECK(fn_of("dmine", true) == Fn::Half);
    CHECK(fn_of("tanh", false) == Fn::Tanh);
    CHECK(fn_eval(Fn::Log, -std::exp(1.0)) == doctest::Approx(1.0));
    CHECK(fn_eval(Fn::Dmax, 0.0) == 1.0);
    CHECK(fn_eval(Fn::Relu, -2.0) == 0.0);
}

namespace {

/// The host compute, counting what the interpreter asks of it.
class CountingCompute final : public LocalCompute<double> {
public:
    std::atomic<int> einsums{0}, functions{0}, others{0};
    const char* name() const override { return "counting"; }
    Tensor<double> upload(Tensor<double> x) override { return host_.upload(std::move(x)); }
    Tensor<double> download(const Tensor<double>& x) override { return host_.download(x); }
    Tensor<double> zeros(std::vector<std::int64_t> shape, std::vector<int> labels) override {
        return host_.zeros(std::move(shape), std::move(labels));
    }
    void accumulate(Tensor<double>& acc, const Tensor<double>& x) override {
        host_.accumulate(acc, x);
    }
    void scale(Tensor<double>& x, double factor) override { host_.scale(x, factor); }
    Tensor<double> permute(const Tensor<double>& x, const std::vector<int>& labels) override {
        return host_.permute(x, labels);
    }
    Tensor<double> slice(const Tensor<double>& x, int label, std::int64_t begin,
                         std::int64_t end) override {
        return host_.slice(x, label, begin, end);
    }
    void copy_rows(Tensor<double>& dst, std::int64_t dst_at, std::int64_t dst_pitch,
                   const Tensor<double>& src, std::int64_t src_at, std::int64_t src_pitch,
                   std::int64_t width, std::int64_t rows) override {
        host_.copy_rows(dst, dst_at, dst_pitch, src, src_at, src_pitch, width, rows);
    }
    const double* buffer(const Tensor<double>& x) override { return host_.buffer(x); }
    double* writable(Tensor<double>& x) override { return host_.writable(x); }
    Tensor<double> einsum(const std::vector<const Tensor<double>*>& in,
                          const std::vector<int>& out) override {
        ++einsums;
        return host_.einsum(in, out);
    }
    void function(Tensor<double>& x, Fn f) override {
        ++functions;
        host_.function(x, f);
    }
    Tensor<double> reduce(const Tensor<double>& x, const std::vector<int>& out,
                          PartialOp r) override {
        ++others;
        return host_.reduce(x, out, r);
    }
    Tensor<double> binary(const Tensor<double>& a, const Tensor<double>& b, Binary op,
                          const std::vector<int>& out) override {
        ++others;
        return host_.binary(a, b, op, out);
    }
    void softmax(Tensor<double>& x, int label) override {
        ++others;
        host_.softmax(x, label);
    }

private:
    HostCompute<double> host_;
};

/// A program parsed and checked with small default ranges (REQUIREs no errors).
struct CheckedProgram {
    parser::ParseResult parsed;
    semantics::Plan plan;
    LabelTable labels;
    MeshShape mesh;
};
CheckedProgram check_program(const std::string& src) {
    semantics::CheckOptions co;
    co.small_defaults = true;
    auto checked = frontend::check_text("t.ein", src, co);
    REQUIRE(checked.syntax_ok());
    CheckedProgram c{std::move(checked.parsed), std::move(checked.plan), {}, {}};
    REQUIRE_MESSAGE(c.plan.errors() == 0, semantics::format_plan(c.plan, "t.ein"));
    c.labels.add(c.plan);
    c.mesh = mesh_shape(c.plan.mesh);
    return c;
}

} // namespace

TEST_CASE("interpreter: local arithmetic goes through the LocalCompute it is given") {
    const std::string src = "mesh 2\ndim b=4 d=6 f=8\n"
                            "h_{b f_0} = phi(x_{bd} w1_{d f_0})\n"
                            "y_{bd} = h_{b f_0} w2_{f_0 d}\n";
    const auto checked = check_program(src);
    // Plain references, not a structured binding: clang 14 cannot capture those in lambdas.
    const auto& plan = checked.plan;
    const auto& labels = checked.labels;
    const auto& mesh = checked.mesh;
    std::vector<Tensor<double>> host(2), counted(2);
    CountingCompute counting;
    for (auto* compute : {static_cast<CountingCompute*>(nullptr), &counting})
        run_sim(mesh, [&](Communicator& comm) {
            RankProgram<double> prog(plan, labels, comm, {DataMode::Random, 3}, compute);
            for (std::size_t s = 0; s < plan.statements.size(); ++s)
                prog.run(s);
            (compute ? counted : host)[static_cast<std::size_t>(comm.rank())] = prog.stored("y");
        });
    CHECK(counting.einsums >= 4); // two statements on two ranks
    CHECK(counting.functions >= 2);
    for (int r = 0; r < 2; ++r)
        CHECK(max_diff(counted[static_cast<std::size_t>(r)], host[static_cast<std::size_t>(r)]) ==
              0);
}

TEST_CASE("mock device: the shards stay on the device between steps and statements") {
    // Three statements with collectives on a 2x2 mesh; every rank's tensors on a mock device.
    const std::string src = "mesh 2x2\ndim b=4 d=6 f=8\n"
                            "h_{b f_0} = phi(x_{b_1 d} w1_{d f_0})\n"
                            "y_{b_1 d} = h_{b f_0} w2_{f_0 d}\n"
                            "y_{b_1 d} += 2 y_{b_1 d}\n";
    const auto checked = check_program(src);
    // Plain references, not a structured binding: clang 14 cannot capture those in lambdas.
    const auto& plan = checked.plan;
    const auto& labels = checked.labels;
    const auto& mesh = checked.mesh;
    const auto ranks = static_cast<std::size_t>(mesh.device_count());
    std::vector<Tensor<double>> host(ranks), dev(ranks);
    std::vector<testing::MockCounts> counts(ranks); // by rank
    std::vector<long> downloads_while_running(ranks, -1);
    std::atomic<long> collectives{0};
    for (bool mock : {false, true})
        run_sim(mesh, [&](Communicator& comm) {
            const auto r = static_cast<std::size_t>(comm.rank());
            testing::MockDevice<double> device(counts[r]);
            RankProgram<double> prog(plan, labels, comm, {DataMode::Random, 3},
                                     mock ? &device : nullptr);
            for (std::size_t s = 0; s < plan.statements.size(); ++s) {
                prog.run(s);
                if (mock) collectives += static_cast<long>(prog.executed().size());
            }
            if (mock) downloads_while_running[r] = counts[r].downloads;
            (mock ? dev : host)[r] = prog.stored("y");
        });
    CHECK(collectives > 0);
    for (std::size_t r = 0; r < ranks; ++r) {
        // Inputs (x, w1, w2) and the constant 2 went up once each; nothing came down until
        // the result was asked for.
        CHECK(downloads_while_running[r] == 0);
        CHECK(counts[r].uploads == 4);
        CHECK(counts[r].downloads == 1);
        CHECK(counts[r].operations > 10);
        // Every write went to a buffer no other tensor shared: values no later step reads are
        // handed on, not copied.
        CHECK(counts[r].copies_on_write == 0);
        CHECK(!dev[r].on_device());
        CHECK(dev[r].shape == host[r].shape);
        CHECK(dev[r].data == host[r].data);
    }
    // Preloaded inputs (benchmarks): the run itself uploads only the constant.
    std::vector<testing::MockCounts> pre(ranks);
    std::vector<long> uploads_in_run(ranks, -1);
    run_sim(mesh, [&](Communicator& comm) {
        const auto r = static_cast<std::size_t>(comm.rank());
        testing::MockDevice<double> device(pre[r]);
        RankProgram<double> prog(plan, labels, comm, {DataMode::Random, 3}, &device);
        for (std::size_t s = 0; s < plan.statements.size(); ++s)
            prog.preload(s);
        const long before = pre[r].uploads;
        for (std::size_t s = 0; s < plan.statements.size(); ++s)
            prog.run(s);
        uploads_in_run[r] = pre[r].uploads - before;
        dev[r] = prog.stored("y");
    });
    for (std::size_t r = 0; r < ranks; ++r) {
        CHECK(uploads_in_run[r] == 1);
        CHECK(pre[r].uploads == 4);
        CHECK(dev[r].data == host[r].data);
    }
}

TEST_CASE("mock device: host and device tensors cross only through upload and download") {
    testing::MockCounts counts;
    testing::MockDevice<double> a(counts), b(counts);
    HostCompute<double> host;
    auto h = Tensor<double>::zeros({2, 3}, {0, 1});
    h.data = {1, 2, 3, 4, 5, 6};
    // A host tensor where a device one belongs, another device's tensor, a device tensor on
    // the host: each refused.
    CHECK_THROWS_AS(a.permute(h, {1, 0}), ExecError);
    const auto d = a.upload(h);
    CHECK(d.on_device());
    CHECK(d.data.empty());
    CHECK_THROWS_AS(b.permute(d, {1, 0}), ExecError);
    CHECK_THROWS_AS(host.permute(d, {1, 0}), ExecError);
    CHECK_THROWS_AS(host.download(d), ExecError);
    // Writes into a shared tensor go to a copy (as on the GPU): d is unchanged.
    auto e = d;
    a.scale(e, 10.0);
    CHECK(counts.copies_on_write == 1);
    CHECK(a.download(d).data == h.data);
    CHECK(a.download(e).data == std::vector<double>{10, 20, 30, 40, 50, 60});
    auto w = d;
    a.writable(w)[0] = 7;
    CHECK(a.download(d).data[0] == 1);
    CHECK(a.download(w).data[0] == 7);
    // copy_rows: rows of a pitched block, and out of bounds refused.
    auto z = a.zeros({2, 2}, {0, 2});
    a.copy_rows(z, 0, 2, d, 1, 3, 2, 2);
    CHECK(a.download(z).data == std::vector<double>{2, 3, 5, 6});
    CHECK_THROWS_AS(a.copy_rows(z, 1, 2, d, 1, 3, 2, 2), ExecError);
    CHECK(a.download(a.slice(d, 1, 1, 3)).data == std::vector<double>{2, 3, 5, 6});
    CHECK(counts.uploads == 1);
}

TEST_CASE("GPU counts: nccl needs a GPU per rank, cuda shares them") {
    CHECK(gpu_shortage("cuda", 8, 1).empty());
    CHECK(gpu_shortage("nccl", 2, 2).empty());
    const auto m = gpu_shortage("nccl", 8, 1);
    CHECK(m.find("1 GPU for 8 ranks") != std::string::npos);
    CHECK(m.find("--backend cuda") != std::string::npos);
    CHECK(gpu_shortage("cuda", 1, 0).find("needs an NVIDIA GPU") != std::string::npos);
    CHECK(device_of_rank(5, 2) == 1);
    CHECK(device_of_rank(5, 8) == 5);
    CHECK(device_of_rank(3, 0) == 0);
}

TEST_CASE("without a GPU the cuda entry points refuse with a DeviceError and never hang") {
    const auto probe = probe_gpus();
    CHECK((probe.devices == 0) == !probe.problem.empty());
    if (!cuda_built()) {
        CHECK(probe.problem.find("built without CUDA") != std::string::npos);
        CHECK(!nccl_built());
    }
    if (probe.devices > 0) return; // the GPU tests (tests/exec/test_cuda.cpp) run instead
    CHECK_THROWS_AS(make_cuda_compute<float>(0), DeviceError);
    std::atomic<int> bodies{0};
    CHECK_THROWS_AS(run_cuda(MeshShape{{2, 2}, {}}, [&](Communicator&, int) { ++bodies; }),
                    DeviceError);
    CHECK(bodies == 0);
}
