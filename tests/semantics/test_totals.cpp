// Program totals (issue 18, semantics/totals.hpp): time with the overlap model, bytes per
// collective kind, FLOPs, MFU and peak memory per device, each figure worked out here from
// the program's sizes, not read back from the output; and ZeRO's published memory example
// (samples/zero_memory.ein).
#include "helpers.hpp"

#include "semantics/cost.hpp"
#include "semantics/totals.hpp"

#include "tests/read_file.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

using namespace shardscope;
using namespace shardscope::test;
using semantics::Plan;
using semantics::ProgramTotals;
using semantics::StepKind;

namespace {

struct Checked {
    Plan plan;
};

Checked check_program(const std::string& text) {
    const auto program = test::parse_program(text);
    Checked c{semantics::check(program, {})};
    REQUIRE_MESSAGE(c.plan.errors() == 0, plan_text(text, c.plan));
    return c;
}

ProgramTotals totals_of(const std::string& text) {
    const auto c = check_program(text);
    return semantics::program_totals(c.plan);
}

double compute_time_of(const semantics::StatementPlan& s) {
    double t = 0;
    for (const auto& st : s.steps)
        if (!semantics::is_collective(st.kind)) t += st.cost.time_s;
    return t;
}
double comm_time_of(const semantics::StatementPlan& s) {
    double t = 0;
    for (const auto& st : s.steps)
        if (semantics::is_collective(st.kind)) t += st.cost.time_s;
    return t;
}

std::string read_sample(const std::string& name) {
    auto text = test::read_file(std::string(SHARDSCOPE_SAMPLES_DIR) + "/" + name);
    REQUIRE(!text.empty());
    return text;
}

} // namespace

TEST_CASE("totals: the checker stores the program's param and train lines in its Plan") {
    // Plan::training is what program_totals prices: a front end needs only the Plan.
    const auto c = check_program("mesh 4\ndtype bf16\ndim b=8 d=16 f=32\ntensor V : f32\n"
                                 "param W V\nparam W^1\ntrain sgd master=none recompute=full "
                                 "zero=2\ny_{b f} = x_{b d} W_{d f}\n");
    const auto& tr = c.plan.training;
    CHECK(tr.params == std::vector<std::string>{"W", "V", "W^1"});
    CHECK(tr.train);
    CHECK(tr.optimizer == "sgd");
    CHECK(tr.master == "none");
    CHECK(tr.recompute);
    CHECK(tr.zero == 2);
    CHECK(tr.tensor_bytes == std::map<std::string, int>{{"V", 4}});
    CHECK(semantics::stage_plan(c.plan).training == tr);
    // Without those lines: not training, nothing trained, the defaults.
    const auto plain = check_program("mesh 4\ndim b=8 d=16 f=32\ny_{b f} = x_{b d} W_{d f}\n");
    CHECK(plain.plan.training == semantics::Training{});
    CHECK_FALSE(plain.plan.training.train);
    CHECK(plain.plan.training.params.empty());
    // The same program priced with and without its training lines differs by its weights.
    const auto trained = check_program("mesh 4\ndim b=8 d=16 f=32\nparam W\ntrain adam\n"
                                       "y_{b f} = x_{b d} W_{d f}\n");
    const auto t = semantics::program_totals(trained.plan);
    CHECK(t.training);
    CHECK(t.memory.weights > 0);
    CHECK(t.memory.optimizer > 0);
    auto untrained = trained.plan;
    untrained.training = {};
    const auto u = semantics::program_totals(untrained);
    CHECK_FALSE(u.training);
    CHECK(u.memory.weights == 0);
    CHECK(u.memory.optimizer == 0);
}

TEST_CASE("totals: data parallel inference, by hand") {
    // 4 devices, batch cut 4 ways, W replicated; f32.
    const double b = 8, d = 16, f = 32, n = 4;
    const auto t = totals_of("mesh 4\ndim b=8 d=16 f=32\nparam W\n"
                             "y_{b_0 f} = x_{b_0 d} W_{d f}\n");
    CHECK_FALSE(t.training);
    CHECK(t.devices == 4);
    CHECK(t.hardware == "h100");
    CHECK(t.flops == rel(2 * (b / n) * d * f));
    CHECK(t.memory.weights == rel(d * f * 4));
    CHECK(t.memory.gradients == 0);
    CHECK(t.memory.optimizer == 0);
    // x and y live together at the one statement.
    CHECK(t.memory.activations == rel((b / n) * d * 4 + (b / n) * f * 4));
    CHECK(t.memory.buffers == 0);
    CHECK(t.bytes_by_kind.empty());
    CHECK(t.comm_s == 0);
    CHECK(t.exposed_s == 0);
    CHECK(t.step_s == rel(t.compute_s));
    CHECK(t.compute_s > 0);
    CHECK(t.peak_flops == rel(67e12)); // f32 on h100
    CHECK(t.mfu == rel(t.flops / (t.step_s * 67e12)));
    CHECK(t.hbm_bytes == rel(80e9));
    CHECK(t.fits);
}

TEST_CASE("totals: bytes per collective kind, repetitions, and the overlap model") {
    // Megatron's row-parallel product: a partial y all-reduced over 4 devices, then an
    // independent local product.
    const double b = 64, d = 256, f = 512, n = 4;
    auto c = check_program("mesh 4\ndim b=64 d=256 f=512 e=128\n"
                           "y_{b f} = x_{b d_0} W_{d_0 f}\n"
                           "z_{b e} = u_{b f} V_{f e}\n");
    const double ar_bytes = 2 * (n - 1) / n * (b * f * 4); // ring all-reduce of y
    auto t = semantics::program_totals(c.plan);
    REQUIRE(t.bytes_by_kind.size() == 1);
    CHECK(t.bytes_by_kind[0].kind == StepKind::AllReduce);
    CHECK(t.bytes_by_kind[0].count == 1);
    CHECK(t.bytes_by_kind[0].bytes == rel(ar_bytes));
    CHECK(t.comm_bytes == rel(ar_bytes));
    CHECK(t.flops == rel(2 * b * (d / n) * f + 2 * b * f * 128));
    // The all-reduce's buffer: the whole y on every device.
    CHECK(t.memory.buffers == rel(b * f * 4));
    // Overlap: statement 0's collective hides behind statement 1's compute only.
    const double k0 = compute_time_of(c.plan.statements[0]);
    const double k1 = compute_time_of(c.plan.statements[1]);
    const double c0 = comm_time_of(c.plan.statements[0]);
    CHECK(c0 > 0);
    CHECK(t.compute_s == rel(k0 + k1));
    CHECK(t.comm_s == rel(c0));
    CHECK(t.exposed_s == rel(std::max(0.0, c0 - k1)));
    CHECK(t.serial_s == rel(k0 + k1 + c0));
    CHECK(t.step_s == rel(k0 + k1 + std::max(0.0, c0 - k1)));

    // Three repetitions of each: bytes, counts, flops and times triple. In order on two
    // streams, repetition r's all-reduce starts when its own product is done (after r-1 whole
    // repetitions and k0) and the previous all-reduce has finished; only what runs past the
    // last compute is exposed.
    for (auto& s : c.plan.statements)
        s.repeat = 3;
    t = semantics::program_totals(c.plan);
    CHECK(t.bytes_by_kind[0].count == 3);
    CHECK(t.bytes_by_kind[0].bytes == rel(3 * ar_bytes));
    CHECK(t.flops == rel(3 * (2 * b * (d / n) * f + 2 * b * f * 128)));
    CHECK(t.compute_s == rel(3 * (k0 + k1)));
    const double K = 3 * (k0 + k1);
    double comm_end = 0;
    for (int r = 0; r < 3; ++r)
        comm_end = std::max(comm_end, r * (k0 + k1) + k0) + c0;
    CHECK(t.exposed_s == rel(std::max(0.0, comm_end - K)));

    // A dependency: when the second statement reads the all-reduced y, nothing hides it.
    auto dep = check_program("mesh 4\ndim b=64 d=256 f=512 e=128\n"
                             "y_{b f} = x_{b d_0} W_{d_0 f}\n"
                             "z_{b e} = y_{b f} V_{f e}\n");
    const auto td = semantics::program_totals(dep.plan);
    CHECK(td.exposed_s == rel(comm_time_of(dep.plan.statements[0])));
    CHECK(td.step_s == rel(td.serial_s));
}

TEST_CASE("totals: weights, gradients and optimizer state follow the weights' placement") {
    // W sharded 4 ways (FSDP/ZeRO-3): each device stores d/4 x f of it, bf16.
    const double elems = (16.0 / 4) * 32;
    const std::string body = "y_{b f} = x_{b d} W_{d f}\n";
    auto t = totals_of("mesh 4\ndtype bf16\ndim b=8 d=16 f=32\nparam W\ntrain adam\n"
                       "W_{d_0 f} -> W_{d f}\n" +
                       body);
    CHECK(t.training);
    CHECK(t.memory.weights == rel(elems * 2));
    CHECK(t.memory.gradients == rel(elems * 2));
    // Adam: two f32 moments, and an f32 master copy of the bf16 weights.
    CHECK(t.memory.optimizer == rel(elems * (4 + 4 + 4)));
    CHECK(t.peak_flops == rel(989e12)); // bf16 on h100
    // The all-gather's buffer: the whole weight.
    CHECK(t.memory.buffers == rel(16.0 * 32 * 2));
    REQUIRE(t.bytes_by_kind.size() == 1);
    CHECK(t.bytes_by_kind[0].kind == StepKind::AllGather);
    CHECK(t.bytes_by_kind[0].bytes == rel(3.0 / 4 * 16 * 32 * 2));

    t = totals_of("mesh 4\ndtype bf16\ndim b=8 d=16 f=32\nparam W\ntrain adam master=none\n" +
                  body);
    CHECK(t.memory.weights == rel(16.0 * 32 * 2)); // replicated
    CHECK(t.memory.optimizer == rel(16.0 * 32 * 8));
    t = totals_of("mesh 4\ndtype bf16\ndim b=8 d=16 f=32\nparam W\ntrain sgd master=none\n" + body);
    CHECK(t.memory.optimizer == 0);
    CHECK(t.memory.gradients == rel(16.0 * 32 * 2));
    // f32 weights are their own master copy.
    t = totals_of("mesh 4\ndim b=8 d=16 f=32\nparam W\ntrain adam master=f32\n" + body);
    CHECK(t.memory.optimizer == rel(16.0 * 32 * 8));
    // A weight declared with its own type keeps it.
    t = totals_of("mesh 4\ndtype bf16\ndim b=8 d=16 f=32\ntensor W : f32\nparam W\ntrain adam\n" +
                  body);
    CHECK(t.memory.weights == rel(16.0 * 32 * 4));
    CHECK(t.memory.optimizer == rel(16.0 * 32 * 8));
    // The gradient gW is counted as the gradient, not as an activation: the peak is at
    // statement 0 with x, y and the input gy (gW would make statement 1's x + gy + gW larger).
    const auto with_grad = totals_of("mesh 4\ndim b=8 d=16 f=32\nparam W\ntrain adam\n" + body +
                                     "gW_{d f} = x_{b d} gy_{b f}\n");
    CHECK(with_grad.memory.gradients == rel(16.0 * 32 * 4));
    CHECK(with_grad.memory.activations == rel(8.0 * 16 * 4 + 8.0 * 32 * 4 + 8.0 * 32 * 4));
}

TEST_CASE("totals: saved activations per repetition, and recomputation") {
    // u: one tensor's bytes (b x d f32, replicated over 2 devices).
    const double u = 4.0 * 8 * 4;
    const std::string text = "mesh 2\ndim b=4 d=8\nparam W\ntrain adam recompute=RC\n"
                             "h_{b d} = relu(x_{b d})\n"  // 0: once
                             "a_{b d} = relu(h_{b d})\n"  // 1: the repeated block...
                             "h_{b d} := relu(a_{b d})\n" // 2: ...whose input is h
                             "y_{b d} = relu(a_{b d})\n"; // 3: once, reads a after the block
    auto run = [&](const std::string& rc) {
        auto t = text;
        t.replace(t.find("RC"), 2, rc);
        auto c = check_program(t);
        c.plan.statements[1].repeat = 3;
        c.plan.statements[2].repeat = 3;
        return std::pair{semantics::program_totals(c.plan), c.plan};
    };
    // No recomputation: h (the block's input, read before written) and a (read after the
    // block) are kept once per layer. Live at statement 1 and 2: 3 h + 3 a.
    const auto [none, plan] = run("none");
    CHECK(none.memory.activations == rel(6 * u));
    CHECK(none.recompute_s == 0);
    // Full recomputation: only the checkpoints h per layer, a once: 3 h + a.
    const auto [full, plan2] = run("full");
    CHECK(full.memory.activations == rel(4 * u));
    CHECK(full.recompute_s == rel(3 * compute_time_of(plan2.statements[1])));
    CHECK(full.compute_s == rel(none.compute_s + full.recompute_s));
    CHECK(full.flops == rel(none.flops)); // model FLOPs: recomputation excluded
    // Unrepeated, the same program keeps one copy of each: x and h at 0, h and a at 1...
    auto c =
        check_program(text.substr(0, text.find("RC")) + "none" + text.substr(text.find("RC") + 2));
    CHECK(semantics::program_totals(c.plan).memory.activations == rel(2 * u));
}

TEST_CASE("totals: HBM capacity of the presets, and what does not fit") {
    CHECK(semantics::find_hardware("h100")->hbm_bytes == rel(80e9));
    CHECK(semantics::find_hardware("a100")->hbm_bytes == rel(80e9));
    CHECK(semantics::find_hardware("tpu-v5e")->hbm_bytes == rel(16e9));
    // 3e9 f32 weights replicated: 12 GB, over tpu-v5e's 16 GB with Adam (12 + 12 + 24).
    const auto t = totals_of("mesh 2\nhw tpu-v5e\ndim d=60000 f=50000 b=2\nparam W\n"
                             "train adam\ny_{b f} = x_{b d} W_{d f}\n");
    CHECK(t.memory.weights == rel(3e9 * 4));
    CHECK(t.memory.total() > 16e9);
    CHECK_FALSE(t.fits);
    CHECK(semantics::format_totals(t).find("does NOT fit in 16 GB HBM") != std::string::npos);
}

TEST_CASE("validated: ZeRO's 7.5B-parameter memory example (Rajbhandari et al. 2020, sec. 5)") {
    // Mixed-precision Adam: 2 + 2 + K bytes per parameter, K = 12 (fp32 master weights,
    // momentum and variance). Published: 120 GB per device with data parallelism, 1.9 GB
    // with P_os+g+p over Nd = 64.
    const double psi = 7.5e9, nd = 64;
    const double per_param = 2 + 2 + 12;
    const auto text = read_sample("zero_memory.ein");
    const auto zero3 = totals_of(text);
    const double states3 = zero3.memory.weights + zero3.memory.gradients + zero3.memory.optimizer;
    CHECK(states3 == rel(per_param * psi / nd));
    CHECK(std::abs(states3 - 1.9e9) / 1.9e9 < 0.02); // published 1.9 GB (rounded)
    CHECK(zero3.memory.weights == rel(2 * psi / nd));
    CHECK(zero3.memory.optimizer == rel(12 * psi / nd));
    CHECK(zero3.fits); // with the 15 GB gathered weight, in an A100's 80 GB

    // Plain data parallelism: the weight (and so its gradient and state) replicated.
    auto dp = text;
    const std::string gather = "W_{d_{dp} f} -> W_{d f}\nexpect all-gather(dp)\n";
    REQUIRE(dp.find(gather) != std::string::npos);
    dp.replace(dp.find(gather), gather.size(), "");
    const std::string rs = "gW_{d_{dp} f} = x_{b_{dp} d} gy_{b_{dp} f}\nexpect reduce-scatter(dp)";
    REQUIRE(dp.find(rs) != std::string::npos);
    dp.replace(dp.find(rs), rs.size(),
               "gW_{d f} = x_{b_{dp} d} gy_{b_{dp} f}\nexpect all-reduce(dp)");
    const auto ddp = totals_of(dp);
    const double states = ddp.memory.weights + ddp.memory.gradients + ddp.memory.optimizer;
    CHECK(states == rel(per_param * psi));
    CHECK(states == rel(120e9)); // published 120 GB
    CHECK_FALSE(ddp.fits);

    // ZeRO stages 1 (P_os) and 2 (P_os+g) on the replicated weight: published 31.4 GB and
    // 16.6 GB (Figure 1, Nd = 64).
    const std::string train = "train adam master=f32 recompute=none";
    REQUIRE(dp.find(train) != std::string::npos);
    auto stage = [&](int z) {
        auto text = dp;
        text.replace(text.find(train), train.size(), train + " zero=" + std::to_string(z));
        const auto t = totals_of(text);
        return t.memory.weights + t.memory.gradients + t.memory.optimizer;
    };
    const double os = stage(1), osg = stage(2);
    CHECK(os == rel(2 * psi + 2 * psi + 12 * psi / nd));
    CHECK(osg == rel(2 * psi + (2 + 12) * psi / nd));
    CHECK(std::abs(os - 31.4e9) / 31.4e9 < 0.01);
    CHECK(std::abs(osg - 16.6e9) / 16.6e9 < 0.01);
    CHECK(stage(0) == rel(states));
}

TEST_CASE("totals: ZeRO stages 1 and 2 partition over the axes the weight is replicated over") {
    // A 2x4 mesh: W sharded over tp (axis 1), replicated over dp (axis 0, 2 devices).
    const double local = 16.0 * 32 / 4; // elements per device
    const std::string prog = "mesh dp=2 tp=4\ndtype bf16\ndim b=8 d=16 f=32\nparam W\n"
                             "train adam ZERO\ny_{b f_{tp}} = x_{b d} W_{d f_{tp}}\n";
    auto with = [&](const std::string& z) {
        auto t = prog;
        t.replace(t.find("ZERO"), 4, z);
        return totals_of(t);
    };
    const auto z0 = with("zero=0"), z1 = with("zero=1"), z2 = with("zero=2");
    CHECK(z0.memory.gradients == rel(local * 2));
    CHECK(z0.memory.optimizer == rel(local * 12));
    CHECK(z1.memory.gradients == rel(local * 2));
    CHECK(z1.memory.optimizer == rel(local * 12 / 2));
    CHECK(z2.memory.gradients == rel(local * 2 / 2));
    CHECK(z2.memory.optimizer == rel(local * 12 / 2));
    CHECK(z2.memory.weights == rel(local * 2)); // the weights stay as placed
}

TEST_CASE("totals: a per-layer parameter of a repeated block is stored once per layer") {
    // Two weights of one layer, tp-sharded, in a block of 4 layers: 4 copies of each.
    const std::string layer = "mesh tp=2\ndim b=8 d=256 f=1024\nparam W^1 W^2\n"
                              "y_{b d} = x_{b d}\nrepeat l=4\n"
                              "  u_{b f_{tp}} = y_{b d} W^1_{d f_{tp}}\n"
                              "  o_{b d} = phi(u_{b f_{tp}}) W^2_{f_{tp} d}\n"
                              "  y_{b d} := y_{b d} + o_{b d}\nend\n";
    auto c = check_program(layer);
    const auto t = semantics::program_totals(c.plan);
    const double one_layer = 2 * (256.0 * 1024 / 2) * 4; // two f32 shards of d x f/2
    CHECK(t.memory.weights == rel(4 * one_layer));
    auto trained = check_program(layer + "train adam master=f32\n");
    const auto tt = semantics::program_totals(trained.plan);
    CHECK(tt.memory.gradients == rel(4 * one_layer));
    CHECK(tt.memory.optimizer == rel(4 * 2 * one_layer)); // two f32 moments; f32 is its own master
}

TEST_CASE("totals: a chain of products stores every factor it moves in its last layout") {
    // A and B gathered by one chain: both are held whole (64x64 f32 each) after it.
    const double full = 64 * 64 * 4;
    const auto two =
        totals_of("mesh 4\ndim i=64 j=64 k=64\nA_{i_0 j} B_{j k_0} -> A_{i j} B_{j k}\n");
    const auto one = totals_of("mesh 4\ndim i=64 j=64 k=64\nA_{i_0 j} -> A_{i j}\n");
    CHECK(one.memory.activations == rel(full));
    CHECK(two.memory.activations == rel(2 * full));
}

TEST_CASE("totals: a statement reading a chain's other stored factor waits for the chain") {
    // The chain gathers A and B; z reads only B, which the chain stores besides its result A:
    // z's compute starts after the chain's collectives, so nothing overlaps them.
    auto c = check_program("mesh 4\ndim i=1024 j=1024 k=1024\n"
                           "A_{i_0 j} B_{j k_0} -> A_{i j} B_{j k}\n"
                           "z_{j k} = relu(B_{j k})\n");
    REQUIRE(c.plan.statements.size() == 2u);
    REQUIRE(c.plan.statements[0].stores().size() == 2u);
    const auto t = semantics::program_totals(c.plan);
    CHECK(t.comm_s == rel(comm_time_of(c.plan.statements[0])));
    CHECK(t.comm_s > 0);
    CHECK(t.exposed_s == rel(t.comm_s));
    CHECK(t.step_s == rel(t.serial_s));
}

TEST_CASE("totals: a repeat count of any size is timed without running every repetition") {
    // One layer: a tp-sharded product whose all-reduce the next layer's product waits for.
    // Up to 4096 repetitions are simulated one by one; beyond, the overlap model's state is
    // extrapolated from its periodic pattern. A count of 10^12 took hours one at a time.
    auto with_count = [](const std::string& count) {
        return totals_of("mesh tp=4\ndim b=64 d=512 f=2048\nh_{b d} = x_{b d}\nrepeat l=" + count +
                         "\n  u_{b f_{tp}} = h_{b d} W^1_{d f_{tp}}\n"
                         "  h_{b d} := u_{b f_{tp}} W^2_{f_{tp} d}\nend\n");
    };
    const auto a = with_count("2000"), b = with_count("4000");
    const double per_layer = (b.step_s - a.step_s) / 2000; // both simulated exactly
    REQUIRE(per_layer > 0);
    for (const char* count : {"5000", "1000000", "1000000000000"}) {
        CAPTURE(count);
        const auto t = with_count(count);
        const double n = std::stod(count);
        CHECK(t.step_s == doctest::Approx(a.step_s + (n - 2000) * per_layer).epsilon(1e-9));
        CHECK(t.comm_s == doctest::Approx(a.comm_s * n / 2000).epsilon(1e-9));
    }
}
