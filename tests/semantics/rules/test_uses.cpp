// semantics/rules/uses.cpp: placements of tensor occurrences as written (S101) and uses
// across statements (NOTATION.md sections 3 and 6).
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

TEST_CASE("placements: R, S(d) with d the written dimension, groups, P via {U_k}, multi-axis") {
    SUBCASE("an index with no subscript is R; S(d) counts written dimensions from 0") {
        const auto c = run("mesh 4\ndim i=8 j=8 k=8\nz_{i j k_0} = x_{i j k_0}\n");
        const auto& s = stmt(c, "z");
        CHECK_MESSAGE(pl(operand(c, s, "x")) == "S(2)", c.text());
        CHECK_MESSAGE(pl(s.result) == "S(2)", c.text());
        const auto c2 = run("mesh 4\ndim i=8 j=8\nz_{i j} = x_{i j}\n");
        CHECK_MESSAGE(pl(operand(c2, stmt(c2, "z"), "x")) == "R", c2.text());
        const auto c3 = run("mesh 4\ndim i=8 j=8\nz_{i j_0} = x_{i j_0}\n");
        CHECK_MESSAGE(pl(operand(c3, stmt(c3, "z"), "x")) == "S(1)", c3.text());
    }
    SUBCASE("a parenthesised group counts as one dimension") {
        const auto c = run("mesh 4\ndim r=4 c=2 s=4 d=8\ny_{r c s} = x_{(r c) s d_0} w_{d_0}\n");
        const auto& s = stmt(c, "y");
        const auto& x = operand(c, s, "x");
        CHECK_MESSAGE(pl(x) == "S(2)", c.text());
        CHECK_MESSAGE(x.global_shape.size() == 3, c.text());
        CHECK_MESSAGE(shape(x.global_shape) == "8x4x8", c.text());
        CHECK_MESSAGE(shape(x.local_shape) == "8x4x2", c.text());

        const auto c2 = run("mesh 4\ndim r=4 c=2 s=4 d=8\nq_{(r_0 c) s d} -> q_{(r c) s d}\n");
        const auto& s2 = stmt(c2, "q");
        REQUIRE_MESSAGE(s2.operands.size() == 2, c2.text());
        CHECK_MESSAGE(pl(s2.operands[0]) == "S(0)", c2.text());
        CHECK_MESSAGE(shape(s2.operands[0].local_shape) == "2x4x8", c2.text());
        CHECK_MESSAGE(cols(c2, s2) == "all-gather(0)", c2.text());
    }
    SUBCASE("{U_k} marks a partial operand, P(sum)") {
        const auto c = run("mesh 2x2\ndim i=8 k=8\nz_{ik}{U_1} = p_{ik}{U_1}\n");
        const auto& s = stmt(c, "z");
        CHECK_MESSAGE(pl(operand(c, s, "p")) == "R, P(sum)", c.text());
        CHECK_MESSAGE(pl(s.result) == "R, P(sum)", c.text());
        CHECK_MESSAGE(cols(c, s) == "none", c.text());
    }
    SUBCASE("a scalar may carry the partial marker as a bare subscript") {
        const auto c = run("mesh 4\ndim a=8\nz_0 = x_{a_0} y_{a_0}\n");
        const auto& s = stmt(c, "z");
        CHECK_MESSAGE(pl(s.result) == "P(sum)", c.text());
        CHECK_MESSAGE(s.result.indices.empty(), c.text());
        CHECK_MESSAGE(cols(c, s) == "none", c.text());
    }
    SUBCASE("one index over several axes: b_{01} and b_{0,1}") {
        for (const std::string b : {"b_{01}", "b_{0,1}"}) {
            const auto c = run("mesh 2x2\ndim b=8 i=8\ny_{" + b + "} = x_{" + b + " i} w_{i}\n");
            const auto& s = stmt(c, "y");
            CHECK_MESSAGE(pl(operand(c, s, "x")) == "S(0), S(0)", c.text());
            CHECK_MESSAGE(shape(operand(c, s, "x").local_shape) == "2x8", c.text());
            CHECK_MESSAGE(pl(operand(c, s, "w")) == "R, R", c.text());
            CHECK_MESSAGE(pl(s.result) == "S(0), S(0)", c.text());
            CHECK_MESSAGE(cols(c, s) == "none", c.text());
        }
    }
    SUBCASE("named axes: placements are per axis in declaration order") {
        const auto c = run("mesh dp=2 tp=4\ndim i=8 j=8\nz_{i_{tp} j_{dp}} = x_{i_{tp} j_{dp}}\n");
        const auto& s = stmt(c, "z");
        CHECK_MESSAGE(pl(operand(c, s, "x")) == "S(1), S(0)", c.text());
        CHECK_MESSAGE(shape(operand(c, s, "x").local_shape) == "2x4", c.text());
    }
}

TEST_CASE("S101: a tensor may never have two indices on the same mesh axis") {
    SUBCASE("W_{r_0 c r'_0 d}") {
        const auto c = run("mesh 4\nz = W_{r_0 c r'_0 d} x_{r_0 c r'_0 d}\n");
        CHECK_MESSAGE(count_code(c.plan, "S101") >= 1, c.text());
        CHECK_MESSAGE(has_code(c.plan, "S101", Severity::Error), c.text());
        CHECK_MESSAGE(c.plan.statements.empty(), c.text());
    }
    SUBCASE("on the left-hand side too") {
        const auto c = run("mesh 4\ndim i=8 j=8\nz_{i_0 j_0} = x_{ij}\n");
        CHECK_MESSAGE(has_code(c.plan, "S101", Severity::Error), c.text());
    }
    SUBCASE("a partial marker and a sharded index on one axis") {
        const auto c = run("mesh 4\ndim i=8 j=8\nz_{ij} = x_{i_0 j}{U_0}\n");
        CHECK_MESSAGE(has_code(c.plan, "S101", Severity::Error), c.text());
    }
    SUBCASE("a multi-axis index and another index on one of its axes") {
        const auto c = run("mesh 2x2\ndim i=8 j=8\nz_{ij} = x_{i_{01} j_1}\n");
        CHECK_MESSAGE(has_code(c.plan, "S101", Severity::Error), c.text());
    }
    SUBCASE("different axes are fine") {
        const auto c = run("mesh 2x2\ndim i=8 j=8\nz_{i_0 j_1} = x_{i_0 j_1}\n");
        CHECK_MESSAGE(count_code(c.plan, "S101") == 0, c.text());
        CHECK_MESSAGE(c.plan.errors() == 0, c.text());
    }
}

TEST_CASE("across statements: defined tensors keep their placement") {
    const std::string head = "mesh 4\ndim i=64 j=64 k=64\ny_{i_0 k} = x_{ij} w_{jk}\n";
    SUBCASE("a use with no mesh subscript inherits the placement") {
        const auto c = run(head + "z_{i_0 k} = relu(y_{ik})\n");
        REQUIRE_MESSAGE(c.plan.statements.size() == 2, c.text());
        const auto& s = c.plan.statements[1];
        CHECK_MESSAGE(pl(operand(c, s, "y")) == "S(0)", c.text());
        CHECK_MESSAGE(shape(operand(c, s, "y").local_shape) == "16x64", c.text());
        CHECK_MESSAGE(cols(c, s) == "none", c.text());
        CHECK_MESSAGE(count_code(c.plan, "S210") == 0, c.text());
    }
    SUBCASE("inherited through renamed indices (by position)") {
        const auto c = run(head + "dim a=64 b=64\nz_{a_0 b} = relu(y_{ab})\n");
        const auto& s = stmt(c, "z");
        CHECK_MESSAGE(pl(operand(c, s, "y")) == "S(0)", c.text());
        CHECK_MESSAGE(cols(c, s) == "none", c.text());
    }
    SUBCASE("inherited, then the left-hand side asks for R: all-gather") {
        const auto c = run(head + "z_{ik} = relu(y_{ik})\n");
        CHECK_MESSAGE(cols(c, stmt(c, "z")) == "all-gather(0)", c.text());
    }
    SUBCASE("a use with the same subscripts: nothing, no note") {
        const auto c = run(head + "z_{i_0 k} = relu(y_{i_0 k})\n");
        CHECK_MESSAGE(cols(c, stmt(c, "z")) == "none", c.text());
        CHECK_MESSAGE(count_code(c.plan, "S210") == 0, c.text());
    }
    SUBCASE("a use with different subscripts: redistribution inserted, note S210") {
        const auto c = run(head + "z_{i k_0} = relu(y_{i k_0})\n");
        const auto& s = stmt(c, "z");
        CHECK_MESSAGE(cols(c, s) == "all-to-all(0)", c.text());
        REQUIRE_MESSAGE(!s.steps.empty(), c.text());
        CHECK_MESSAGE(s.steps.front().kind == StepKind::AllToAll, c.text());
        CHECK_MESSAGE(s.steps.front().tensor == "y", c.text());
        CHECK_MESSAGE(has_code(c.plan, "S210", Severity::Note), c.text());
        CHECK_MESSAGE(c.plan.errors() == 0, c.text());
        CHECK_MESSAGE(pl(operand(c, s, "y")) == "S(1)", c.text());
    }
    SUBCASE("... and an error S210 under strict") {
        CheckOptions strict;
        strict.strict = true;
        const auto c = run(head + "z_{i k_0} = relu(y_{i k_0})\n", strict);
        CHECK_MESSAGE(has_code(c.plan, "S210", Severity::Error), c.text());
        CHECK_MESSAGE(count_code(c.plan, "S210") == 1, c.text());
    }
    SUBCASE("later uses without subscripts, or with the same ones, all inherit") {
        const auto c =
            run("mesh 4\ndim i=64 k=64\ny_{i_0 k} = x_{i_0 k}\nz_{i_0 k} = y_{ik} + q_{ik}\n"
                "u_{i_0 k} = y_{i_0 k}\n");
        CHECK_MESSAGE(pl(operand(c, stmt(c, "z"), "y")) == "S(0)", c.text());
        CHECK_MESSAGE(cols(c, stmt(c, "z")) == "none", c.text());
        CHECK_MESSAGE(cols(c, stmt(c, "u")) == "none", c.text());
        CHECK_MESSAGE(count_code(c.plan, "S210") == 0, c.text());
    }
    SUBCASE("a partial definition stays partial for later uses") {
        const auto c = run("mesh 4\ndim i=64 j=64 k=64\np_{ik}{U_0} = x_{i j_0} w_{j_0 k}\n"
                           "z_{ik} = relu(p_{ik})\n");
        const auto& s = stmt(c, "z");
        CHECK_MESSAGE(pl(operand(c, s, "p")) == "P(sum)", c.text());
        CHECK_MESSAGE(cols(c, s) == "all-reduce(0)", c.text());
    }
}

TEST_CASE("program inputs are exactly as written") {
    const auto c =
        run("mesh 4\ndim i=64 j=64 k=64\na_{ik} = x_{i_0 j} w_{jk}\nb_{ik} = x_{i j_0} w_{jk}\n");
    REQUIRE_MESSAGE(c.plan.statements.size() == 2, c.text());
    CHECK_MESSAGE(pl(operand(c, c.plan.statements[0], "x")) == "S(0)", c.text());
    CHECK_MESSAGE(pl(operand(c, c.plan.statements[1], "x")) == "S(1)", c.text());
    CHECK_MESSAGE(cols(c, c.plan.statements[0]) == "all-gather(0)", c.text());
    CHECK_MESSAGE(cols(c, c.plan.statements[1]) == "all-reduce(0)", c.text());
    CHECK_MESSAGE(count_code(c.plan, "S210") == 0, c.text());
    CHECK_MESSAGE(c.plan.errors() == 0, c.text());
}

TEST_CASE("issue 22: a definition used or accumulated into with other extents is S105") {
    // exec refused these ('A is used with another size than it has'); check now does.
    for (const std::string src : {"mesh 2\ndim i=4 j=8\nA_{i} = x_{i}\nB_{j} = A_{j}\n",
                                  "mesh 2\ndim i=4 j=8\nA_{i} = x_{i}\nA_{j} += y_{j}\n",
                                  "mesh 2\ndim i=4 j=8\nA_{i} = x_{i}\nA_{j} -> A_{j_0}\n"}) {
        const auto c = run(src);
        CAPTURE(src);
        CHECK_MESSAGE(c.plan.errors() == 1, c.text());
        const auto d = std::find_if(c.plan.diagnostics.begin(), c.plan.diagnostics.end(),
                                    [](const auto& x) { return x.code == "S105"; });
        REQUIRE_MESSAGE(d != c.plan.diagnostics.end(), c.text());
        CHECK(d->range.line == 4u);
        CHECK_MESSAGE(d->message.find("(4)") != std::string::npos, d->message);
        CHECK_MESSAGE(d->message.find("(8)") != std::string::npos, d->message);
        CHECK(!d->fix.empty());
    }
    // Other names with the same ranges are the same tensor, by position.
    const auto ok = run("mesh 2\ndim i=4 k=4\nA_{i_0} = x_{i_0}\nB_{k} = A_{k}\nA_{k} += y_{k}\n");
    CHECK_MESSAGE(ok.plan.errors() == 0, ok.text());
    CHECK_MESSAGE(cols(ok, ok.plan.statements.at(1)) == "all-gather(0)", ok.text());
    CHECK_MESSAGE(pl(ok.plan.statements.at(2).result) == "S(0)", ok.text());
}
