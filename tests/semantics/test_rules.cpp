// NOTATION.md sections 5-7 as doctests: mesh axes (S100, S102), uneven shards, range
// inference (section 5), expectations (section 7), --strict and the declarations' errors. The
// rules of section 6 (placements, einsum rules 1-4, other nodes, the left-hand-side table,
// across statements) are tested beside their sources, in tests/semantics/rules/.
// Every check prints the plan (plan_text) when it fails.
#include "frontend/mesh_spec.hpp"
#include "helpers.hpp"
#include "semantics/totals.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
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

namespace {

int count_code(const Plan& p, const std::string& code) {
    return static_cast<int>(std::count_if(p.diagnostics.begin(), p.diagnostics.end(),
                                          [&](const auto& d) { return d.code == code; }));
}

bool has_code(const Plan& p, const std::string& code, Severity severity) {
    return std::any_of(p.diagnostics.begin(), p.diagnostics.end(),
                       [&](const auto& d) { return d.code == code && d.severity == severity; });
}

/// The operand occurrence of `tensor` (the first one).

} // namespace

// =============================================================================================
// Section 6: mesh axes.

TEST_CASE("S102 unknown mesh axis, S100 no mesh") {
    SUBCASE("axis number out of range") {
        const auto c = run("mesh 4\nz = x_{i_5} y_{i_5}\n");
        CHECK_MESSAGE(has_code(c.plan, "S102", Severity::Error), c.text());
        CHECK_MESSAGE(c.plan.statements.empty(), c.text());
    }
    SUBCASE("axis 1 on a one-axis mesh") {
        const auto c = run("mesh 4\nz = x_{i_1} y_{i_1}\n");
        CHECK_MESSAGE(has_code(c.plan, "S102", Severity::Error), c.text());
    }
    SUBCASE("unknown axis name") {
        const auto c = run("mesh dp=2\nz = x_{i_{tp}} y_{i_{tp}}\n");
        CHECK_MESSAGE(has_code(c.plan, "S102", Severity::Error), c.text());
        CHECK_MESSAGE(count_code(c.plan, "S100") == 0, c.text());
    }
    SUBCASE("unknown axis in a partial marker") {
        const auto c = run("mesh 4\ndim i=8\nz_{i} = x_{i}{U_3}\n");
        CHECK_MESSAGE(has_code(c.plan, "S102", Severity::Error), c.text());
    }
    SUBCASE("no mesh at all") {
        const auto c = run("z = x_{r_0 e} y_{r_0 e}\n");
        CHECK_MESSAGE(has_code(c.plan, "S100", Severity::Error), c.text());
        CHECK_MESSAGE(count_code(c.plan, "S102") == 0, c.text());
    }
    SUBCASE("no mesh is fine when nothing is sharded") {
        const auto c = run("dim i=8 j=8 k=8\nz_{ik} = x_{ij} y_{jk}\n");
        CHECK_MESSAGE(c.plan.errors() == 0, c.text());
        CHECK_MESSAGE(cols(c, stmt(c, "z")) == "none", c.text());
    }
}

TEST_CASE("section 8: a chosen plan is the cheapest legal fix") {
    // Chosen plans may use any legal plan of the whole statement, including gathering an
    // operand before a contraction. Here the checker only searches rule-3/rule-4 fixes with
    // the contraction "implied", so it keeps a dearer plan (and, for rule 3, hides the
    // cheaper one behind equal collective names).
    SUBCASE("P with a sharded index, replicated left-hand side") {
        const auto c = run(
            "mesh 4\ndim i=1024 j=4 k=1024\nlink 0 450GB/s 5us\nz_{ik} = p_{ij}{U_0} w_{j_0 k}\n");
        const auto& s = stmt(c, "z");
        CHECK_MESSAGE(s.chosen, c.text());
        for (const auto& a : s.alternatives)
            CHECK_MESSAGE(a.time_s >= s.cost.time_s * (1 - 1e-9), c.text());
    }
    SUBCASE("rule 3 with small operands and a large result") {
        // Gathering both small operands (x: 1024x4, y: 4x1024, f32; 12288 B each over a
        // ring of 4: 3·5us + 12288/450e9 s) and computing z everywhere costs about 31.3 us
        // including the local product; the checker chooses a plan that gathers z (37 us).
        const auto c = run(
            "mesh 4\ndim i=1024 j=4 k=1024\nlink 0 450GB/s 5us\nz_{ik} = x_{i_0 j} y_{j_0 k}\n");
        const auto& s = stmt(c, "z");
        CHECK_MESSAGE(s.chosen, c.text());
        const double gather_both = 2 * (3 * 5e-6 + 12288 / 450e9);
        const double local_product =
            std::max(2.0 * 1024 * 4 * 1024 / 67e12, (16384.0 * 2 + 1024 * 1024 * 4) / 3350e9);
        CHECK_MESSAGE(s.cost.time_s <= (gather_both + local_product) * 1.001, c.text());
    }
    SUBCASE("rule 2 per axis, but the operands order the index's axes differently") {
        // a has i over axis 0, b has i over axis 1. A legal plan gathers a over 0 and b over 1
        // (each once); it must not slice b over axis 0 (free) and then gather that slice back.
        const auto c = run("mesh 2x2\ndim i=8 j=8\nz_{ij} = a_{i_0 j} b_{i_1 j}\n");
        const auto& s = stmt(c, "z");
        for (const auto& st : s.steps)
            if (st.kind == StepKind::AllGather && st.tensor == "b")
                CHECK_MESSAGE(st.mesh_axes != std::vector<int>{0}, c.text());
        CHECK_MESSAGE(collectives_in(c, s).size() <= 3, c.text());
    }
}

// =============================================================================================
// Section 6: uneven shards; section 5: range inference.

TEST_CASE("uneven shards: warning S500, local shapes follow torch.chunk (ceil)") {
    SUBCASE("10 over 4 devices: chunks of 3") {
        const auto c = run("mesh 4\ndim i=10 j=8\nz_{i_0 j} = x_{i_0 j} + y_{i_0 j}\n");
        const auto& s = stmt(c, "z");
        CHECK_MESSAGE(has_code(c.plan, "S500", Severity::Warning), c.text());
        CHECK_MESSAGE(c.plan.errors() == 0, c.text());
        CHECK_MESSAGE(shape(s.result.local_shape) == "3x8", c.text());
        CHECK_MESSAGE(shape(s.result.global_shape) == "10x8", c.text());
        CHECK_MESSAGE(shape(operand(c, s, "x").local_shape) == "3x8", c.text());
    }
    SUBCASE("6 over a 2x2 split: chunks of 2") {
        const auto c = run("mesh 2x2\ndim i=6 j=8\nz_{i_{01} j} = x_{i_{01} j}\n");
        CHECK_MESSAGE(has_code(c.plan, "S500", Severity::Warning), c.text());
        CHECK_MESSAGE(shape(stmt(c, "z").result.local_shape) == "2x8", c.text());
    }
    SUBCASE("7 over 2: chunk of 4") {
        const auto c = run("mesh 2\ndim i=7\nz_{i_0} = x_{i_0}\n");
        CHECK_MESSAGE(has_code(c.plan, "S500", Severity::Warning), c.text());
        CHECK_MESSAGE(shape(stmt(c, "z").result.local_shape) == "4", c.text());
    }
    SUBCASE("a chain warns once per layout: its result is its last step's operand") {
        const auto c = run("mesh 4\ndim i=6 k=7\nx_{i_0 k} -> x_{i k_0}\n");
        CHECK_MESSAGE(count_code(c.plan, "S500") == 2, c.text()); // i_0 of 6, k_0 of 7
    }
    SUBCASE("even shards: no warning") {
        const auto c = run("mesh 4\ndim i=12 j=8\nz_{i_0 j} = x_{i_0 j} + y_{i_0 j}\n");
        CHECK_MESSAGE(count_code(c.plan, "S500") == 0, c.text());
        CHECK_MESSAGE(c.plan.warnings() == 0, c.text());
        CHECK_MESSAGE(shape(stmt(c, "z").result.local_shape) == "3x8", c.text());
    }
}

TEST_CASE("range inference: declared, device index, split, default") {
    SUBCASE("declared ranges are used, primes take the range of the base index") {
        const auto c =
            run("mesh 4\ndim d=32 e=16\nz_{d} = W_{d d'} x_{d'} + v_{d}\ny_{e} = x_{e}\n");
        const auto& s = stmt(c, "z");
        CHECK_MESSAGE(shape(operand(c, s, "W").global_shape) == "32x32", c.text());
        CHECK_MESSAGE(count_code(c.plan, "S501") == 0, c.text());
    }
    SUBCASE("a sharded undeclared index is a device index: range = axis size") {
        const auto c = run("mesh 2x8\ndim c=16\nz_{r_1 c} = x_{r_1 c}\n");
        const auto& s = stmt(c, "z");
        CHECK_MESSAGE(shape(s.result.global_shape) == "8x16", c.text());
        CHECK_MESSAGE(shape(s.result.local_shape) == "1x16", c.text());
        CHECK_MESSAGE(count_code(c.plan, "S501") == 0, c.text());
        const auto c2 = run("mesh 2x3\ndim c=16\nz_{r_{01} c} = x_{r_{01} c}\n");
        CHECK_MESSAGE(shape(stmt(c2, "z").result.global_shape) == "6x16", c2.text());
    }
    SUBCASE("a split gives the remaining factor") {
        const auto c = run("mesh 4\ndim s=64\nsplit s -> r t\nz_{r_0 t} = x_{r_0 t}\n");
        const auto& s = stmt(c, "z");
        CHECK_MESSAGE(shape(s.result.global_shape) == "4x16", c.text());
        CHECK_MESSAGE(shape(s.result.local_shape) == "1x16", c.text());
        CHECK_MESSAGE(c.plan.errors() == 0, c.text());
        CHECK_MESSAGE(count_code(c.plan, "S501") == 0, c.text());
        // The parent from its parts.
        const auto c2 = run("mesh 4\ndim t=8\nsplit s -> r t\nx_{s} -> x_{r_0 t}\n");
        const auto& s2 = stmt(c2, "x");
        REQUIRE_MESSAGE(!s2.operands.empty(), c2.text());
        CHECK_MESSAGE(shape(s2.operands.front().global_shape) == "32", c2.text());
        CHECK_MESSAGE(cols(c2, s2) == "none", c2.text());
    }
    SUBCASE("a chain's group keeps the element count when neither side has a range") {
        // z_{b} -> z_{(f_0 c)} without dim lines: b takes the default, f is the device index
        // (2), so c = 1024 / 2, not a second default (which made 2048 elements of 1024).
        for (const std::string chain : {"z_{b} -> z_{(f_0 c)}", "z_{(f_0 c)} -> z_{b}"}) {
            CAPTURE(chain);
            const auto c = run("mesh 2\n" + chain + "\n");
            const auto& s = stmt(c, "z");
            REQUIRE_MESSAGE(s.operands.size() == 2, c.text());
            CHECK_MESSAGE(shape(s.operands[0].global_shape) == "1024", c.text());
            CHECK_MESSAGE(shape(s.operands[1].global_shape) == "1024", c.text());
            CHECK_MESSAGE(c.plan.errors() == 0, c.text());
            // b is still an assumed range, and said so.
            CHECK_MESSAGE(count_code(c.plan, "S501") == 1, c.text());
        }
    }
    SUBCASE("a split that does not divide: error S004") {
        const auto c = run("mesh 4\ndim s=10\nsplit s -> r t\nz_{r_0 t} = x_{r_0 t}\n");
        CHECK_MESSAGE(has_code(c.plan, "S004", Severity::Error), c.text());
        const auto c2 = run("dim s=64 r=4 t=8\nsplit s -> r t\n");
        CHECK_MESSAGE(has_code(c2.plan, "S004", Severity::Error), c2.text());
        const auto c3 = run("dim s=64 r=4 t=16\nsplit s -> r t\n");
        CHECK_MESSAGE(count_code(c3.plan, "S004") == 0, c3.text());
    }
    SUBCASE("unknown ranges default to 1024, with one note S501 naming them") {
        const auto c = run("mesh 4\nz_{k} = x_{k} y_{k}\nz2_{k} = x_{k} y_{k}\n");
        const auto& s = stmt(c, "z");
        CHECK_MESSAGE(shape(s.result.global_shape) == "1024", c.text());
        CHECK_MESSAGE(count_code(c.plan, "S501") == 1, c.text()); // k is named once
        CHECK_MESSAGE(has_code(c.plan, "S501", Severity::Note), c.text());
        bool names_k = false;
        for (const auto& d : c.plan.diagnostics)
            if (d.code == "S501") names_k = d.message.find("k") != std::string::npos;
        CHECK_MESSAGE(names_k, c.text());
        CHECK_MESSAGE(c.plan.errors() == 0, c.text());
    }
}

// =============================================================================================
// Section 7: expectations.

TEST_CASE("expectations: expect lines, inline textrm, chain arrow labels") {
    const std::string head = "mesh 4\ndim e=8\n";
    SUBCASE("a matching expect line") {
        const auto c = run(head + "z = x_{r_0 e} y_{r_0 e}\nexpect all-reduce(0)\n");
        CHECK_MESSAGE(c.plan.errors() == 0, c.text());
        CHECK_MESSAGE(count_code(c.plan, "S301") == 0, c.text());
    }
    SUBCASE("a failing expect line: error S301") {
        const auto c = run(head + "z = x_{r_0 e} y_{r_0 e}\nexpect all-gather(0)\n");
        CHECK_MESSAGE(has_code(c.plan, "S301", Severity::Error), c.text());
        const auto c2 = run(head + "z = x_{r_0 e} y_{r_0 e}\nexpect none\n");
        CHECK_MESSAGE(has_code(c2.plan, "S301", Severity::Error), c2.text());
        const auto c3 =
            run(head + "z = x_{r_0 e} y_{r_0 e}\nexpect all-reduce(0), all-reduce(0)\n");
        CHECK_MESSAGE(has_code(c3.plan, "S301", Severity::Error), c3.text());
    }
    SUBCASE("the wrong axis fails") {
        const auto c = run("mesh 2x2\ndim e=8\nz = x_{r_1 e} y_{r_1 e}\nexpect all-reduce(0)\n");
        CHECK_MESSAGE(has_code(c.plan, "S301", Severity::Error), c.text());
        const auto c2 = run("mesh 2x2\ndim e=8\nz = x_{r_1 e} y_{r_1 e}\nexpect all-reduce(1)\n");
        CHECK_MESSAGE(c2.plan.errors() == 0, c2.text());
    }
    SUBCASE("expect none") {
        const auto c = run(head + "z_{r_0} = x_{r_0 e} y_{r_0 e}\nexpect none\n");
        CHECK_MESSAGE(c.plan.errors() == 0, c.text());
    }
    SUBCASE("expect without axes") {
        const auto c = run(head + "z = x_{r_0 e} y_{r_0 e}\nexpect all-reduce\n");
        CHECK_MESSAGE(c.plan.errors() == 0, c.text());
        const auto c2 = run(head + "z = x_{r_0 e} y_{r_0 e}\nexpect reduce-scatter\n");
        CHECK_MESSAGE(has_code(c2.plan, "S301", Severity::Error), c2.text());
    }
    SUBCASE("several collectives, in plan order") {
        const std::string sp =
            "mesh 2\ndim b=1 s=64 d=64 e=256\nsplit s -> r t\nsplit e -> r' f\n"
            "z_{b r_0 t d} = W^1_{d r'_0 f} phi(W^0_{r'_0 f d'} x_{b r_0 t d'})\n";
        const auto c = run(sp + "expect all-gather(0), reduce-scatter(0)\n");
        CHECK_MESSAGE(c.plan.errors() == 0, c.text());
        const auto c2 = run(sp + "expect reduce-scatter(0), all-gather(0)\n");
        CHECK_MESSAGE(has_code(c2.plan, "S301", Severity::Error), c2.text());
    }
    SUBCASE("an expectation applies to the statement right before it") {
        const auto c = run(head + "z = x_{r_0 e} y_{r_0 e}\nexpect all-reduce(0)\n"
                                  "w_{r_0} = x_{r_0 e} y_{r_0 e}\nexpect all-reduce(0)\n");
        CHECK_MESSAGE(count_code(c.plan, "S301") == 1, c.text());
    }
    SUBCASE("an expectation with nothing before it: S300") {
        const auto c = run("mesh 4\nexpect none\n");
        CHECK_MESSAGE(has_code(c.plan, "S300", Severity::Error), c.text());
    }
    SUBCASE("inline \\textrm{(...)}") {
        const auto c =
            run(head + "z = x_{ r _{0} e }y_{ r _{0}e } \\quad \\textrm{(all-reduce)} \\ ,\n");
        CHECK_MESSAGE(c.plan.errors() == 0, c.text());
        CHECK_MESSAGE(c.plan.statements.size() == 1, c.text());
        const auto c2 = run(head + "z = x_{r_0 e} y_{r_0 e} \\quad \\textrm{(reduce-scatter)}\n");
        CHECK_MESSAGE(has_code(c2.plan, "S301", Severity::Error), c2.text());
    }
    SUBCASE("chain arrow labels: \\xrightarrow{all-gather}") {
        const auto c = run("mesh 4\ndim i=8 j=8\nx_{i_0 j} \\xrightarrow{all-gather} x_{ij}\n");
        CHECK_MESSAGE(c.plan.errors() == 0, c.text());
        CHECK_MESSAGE(count_code(c.plan, "S302") == 0, c.text());
        const auto c2 = run("mesh 4\ndim i=8 j=8\nx_{i_0 j} \\xrightarrow{all-reduce} x_{ij}\n");
        CHECK_MESSAGE(has_code(c2.plan, "S302", Severity::Error), c2.text());
        // Per step: the second arrow (a free slice) is wrong, the first is right.
        const auto c3 =
            run("mesh 4\ndim i=8 j=8\n"
                "x_{i_0 j} \\xrightarrow{all-gather} x_{ij} \\xrightarrow{all-to-all} x_{i j_0}\n");
        CHECK_MESSAGE(count_code(c3.plan, "S302") == 1, c3.text());
        const auto c4 =
            run("mesh 4\ndim i=8 j=8\n"
                "x_{i_0 j} \\xrightarrow{all-to-all} x_{i j_0} \\xrightarrow{all-gather} x_{ij}\n");
        CHECK_MESSAGE(c4.plan.errors() == 0, c4.text());
    }
}

TEST_CASE("an expectation after a statement that fails is not checked against an earlier one") {
    // Line 4 fails (S200) and has no plan; its `expect none` must not be compared with the
    // plan of line 3 (NOTATION.md section 7: the expectation states the collectives of the
    // previous statement).
    const auto c = run("mesh 4\ndim i=8 j=8 k=8 e=8\nz = x_{r_0 e} y_{r_0 e}\n"
                       "w_{ik}{U_0} = x_{i_0 j} y_{jk}\nexpect none\n");
    CHECK_MESSAGE(has_code(c.plan, "S200", Severity::Error), c.text());
    CHECK_MESSAGE(count_code(c.plan, "S301") == 0, c.text());
}

// =============================================================================================
// --strict.

TEST_CASE("--strict: chosen fixes are errors, implied collectives are fine") {
    CheckOptions strict;
    strict.strict = true;
    SUBCASE("rule 3 is an error S212") {
        const std::string src = "mesh 4\ndim i=8 j=8 k=8\nz_{ik} = x_{i_0 j} y_{j_0 k}\n";
        const auto c = run(src, strict);
        CHECK_MESSAGE(has_code(c.plan, "S212", Severity::Error), c.text());
        const auto lax = run(src);
        CHECK_MESSAGE(lax.plan.errors() == 0, lax.text());
        CHECK_MESSAGE(count_code(lax.plan, "S212") == 0, lax.text());
    }
    SUBCASE("the sequence-parallel statement (rule 3) is an error") {
        const auto c = run("mesh 2\ndim b=1 s=64 d=64 e=256\nsplit s -> r t\nsplit e -> r' f\n"
                           "z_{b r_0 t d} = W^1_{d r'_0 f} phi(W^0_{r'_0 f d'} x_{b r_0 t d'})\n",
                           strict);
        CHECK_MESSAGE(has_code(c.plan, "S212", Severity::Error), c.text());
    }
    SUBCASE("a partial operand in a product (rule 4) is an error") {
        const auto c = run("mesh 4\ndim i=8 j=8 k=8\nz_{ik} = p_{ij}{U_0} q_{jk}{U_0}\n", strict);
        CHECK_MESSAGE(c.plan.errors() >= 1, c.text());
    }
    SUBCASE("a sharded softmax is an error") {
        const auto c = run("mesh 4\ndim s=8 v=8\np_{sv} = softmax_v(z_{s v_0})\n", strict);
        CHECK_MESSAGE(c.plan.errors() >= 1, c.text());
    }
    SUBCASE("the Megatron MLP all-reduce is implied: no error") {
        const auto c = run("mesh 4\ndim b=8 s=8 d=8 f=8\n"
                           "z_{bsd} = W^1_{d r_0 f} phi(W^0_{r_0 f d'} x_{bsd'})\n",
                           strict);
        CHECK_MESSAGE(c.plan.errors() == 0, c.text());
        CHECK_MESSAGE(cols(c, stmt(c, "z")) == "all-reduce(0)", c.text());
        CHECK_MESSAGE(!stmt(c, "z").chosen, c.text());
    }
    SUBCASE("left-hand-side table steps are implied: no error") {
        const auto c = run("mesh 4\ndim i=8 j=8 k=8\n"
                           "a_{ik} = x_{i j_0} y_{j_0 k}\nb_{i_0 k} = x_{i j_0} y_{j_0 k}\n"
                           "c_{ik} = x_{i_0 j} y_{jk}\nd_{i k_0} = x_{i_0 j} y_{jk}\n"
                           "x_{i_0 j} -> x_{ij}\n",
                           strict);
        CHECK_MESSAGE(c.plan.errors() == 0, c.text());
        CHECK_MESSAGE(c.plan.statements.size() == 5, c.text());
    }
}

namespace shardscope::test {

TEST_CASE("diagnostics: device index of axes of different sizes (S005)") {
    const std::string src = "mesh 4x2\nz = x_{r_0 e} y_{r_1 e}\n";
    const auto plan = check_text(src);
    const auto c = codes(plan);
    CHECK_MESSAGE(std::count(c.begin(), c.end(), "S005") == 1, plan_text(src, plan));
    SUBCASE("a declared range removes the conflict") {
        const std::string ok = "mesh 4x2\ndim r=8\nz = x_{r_0 e} y_{r_1 e}\n";
        const auto p = check_text(ok);
        const auto oc = codes(p);
        CHECK_MESSAGE(std::count(oc.begin(), oc.end(), "S005") == 0, plan_text(ok, p));
    }
}

TEST_CASE("diagnostics: a split whose missing part does not divide (S004)") {
    const std::string src = "mesh 4\ndim s=10\nsplit s -> q t\nw_{q_0 t} = v_{q_0 t}\n";
    const auto plan = check_text(src);
    REQUIRE_MESSAGE(plan.errors() == 1, plan_text(src, plan));
    CHECK(codes(plan)[0] == "S004");
    CHECK(plan.diagnostics[0].range.line == 3);
    SUBCASE("an exact split infers the missing part") {
        const std::string ok = "mesh 4\ndim s=12\nsplit s -> q t\nw_{q_0 t} = v_{q_0 t}\n";
        const auto p = check_text(ok);
        REQUIRE_MESSAGE(p.errors() == 0, plan_text(ok, p));
        CHECK(p.statements[0].result.global_shape == std::vector<std::int64_t>{4, 3});
    }
}

/// The one error of `src`, checked as `check` and as `exec` (small defaults) check it.
static Diagnostic only_error(const std::string& src) {
    const auto plan = check_text(src);
    semantics::CheckOptions small;
    small.small_defaults = true;
    const auto run_plan = check_text(src, small);
    // exec refuses a program with any error, so check and exec agree when both see it.
    CHECK_MESSAGE(run_plan.errors() == plan.errors(), plan_text(src, run_plan));
    REQUIRE_MESSAGE(plan.errors() == 1, plan_text(src, plan));
    return *std::find_if(plan.diagnostics.begin(), plan.diagnostics.end(),
                         [](const Diagnostic& d) { return d.severity == Severity::Error; });
}

TEST_CASE("diagnostics: an index split twice (S006)") {
    const std::string src =
        "mesh 4\ndim a=8\nsplit a -> b c\nsplit a -> d e\nz_{b_0 c} = x_{b_0 c}\n";
    const auto d = only_error(src);
    CHECK(d.code == "S006");
    CHECK(d.message == "index a is split twice (first at line 3)");
    CHECK(d.range.line == 4);
    CHECK(d.range.column == 7); // under the a of the second split
    SUBCASE("the first split stands: c is 8 / 4, with no default-range note") {
        const auto plan = check_text(src);
        REQUIRE(plan.statements.size() == 1);
        CHECK(plan.statements[0].result.global_shape == std::vector<std::int64_t>{4, 2});
        CHECK_MESSAGE(count_code(plan, "S501") == 0, plan_text(src, plan));
    }
    SUBCASE("splitting a part further is fine") {
        const std::string ok =
            "mesh 2x2\ndim a=16\nsplit a -> b c\nsplit c -> d e\nz_{b_0 d_1 e} = x_{b_0 d_1 e}\n";
        const auto p = check_text(ok);
        CHECK_MESSAGE(p.errors() == 0, plan_text(ok, p));
    }
}

TEST_CASE("diagnostics: an index split into itself (S007)") {
    SUBCASE("directly") {
        const auto d = only_error("mesh 4\nsplit s -> s t\nz_{s_0 t} = x_{s_0 t}\n");
        CHECK(d.code == "S007");
        CHECK(d.message == "index s is split into itself");
        CHECK(d.range.line == 2);
        CHECK(d.range.column == 12);
    }
    SUBCASE("through another split") {
        const auto d =
            only_error("mesh 4\ndim a=8\nsplit a -> b c\nsplit b -> a d\nz_{b_0 c} = x_{b_0 c}\n");
        CHECK(d.code == "S007");
        CHECK(d.message == "index b is split into itself through other splits (b -> a -> b)");
        CHECK(d.fix == "remove this split or the split of a at line 3");
        CHECK(d.range.line == 4);
        CHECK(d.range.column == 12); // under the part a
    }
    SUBCASE("through two others") {
        const auto d =
            only_error("dim a=8\nsplit a -> b c\nsplit b -> e f\nsplit f -> a g\nz_{a} = x_{a}\n");
        CHECK(d.code == "S007");
        CHECK(d.message == "index f is split into itself through other splits (f -> a -> b -> f)");
        CHECK(d.fix ==
              "remove this split or one of: the split of a at line 2, the split of b at line 3");
        CHECK(d.range.line == 4);
    }
    SUBCASE("through a chain's group") {
        const auto d = only_error("mesh 4\ndim a=8\nsplit a -> b c\nx_{(a d)} -> x_{b}\n");
        CHECK(d.code == "S007");
        CHECK(d.message == "this step makes index b a part of itself through splits (b -> a -> b)");
        CHECK(d.range.line == 4);
        CHECK(d.range.column == 14);
    }
    SUBCASE("a primed index is another index") {
        const std::string ok = "dim s=8\nsplit s -> s' t\nz_{s' t} = x_{s' t}\n";
        const auto p = check_text(ok);
        CHECK_MESSAGE(count_code(p, "S007") == 0, plan_text(ok, p));
    }
}

TEST_CASE("diagnostics: a split that names a part twice (S008)") {
    const auto d = only_error("dim s=16\nsplit s -> r r\nz_{r} = x_{r}\n");
    CHECK(d.code == "S008");
    CHECK(d.message == "the split of s names part r twice");
    CHECK(d.range.column == 14);
}

TEST_CASE("diagnostics: split products beyond int64 are errors, not wrapped or saturated") {
    SUBCASE("the parent from its parts") {
        const auto d = only_error("dim b=4294967296 c=4294967296\nsplit a -> b c\nz_{a} = x_{a}\n");
        CHECK(d.code == "S004");
        CHECK(d.message == "split of a: its parts multiply to more than 9223372036854775807");
        CHECK(d.range.line == 2);
    }
    SUBCASE("a declared parent as large as the saturated product") {
        const auto d = only_error("dim a=9223372036854775807 b=4294967296 c=4294967296\n"
                                  "split a -> b c\nz_{a} = x_{a}\n");
        CHECK(d.code == "S004");
        CHECK(d.message.find("does not multiply out (more than 9223372036854775807)") !=
              std::string::npos);
    }
}

TEST_CASE("S502: sizes past what the cost model counts are an error, never inf or NaN") {
    // `count` one-letter indices of range `range`: y_{a_0 b} sums x over the others, so its
    // FLOPs and the input's bytes are the product of all the ranges.
    auto program = [](int count, const std::string& range) {
        std::string dims = "dim";
        for (int k = 0; k < count; ++k)
            dims += std::string(" ") + static_cast<char>('a' + k) + "=" + range;
        return "mesh 2\n" + dims + "\n";
    };
    auto statement = [](const std::string& result, const std::string& input, int count) {
        std::string indices;
        for (int k = 0; k < count; ++k)
            indices += std::string(k ? " " : "") + static_cast<char>('a' + k);
        return result + "_{a_0 b} = " + input + "_{" + indices + "}\n";
    };
    SUBCASE("22 ranges of 9.2e18 multiply past a double: this statement's time is infinite") {
        const auto c = run(program(22, "9200000000000000000") + statement("y", "x", 22));
        REQUIRE_MESSAGE(c.plan.errors() == 1, c.text());
        CHECK(c.plan.statements.empty()); // no plan: nothing left to print inf or NaN
        const auto& d = c.plan.diagnostics.front();
        CHECK(d.code == "S502");
        CHECK(d.range.line == 3);
        CHECK_MESSAGE(d.message.find("this statement's time: infinity") != std::string::npos,
                      d.message);
    }
    SUBCASE("16 ranges of 5e18 are countable (1.5e299 FLOPs), and every count is finite") {
        const auto c = run(program(16, "5000000000000000000") + statement("y", "x", 16));
        REQUIRE_MESSAGE(c.plan.errors() == 0, c.text());
        REQUIRE(c.plan.statements.size() == 1);
        const auto& cost = c.plan.statements.front().cost;
        CHECK(cost.flops_per_device > 1e299);
        CHECK(std::isfinite(cost.time_s));
        CHECK(std::isfinite(cost.memory_bytes_per_device));
        // The totals' memory line prints its percentage of HBM in three digits.
        const auto totals = semantics::format_totals(semantics::program_totals(c.plan));
        CHECK_MESSAGE(totals.find("HBM (7.63e+290%)") != std::string::npos, totals);
    }
    SUBCASE("the same repeated a million times: the statement's FLOPs per step are past it") {
        const auto c = run(program(16, "5000000000000000000") + "repeat l=1000000\n" +
                           statement("y", "x", 16) + "end\n");
        REQUIRE_MESSAGE(c.plan.errors() == 1, c.text());
        const auto& d = c.plan.diagnostics.front();
        CHECK(d.code == "S502");
        CHECK_MESSAGE(d.message.find("FLOPs per device: 1.53e+305 (repeated 1000000 times)") !=
                          std::string::npos,
                      d.message);
    }
    SUBCASE("two such statements: the program's memory is past it at the second") {
        const auto c = run(program(16, "5000000000000000000") + statement("y", "x", 16) +
                           statement("w", "v", 16));
        REQUIRE_MESSAGE(c.plan.errors() == 1, c.text());
        REQUIRE(c.plan.statements.size() == 1); // the first is planned
        const auto& d = c.plan.diagnostics.front();
        CHECK(d.code == "S502");
        CHECK(d.range.line == 4);
        CHECK_MESSAGE(d.message.find("the program's memory per device") != std::string::npos,
                      d.message);
        const auto t = semantics::program_totals(c.plan);
        CHECK(std::isfinite(t.step_s));
        CHECK(std::isfinite(t.memory.total()));
    }
}

TEST_CASE("parse_mesh_spec reads --mesh as a mesh line") {
    using frontend::parse_mesh_spec;
    SUBCASE("sizes and names") {
        const auto m = parse_mesh_spec("2x4");
        REQUIRE(m);
        CHECK(m->device_count() == 8);
        const auto n = parse_mesh_spec("dp=2,tp=4");
        REQUIRE(n);
        REQUIRE(n->axes.size() == 2);
        CHECK(n->axes[1].name == "tp");
        CHECK(parse_mesh_spec("dp=2 tp=4"));
        const auto d = parse_mesh_spec("2x2 devices [0 2 1 3]");
        REQUIRE(d);
        CHECK(d->devices == std::vector<std::int64_t>{0, 2, 1, 3});
    }
    SUBCASE("too many devices: the file's P205, not a wrapped count") {
        Diagnostic d;
        CHECK_FALSE(parse_mesh_spec("65536x65536x65536x65536", &d));
        CHECK(d.code == "P205");
        CHECK(d.message == "the mesh has too many devices (more than 16777216)");
        CHECK(d.range.column == 7); // the second size, where the product passes the limit
        CHECK_FALSE(parse_mesh_spec("8192x8192x2", &d));
        CHECK(d.code == "P205");
    }
    SUBCASE("an axis named twice: P208") {
        Diagnostic d;
        CHECK_FALSE(parse_mesh_spec("dp=2,dp=2", &d));
        CHECK(d.code == "P208");
        CHECK(d.range.column == 6);
        CHECK(d.range.end_column == 8);
    }
    SUBCASE("names a mesh line rejects") {
        Diagnostic d;
        CHECK_FALSE(parse_mesh_spec("\xC3\xA9=2", &d)); // é
        CHECK(d.severity == Severity::Error);
        CHECK_FALSE(d.code.empty());
        CHECK_FALSE(parse_mesh_spec("0=2"));
        CHECK_FALSE(parse_mesh_spec("2y4"));
        CHECK_FALSE(parse_mesh_spec("0"));
    }
    SUBCASE("nothing but a mesh") {
        Diagnostic d;
        CHECK_FALSE(parse_mesh_spec("4; dim a=2", &d));
        CHECK(d.message == "only a mesh's axes (and devices) may follow --mesh");
        CHECK_FALSE(parse_mesh_spec("4\nz = x"));
        CHECK_FALSE(parse_mesh_spec("= x"));
        CHECK_FALSE(parse_mesh_spec(" "));
    }
}

} // namespace shardscope::test

namespace shardscope::test {

TEST_CASE("a large mesh is not materialised: no device list means the identity order") {
    const std::string src = "mesh 4096x4096\nz = x_{r_0 e} y_{r_0 e}\n";
    const auto plan = check_text(src);
    CHECK(plan.mesh.device_count() == std::int64_t{1} << 24);
    CHECK(plan.mesh.devices.empty());
    CHECK_MESSAGE(plan.statements.size() == 1, plan_text(src, plan));
}

} // namespace shardscope::test

TEST_CASE("small sizes: an input read with other indices at the same place keeps one shape") {
    // x read as x_{s_0 d} and as x_{t d}: at the declared sizes s and t are alike, and at
    // exec's small sizes they must be too (s took its axis's size, t the plain small default,
    // and exec --small refused with S106 what check accepts).
    semantics::CheckOptions small;
    small.small_defaults = true;
    small.ignore_dims = true;
    for (const std::string src : {"mesh 4\ndim s=64 t=64 d=32\na_{s_0 t} = x_{s_0 d} x_{t d}\n",
                                  "mesh 4\ndim j=8 k=8\ny_{j} = x_{j_0}\nw = x_{k} v_{k}\n",
                                  // Both sharded, over groups of 2 and of 4 devices: each
                                  // took its group's size (2 and 4).
                                  "mesh 2x2\ndim i=8 j=8 k=8\na = x_{i j} u_{i j_1}\n"
                                  "b = x_{i k} v_{i k_{01}}\n"}) {
        CAPTURE(src);
        const auto plan = check_text(src);
        REQUIRE_MESSAGE(plan.errors() == 0, plan_text(src, plan));
        const auto run_plan = check_text(src, small);
        CHECK_MESSAGE(run_plan.errors() == 0, plan_text(src, run_plan));
        // Every read of x has one shape.
        std::vector<std::vector<std::int64_t>> shapes;
        for (const auto& s : run_plan.statements)
            for (const auto& o : s.operands)
                if (o.tensor == "x")
                    shapes.emplace_back(o.global_shape.begin(), o.global_shape.end());
        REQUIRE(shapes.size() >= 2);
        for (const auto& shape : shapes)
            CHECK(shape == shapes.front());
    }
}

TEST_CASE("a sum of thousands of products is checked term by term") {
    // Each term's siblings' indices are gathered from running unions (a sum of 8000 terms
    // took seconds when each term collected all the others).
    std::string src = "mesh 4\ndim e=8\nz = x_{r_0 e} y_{r_0 e}";
    for (int k = 0; k < 3000; ++k)
        src += " + x_{r_0 e} y_{r_0 e}";
    const auto plan = check_text(src + "\n");
    REQUIRE(plan.errors() == 0);
    REQUIRE(plan.statements.size() == 1);
    // One all-reduce of the sum's partial result, as for two terms.
    const auto two = check_text("mesh 4\ndim e=8\nz = x_{r_0 e} y_{r_0 e} + x_{r_0 e} y_{r_0 e}\n");
    CHECK(semantics::collectives_of(plan.mesh, plan.statements[0]) ==
          semantics::collectives_of(two.mesh, two.statements[0]));
}
