// semantics/rules/sums.cpp: `+`, `-` and `/` (NOTATION.md section 6, "Other nodes").
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

TEST_CASE("+ and -: agreement, broadcast, P + P -> P, P + R needs a reduction") {
    SUBCASE("operands that agree: nothing") {
        const auto c = run("mesh 4\ndim i=64 j=64\nz_{i_0 j} = x_{i_0 j} + y_{i_0 j}\n");
        const auto& s = stmt(c, "z");
        CHECK_MESSAGE(cols(c, s) == "none", c.text());
        CHECK_MESSAGE(pl(s.result) == "S(0)", c.text());
        CHECK_MESSAGE(!s.chosen, c.text());
    }
    SUBCASE("a broadcast operand lacking the sharded index") {
        const auto c = run("mesh 4\ndim i=64 j=64\nz_{i_0 j} = x_{i_0 j} - b_{j}\n");
        const auto& s = stmt(c, "z");
        CHECK_MESSAGE(cols(c, s) == "none", c.text());
        CHECK_MESSAGE(pl(s.result) == "S(0)", c.text());
    }
    SUBCASE("an operand holding the sharded index unsharded slices") {
        const auto c = run("mesh 4\ndim i=64 j=64\nz_{i_0 j} = x_{i_0 j} + c_{i}\n");
        const auto& s = stmt(c, "z");
        CHECK_MESSAGE(cols(c, s) == "none", c.text());
        CHECK_MESSAGE(count_steps(s, StepKind::Slice, "c") == 1, c.text());
    }
    SUBCASE("P + P -> P") {
        const auto c = run("mesh 4\ndim i=64 j=64\nz_{ij}{U_0} = p_{ij}{U_0} + q_{ij}{U_0}\n");
        const auto& s = stmt(c, "z");
        CHECK_MESSAGE(cols(c, s) == "none", c.text());
        CHECK_MESSAGE(pl(s.result) == "P(sum)", c.text());
        const auto c2 = run("mesh 4\ndim i=64 j=64\nz_{ij} = p_{ij}{U_0} - q_{ij}{U_0}\n");
        const auto& s2 = stmt(c2, "z");
        CHECK_MESSAGE(cols(c2, s2) == "all-reduce(0)", c2.text()); // once, after the sum
        REQUIRE_MESSAGE(!s2.steps.empty(), c2.text());
        CHECK_MESSAGE(s2.steps.back().kind == StepKind::AllReduce, c2.text());
    }
    SUBCASE("P + R: the partial term is reduced before the sum") {
        const auto c = run("mesh 4\ndim i=64 j=64\nz_{ij} = p_{ij}{U_0} + x_{ij}\n");
        const auto& s = stmt(c, "z");
        CHECK_MESSAGE(cols(c, s) == "all-reduce(0)", c.text());
        REQUIRE_MESSAGE(!s.steps.empty(), c.text());
        CHECK_MESSAGE(s.steps.front().kind == StepKind::AllReduce, c.text());
        CHECK_MESSAGE(s.steps.front().tensor == "p", c.text());
        CHECK_MESSAGE(pl(s.result) == "R", c.text());
    }
    SUBCASE("operands sharded along different indices on one axis: a gather is chosen") {
        const auto c = run("mesh 4\ndim i=64 j=64\nz_{i_0 j} = x_{i_0 j} + y_{i j_0}\n");
        const auto& s = stmt(c, "z");
        CHECK_MESSAGE(s.chosen, c.text());
        REQUIRE_MESSAGE(!collectives_in(c, s).empty(), c.text());
        CHECK_MESSAGE(collectives_in(c, s).front() == "all-gather(0)", c.text());
        CHECK_MESSAGE(pl(s.result) == "S(0)", c.text());
    }
}

TEST_CASE("/: only the numerator may be partial") {
    SUBCASE("partial numerator over a replicated denominator stays partial") {
        const auto c = run("mesh 4\ndim i=64 j=64\nz_{ij}{U_0} = p_{ij}{U_0} / x_{ij}\n");
        const auto& s = stmt(c, "z");
        CHECK_MESSAGE(cols(c, s) == "none", c.text());
        CHECK_MESSAGE(pl(s.result) == "P(sum)", c.text());
    }
    SUBCASE("\\frac form") {
        const auto c = run("mesh 4\ndim i=64 j=64\nz_{ij}{U_0} = \\frac{p_{ij}{U_0}}{x_{ij}}\n");
        CHECK_MESSAGE(cols(c, stmt(c, "z")) == "none", c.text());
    }
    SUBCASE("a partial denominator is reduced") {
        const auto c = run("mesh 4\ndim i=64 j=64\nz_{ij} = x_{ij} / p_{ij}{U_0}\n");
        const auto& s = stmt(c, "z");
        CHECK_MESSAGE(cols(c, s) == "all-reduce(0)", c.text());
        REQUIRE_MESSAGE(!s.steps.empty(), c.text());
        CHECK_MESSAGE(s.steps.front().tensor == "p", c.text());
        const auto c2 = run("mesh 4\ndim i=64 j=64\nz_{ij}{U_0} = p_{ij}{U_0} / q_{ij}{U_0}\n");
        const auto& s2 = stmt(c2, "z");
        CHECK_MESSAGE(cols(c2, s2) == "all-reduce(0)", c2.text());
        REQUIRE_MESSAGE(!s2.steps.empty(), c2.text());
        CHECK_MESSAGE(s2.steps.front().tensor == "q", c2.text());
        CHECK_MESSAGE(pl(s2.result) == "P(sum)", c2.text());
    }
}

TEST_CASE("issue 22: a sum, a difference or a quotient of partial maxes reduces them first") {
    const auto c = run("mesh 2\ndim i=4 h=4\n"
                       "z_{i} = max_{h}(x_{i h_0}) + max_{h}(y_{i h_0})\n"
                       "a_{i} = max_{h}(x_{i h_0}) - w_{i}\n"
                       "b_{i} = max_{h}(x_{i h_0}) / w_{i}\n"
                       "d = max_{h}(x_{i h_0})\n");
    REQUIRE_MESSAGE(c.plan.errors() == 0, c.text());
    const auto& z = c.plan.statements.at(0);
    CHECK_MESSAGE(cols(c, z) == "all-reduce(0), all-reduce(0)", c.text());
    CHECK_MESSAGE(all_reduce_ops(z) == "max max", c.text());
    // Both maxes are complete before the add: the add's inputs are replicated.
    for (std::size_t s = 0; s < 3; ++s) {
        const auto& st = c.plan.statements.at(s);
        const auto add = std::find_if(st.steps.begin(), st.steps.end(), [](const auto& x) {
            return x.kind == StepKind::Compute &&
                   (x.text.detail == "add" || x.text.detail == "divide");
        });
        REQUIRE_MESSAGE(add != st.steps.end(), c.text());
        CHECK_MESSAGE(std::count_if(st.steps.begin(), add,
                                    [](const auto& x) { return x.kind == StepKind::AllReduce; }) >=
                          1,
                      c.text());
        CHECK_MESSAGE(pl(st.result) == "R", c.text());
    }
    CHECK_MESSAGE(all_reduce_ops(c.plan.statements.at(1)) == "max", c.text());
    CHECK_MESSAGE(all_reduce_ops(c.plan.statements.at(2)) == "max", c.text());
    // A sum over the index the left-hand side drops is no max either: reduce, then sum i.
    CHECK_MESSAGE(all_reduce_ops(c.plan.statements.at(3)) == "max", c.text());
    // A partial sum next to a partial max: the max is reduced, the sum then too.
    const auto mixed = run("mesh 2\ndim j=6 l=4\nB = sum_{j}(z_{j_0}) + max_{l}(w_{l_0})\n");
    CHECK_MESSAGE(cols(mixed, mixed.plan.statements.at(0)) == "all-reduce(0), all-reduce(0)",
                  mixed.text());
    // P(sum) + P(sum) stays partial (linear): no collective before the left-hand side's.
    const auto sums = run("mesh 2\ndim j=6 l=4\nB{U_0} = sum_{j}(z_{j_0}) + sum_{l}(w_{l_0})\n");
    CHECK_MESSAGE(cols(sums, sums.plan.statements.at(0)) == "none", sums.text());
}

TEST_CASE("issue 22: a negated partial max is reduced first; positive scaling keeps it") {
    const auto c = run("mesh 2\ndim i=4 h=4\n"
                       "z_{i} = neg(max_{h}(x_{i h_0}))\n"
                       "w_{i} = -max_{h}(x_{i h_0})\n"
                       "f_{i} = 2 max_{h}(x_{i h_0})\n"
                       "g_{i} = scale(max_{h}(x_{i h_0}))\n"
                       "m_{i} = max_{h}(x_{i h_0}) y_{i}\n");
    REQUIRE_MESSAGE(c.plan.errors() == 0, c.text());
    for (const auto& s : c.plan.statements) {
        CHECK_MESSAGE(cols(c, s) == "all-reduce(0)", c.text());
        CHECK_MESSAGE(all_reduce_ops(s) == "max", c.text());
    }
    // neg and -: the all-reduce comes before the negation (S215 says why).
    for (std::size_t s = 0; s < 2; ++s) {
        const auto& st = c.plan.statements.at(s);
        REQUIRE(st.steps.size() >= 3);
        CHECK_MESSAGE(st.steps[1].kind == StepKind::AllReduce, c.text());
    }
    CHECK_MESSAGE(has_code(c.plan, "S215", Severity::Note), c.text());
    // 2 max(..) and scale(max(..)) keep P(max) until the left-hand side: the all-reduce is last.
    for (std::size_t s = 2; s < 4; ++s)
        CHECK_MESSAGE(c.plan.statements.at(s).steps.back().kind == StepKind::AllReduce, c.text());
    // A partial max kept to the left-hand side stays P(max) there; a product with a tensor
    // reduces it before.
    const auto& m = c.plan.statements.at(4);
    CHECK_MESSAGE(m.steps.back().kind != StepKind::AllReduce, c.text());
    // --strict: the implicit reduction is an error.
    CheckOptions strict;
    strict.strict = true;
    const auto s = run("mesh 2\ndim i=4 h=4\nz_{i} = neg(max_{h}(x_{i h_0}))\n", strict);
    CHECK_MESSAGE(has_code(s.plan, "S215", Severity::Error), s.text());
}

TEST_CASE("issue 22: elementwise operands on different mesh axes share one layout") {
    SUBCASE("x_{b_1} + y_{b_0}: x slices to b over axes 1 then 0, y's blocks are permuted") {
        const auto c = run("mesh 2x2\ndim b=4\nz_{b_{10}} = x_{b_1} + y_{b_0}\n");
        REQUIRE_MESSAGE(c.plan.errors() == 0, c.text());
        const auto& s = c.plan.statements.at(0);
        // Device (c0, c1) needs y's block 2·c1 + c0, held by the device whose c0 is its half:
        // the two devices off the diagonal swap one element.
        CHECK_MESSAGE(cols(c, s) == "permute(0,1)", c.text());
        CHECK_MESSAGE(pl(s.result) == "S(0), S(0)", c.text());
        // The add's inputs both hold b over axes 1, 0.
        const auto add = std::find_if(s.steps.begin(), s.steps.end(),
                                      [](const auto& x) { return x.text.detail == "add"; });
        REQUIRE(add != s.steps.end());
        for (int in : add->inputs) {
            const auto& atoms = s.values.at(static_cast<std::size_t>(in)).layout.atoms;
            REQUIRE(atoms.size() == 1);
            CHECK_MESSAGE(atoms[0].axes == (std::vector<int>{1, 0}), c.text());
        }
    }
    SUBCASE("k_{10} - w_k: w slices in the order 1, 0 (free), nothing else") {
        const auto c = run("mesh 2x2\ndim k=4\nz_{k_{10}} = q_{k_{10}} - w_{k}\n");
        REQUIRE_MESSAGE(c.plan.errors() == 0, c.text());
        const auto& s = c.plan.statements.at(0);
        CHECK_MESSAGE(cols(c, s) == "none", c.text());
        CHECK_MESSAGE(std::count_if(s.steps.begin(), s.steps.end(),
                                    [](const auto& x) { return x.kind == StepKind::Slice; }) == 2,
                      c.text());
    }
    SUBCASE("operands that agree, or are prefixes, need no collective") {
        const auto c = run("mesh 2x2\ndim b=4 c=4\nz_{b_{01} c} = x_{b_{01} c} + y_{b_0 c}\n"
                           "w_{b_0 c_1} = x_{b_0 c} + y_{b c_1}\n");
        REQUIRE_MESSAGE(c.plan.errors() == 0, c.text());
        CHECK_MESSAGE(cols(c, c.plan.statements.at(0)) == "none", c.text());
        CHECK_MESSAGE(cols(c, c.plan.statements.at(1)) == "none", c.text());
    }
}
