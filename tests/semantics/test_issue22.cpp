// Issue 22: plans check accepted that computed wrong numbers (exec FAILed them). Each plan is
// asserted here; tests/exec/test_exec.cpp ("issue 22: ...") runs them, and tests/diff/ keeps
// them as regressions of the random-program test.
#include "helpers.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>

using namespace shardscope;
using namespace shardscope::test;
using semantics::CheckOptions;
using semantics::StepKind;

namespace {

bool has_code(const semantics::Plan& p, const std::string& code, Severity severity) {
    return std::any_of(p.diagnostics.begin(), p.diagnostics.end(),
                       [&](const auto& d) { return d.code == code && d.severity == severity; });
}

/// The reduce op of every all-reduce of a statement, in order ("max max").
std::string all_reduce_ops(const semantics::StatementPlan& s) {
    std::string out;
    for (const auto& st : s.steps)
        if (st.kind == StepKind::AllReduce)
            out += (out.empty() ? "" : " ") + st.reason.substr(st.reason.find('(') + 1, 3);
    return out;
}

} // namespace

TEST_CASE("issue 22: a sum, a difference or a quotient of partial maxes reduces them first") {
    const auto c = run("mesh 2\ndim i=4 h=4\n"
                       "z_{i} = max_{h}(x_{i h_0}) + max_{h}(y_{i h_0})\n"
                       "a_{i} = max_{h}(x_{i h_0}) - w_{i}\n"
                       "b_{i} = max_{h}(x_{i h_0}) / w_{i}\n"
                       "d = max_{h}(x_{i h_0})\n");
    REQUIRE_MESSAGE(c.plan.errors() == 0, c.text());
    const auto& z = c.plan.statements.at(0);
    CHECK_MESSAGE(cols(z) == "all-reduce(0), all-reduce(0)", c.text());
    CHECK_MESSAGE(all_reduce_ops(z) == "max max", c.text());
    // Both maxes are complete before the add: the add's inputs are replicated.
    for (std::size_t s = 0; s < 3; ++s) {
        const auto& st = c.plan.statements.at(s);
        const auto add = std::find_if(st.steps.begin(), st.steps.end(), [](const auto& x) {
            return x.kind == StepKind::Compute && (x.detail == "add" || x.detail == "divide");
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
    CHECK_MESSAGE(cols(mixed.plan.statements.at(0)) == "all-reduce(0), all-reduce(0)",
                  mixed.text());
    // P(sum) + P(sum) stays partial (linear): no collective before the left-hand side's.
    const auto sums = run("mesh 2\ndim j=6 l=4\nB{U_0} = sum_{j}(z_{j_0}) + sum_{l}(w_{l_0})\n");
    CHECK_MESSAGE(cols(sums.plan.statements.at(0)) == "none", sums.text());
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
        CHECK_MESSAGE(cols(s) == "all-reduce(0)", c.text());
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
        CHECK_MESSAGE(cols(s) == "permute(0,1)", c.text());
        CHECK_MESSAGE(pl(s.result) == "S(0), S(0)", c.text());
        // The add's inputs both hold b over axes 1, 0.
        const auto add = std::find_if(s.steps.begin(), s.steps.end(),
                                      [](const auto& x) { return x.detail == "add"; });
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
        CHECK_MESSAGE(cols(s) == "none", c.text());
        CHECK_MESSAGE(std::count_if(s.steps.begin(), s.steps.end(),
                                    [](const auto& x) { return x.kind == StepKind::Slice; }) == 2,
                      c.text());
    }
    SUBCASE("operands that agree, or are prefixes, need no collective") {
        const auto c = run("mesh 2x2\ndim b=4 c=4\nz_{b_{01} c} = x_{b_{01} c} + y_{b_0 c}\n"
                           "w_{b_0 c_1} = x_{b_0 c} + y_{b c_1}\n");
        REQUIRE_MESSAGE(c.plan.errors() == 0, c.text());
        CHECK_MESSAGE(cols(c.plan.statements.at(0)) == "none", c.text());
        CHECK_MESSAGE(cols(c.plan.statements.at(1)) == "none", c.text());
    }
}

TEST_CASE("issue 22: += adds into the tensor as stored, or is refused with a fix") {
    SUBCASE("no mesh subscripts: the right-hand side is brought to the stored layout") {
        const auto c = run("mesh 2\ndim j=4\nW_{j_0} = x_{j_0}\nW_{j} += z_{j}\n"
                           "V_{j} = x_{j}\nV_{j} += z_{j_0}\n");
        REQUIRE_MESSAGE(c.plan.errors() == 0, c.text());
        CHECK_MESSAGE(pl(c.plan.statements.at(1).result) == "S(0)", c.text());
        CHECK_MESSAGE(cols(c.plan.statements.at(1)) == "none", c.text());
        CHECK_MESSAGE(pl(c.plan.statements.at(3).result) == "R", c.text());
        CHECK_MESSAGE(cols(c.plan.statements.at(3)) == "all-gather(0)", c.text());
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
        CHECK_MESSAGE(cols(c.plan.statements.at(1)) == "none", c.text());
        CHECK_MESSAGE(pl(c.plan.statements.at(2).result) == "S(0)", c.text());
    }
}

TEST_CASE("issue 22: a chain that regroups an unevenly sharded index gathers it first") {
    const auto c = run("mesh 4\ndim s=8 r=2\nsplit s -> r t\nx_{s_0} -> x_{(r t)}\n"
                       "y_{(r t_0)} -> y_{s}\n"
                       "u_{s_0} -> u_{(r_0 t)}\n");
    REQUIRE_MESSAGE(c.plan.errors() == 0, c.text());
    CHECK_MESSAGE(cols(c.plan.statements.at(0)) == "all-gather(0)", c.text());
    CHECK_MESSAGE(c.plan.statements.at(0).steps.at(0).kind == StepKind::AllGather, c.text());
    CHECK_MESSAGE(cols(c.plan.statements.at(1)) == "all-gather(0)", c.text());
    // s_0 -> (r_0 t) with r = 2 over 4 devices: gathered, then sliced (uneven, torch.chunk).
    CHECK_MESSAGE(cols(c.plan.statements.at(2)) == "all-gather(0)", c.text());
    CHECK_MESSAGE(has_code(c.plan, "S216", Severity::Note), c.text());
    // Even parts reshape locally.
    const auto even = run("mesh 2\ndim s=8 r=2\nsplit s -> r t\nx_{s_0} -> x_{(r_0 t)}\n");
    CHECK_MESSAGE(cols(even.plan.statements.at(0)) == "none", even.text());
    CHECK_MESSAGE(!has_code(even.plan, "S216", Severity::Note), even.text());
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
    CHECK_MESSAGE(cols(ok.plan.statements.at(1)) == "all-gather(0)", ok.text());
    CHECK_MESSAGE(pl(ok.plan.statements.at(2).result) == "S(0)", ok.text());
}

TEST_CASE("AllGather over both axes of an index sharded over two (found by tests/diff)") {
    // It was refused: gathering over axis 0 gathers the minor axis 1 too, and the second
    // target then found nothing sharded on axis 1 (S124).
    const auto c = run("mesh 2x2\ndim i=8\nz_{i} = AllGather_{i_{01}}(x_{i_{01}})\n"
                       "w_{i} = AllGather_{i_{10}}(x_{i_{01}})\n");
    REQUIRE_MESSAGE(c.plan.errors() == 0, c.text());
    // Written over both axes in the index's order: one all-gather over the group (issue 19);
    // in the other order: per axis, minor-most first.
    CHECK_MESSAGE(cols(c.plan.statements.at(0)) == "all-gather(0,1)", c.text());
    CHECK_MESSAGE(cols(c.plan.statements.at(1)) == "all-gather(1), all-gather(0)", c.text());
    // An axis the value is not sharded on is still an error.
    const auto bad = run("mesh 2x2\ndim i=8\nz_{i} = AllGather_{i_{01}}(x_{i_0})\n");
    CHECK_MESSAGE(bad.plan.errors() == 1, bad.text());
}
