// Worked cases for the checker: every row of NOTATION.md section 9, the sequence-parallel
// example at two sizes, DTensor matmul/redistribute cases (PyTorch's own tests, translated),
// scaling-book matmuls in bracket form and cost figures computed by hand (section 8). The
// property test of einsum rules 1-2 on random programs is in rules/test_einsum.cpp.
#include "helpers.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace shardscope;
using namespace shardscope::test;
using semantics::CheckOptions;
using semantics::Plan;
using semantics::StatementPlan;
using semantics::StepKind;
using semantics::TensorLayout;

namespace {

bool has_code(const Plan& p, const std::string& code) {
    return std::any_of(p.diagnostics.begin(), p.diagnostics.end(),
                       [&](const auto& d) { return d.code == code; });
}

/// The steps of one kind, in order.
std::vector<const semantics::Step*> steps_of(const StatementPlan& s, StepKind kind) {
    std::vector<const semantics::Step*> out;
    for (const auto& st : s.steps)
        if (st.kind == kind) out.push_back(&st);
    return out;
}

/// The only step of `kind` (REQUIREs exactly one).
const semantics::Step& one_step(const Checked& c, const StatementPlan& s, StepKind kind) {
    const auto v = steps_of(s, kind);
    REQUIRE_MESSAGE(v.size() == 1, c.text());
    return *v.front();
}

std::vector<std::string> sorted(std::vector<std::string> v) {
    std::sort(v.begin(), v.end());
    return v;
}

/// One row of a table: program, the collectives of its last statement, its result placement.
void check_row(const std::string& src, const std::string& tensor, const std::string& collectives,
               const std::string& placement) {
    const auto c = run(src);
    CHECK_MESSAGE(c.plan.errors() == 0, c.text());
    const auto& s = stmt(c, tensor);
    CHECK_MESSAGE(cols(c, s) == collectives, c.text());
    CHECK_MESSAGE(pl(s.result) == placement, c.text());
    CHECK_MESSAGE(!s.chosen, c.text()); // every row is computable as written
}

} // namespace

// =============================================================================================
// (a) NOTATION.md section 9, row by row.

TEST_CASE("section 9: dot product over a sharded index") {
    check_row("mesh 4\nz = x_{r_0 e} y_{r_0 e}\n", "z", "all-reduce(0)", "R");
}

TEST_CASE("section 9: matrix-vector product, contraction sharded") {
    check_row("mesh 4\nz_{d} = W_{d r_0 f} x_{r_0 f}\n", "z", "all-reduce(0)", "R");
}

TEST_CASE("section 9: reduce-scatter onto the output's device index") {
    check_row("mesh 4\nz_{r_0 c} = W_{r c r'_0 f} x_{r'_0 f}\n", "z", "reduce-scatter(0)", "S(0)");
}

TEST_CASE("section 9: Megatron TP MLP is one all-reduce") {
    check_row("mesh 4\nz_{bsd} = W^1_{d r_0 f} phi(W^0_{r_0 f d'} x_{bsd'})\n", "z",
              "all-reduce(0)", "R");
    // The all-reduce is the last step: phi runs on the sharded (not partial) intermediate.
    const auto c = run("mesh 4\nz_{bsd} = W^1_{d r_0 f} phi(W^0_{r_0 f d'} x_{bsd'})\n");
    const auto& s = stmt(c, "z");
    REQUIRE_MESSAGE(!s.steps.empty(), c.text());
    CHECK_MESSAGE(s.steps.back().kind == StepKind::AllReduce, c.text());
}

TEST_CASE("section 9: device index kept on the left-hand side") {
    check_row("mesh 4\nz_{r_0} = x_{r_0 c} y_{r_0 c}\n", "z", "none", "S(0)");
}

TEST_CASE("section 9: unsharding is an all-gather") {
    check_row("mesh 4\nx_{i_0 j} -> x_{i j}\n", "x", "all-gather(0)", "R");
}

TEST_CASE("section 9: moving the sharded dimension is an all-to-all") {
    check_row("mesh 4\nx_{i_0 j} -> x_{i j_0}\n", "x", "all-to-all(0)", "S(1)");
}

TEST_CASE("section 9: bracket form, unreduced result") {
    check_row("mesh X=4\nC[I, K]{U_X} = A[I, J_X] B[J_X, K]\n", "C", "none", "P(sum)");
}

TEST_CASE("section 9: non-linearity after a sharded contraction") {
    check_row("mesh 4\ny_{i} = relu(x_{i k_0} w_{k_0})\n", "y", "all-reduce(0)", "R");
}

TEST_CASE("section 9: broadcast sum on a 2x2 mesh") {
    check_row("mesh 2x2\nz_{m_0 n_1} = a_{m_0} + b_{n_1}\n", "z", "none", "S(0), S(1)");
}

// =============================================================================================
// (b) Sequence parallelism (section 9, last paragraph).

namespace {
std::string sequence_parallel(int b, int s) {
    return "mesh 2\ndim b=" + std::to_string(b) + " s=" + std::to_string(s) +
           " d=64 e=256\nsplit s -> r t\nsplit e -> r' f\n"
           "z_{b r_0 t d} = W^1_{d r'_0 f} phi(W^0_{r'_0 f d'} x_{b r_0 t d'})\n";
}
} // namespace

TEST_CASE("sequence parallel at the given sizes: all-gather x, reduce-scatter at the end") {
    const auto c = run(sequence_parallel(1, 64));
    REQUIRE_MESSAGE(c.plan.errors() == 0, c.text());
    const auto& s = stmt(c, "z");
    CHECK_MESSAGE(cols(c, s) == "all-gather(0), reduce-scatter(0)", c.text());
    CHECK_MESSAGE(s.chosen, c.text());
    CHECK_MESSAGE(pl(s.result) == "S(1)", c.text());
    // The all-gather is of x, before the first product; the reduce-scatter is last.
    REQUIRE_MESSAGE(s.steps.size() >= 2, c.text());
    CHECK_MESSAGE(s.steps.front().kind == StepKind::AllGather, c.text());
    CHECK_MESSAGE(s.steps.front().tensor == "x", c.text());
    CHECK_MESSAGE(s.steps.back().kind == StepKind::ReduceScatter, c.text());
    // Ranges: t = 64/2, f = 256/2.
    CHECK_MESSAGE(shape(s.result.global_shape) == "1x2x32x64", c.text());
    CHECK_MESSAGE(shape(s.result.local_shape) == "1x1x32x64", c.text());
    CHECK_MESSAGE(shape(operand(c, s, "W^0").global_shape) == "2x128x64", c.text());
    // The other plan (gather both weights) is listed and is dearer here.
    bool weights = false;
    for (const auto& a : s.alternatives) {
        CHECK_MESSAGE(a.time_s >= s.cost.time_s, c.text());
        weights |= join(a.collectives) == "all-gather(0), all-gather(0)";
    }
    CHECK_MESSAGE(weights, c.text());
}

TEST_CASE("sequence parallel with a large b*s: gathering both weights is cheaper") {
    const auto c = run(sequence_parallel(64, 4096));
    REQUIRE_MESSAGE(c.plan.errors() == 0, c.text());
    const auto& s = stmt(c, "z");
    CHECK_MESSAGE(s.chosen, c.text());
    CHECK_MESSAGE(cols(c, s) == "all-gather(0), all-gather(0)", c.text());
    CHECK_MESSAGE(steps_of(s, StepKind::ReduceScatter).empty(), c.text());
    std::vector<std::string> gathered;
    for (const auto* st : steps_of(s, StepKind::AllGather))
        gathered.push_back(st->tensor);
    CHECK_MESSAGE(join(sorted(gathered)) == "W^0, W^1", c.text());
    CHECK_MESSAGE(pl(s.result) == "S(1)", c.text());
    // The activation plan is listed as an alternative, with a higher time, and a note says so.
    bool activation_plan = false;
    for (const auto& a : s.alternatives) {
        if (join(a.collectives) == "all-gather(0), reduce-scatter(0)") {
            activation_plan = true;
            CHECK_MESSAGE(a.time_s > s.cost.time_s, c.text());
        }
    }
    CHECK_MESSAGE(activation_plan, c.text());
    CHECK_MESSAGE(has_code(c.plan, "S401"), c.text());
    // Only the weights travel: 2 · (1/2 · 2·128·64·4 bytes).
    CHECK_MESSAGE(s.cost.comm_bytes_per_device == rel(2 * 0.5 * 2 * 128 * 64 * 4), c.text());
}

TEST_CASE("Megatron MLP: the implied all-reduce is kept, a cheaper weight gather is a note") {
    SUBCASE("large activations, small weights: note S400, plan unchanged") {
        const auto c = run("mesh 4\ndim b=64 s=4096 d=256 f=64\n"
                           "z_{bsd} = W^1_{d r_0 f} phi(W^0_{r_0 f d'} x_{bsd'})\n");
        const auto& s = stmt(c, "z");
        CHECK_MESSAGE(cols(c, s) == "all-reduce(0)", c.text());
        CHECK_MESSAGE(!s.chosen, c.text());
        CHECK_MESSAGE(has_code(c.plan, "S400"), c.text());
        REQUIRE_MESSAGE(!s.alternatives.empty(), c.text());
        CHECK_MESSAGE(s.alternatives.front().time_s < s.cost.time_s, c.text());
        CHECK_MESSAGE(join(s.alternatives.front().collectives) == "all-gather(0), all-gather(0)",
                      c.text());
    }
    SUBCASE("small activations, large weights: no note") {
        const auto c = run("mesh 4\ndim b=1 s=8 d=4096 f=4096\n"
                           "z_{bsd} = W^1_{d r_0 f} phi(W^0_{r_0 f d'} x_{bsd'})\n");
        const auto& s = stmt(c, "z");
        CHECK_MESSAGE(cols(c, s) == "all-reduce(0)", c.text());
        CHECK_MESSAGE(!has_code(c.plan, "S400"), c.text());
        for (const auto& a : s.alternatives)
            CHECK_MESSAGE(a.time_s > s.cost.time_s, c.text());
    }
}

TEST_CASE("FSDP alternative: the weights gathered at their use, priced as the program that "
          "gathers them first (NOTATION.md section 8)") {
    // The same plan written out: each weight gathered by a statement of its own, then the
    // MLP on the gathered weights. Its total time is what the FSDP alternative must cost.
    auto mlp = [](const std::string& mesh, const std::string& dims, const std::string& x) {
        return mesh + "\n" + dims + "\nz_{" + x +
               " s d} = W^1_{d r_{tp} f} phi(W^0_{r_{tp} f e} x_{" + x + " s e})\n";
    };
    auto written_out = [](const std::string& mesh, const std::string& dims, const std::string& x) {
        return mesh + "\n" + dims +
               "\nA_{r f e} = W^0_{r_{tp} f e}\nB_{d r f} = W^1_{d r_{tp} f}\n" + "z_{" + x +
               " s d} = B_{d r f} phi(A_{r f e} x_{" + x + " s e})\n";
    };
    auto total = [](const Plan& p) {
        double t = 0;
        for (const auto& st : p.statements)
            t += st.cost.time_s;
        return t;
    };
    auto fsdp_of = [](const StatementPlan& s) -> const semantics::Alternative* {
        for (const auto& a : s.alternatives)
            if (a.description.find("FSDP") != std::string::npos) return &a;
        return nullptr;
    };
    SUBCASE("the QA case: 226 us against the all-reduce's 381 us, noted (S400)") {
        const auto c = run(mlp("mesh tp=4", "dim b=64 s=4096 d=64 f=32 e=64 r=4", "b"));
        const auto& s = stmt(c, "z");
        CHECK_MESSAGE(cols(c, s) == "all-reduce(tp)", c.text()); // implied: kept
        const auto* fsdp = fsdp_of(s);
        REQUIRE_MESSAGE(fsdp != nullptr, c.text());
        CHECK_MESSAGE(join(fsdp->collectives) == "all-gather(tp), all-gather(tp)", c.text());
        CHECK_MESSAGE(fsdp->description.find("all-gather W^1") != std::string::npos, c.text());
        CHECK_MESSAGE(fsdp->description.find("all-gather W^0") != std::string::npos, c.text());
        const auto out = run(written_out("mesh tp=4", "dim b=64 s=4096 d=64 f=32 e=64 r=4", "b"));
        REQUIRE_MESSAGE(out.plan.errors() == 0, out.text());
        CHECK_MESSAGE(fsdp->time_s == rel(total(out.plan)), c.text() << out.text());
        CHECK_MESSAGE(&s.alternatives.front() == fsdp, c.text()); // the cheapest
        CHECK_MESSAGE(has_code(c.plan, "S400"), c.text());
    }
    SUBCASE("random sizes: listed exactly when it may be cheaper, at the written-out price") {
        // Listed when cheaper than the plan (the planner's bound never hides a cheaper one);
        // when listed, at the written-out program's time. A 2-D mesh gathers over tp only.
        std::mt19937 rng(20261127);
        auto pow2 = [&](int lo, int hi) {
            return std::to_string(1 << std::uniform_int_distribution<int>(lo, hi)(rng));
        };
        int listed = 0, cheaper = 0;
        for (int trial = 0; trial < 60; ++trial) {
            const bool two_d = trial % 2 == 1;
            const std::string tp = pow2(1, 3);
            const std::string mesh = two_d ? "mesh dp=2 tp=" + tp : "mesh tp=" + tp;
            const std::string x = two_d ? "b_{dp}" : "b";
            const std::string dims = "dim b=" + pow2(0, 6) + " s=" + pow2(0, 12) +
                                     " d=" + pow2(4, 12) + " f=" + pow2(4, 12) +
                                     " e=" + pow2(4, 12) + " r=" + tp;
            const auto c = run(mlp(mesh, dims, x));
            const auto out = run(written_out(mesh, dims, x));
            REQUIRE_MESSAGE(c.plan.errors() == 0, c.text());
            REQUIRE_MESSAGE(out.plan.errors() == 0, out.text());
            const auto& s = stmt(c, "z");
            const double fsdp_time = total(out.plan);
            const auto* fsdp = fsdp_of(s);
            if (fsdp_time < s.cost.time_s) {
                ++cheaper;
                CHECK_MESSAGE(fsdp != nullptr, c.text() << out.text());
                CHECK_MESSAGE(has_code(c.plan, "S400"), c.text());
            }
            if (fsdp) {
                ++listed;
                CHECK_MESSAGE(fsdp->time_s == rel(fsdp_time), c.text() << out.text());
            }
        }
        // Both kinds of sizes occur (the test would prove nothing otherwise).
        CHECK(cheaper > 0);
        CHECK(cheaper < 60);
        CHECK(listed >= cheaper);
    }
    SUBCASE("issue 20's statement: the weights' gathers alone cost more, so it is not run") {
        const auto c =
            run(mlp("mesh dp=4 tp=8", "dim b=8 s=256 d=1024 f=1024 e=1024 r=8", "b_{dp}"));
        const auto& s = stmt(c, "z");
        CHECK_MESSAGE(fsdp_of(s) == nullptr, c.text());
        const auto out =
            run(written_out("mesh dp=4 tp=8", "dim b=8 s=256 d=1024 f=1024 e=1024 r=8", "b_{dp}"));
        CHECK_MESSAGE(total(out.plan) > s.cost.time_s, c.text() << out.text());
    }
}

// =============================================================================================
// (c) DTensor (PyTorch's test_matrix_ops / test_redistribute), translated to the notation.
// x is (i, j), y is (j, k); Shard(0) of x is i_0, Shard(1) of y is k_0, and so on.

TEST_CASE("DTensor mm strategies on a 1-D mesh") {
    const std::string head = "mesh 2\ndim i=4 j=6 k=4\n";
    SUBCASE("(Shard(0), Replicate) -> Shard(0)") {
        check_row(head + "z_{i_0 k} = x_{i_0 j} y_{jk}\n", "z", "none", "S(0)");
    }
    SUBCASE("(Replicate, Shard(1)) -> Shard(1)") {
        check_row(head + "z_{i k_0} = x_{ij} y_{j k_0}\n", "z", "none", "S(1)");
    }
    SUBCASE("(Shard(1), Shard(0)) -> Partial") {
        check_row(head + "z_{ik}{U_0} = x_{i j_0} y_{j_0 k}\n", "z", "none", "P(sum)");
    }
    SUBCASE("(Replicate, Replicate) -> Replicate") {
        check_row(head + "z_{ik} = x_{ij} y_{jk}\n", "z", "none", "R");
    }
    SUBCASE("full_tensor() of each: S -> R all-gather, P -> R all-reduce") {
        check_row(head + "z_{ik} = x_{i_0 j} y_{jk}\n", "z", "all-gather(0)", "R");
        check_row(head + "z_{ik} = x_{ij} y_{j k_0}\n", "z", "all-gather(0)", "R");
        check_row(head + "z_{ik} = x_{i j_0} y_{j_0 k}\n", "z", "all-reduce(0)", "R");
    }
    SUBCASE("the walkthrough's local shapes: 4x6 Shard(0) is 2x6 per rank") {
        const auto c = run(head + "z_{i_0 k} = x_{i_0 j} y_{jk}\n");
        const auto& s = stmt(c, "z");
        CHECK_MESSAGE(shape(operand(c, s, "x").local_shape) == "2x6", c.text());
        CHECK_MESSAGE(shape(s.result.local_shape) == "2x4", c.text());
    }
    SUBCASE("transpose of Shard(0) is Shard(1), locally") {
        check_row(head + "xT_{j i_0} = x_{i_0 j}\n", "xT", "none", "S(1)");
    }
}

TEST_CASE("DTensor bmm with the batch sharded") {
    const std::string head = "mesh 4\ndim b=8 i=4 j=6 k=4\n";
    SUBCASE("both Shard(0) -> Shard(0)") {
        check_row(head + "z_{b_0 i k} = x_{b_0 i j} y_{b_0 j k}\n", "z", "none", "S(0)");
    }
    SUBCASE("(Shard(0), Replicate) -> Shard(0): y slices its batch locally") {
        const auto c = run(head + "z_{b_0 i k} = x_{b_0 i j} y_{b j k}\n");
        const auto& s = stmt(c, "z");
        CHECK_MESSAGE(cols(c, s) == "none", c.text());
        CHECK_MESSAGE(pl(s.result) == "S(0)", c.text());
        CHECK_MESSAGE(steps_of(s, StepKind::Slice).size() == 1, c.text());
        // The product runs on the local batch: 2 · (8/4) · 4 · 6 · 4 flops.
        CHECK_MESSAGE(s.cost.flops_per_device == rel(2.0 * 2 * 4 * 6 * 4), c.text());
    }
    SUBCASE("(Shard(2), Shard(1)) -> Partial") {
        check_row(head + "z_{b i k}{U_0} = x_{b i j_0} y_{b j_0 k}\n", "z", "none", "P(sum)");
    }
}

TEST_CASE("DTensor einsum strategies on a 1-D mesh") {
    const std::string head = "mesh 4\ndim b=8 s=8 d=8 f=8\n";
    SUBCASE("bsd,df->bsf with the batch sharded") {
        check_row(head + "y_{b_0 s f} = x_{b_0 s d} w_{d f}\n", "y", "none", "S(0)");
    }
    SUBCASE("bsd,df->bsf colwise: Shard(1) of w gives Shard(2)") {
        check_row(head + "y_{b s f_0} = x_{b s d} w_{d f_0}\n", "y", "none", "S(2)");
    }
    SUBCASE("bsf,fd->bsd rowwise: Partial") {
        check_row(head + "y_{b s d}{U_0} = x_{b s f_0} w_{f_0 d}\n", "y", "none", "P(sum)");
    }
}

TEST_CASE("DTensor redistribute on a 1-D mesh, as chains") {
    const std::string head = "mesh 4\ndim i=8 j=8\n";
    check_row(head + "x_{i_0 j} -> x_{i j}\n", "x", "all-gather(0)", "R");
    check_row(head + "x_{i j} -> x_{i_0 j}\n", "x", "none", "S(0)");
    check_row(head + "x_{i j} -> x_{i j_0}\n", "x", "none", "S(1)");
    check_row(head + "x_{i_0 j} -> x_{i j_0}\n", "x", "all-to-all(0)", "S(1)");
    check_row(head + "x_{i j_0} -> x_{i_0 j}\n", "x", "all-to-all(0)", "S(0)");
    check_row(head + "x_{i j}{U_0} -> x_{i j}\n", "x", "all-reduce(0)", "R");
    check_row(head + "x_{i j}{U_0} -> x_{i_0 j}\n", "x", "reduce-scatter(0)", "S(0)");
    check_row(head + "x_{i j} -> x_{i j}{U_0}\n", "x", "none", "P(sum)");
    check_row(head + "x_{i_0 j} -> x_{i_0 j}\n", "x", "none", "S(0)");
    // Several steps in one chain.
    check_row(head + "x_{i j}{U_0} -> x_{i_0 j} -> x_{i j_0} -> x_{i j}\n", "x",
              "reduce-scatter(0), all-to-all(0), all-gather(0)", "R");
}

TEST_CASE("DTensor redistribute on a 2-D mesh (2x2), as chains") {
    const std::string head = "mesh 2x2\ndim i=8 j=8\n";
    SUBCASE("one axis at a time") {
        check_row(head + "x_{i_0 j_1} -> x_{i j_1}\n", "x", "all-gather(0)", "R, S(1)");
        check_row(head + "x_{i_0 j_1} -> x_{i_0 j}\n", "x", "all-gather(1)", "S(0), R");
        check_row(head + "x_{i j} -> x_{i_0 j_1}\n", "x", "none", "S(0), S(1)");
        check_row(head + "x_{i_0 j} -> x_{i j_0}\n", "x", "all-to-all(0)", "S(1), R");
        check_row(head + "x_{i_0 j}{U_1} -> x_{i_0 j}\n", "x", "all-reduce(1)", "S(0), R");
        check_row(head + "x_{i_0 j}{U_1} -> x_{i_0 j_1}\n", "x", "reduce-scatter(1)", "S(0), S(1)");
    }
    SUBCASE("both axes") {
        const auto c = run(head + "x_{i_0 j_1} -> x_{i j}\n");
        CHECK_MESSAGE(join(sorted(collectives_in(c, stmt(c, "x")))) ==
                          "all-gather(0), all-gather(1)",
                      c.text());
        CHECK_MESSAGE(pl(stmt(c, "x").result) == "R, R", c.text());
        // A block swap: one permute of the two off-diagonal blocks (two per-axis all-to-alls,
        // in either order, leave the wrong blocks on every device).
        const auto c2 = run(head + "x_{i_0 j_1} -> x_{i_1 j_0}\n");
        CHECK_MESSAGE(join(sorted(collectives_in(c2, stmt(c2, "x")))) == "permute(0,1)", c2.text());
        CHECK_MESSAGE(pl(stmt(c2, "x").result) == "S(1), S(0)", c2.text());
        // DTensor all-reduces per axis (2 V per device); one all-reduce over the group sends
        // 1.5 V in one collective (h100: NCCL's fixed latency per collective), a hierarchical
        // all-reduce 1.5 V in fewer ring steps (priced by steps alone: tpu-v5e).
        const auto c3 = run(head + "x_{i j}{U_{01}} -> x_{i j}\n");
        CHECK_MESSAGE(join(collectives_in(c3, stmt(c3, "x"))) == "all-reduce(0,1)", c3.text());
        const auto c4 = run("mesh 2x2\nhw tpu-v5e\ndim i=8 j=8\nx_{i j}{U_{01}} -> x_{i j}\n");
        CHECK_MESSAGE(join(collectives_in(c4, stmt(c4, "x"))) ==
                          "reduce-scatter(0), all-reduce(1), all-gather(0)",
                      c4.text());
    }
    SUBCASE("one index over both axes: x_{i_{01} j} -> x_{i j} is one all-gather or two") {
        // On NVLink (h100) one all-gather over the group: one collective's fixed latency.
        const auto g = run(head + "x_{i_{01} j} -> x_{i j}\n");
        CHECK_MESSAGE(cols(g, stmt(g, "x")) == "all-gather(0,1)", g.text());
        // Priced by steps alone (tpu-v5e), two per-axis all-gathers (DTensor's plan): 2 steps
        // against the group's 3.
        const auto c = run("mesh 2x2\nhw tpu-v5e\ndim i=8 j=8\nx_{i_{01} j} -> x_{i j}\n");
        const auto& s = stmt(c, "x");
        CHECK_MESSAGE(join(sorted(collectives_in(c, s))) == "all-gather(0), all-gather(1)",
                      c.text());
        CHECK_MESSAGE(pl(s.result) == "R, R", c.text());
        REQUIRE_MESSAGE(s.operands.size() == 2, c.text());
        CHECK_MESSAGE(pl(s.operands[0]) == "S(0), S(0)", c.text());
        CHECK_MESSAGE(shape(s.operands[0].local_shape) == "2x8", c.text());
        // The minor axis goes first (its shards are the inner blocks).
        CHECK_MESSAGE(cols(c, s) == "all-gather(1), all-gather(0)", c.text());
        // Dropping the minor axis only.
        check_row(head + "x_{i_{01} j} -> x_{i_0 j}\n", "x", "all-gather(1)", "S(0), R");
        // Adding a minor axis is a local slice.
        check_row(head + "x_{i_0 j} -> x_{i_{01} j}\n", "x", "none", "S(0), S(0)");
    }
}

TEST_CASE("DTensor redistribute on a 3-D mesh (2x2x2), as chains") {
    const std::string head = "mesh 2x2x2\ndim i=8 j=8 k=8\n";
    SUBCASE("gather everything") {
        const auto c = run(head + "x_{i_0 j_1 k_2} -> x_{i j k}\n");
        const auto& s = stmt(c, "x");
        CHECK_MESSAGE(join(sorted(collectives_in(c, s))) ==
                          "all-gather(0), all-gather(1), all-gather(2)",
                      c.text());
        CHECK_MESSAGE(pl(s.result) == "R, R, R", c.text());
        // One index over the three axes: one all-gather over the group of 8 on NVLink (h100),
        // three per-axis ones priced by steps alone (tpu-v5e: 3 steps against 7).
        const auto c2 = run(head + "x_{i_{012} j} -> x_{i j}\n");
        CHECK_MESSAGE(join(collectives_in(c2, stmt(c2, "x"))) == "all-gather(0,1,2)", c2.text());
        const auto c3 = run("mesh 2x2x2\nhw tpu-v5e\ndim i=8 j=8\nx_{i_{012} j} -> x_{i j}\n");
        CHECK_MESSAGE(join(sorted(collectives_in(c3, stmt(c3, "x")))) ==
                          "all-gather(0), all-gather(1), all-gather(2)",
                      c3.text());
    }
    SUBCASE("one axis changes, the others stay") {
        check_row(head + "x_{i_0 j_1 k_2} -> x_{i j_1 k_2}\n", "x", "all-gather(0)",
                  "R, S(1), S(2)");
        // DTensor all-gathers i over axis 0 and slices k (128 elements per device); the
        // exchange sends each device only the half of its new block it lacks (64), from its
        // axis-0 partner.
        check_row(head + "x_{i_0 j_1 k} -> x_{i j_1 k_2}\n", "x", "permute(0)", "R, S(1), S(2)");
        check_row(head + "x_{i_0 j_1 k} -> x_{i_0 j_1 k_2}\n", "x", "none", "S(0), S(1), S(2)");
        check_row(head + "x_{i_0 j_1 k} -> x_{i_0 j k_1}\n", "x", "all-to-all(1)", "S(0), S(2), R");
        check_row(head + "x_{i j k}{U_2} -> x_{i j k_2}\n", "x", "reduce-scatter(2)", "R, R, S(2)");
        check_row(head + "x_{i_0 j k}{U_1} -> x_{i_0 j k}\n", "x", "all-reduce(1)", "S(0), R, R");
    }
    SUBCASE("two axes swap their indices") {
        const auto c = run(head + "x_{i_0 j_1 k} -> x_{i_1 j_0 k}\n");
        const auto& s = stmt(c, "x");
        CHECK_MESSAGE(join(sorted(collectives_in(c, s))) == "permute(0,1)", c.text());
        CHECK_MESSAGE(pl(s.result) == "S(1), S(0), R", c.text());
    }
}

// =============================================================================================
// (d) Scaling-book matmuls in bracket form, mesh X=2 Y=2.

TEST_CASE("scaling book: A[I_X, J] B[J, K_Y] -> C[I_X, K_Y], no communication") {
    check_row("mesh X=2 Y=2\ndim I=1024 J=1024 K=1024\nC[I_X, K_Y] = A[I_X, J] B[J, K_Y]\n", "C",
              "none", "S(0), S(1)");
}

TEST_CASE("scaling book: A[I, J_X] B[J_X, K] -> C[I, K] is an all-reduce over X") {
    check_row("mesh X=2 Y=2\ndim I=1024 J=1024 K=1024\nC[I, K] = A[I, J_X] B[J_X, K]\n", "C",
              "all-reduce(X)", "R, R");
    check_row("mesh X=2 Y=2\ndim I=1024 J=1024 K=1024\nC[I, K]{U_X} = A[I, J_X] B[J_X, K]\n", "C",
              "none", "P(sum), R");
}

TEST_CASE("scaling book: A[I, J_X] B[J_X, K] -> C[I_X, K] is a reduce-scatter over X") {
    check_row("mesh X=2 Y=2\ndim I=1024 J=1024 K=1024\nC[I_X, K] = A[I, J_X] B[J_X, K]\n", "C",
              "reduce-scatter(X)", "S(0), R");
    check_row("mesh X=2 Y=2\ndim I=1024 J=1024 K=1024\nC[I_X, K_Y] = A[I_X, J_Y] B[J_Y, K]\n", "C",
              "reduce-scatter(Y)", "S(0), S(1)");
}

TEST_CASE("scaling book: A[I_X, J] B[J_X, K] -> C[I_X, K] needs a gather (rule 3)") {
    const auto c = run("mesh X=2 Y=2\ndim I=1024 J=1024 K=1024\nC[I_X, K] = A[I_X, J] B[J_X, K]\n");
    REQUIRE_MESSAGE(c.plan.errors() == 0, c.text());
    const auto& s = stmt(c, "C");
    CHECK_MESSAGE(s.chosen, c.text());
    // Cheapest: all-gather B over X; then A's rows give C's rows.
    CHECK_MESSAGE(cols(c, s) == "all-gather(X)", c.text());
    CHECK_MESSAGE(one_step(c, s, StepKind::AllGather).tensor == "B", c.text());
    CHECK_MESSAGE(pl(s.result) == "S(0), R", c.text());
    REQUIRE_MESSAGE(!s.alternatives.empty(), c.text());
    for (const auto& a : s.alternatives)
        CHECK_MESSAGE(a.time_s >= s.cost.time_s, c.text());
    CHECK_MESSAGE(has_code(c.plan, "S401"), c.text());
}

TEST_CASE("scaling book: A[I_X, J] B[J, K_X] -> C[I_X, K] gathers B (rule 3, free indices)") {
    const auto c = run("mesh X=2 Y=2\ndim I=1024 J=1024 K=1024\nC[I_X, K] = A[I_X, J] B[J, K_X]\n");
    const auto& s = stmt(c, "C");
    CHECK_MESSAGE(s.chosen, c.text());
    CHECK_MESSAGE(cols(c, s) == "all-gather(X)", c.text());
    CHECK_MESSAGE(one_step(c, s, StepKind::AllGather).tensor == "B", c.text());
    CHECK_MESSAGE(pl(s.result) == "S(0), R", c.text());
}

// =============================================================================================
// (e) Costs by hand (NOTATION.md section 8).
// all-gather / reduce-scatter: (n-1)/n · V, all-reduce: 2(n-1)/n · V, all-to-all: (n-1)/n ·
// V_local; time = steps · latency + bytes / bandwidth, ring steps n-1 (AG, RS, A2A) and 2(n-1)
// (AR).

TEST_CASE("cost by hand: all-gather") {
    // x is 1024 x 2048 bf16 = 4194304 bytes; 4 devices on a 100 GB/s, 2 us link.
    const auto c = run("mesh 4\ndim i=1024 j=2048\ndtype bf16\nhw h100\nlink 0 100GB/s 2us\n"
                       "x_{i_0 j} -> x_{ij}\n");
    const auto& s = stmt(c, "x");
    const auto& st = one_step(c, s, StepKind::AllGather);
    const double bytes = 3.0 / 4.0 * 1024 * 2048 * 2; // 3145728
    CHECK_MESSAGE(st.cost.bytes_per_device == rel(bytes), c.text());
    CHECK_MESSAGE(st.cost.time_s == rel(3 * 2e-6 + bytes / 100e9), c.text());
    CHECK_MESSAGE(st.mesh_axes == std::vector<int>{0}, c.text());
    CHECK_MESSAGE(s.cost.comm_bytes_per_device == rel(bytes), c.text());
    CHECK_MESSAGE(s.cost.time_s == rel(3 * 2e-6 + bytes / 100e9), c.text());
    CHECK_MESSAGE(c.plan.dtype == "bf16", c.text());
    CHECK_MESSAGE(c.plan.hardware == "h100", c.text());
}

TEST_CASE("cost by hand: all-reduce, and the product's flops and roofline time") {
    // z = x y contracted over j (4096, sharded on 4 devices): local product 512 x 1024 x 256.
    const std::string body = "mesh 4\ndim i=512 j=4096 k=256\nhw h100\nlink 0 100GB/s 2us\n"
                             "z_{ik} = x_{i j_0} y_{j_0 k}\n";
    SUBCASE("bf16") {
        const auto c = run("dtype bf16\n" + body);
        const auto& s = stmt(c, "z");
        const auto& ar = one_step(c, s, StepKind::AllReduce);
        const double v = 512.0 * 256 * 2; // the partial z, 262144 bytes
        const double bytes = 2 * 3.0 / 4.0 * v;
        CHECK_MESSAGE(ar.cost.bytes_per_device == rel(bytes), c.text());
        CHECK_MESSAGE(ar.cost.time_s == rel(6 * 2e-6 + bytes / 100e9), c.text());
        const auto& mm = one_step(c, s, StepKind::Compute);
        const double flops = 2.0 * 512 * 1024 * 256;
        CHECK_MESSAGE(mm.cost.flops_per_device == rel(flops), c.text());
        CHECK_MESSAGE(s.cost.flops_per_device == rel(flops), c.text());
        // Roofline, bf16 on h100: 989 TFLOP/s vs 3350 GB/s over x, y (local) and z.
        const double moved = (512.0 * 1024 + 1024.0 * 256 + 512.0 * 256) * 2;
        CHECK_MESSAGE(mm.cost.time_s == rel(std::max(flops / 989e12, moved / 3350e9)), c.text());
        CHECK_MESSAGE(s.cost.time_s == rel(mm.cost.time_s + ar.cost.time_s), c.text());
        CHECK_MESSAGE(s.cost.comm_bytes_per_device == rel(bytes), c.text());
    }
    SUBCASE("f32") {
        const auto c = run(body);
        const auto& s = stmt(c, "z");
        const auto& ar = one_step(c, s, StepKind::AllReduce);
        const double bytes = 2 * 3.0 / 4.0 * 512 * 256 * 4;
        CHECK_MESSAGE(ar.cost.bytes_per_device == rel(bytes), c.text());
        CHECK_MESSAGE(ar.cost.time_s == rel(6 * 2e-6 + bytes / 100e9), c.text());
        const auto& mm = one_step(c, s, StepKind::Compute);
        const double flops = 2.0 * 512 * 1024 * 256;
        const double moved = (512.0 * 1024 + 1024.0 * 256 + 512.0 * 256) * 4;
        CHECK_MESSAGE(mm.cost.time_s == rel(std::max(flops / 67e12, moved / 3350e9)), c.text());
    }
}

TEST_CASE("cost by hand: reduce-scatter") {
    const auto c = run("mesh 4\ndim i=512 j=4096 k=256\ndtype bf16\nhw h100\nlink 0 100GB/s 2us\n"
                       "z_{i_0 k} = x_{i j_0} y_{j_0 k}\n");
    const auto& s = stmt(c, "z");
    const auto& rs = one_step(c, s, StepKind::ReduceScatter);
    const double bytes = 3.0 / 4.0 * 512 * 256 * 2; // V is the partial input, 262144 bytes
    CHECK_MESSAGE(rs.cost.bytes_per_device == rel(bytes), c.text());
    CHECK_MESSAGE(rs.cost.time_s == rel(3 * 2e-6 + bytes / 100e9), c.text());
    CHECK_MESSAGE(shape(s.result.local_shape) == "128x256", c.text());
}

TEST_CASE("cost by hand: all-to-all") {
    const auto c = run("mesh 4\ndim i=1024 j=2048\ndtype bf16\nhw h100\nlink 0 100GB/s 2us\n"
                       "x_{i_0 j} -> x_{i j_0}\n");
    const auto& s = stmt(c, "x");
    const auto& a2a = one_step(c, s, StepKind::AllToAll);
    const double bytes = 3.0 / 4.0 * (1024 / 4) * 2048 * 2; // V_local = 1048576 bytes
    CHECK_MESSAGE(a2a.cost.bytes_per_device == rel(bytes), c.text());
    CHECK_MESSAGE(a2a.cost.time_s == rel(3 * 2e-6 + bytes / 100e9), c.text());
}

TEST_CASE("cost by hand: each axis uses its own link") {
    const std::string head = "mesh dp=2 tp=4\ndim i=64 j=1024\n"
                             "link tp 100GB/s 1us\nlink dp 25GB/s 10us\n";
    const double v = 64.0 * 1024 * 4; // f32
    {
        const auto c = run(head + "x_{i_{tp} j} -> x_{ij}\n");
        const auto& st = one_step(c, stmt(c, "x"), StepKind::AllGather);
        CHECK_MESSAGE(st.mesh_axes == std::vector<int>{1}, c.text());
        CHECK_MESSAGE(st.cost.bytes_per_device == rel(0.75 * v), c.text());
        CHECK_MESSAGE(st.cost.time_s == rel(3 * 1e-6 + 0.75 * v / 100e9), c.text());
        CHECK_MESSAGE(cols(c, stmt(c, "x")) == "all-gather(tp)", c.text());
    }
    {
        const auto c = run(head + "x_{i_{dp} j} -> x_{ij}\n");
        const auto& st = one_step(c, stmt(c, "x"), StepKind::AllGather);
        CHECK_MESSAGE(st.cost.bytes_per_device == rel(0.5 * v), c.text());
        CHECK_MESSAGE(st.cost.time_s == rel(1 * 10e-6 + 0.5 * v / 25e9), c.text());
    }
    {
        // All-reduce over dp: the partial z (64 x 64 f32), 2 · 1/2 · V, 2 ring steps.
        const auto c = run(head + "dim k=64\nz_{ik} = x_{i j_{dp}} y_{j_{dp} k}\n");
        const auto& st = one_step(c, stmt(c, "z"), StepKind::AllReduce);
        const double vz = 64.0 * 64 * 4;
        CHECK_MESSAGE(st.cost.bytes_per_device == rel(vz), c.text());
        CHECK_MESSAGE(st.cost.time_s == rel(2 * 10e-6 + vz / 25e9), c.text());
    }
}

TEST_CASE("cost by hand: preset link bandwidths (time difference of two sizes)") {
    // Latency is the same for both sizes, so the difference is bytes / bandwidth only.
    struct Preset {
        const char* name;
        double link;
    };
    for (const Preset& p :
         {Preset{"a100", 235e9}, Preset{"h100", 370e9}, Preset{"tpu-v5e", 45e9}}) {
        auto time_for = [&](int j, double& bytes) {
            const auto c = run("mesh 4\nhw " + std::string(p.name) +
                               "\ndim i=1024 j=" + std::to_string(j) + "\nx_{i_0 j} -> x_{ij}\n");
            CHECK_MESSAGE(c.plan.hardware == p.name, c.text());
            const auto& st = one_step(c, stmt(c, "x"), StepKind::AllGather);
            bytes = st.cost.bytes_per_device;
            return st.cost.time_s;
        };
        double b1 = 0, b2 = 0;
        const double t1 = time_for(1024, b1);
        const double t2 = time_for(4096, b2);
        CHECK(b1 == rel(0.75 * 1024 * 1024 * 4));
        CHECK(b2 == rel(0.75 * 1024 * 4096 * 4));
        CHECK_MESSAGE((t2 - t1) == rel((b2 - b1) / p.link), p.name);
        CHECK_MESSAGE(t1 > b1 / p.link, p.name); // some latency on top
    }
}

TEST_CASE("cost by hand: flops") {
    SUBCASE("elementwise: one flop per local element") {
        const auto c = run("mesh 4\ndim i=64 k=64\ny_{i_0 k} = relu(x_{i_0 k})\n");
        CHECK_MESSAGE(stmt(c, "y").cost.flops_per_device == rel(16.0 * 64), c.text());
    }
    SUBCASE("two operands: 2 · product of the local extents") {
        const auto c = run("mesh 2x4\ndim b=8 i=16 j=32 k=64\n"
                           "z_{b_0 i k_1} = x_{b_0 i j} y_{b_0 j k_1}\n");
        const auto& s = stmt(c, "z");
        CHECK_MESSAGE(cols(c, s) == "none", c.text());
        CHECK_MESSAGE(s.cost.flops_per_device == rel(2.0 * 4 * 16 * 32 * 16), c.text());
    }
    SUBCASE("three operands: pairwise along the cheapest path, whatever the written order") {
        // b c first would cost 2·100·100·1000; b a first costs 2·1·100·100, then 2·1·100·1000.
        const auto c = run("dim i=1 j=100 k=100 l=1000\nz_{il} = b_{jk} c_{kl} a_{ij}\n");
        CHECK_MESSAGE(stmt(c, "z").cost.flops_per_device == rel(2.0 * 100 * 100 + 2.0 * 100 * 1000),
                      c.text());
    }
}

TEST_CASE("cost: every collective step is costed, axis reorders included") {
    // Reordering the mesh axes of a multi-axis index moves data between devices, yet the
    // checker emits an all-to-all step with 0 bytes and 0 s (section 8: all-to-all sends
    // (n-1)/n · V_local and pays n-1 latencies).
    const std::string head = "mesh 2x2\ndim i=8 j=8\n";
    for (const std::string chain :
         {"x_{i_{01} j} -> x_{i_{10} j}", "x_{i_0 j_1} -> x_{i j_{01}}"}) {
        const auto c = run(head + chain + "\n");
        const auto& s = stmt(c, "x");
        for (const auto& st : s.steps)
            if (semantics::is_collective(st.kind)) {
                CHECK_MESSAGE(st.cost.bytes_per_device > 0, c.text());
                CHECK_MESSAGE(st.cost.time_s > 0, c.text());
            }
    }
}

TEST_CASE("index names: long names and more indices than the checker's range memo holds") {
    // The checker answers ranges from a memo keyed by names of up to 6 bytes, with room for 48
    // of them; longer names and the indices past it take the uncached path.
    const std::string shorts = "mesh 4x2\ndim b=8 s=256 d=1024 f=512\n"
                               "z_{b s d} = W_{d f_0} x_{b s f_0}\n"
                               "y_{b s d'} = V_{d' f_1} x_{b s f_1}\n";
    const std::string longs =
        "mesh 4x2\ndim batchsize=8 sequencelength=256 modeldim=1024 hidden=512\n"
        "z_{{batchsize} {sequencelength} {modeldim}} = W_{{modeldim} {hidden}_0} "
        "x_{{batchsize} {sequencelength} {hidden}_0}\n"
        "y_{{batchsize} {sequencelength} {modeldim}'} = V_{{modeldim}' {hidden}_1} "
        "x_{{batchsize} {sequencelength} {hidden}_1}\n";
    const auto a = check_text(shorts), b = check_text(longs);
    INFO(plan_text(longs, b));
    REQUIRE(a.statements.size() == 2);
    REQUIRE(b.statements.size() == 2);
    for (std::size_t i = 0; i < 2; ++i) {
        const auto &x = a.statements[i], &y = b.statements[i];
        CHECK(semantics::collectives_of(a.mesh, x) == semantics::collectives_of(b.mesh, y));
        CHECK(placements(x.result) == placements(y.result));
        CHECK(x.result.global_shape == y.result.global_shape);
        CHECK(x.result.local_shape == y.result.local_shape);
        CHECK(x.operands[0].local_shape == y.operands[0].local_shape);
        CHECK(x.cost == y.cost);
    }
    CHECK(b.statements[1].operands[0].local_shape == std::vector<std::int64_t>{1024, 256});

    std::string many = "mesh 4\ndim j=4";
    for (int k = 0; k < 60; ++k)
        many += " i" + std::to_string(k) + "=" + std::to_string(2 * (k + 1));
    many += "\n";
    for (int k = 0; k < 60; ++k)
        many += "t" + std::to_string(k) + "_{{i" + std::to_string(k) + "} j} = u_{{i" +
                std::to_string(k) + "} j_0}\n";
    const auto p = check_text(many);
    REQUIRE(p.statements.size() == 60);
    for (int k = 0; k < 60; ++k) {
        const auto& s = p.statements[static_cast<std::size_t>(k)];
        CHECK(s.result.global_shape == std::vector<std::int64_t>{2 * (k + 1), 4});
        CHECK(s.operands[0].local_shape == std::vector<std::int64_t>{2 * (k + 1), 1});
    }
}

TEST_CASE("equality of diagnostics and plans includes their positions (issue 17)") {
    // The same statement one line lower: the same content, another place.
    const auto a = run("mesh 4\ndim i=8 j=8\nz_{i} = x_{i j_0} y_{j_0}\n");
    const auto b = run("mesh 4\ndim i=8 j=8\n\nz_{i} = x_{i j_0} y_{j_0}\n");
    REQUIRE(a.plan.statements.size() == 1);
    REQUIRE(b.plan.statements.size() == 1);
    const auto& sa = a.plan.statements.front();
    const auto& sb = b.plan.statements.front();
    CHECK(sa.same_content(sb));
    CHECK_FALSE(sa == sb);
    CHECK(sa == sa);
    shardscope::Diagnostic d{shardscope::Severity::Error, "S100", sa.range, "m", ""};
    shardscope::Diagnostic e = d;
    CHECK(d == e);
    e.range = sb.range;
    CHECK_FALSE(d == e);
}

TEST_CASE("collectives_of: a statement's collectives are its collective steps, as text") {
    // Derived from the steps and the mesh's axis names, in plan order; local steps (compute,
    // slices, reshapes) name none.
    const auto c = run("mesh dp=2 tp=2\ndim b=8 d=8 f=8\n"
                       "y_{b_{dp} f} = x_{b_{dp} d_{tp}} W_{d_{tp} f}\n"
                       "z_{b f} = y_{b_{dp} f}\n"
                       "u_{b_{dp} f_{tp}} = y_{b_{dp} f}\n");
    REQUIRE_MESSAGE(c.plan.errors() == 0, c.text());
    REQUIRE(c.plan.statements.size() == 3);
    CHECK(collectives_in(c, c.plan.statements[0]) == std::vector<std::string>{"all-reduce(tp)"});
    CHECK(collectives_in(c, c.plan.statements[1]) == std::vector<std::string>{"all-gather(dp)"});
    CHECK(collectives_in(c, c.plan.statements[2]).empty()); // a slice is free
    // One entry per collective step, none for the others.
    for (const auto& s : c.plan.statements) {
        std::size_t n = 0;
        for (const auto& st : s.steps)
            n += semantics::is_collective(st.kind);
        CHECK(collectives_in(c, s).size() == n);
    }
    // The text follows the mesh: the same steps over a mesh with other axis names.
    auto renamed = c.plan.mesh;
    renamed.axes[1].name = "model";
    CHECK(semantics::collectives_of(renamed, c.plan.statements[0]) ==
          std::vector<std::string>{"all-reduce(model)"});
    // Hand-made steps: collectives in order, over several axes.
    semantics::Step gather;
    gather.kind = semantics::StepKind::AllGather;
    gather.mesh_axes = {0};
    semantics::Step compute;
    semantics::Step reduce;
    reduce.kind = semantics::StepKind::AllReduce;
    reduce.mesh_axes = {0, 1};
    CHECK(semantics::collectives_of(c.plan.mesh, {gather, compute, reduce}) ==
          std::vector<std::string>{"all-gather(dp)", "all-reduce(dp,tp)"});
}

TEST_CASE("a replicated product into a sharded result is sliced before the compute") {
    // As XLA compiles it: each device computes the block the left-hand side keeps (the
    // statement as written would compute all of it and slice after, 4x the FLOPs).
    const std::string src = "mesh 4\ndim b=4096 d=4096 e=4096\ndtype bf16\n"
                            "y_{b_0 e} = x_{b d} W_{d e}\n";
    const auto plan = check_text(src);
    REQUIRE_MESSAGE(plan.errors() == 0, plan_text(src, plan));
    const auto& sp = plan.statements.at(0);
    CHECK_MESSAGE(sp.cost.flops_per_device == doctest::Approx(2.0 * 1024 * 4096 * 4096),
                  plan_text(src, plan));
    CHECK(sp.cost.comm_bytes_per_device == 0);
    REQUIRE(sp.steps.size() >= 2);
    CHECK(sp.steps.front().kind == semantics::StepKind::Slice);
    CHECK(sp.steps.front().tensor == "x");
    CHECK_FALSE(sp.chosen);
    SUBCASE("not where slicing early would change what is computed or moved") {
        for (const std::string other : {
                 // normalised along b: every row of b is needed
                 "y_{b_0 v} = softmax_b(x_{b v})\n",
                 // axis 0 is used on the right: the reduce-scatter stays
                 "y_{b_0 e} = x_{b d} W_{d_0 e}\n",
                 // b is sharded (over axis 1) on the right already
                 "y_{b_{0} e} = x_{b_1 d} W_{d e}\n",
                 // a tensor stored earlier on axis 0 is read
                 "h_{b e_0} = x_{b e_0}\ny_{b_0 e} = h_{b e} W_{e e'}\n",
             }) {
            const std::string text = "mesh 4x2\ndim b=64 d=64 e=64 e'=64 v=64\n" + other;
            CAPTURE(text);
            const auto p = check_text(text);
            for (const auto& st : p.statements.back().steps)
                CHECK_MESSAGE(st.text.reason.find("sliced before the compute") == std::string::npos,
                              plan_text(text, p));
        }
    }
}

TEST_CASE("MFU counts work repeated on devices holding the same inputs once") {
    // Four devices computing the same replicated product do a quarter of a model's work each.
    const std::string head = "mesh 4\ndim b=4096 d=4096 e=4096\ndtype bf16\n";
    const auto replicated =
        semantics::program_totals(check_text(head + "y_{b e} = x_{b d} W_{d e}\n"));
    const auto sharded =
        semantics::program_totals(check_text(head + "y_{b_0 e} = x_{b_0 d} W_{d e}\n"));
    CHECK(replicated.flops == doctest::Approx(4 * sharded.flops));
    CHECK(replicated.model_flops == doctest::Approx(sharded.model_flops));
    CHECK(replicated.mfu == doctest::Approx(sharded.mfu / 4).epsilon(0.01));
    // A pipeline's stages hold other layers: not copies (samples/pipeline.ein's layout).
    const auto pipe = semantics::program_totals(
        check_text("mesh dp=2 pp=4\ndim b=64 d=1024\nrepeat l_{pp}=8\n  h_{b_{dp} d} = "
                   "h_{b_{dp} d'} W_{d' d}\nend\n"));
    CHECK(pipe.model_flops == doctest::Approx(pipe.flops));
}

TEST_CASE("softmax along an index sharded over a mesh axis of size 1 is computed as written") {
    // One block along the axis: every device holds whole rows (QA: it was a chosen fix, S401).
    const std::string src = "mesh 4x1\ndim b=8 v=16\ny_{b_0 v_1} = softmax_v(x_{b_0 v_1})\n";
    const auto plan = check_text(src);
    REQUIRE_MESSAGE(plan.errors() == 0, plan_text(src, plan));
    CHECK_FALSE_MESSAGE(plan.statements.at(0).chosen, plan_text(src, plan));
    CHECK_FALSE(has_code(plan, "S401"));
    CHECK(plan.statements.at(0).cost.comm_bytes_per_device == 0);
}
