// semantics/rules/functions.cpp: elementwise functions, reductions and softmax (NOTATION.md
// section 6, "Other nodes"; S214).
// Every check prints the plan (plan_text) when it fails.
#include "rule_helpers.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

using namespace shardscope;
using namespace shardscope::test;
using semantics::CheckOptions;
using semantics::Plan;
using semantics::StatementPlan;
using semantics::StepKind;
using semantics::TensorLayout;

TEST_CASE("elementwise functions: non-linear needs a non-partial input, linear passes P") {
    SUBCASE("relu of a partial input: implied all-reduce before it") {
        const auto c = run("mesh 4\ndim i=64 k=64\ny_{ik} = relu(p_{ik}{U_0})\n");
        const auto& s = stmt(c, "y");
        CHECK_MESSAGE(cols(c, s) == "all-reduce(0)", c.text());
        REQUIRE_MESSAGE(s.steps.size() >= 2, c.text());
        CHECK_MESSAGE(s.steps.front().kind == StepKind::AllReduce, c.text());
        CHECK_MESSAGE(s.steps.front().tensor == "p", c.text());
        CHECK_MESSAGE(pl(s.result) == "R", c.text());
        CHECK_MESSAGE(!s.chosen, c.text());
    }
    SUBCASE("relu of a partial input, partial left-hand side: still reduced first") {
        const auto c = run("mesh 4\ndim i=64 k=64\ny_{ik}{U_0} = relu(p_{ik}{U_0})\n");
        const auto& s = stmt(c, "y");
        CHECK_MESSAGE(cols(c, s) == "all-reduce(0)", c.text());
        CHECK_MESSAGE(pl(s.result) == "P(sum)", c.text());
    }
    SUBCASE("every non-linear builtin") {
        for (const std::string f :
             {"phi", "gelu", "silu", "sigmoid", "tanh", "exp", "log", "sqrt"}) {
            const auto c = run("mesh 4\ndim i=64 k=64\ny_{ik}{U_0} = " + f + "(p_{ik}{U_0})\n");
            CHECK_MESSAGE(cols(c, stmt(c, "y")) == "all-reduce(0)", c.text());
        }
    }
    SUBCASE("linear functions pass P(sum)") {
        for (const std::string f : {"neg", "scale"}) {
            const auto c = run("mesh 4\ndim i=64 k=64\ny_{ik}{U_0} = " + f + "(p_{ik}{U_0})\n");
            const auto& s = stmt(c, "y");
            CHECK_MESSAGE(cols(c, s) == "none", c.text());
            CHECK_MESSAGE(pl(s.result) == "P(sum)", c.text());
        }
        const auto c = run("mesh 4\ndim i=64 k=64\ny_{ik} = scale(p_{ik}{U_0})\n");
        const auto& s = stmt(c, "y");
        CHECK_MESSAGE(cols(c, s) == "all-reduce(0)", c.text());
        REQUIRE_MESSAGE(!s.steps.empty(), c.text());
        CHECK_MESSAGE(s.steps.back().kind == StepKind::AllReduce, c.text()); // after, not before
    }
    SUBCASE("declared functions: fn NAME linear / elementwise") {
        const auto c = run("mesh 4\ndim i=64 k=64\nfn half linear\nfn swish elementwise\n"
                           "y_{ik}{U_0} = half(p_{ik}{U_0})\nv_{ik}{U_0} = swish(p_{ik}{U_0})\n");
        CHECK_MESSAGE(cols(c, stmt(c, "y")) == "none", c.text());
        CHECK_MESSAGE(cols(c, stmt(c, "v")) == "all-reduce(0)", c.text());
    }
    SUBCASE("elementwise on a sharded input stays sharded, no collective") {
        const auto c = run("mesh 4\ndim i=64 k=64\ny_{i_0 k} = gelu(x_{i_0 k})\n");
        const auto& s = stmt(c, "y");
        CHECK_MESSAGE(cols(c, s) == "none", c.text());
        CHECK_MESSAGE(pl(s.result) == "S(0)", c.text());
    }
}

TEST_CASE("reductions: sum_s over a sharded index gives P(sum), max_s gives P(max)") {
    SUBCASE("sum") {
        const auto c = run("mesh 4\ndim i=64 j=64\ny_{i}{U_0} = sum_j(x_{i j_0})\n");
        const auto& s = stmt(c, "y");
        CHECK_MESSAGE(cols(c, s) == "none", c.text());
        CHECK_MESSAGE(pl(s.result) == "P(sum)", c.text());
        const auto c2 = run("mesh 4\ndim i=64 j=64\ny_{i} = sum_j(x_{i j_0})\n");
        CHECK_MESSAGE(cols(c2, stmt(c2, "y")) == "all-reduce(0)", c2.text());
    }
    SUBCASE("mean is linear too") {
        const auto c = run("mesh 4\ndim i=64 j=64\ny_{i}{U_0} = mean_j(x_{i j_0})\n");
        CHECK_MESSAGE(cols(c, stmt(c, "y")) == "none", c.text());
    }
    SUBCASE("max gives P(max): a max all-reduce, and it cannot be kept as P(sum)") {
        const auto c = run("mesh 4\ndim i=64 j=64\ny_{i} = max_j(x_{i j_0})\n");
        const auto& s = stmt(c, "y");
        CHECK_MESSAGE(cols(c, s) == "all-reduce(0)", c.text());
        REQUIRE_MESSAGE(!s.steps.empty(), c.text());
        CHECK_MESSAGE(s.steps.back().text.reason.find("(max)") != std::string::npos, c.text());
        const auto c2 = run("mesh 4\ndim i=64 j=64\ny_{i}{U_0} = max_j(x_{i j_0})\n");
        CHECK_MESSAGE(has_code(c2.plan, "S201", Severity::Error), c2.text());
    }
    SUBCASE("a reduction over an unsharded index is local; the sharded one stays S") {
        const auto c = run("mesh 4\ndim i=64 j=64\ny_{i_0} = sum_j(x_{i_0 j})\n");
        const auto& s = stmt(c, "y");
        CHECK_MESSAGE(cols(c, s) == "none", c.text());
        CHECK_MESSAGE(pl(s.result) == "S(0)", c.text());
        const auto c2 = run("mesh 4\ndim i=64 j=64\ny_{i_0} = max_j(x_{i_0 j})\n");
        CHECK_MESSAGE(cols(c2, stmt(c2, "y")) == "none", c2.text());
    }
    SUBCASE("max of a partial input is reduced first") {
        const auto c = run("mesh 4\ndim i=64 j=64\ny_{i} = max_j(p_{ij}{U_0})\n");
        const auto& s = stmt(c, "y");
        CHECK_MESSAGE(cols(c, s) == "all-reduce(0)", c.text());
        REQUIRE_MESSAGE(!s.steps.empty(), c.text());
        CHECK_MESSAGE(s.steps.front().kind == StepKind::AllReduce, c.text());
        CHECK_MESSAGE(s.steps.front().tensor == "p", c.text());
    }
}

TEST_CASE("softmax along a sharded index under the calibrated presets (issue 19 item 4)") {
    // p_{s v_0} with v=4096 f32 on 4 devices: the all-gather sends 3/4 of the tensor (3 ring
    // steps), the two statistics all-reduces 2 x 3/2 x s x 4 B (2 x 6 steps). With the old 5 us
    // per step and 450 GB/s the gather won up to 27 MB. Under NCCL's protocols (h100: 370 GB/s,
    // a100: 235 GB/s) each all-reduce is LL, 6.6 + 6 x 0.6 = 10.2 us; the gather of the
    // issue's 2 MiB (s=128) costs at least 21.2 us on h100 (LL: 6.6 + 3 x 0.6 + 1.57 MB at
    // 370/3 GB/s), 25.3 us on a100 (Simple): the all-reduces win, as in XLA's plan, and more
    // so at 8 MiB (s=512).
    for (const char* rows : {"128", "512"}) {
        const std::string body =
            std::string("mesh 4\ndim s=") + rows + " v=4096\np_{s v_0} = softmax_v(z_{s v_0})\n";
        const double s_rows = std::stod(rows);
        for (const char* hw : {"h100", "a100"}) {
            const auto c = run(std::string("hw ") + hw + "\n" + body);
            const auto& s = stmt(c, "p");
            CHECK_MESSAGE(s.chosen, c.text());
            CHECK_MESSAGE(cols(c, s) == "all-reduce(0), all-reduce(0)", c.text());
            CHECK_MESSAGE(s.cost.comm_bytes_per_device == rel(2 * 2 * 0.75 * s_rows * 4), c.text());
            for (const auto& a : s.alternatives)
                CHECK_MESSAGE(a.time_s > s.cost.time_s, c.text());
        }
    }
    // The same statement with the old h100 link figures written out gathers: the preset, not
    // the statement, decides.
    const auto old = run("mesh 4\nlink 0 450GB/s 5us\ndim s=512 v=4096\n"
                         "p_{s v_0} = softmax_v(z_{s v_0})\n");
    CHECK_MESSAGE(cols(old, stmt(old, "p")) == "all-gather(0)", old.text());
}

TEST_CASE("softmax along a sharded index: two small all-reduces or an all-gather, cheaper wins") {
    SUBCASE("small rows: the all-gather wins") {
        const auto c = run("mesh 4\ndim s=64 v=64\np_{s v_0} = softmax_v(z_{s v_0})\n");
        const auto& s = stmt(c, "p");
        CHECK_MESSAGE(s.chosen, c.text());
        CHECK_MESSAGE(cols(c, s) == "all-gather(0)", c.text());
        CHECK_MESSAGE(pl(s.result) == "S(1)", c.text());
        bool stats = false;
        for (const auto& a : s.alternatives) {
            stats |= join(a.collectives) == "all-reduce(0), all-reduce(0)";
            CHECK_MESSAGE(a.time_s >= s.cost.time_s, c.text());
        }
        CHECK_MESSAGE(stats, c.text());
    }
    SUBCASE("long rows: the two statistics all-reduces win") {
        const auto c = run("mesh 4\ndim s=1024 v=65536\np_{s v_0} = softmax_v(z_{s v_0})\n");
        const auto& s = stmt(c, "p");
        CHECK_MESSAGE(s.chosen, c.text());
        CHECK_MESSAGE(cols(c, s) == "all-reduce(0), all-reduce(0)", c.text());
        CHECK_MESSAGE(pl(s.result) == "S(1)", c.text());
        // The statistics are one value per row: s · 4 bytes, all-reduced (2·3/4·V each).
        CHECK_MESSAGE(s.cost.comm_bytes_per_device == rel(2 * 2 * 0.75 * 1024 * 4), c.text());
        bool gather = false;
        for (const auto& a : s.alternatives) {
            gather |= join(a.collectives) == "all-gather(0)";
            CHECK_MESSAGE(a.time_s > s.cost.time_s, c.text());
        }
        CHECK_MESSAGE(gather, c.text());
        CHECK_MESSAGE(has_code(c.plan, "S401", Severity::Note), c.text());
    }
    SUBCASE("softmax along an unsharded index is local") {
        const auto c = run("mesh 4\ndim s=64 v=64\np_{s_0 v} = softmax_v(z_{s_0 v})\n");
        const auto& s = stmt(c, "p");
        CHECK_MESSAGE(cols(c, s) == "none", c.text());
        CHECK_MESSAGE(!s.chosen, c.text());
    }
    SUBCASE("softmax of a partial input is reduced first") {
        const auto c = run("mesh 4\ndim s=64 v=64\np_{s v} = softmax_v(z_{s v}{U_0})\n");
        const auto& s = stmt(c, "p");
        CHECK_MESSAGE(cols(c, s) == "all-reduce(0)", c.text());
        REQUIRE_MESSAGE(!s.steps.empty(), c.text());
        CHECK_MESSAGE(s.steps.front().tensor == "z", c.text());
    }
}

namespace shardscope::test {

TEST_CASE("softmax along a sharded index: an all-to-all onto another index when rows are "
          "wanted sharded") {
    SUBCASE("rows sharded on the left: one all-to-all (n to m), a quarter of the gather") {
        const auto c = run("mesh 4\ndim m=64 n=4096\ns_{m_0 n} = softmax_n(Y_{m n_0})\n");
        const auto& s = stmt(c, "s");
        CHECK_MESSAGE(s.chosen, c.text());
        CHECK_MESSAGE(cols(c, s) == "all-to-all(0)", c.text());
        CHECK_MESSAGE(pl(s.result) == "S(0)", c.text());
        // (n-1)/n of the local block: 3/4 · 64 · 1024 · 4 bytes.
        CHECK_MESSAGE(s.cost.comm_bytes_per_device == rel(0.75 * 64 * 1024 * 4), c.text());
        REQUIRE_MESSAGE(!s.steps.empty(), c.text());
        CHECK_MESSAGE(s.steps.front().from_index.name == "n", c.text());
        CHECK_MESSAGE(s.steps.front().to_index.name == "m", c.text());
        bool gather = false;
        for (const auto& a : s.alternatives) {
            gather |= join(a.collectives) == "all-gather(0)";
            CHECK_MESSAGE(a.time_s > s.cost.time_s, c.text());
        }
        CHECK_MESSAGE(gather, c.text());
    }
    SUBCASE("the axis kept on the index: the all-gather still wins (two all-to-alls else)") {
        const auto c = run("mesh 4\ndim m=64 n=4096\ns_{m n_0} = softmax_n(Y_{m n_0})\n");
        CHECK_MESSAGE(cols(c, stmt(c, "s")) == "all-gather(0)", c.text());
    }
    SUBCASE("no other index to move onto: the two choices as before") {
        const auto c = run("mesh 4\ndim n=4096\ns_{n} = softmax_n(Y_{n_0})\n");
        const auto& s = stmt(c, "s");
        CHECK_MESSAGE(cols(c, s) == "all-gather(0)", c.text());
        CHECK_MESSAGE(s.alternatives.size() == 1, c.text());
    }
}

TEST_CASE("softmax after its all-gather costs one flop per gathered element (NOTATION 8)") {
    // The softmax step's FLOPs and time are of the block it runs on: the whole row after the
    // all-gather, a quarter of it with the statistics all-reduced. Its FLOPs once counted
    // the block before the gather.
    auto softmax_step = [](const Checked& c, const StatementPlan& s) {
        const auto it = std::find_if(s.steps.begin(), s.steps.end(), [](const auto& st) {
            return st.op == semantics::OpKind::Softmax;
        });
        REQUIRE_MESSAGE(it != s.steps.end(), c.text());
        return *it;
    };
    SUBCASE("gathered: 64 x 4096 elements") {
        const auto c = run("mesh 4\ndim m=64 n=4096\ns_{m n} = softmax_n(X_{m n_0})\n");
        const auto& s = stmt(c, "s");
        REQUIRE_MESSAGE(cols(c, s) == "all-gather(0)", c.text());
        const auto step = softmax_step(c, s);
        CHECK_MESSAGE(step.cost.flops_per_device == rel(64.0 * 4096), c.text());
        CHECK_MESSAGE(s.cost.flops_per_device == rel(64.0 * 4096), c.text());
    }
    SUBCASE("gathered over both axes of a 2x2 mesh: 4 x 12 elements") {
        const auto c = run("mesh 2x2\ndim m=4 n=12\ns_{m n} = softmax_n(X_{m n_{01}})\n");
        const auto& s = stmt(c, "s");
        const auto step = softmax_step(c, s);
        CHECK_MESSAGE(step.cost.flops_per_device == rel(48), c.text());
    }
    SUBCASE("statistics all-reduced: the local quarter of each row") {
        const auto c = run("mesh 4\ndim s=1024 v=65536\np_{s v_0} = softmax_v(z_{s v_0})\n");
        const auto& s = stmt(c, "p");
        REQUIRE_MESSAGE(cols(c, s) == "all-reduce(0), all-reduce(0)", c.text());
        CHECK_MESSAGE(softmax_step(c, s).cost.flops_per_device == rel(1024.0 * 65536 / 4),
                      c.text());
    }
}

TEST_CASE("diagnostics: a partial input to a non-linear function (S214)") {
    const std::string src = "mesh 4\ny_{i} = relu(x_{i k_0} w_{k_0})\n";
    SUBCASE("a note, and the implied all-reduce") {
        const auto plan = check_text(src);
        CHECK_MESSAGE(plan.errors() == 0, plan_text(src, plan));
        const auto c = codes(plan);
        CHECK(std::count(c.begin(), c.end(), "S214") == 1);
        REQUIRE(plan.statements.size() == 1);
        CHECK(semantics::collectives_of(plan.mesh, plan.statements[0]) ==
              std::vector<std::string>{"all-reduce(0)"});
    }
    SUBCASE("an error under --strict, not a silently different plan") {
        semantics::CheckOptions strict;
        strict.strict = true;
        const auto plan = check_text(src, strict);
        CHECK_MESSAGE(plan.errors() == 1, plan_text(src, plan));
        CHECK(codes(plan) == std::vector<std::string>{"S214"});
    }
}

} // namespace shardscope::test

TEST_CASE("a reduction's step holds its enum; function names only elementwise and linear ones") {
    using semantics::OpKind;
    using semantics::ReduceFn;
    // The names: a closed set, each read back.
    for (auto fn : {ReduceFn::Sum, ReduceFn::Max, ReduceFn::Mean})
        CHECK(semantics::reduce_fn_of(semantics::reduce_fn_name(fn)) == fn);
    CHECK(semantics::reduce_fn_name(ReduceFn::Mean) == "mean");
    CHECK_FALSE(semantics::reduce_fn_of("relu").has_value());
    CHECK_FALSE(semantics::reduce_fn_of("").has_value());
    auto only = [](const StatementPlan& s, OpKind op) {
        const semantics::Step* found = nullptr;
        for (const auto& st : s.steps)
            if (st.op == op) {
                REQUIRE(found == nullptr);
                found = &st;
            }
        REQUIRE(found != nullptr);
        return *found;
    };
    const std::pair<const char*, ReduceFn> reductions[] = {
        {"sum", ReduceFn::Sum}, {"max", ReduceFn::Max}, {"mean", ReduceFn::Mean}};
    for (const auto& [name, fn] : reductions) {
        const auto c = run("mesh 2\ndim i=4 j=6\ny_{i} = " + std::string(name) + "_j(x_{i j})\n");
        REQUIRE_MESSAGE(c.plan.errors() == 0, c.text());
        const auto st = only(stmt(c, "y"), OpKind::Reduce);
        CHECK_MESSAGE(st.reduce == fn, c.text());
        CHECK_MESSAGE(st.function.empty(), c.text());
    }
    // A sum over an index absent from the left-hand side reduces too.
    const auto implied = run("mesh 2\ndim i=4 j=6\ny_{i} = x_{i j}\n");
    REQUIRE_MESSAGE(implied.plan.errors() == 0, implied.text());
    CHECK(only(stmt(implied, "y"), OpKind::Reduce).reduce == ReduceFn::Sum);
    // Elementwise and linear functions keep their names, and no reduction.
    const auto f = run("mesh 2\ndim i=4\ny_{i} = gelu(x_{i})\nz_{i} = neg(y_{i})\n");
    REQUIRE_MESSAGE(f.plan.errors() == 0, f.text());
    const auto gelu = only(stmt(f, "y"), OpKind::Function);
    CHECK(gelu.function == "gelu");
    CHECK_FALSE(gelu.reduce.has_value());
    const auto neg = only(stmt(f, "z"), OpKind::Linear);
    CHECK(neg.function == "neg");
    CHECK_FALSE(neg.reduce.has_value());
    // A softmax along a sharded index (long rows: the statistics are all-reduced, see above):
    // its row statistics' all-reduces say which, max first.
    const auto sm = run("mesh 4\ndim s=1024 v=65536\np_{s v_0} = softmax_v(z_{s v_0})\n");
    REQUIRE_MESSAGE(sm.plan.errors() == 0, sm.text());
    std::vector<ReduceFn> stats;
    for (const auto& st : stmt(sm, "p").steps)
        if (st.kind == StepKind::AllReduce) {
            REQUIRE(st.reduce.has_value());
            CHECK(st.function.empty());
            stats.push_back(*st.reduce);
        }
    CHECK_MESSAGE((stats == std::vector<ReduceFn>{ReduceFn::Max, ReduceFn::Sum}), sm.text());
}
