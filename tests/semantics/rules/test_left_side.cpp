// semantics/rules/left_side.cpp: the left-hand-side table of NOTATION.md section 6.
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

TEST_CASE("left-hand-side table: every row") {
    const std::string head = "mesh 4\ndim i=64 j=64 k=64\n";
    SUBCASE("R -> S(d): local slice, no collective") {
        const auto c = run(head + "z_{i_0 k} = x_{ij} y_{jk}\n");
        const auto& s = stmt(c, "z");
        CHECK_MESSAGE(cols(c, s) == "none", c.text());
        CHECK_MESSAGE(pl(s.result) == "S(0)", c.text());
        CHECK_MESSAGE(count_steps(s, StepKind::Slice) == 1, c.text());
        CHECK_MESSAGE(s.cost.comm_bytes_per_device == 0, c.text());
    }
    SUBCASE("S(d) -> R: all-gather") {
        const auto c = run(head + "z_{ik} = x_{i_0 j} y_{jk}\n");
        const auto& s = stmt(c, "z");
        CHECK_MESSAGE(cols(c, s) == "all-gather(0)", c.text());
        CHECK_MESSAGE(pl(s.result) == "R", c.text());
        CHECK_MESSAGE(!s.chosen, c.text());
    }
    SUBCASE("S(d) -> S(e): all-to-all") {
        const auto c = run(head + "z_{i k_0} = x_{i_0 j} y_{jk}\n");
        const auto& s = stmt(c, "z");
        CHECK_MESSAGE(cols(c, s) == "all-to-all(0)", c.text());
        CHECK_MESSAGE(pl(s.result) == "S(1)", c.text());
    }
    SUBCASE("S(d) -> S(d): nothing (also after a transpose)") {
        const auto c = run(head + "z_{k i_0} = x_{i_0 j} y_{jk}\n");
        const auto& s = stmt(c, "z");
        CHECK_MESSAGE(cols(c, s) == "none", c.text());
        CHECK_MESSAGE(pl(s.result) == "S(1)", c.text());
    }
    SUBCASE("P -> R: all-reduce") {
        const auto c = run(head + "z_{ik} = x_{i j_0} y_{j_0 k}\n");
        const auto& s = stmt(c, "z");
        CHECK_MESSAGE(cols(c, s) == "all-reduce(0)", c.text());
        CHECK_MESSAGE(pl(s.result) == "R", c.text());
    }
    SUBCASE("P -> S(d): reduce-scatter") {
        const auto c = run(head + "z_{i k_0} = x_{i j_0} y_{j_0 k}\n");
        const auto& s = stmt(c, "z");
        CHECK_MESSAGE(cols(c, s) == "reduce-scatter(0)", c.text());
        CHECK_MESSAGE(pl(s.result) == "S(1)", c.text());
    }
    SUBCASE("P -> P: nothing") {
        const auto c = run(head + "z_{ik}{U_0} = x_{i j_0} y_{j_0 k}\n");
        const auto& s = stmt(c, "z");
        CHECK_MESSAGE(cols(c, s) == "none", c.text());
        CHECK_MESSAGE(pl(s.result) == "P(sum)", c.text());
    }
    SUBCASE("R -> P: local (keep one copy), no collective") {
        const auto c = run(head + "z_{ik}{U_0} = x_{ij} y_{jk}\n");
        const auto& s = stmt(c, "z");
        CHECK_MESSAGE(c.plan.errors() == 0, c.text());
        CHECK_MESSAGE(cols(c, s) == "none", c.text());
        CHECK_MESSAGE(pl(s.result) == "P(sum)", c.text());
        CHECK_MESSAGE(s.cost.comm_bytes_per_device == 0, c.text());
    }
    SUBCASE("S -> P: error S200") {
        const auto c = run(head + "z_{ik}{U_0} = x_{i_0 j} y_{jk}\n");
        CHECK_MESSAGE(has_code(c.plan, "S200", Severity::Error), c.text());
        CHECK_MESSAGE(c.plan.statements.empty(), c.text());
    }
    SUBCASE("P(max) and P(sum) never convert: error S201") {
        // The notation can only write P(sum) on a left-hand side ({U_k}), so the mismatch is
        // built the other way round: a max over a sharded index is P(max).
        const auto c = run(head + "z_{i}{U_0} = max_j(x_{i j_0})\n");
        CHECK_MESSAGE(has_code(c.plan, "S201", Severity::Error), c.text());
        CHECK_MESSAGE(c.plan.statements.empty(), c.text());
    }
    SUBCASE("the same rows for chains (x -> x)") {
        struct Row {
            const char* chain;
            const char* collectives;
            const char* result;
        };
        for (const Row& r : {Row{"x_{ij} -> x_{i_0 j}", "none", "S(0)"},
                             Row{"x_{i_0 j} -> x_{ij}", "all-gather(0)", "R"},
                             Row{"x_{i_0 j} -> x_{i j_0}", "all-to-all(0)", "S(1)"},
                             Row{"x_{ij}{U_0} -> x_{ij}", "all-reduce(0)", "R"},
                             Row{"x_{ij}{U_0} -> x_{i j_0}", "reduce-scatter(0)", "S(1)"},
                             Row{"x_{ij}{U_0} -> x_{ij}{U_0}", "none", "P(sum)"},
                             Row{"x_{ij} -> x_{ij}{U_0}", "none", "P(sum)"}}) {
            const auto c = run(head + r.chain + "\n");
            const auto& s = stmt(c, "x");
            CHECK_MESSAGE(cols(c, s) == r.collectives, c.text());
            CHECK_MESSAGE(pl(s.result) == r.result, c.text());
            CHECK_MESSAGE(c.plan.errors() == 0, c.text());
        }
        const auto c = run(head + "x_{i_0 j} -> x_{ij}{U_0}\n");
        CHECK_MESSAGE(has_code(c.plan, "S200", Severity::Error), c.text());
    }
}

TEST_CASE("a device index free on the left-hand side keeps partial sums: no collective") {
    const auto c = run("mesh 4\ndim c=8\nz_{r_0} = x_{r_0 c} y_{r_0 c}\ns = z_{r_0}\nt = z_{r}\n");
    REQUIRE_MESSAGE(c.plan.errors() == 0, c.text());
    REQUIRE_MESSAGE(c.plan.statements.size() == 3, c.text());
    const auto& z = c.plan.statements[0];
    CHECK_MESSAGE(cols(c, z) == "none", c.text());
    CHECK_MESSAGE(pl(z.result) == "S(0)", c.text());
    CHECK_MESSAGE(shape(z.result.global_shape) == "4", c.text()); // r is a device index
    CHECK_MESSAGE(shape(z.result.local_shape) == "1", c.text());
    // Summing over it later is the all-reduce (written with or without the subscript).
    CHECK_MESSAGE(cols(c, c.plan.statements[1]) == "all-reduce(0)", c.text());
    CHECK_MESSAGE(pl(c.plan.statements[1].result) == "R", c.text());
    CHECK_MESSAGE(cols(c, c.plan.statements[2]) == "all-reduce(0)", c.text());
}

TEST_CASE("issue 22: += adds into the tensor as stored, or is refused with a fix") {
    SUBCASE("no mesh subscripts: the right-hand side is brought to the stored layout") {
        const auto c = run("mesh 2\ndim j=4\nW_{j_0} = x_{j_0}\nW_{j} += z_{j}\n"
                           "V_{j} = x_{j}\nV_{j} += z_{j_0}\n");
        REQUIRE_MESSAGE(c.plan.errors() == 0, c.text());
        CHECK_MESSAGE(pl(c.plan.statements.at(1).result) == "S(0)", c.text());
        CHECK_MESSAGE(cols(c, c.plan.statements.at(1)) == "none", c.text());
        CHECK_MESSAGE(pl(c.plan.statements.at(3).result) == "R", c.text());
        CHECK_MESSAGE(cols(c, c.plan.statements.at(3)) == "all-gather(0)", c.text());
    }
    SUBCASE("another placement written: S203 at the left-hand side, with a fix") {
        const std::string src = "mesh 2\ndim j=4\nW_{j} = x_{j}\nW_{j_0} += z_{j_0}\n";
        const auto c = run(src);
        CHECK_MESSAGE(c.plan.errors() == 1, c.text());
        const auto d = std::find_if(c.plan.diagnostics.begin(), c.plan.diagnostics.end(),
                                    [](const auto& x) { return x.code == "S203"; });
        REQUIRE_MESSAGE(d != c.plan.diagnostics.end(), c.text());
        CHECK(d->severity == Severity::Error);
        CHECK(d->range.line == 4u);
        CHECK(d->range.column == 1u);
        CHECK_MESSAGE(d->message.find("(R)") != std::string::npos, d->message);
        CHECK_MESSAGE(d->fix.find("without mesh subscripts") != std::string::npos, d->fix);
    }
    SUBCASE("another number of dimensions: S104") {
        const auto c = run("mesh 2\ndim j=4 k=2\nW_{j} = x_{j}\nW_{j k} += z_{j k}\n");
        CHECK_MESSAGE(has_code(c.plan, "S104", Severity::Error), c.text());
    }
    SUBCASE("the same placement written, or onto a program input: as before") {
        const auto c =
            run("mesh 2\ndim j=4\nW_{j_0} = x_{j_0}\nW_{j_0} += z_{j}\nA_{j_0} += z_{j}\n");
        REQUIRE_MESSAGE(c.plan.errors() == 0, c.text());
        CHECK_MESSAGE(cols(c, c.plan.statements.at(1)) == "none", c.text());
        CHECK_MESSAGE(pl(c.plan.statements.at(2).result) == "S(0)", c.text());
    }
}
