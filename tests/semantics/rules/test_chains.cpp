// Chains of products (issue 19): the notation post's sequence-parallel step
// `W^0_{r'_0 f d'} x_{b r_0 t d'} \xrightarrow{all-gather} W^0_{r'_0 f d'} x_{b s d'}`.
// A chain only changes layouts: it moves the one factor that changes, the others are context.
#include "rule_helpers.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace shardscope;
using namespace shardscope::test;
using semantics::StepKind;

namespace {

const std::string kHead = "mesh 2\ndim b=1 s=64 d=64 e=256\nsplit s -> r t\nsplit e -> r' f\n";
const std::string kBlog =
    "W^0_{r'_0 f d'} x_{b r_0 t d'} \\xrightarrow{all-gather} W^0_{r'_0 f d'} x_{b s d'}\n";

const Diagnostic* find_code(const semantics::Plan& p, const std::string& code) {
    for (const auto& d : p.diagnostics)
        if (d.code == code) return &d;
    return nullptr;
}

} // namespace

TEST_CASE("chain of products: the notation post's step all-gathers x and leaves W^0") {
    const auto c = run(kHead + kBlog);
    CHECK_MESSAGE(c.plan.errors() == 0, c.text());
    REQUIRE_MESSAGE(c.plan.statements.size() == 1, c.text());
    const auto& sp = c.plan.statements[0];
    CHECK_MESSAGE(sp.target == "x", c.text());
    CHECK_MESSAGE(cols(sp) == "all-gather(0)", c.text());
    CHECK_MESSAGE(pl(sp.result) == "R", c.text());
    CHECK_MESSAGE(shape(sp.result.local_shape) == "1x64x64", c.text());
    // Only x's occurrences are operands (before and after the arrow): W^0 is not moved.
    REQUIRE_MESSAGE(sp.operands.size() == 2, c.text());
    for (const auto& o : sp.operands)
        CHECK_MESSAGE(o.tensor == "x", c.text());
    for (const auto& st : sp.steps)
        CHECK_MESSAGE(st.tensor.rfind("W", 0) != 0, c.text());
    // x: b=1, r t = 64 (32 rows per device), d = 64, f32: one all-gather of 64x64x4 bytes.
    CHECK_MESSAGE(sp.cost.comm_bytes_per_device > 0, c.text());
    // The same plan as the chain of x alone.
    const auto alone = run(kHead + "x_{b r_0 t d'} \\xrightarrow{all-gather} x_{b s d'}\n");
    REQUIRE_MESSAGE(alone.plan.statements.size() == 1, alone.text());
    const auto& a = alone.plan.statements[0];
    CHECK_MESSAGE(cols(a) == cols(sp), (c.text() + alone.text()));
    CHECK_MESSAGE(a.cost.comm_bytes_per_device == rel(sp.cost.comm_bytes_per_device),
                  (c.text() + alone.text()));
    CHECK_MESSAGE(a.steps.size() == sp.steps.size(), (c.text() + alone.text()));
}

TEST_CASE("chain of products: the product that follows uses the moved tensor") {
    const auto c = run(kHead + kBlog + "expect all-gather(0)\n" +
                       "y_{b s r'_0 f} = W^0_{r'_0 f d'} x_{b s d'}\nexpect none\n");
    CHECK_MESSAGE(c.plan.errors() == 0, c.text());
    CHECK_MESSAGE(cols(stmt(c, "y")) == "none", c.text());
    CHECK_MESSAGE(pl(stmt(c, "y").result) == "S(2)", c.text());
}

TEST_CASE("chain of products: arrow labels are checked against the moved tensor's steps") {
    const auto ok = run(kHead + "W^0_{r'_0 f d'} x_{b r_0 t d'} \\xrightarrow{none} "
                                "W^0_{r'_0 f d'} x_{b s d'}\n");
    const auto* d = find_code(ok.plan, "S302");
    REQUIRE_MESSAGE(d != nullptr, ok.text());
    CHECK_MESSAGE(d->range.line == 5, ok.text());
    CHECK_MESSAGE(d->range.column == 67, ok.text()); // the moved tensor of the right side
    const auto wrong = run(kHead + "W^0_{r'_0 f d'} x_{b r_0 t d'} \\xrightarrow{all-reduce} "
                                   "W^0_{r'_0 f d'} x_{b s d'}\n");
    CHECK_MESSAGE(find_code(wrong.plan, "S302") != nullptr, wrong.text());
    // Two arrows: split (free), then gather.
    const auto two = run("mesh 4\ndim i=8 j=8 k=8\n"
                         "x_{i_0 j} W_{jk} \\xrightarrow{all-gather} x_{ij} W_{jk} "
                         "\\xrightarrow{none} x_{i j_0} W_{jk}\n");
    CHECK_MESSAGE(two.plan.errors() == 0, two.text());
    REQUIRE_MESSAGE(two.plan.statements.size() == 1, two.text());
    CHECK_MESSAGE(cols(two.plan.statements[0]) == "all-gather(0)", two.text());
    CHECK_MESSAGE(pl(two.plan.statements[0].result) == "S(1)", two.text());
}

TEST_CASE("chain of products: sides with other tensors are S141, a second moved tensor S142") {
    SUBCASE("a side with fewer tensors: the notation post's next arrow (a computation)") {
        const auto c = run(kHead + "W^0_{r'_0 f d'} x_{b s d'} \\xrightarrow{TP matmul} "
                                   "y_{b s r'_0 f}\n");
        const auto* d = find_code(c.plan, "S141");
        REQUIRE_MESSAGE(d != nullptr, c.text());
        CHECK_MESSAGE(d->severity == Severity::Error, c.text());
        CHECK_MESSAGE(d->range.line == 5, c.text());
        CHECK_MESSAGE(d->range.column == 52, c.text());
        CHECK_MESSAGE(d->message.find("has 1 tensor,") != std::string::npos, c.text());
        CHECK_MESSAGE(c.plan.statements.empty(), c.text());
    }
    SUBCASE("another tensor in the same place") {
        const auto c = run("mesh 4\ndim i=8 j=8 k=8\nx_{i_0 j} W_{jk} -> x_{ij} V_{jk}\n");
        const auto* d = find_code(c.plan, "S141");
        REQUIRE_MESSAGE(d != nullptr, c.text());
        CHECK_MESSAGE(d->range.line == 3, c.text());
        CHECK_MESSAGE(d->range.column == 28, c.text());
        CHECK_MESSAGE(d->message.find("W") != std::string::npos, c.text());
    }
    SUBCASE("two tensors change") {
        const auto c = run("mesh 4\ndim i=8 j=8 k=8\nx_{i_0 j} W_{j_0 k} -> x_{ij} W_{jk}\n");
        const auto* d = find_code(c.plan, "S142");
        REQUIRE_MESSAGE(d != nullptr, c.text());
        CHECK_MESSAGE(d->range.line == 3, c.text());
        CHECK_MESSAGE(d->range.column == 31, c.text());
        CHECK_MESSAGE(c.plan.statements.empty(), c.text());
    }
    SUBCASE("a context tensor whose shape changes on a later side") {
        const auto c =
            run("mesh 4\ndim i=8 j=8 k=8\nx_{i_0 j} W_{jk} -> x_{ij} W_{jk} -> x_{ij} W_{kj}\n");
        const auto* d = find_code(c.plan, "S142");
        REQUIRE_MESSAGE(d != nullptr, c.text());
        CHECK_MESSAGE(d->range.column == 45, c.text());
    }
    SUBCASE("the moved tensor's indices change: S140 as for one tensor") {
        const auto c = run("mesh 4\ndim i=8 j=8 k=8\nW_{jk} x_{ij} -> W_{jk} x_{ji}\n");
        CHECK_MESSAGE(find_code(c.plan, "S140") != nullptr, c.text());
    }
    SUBCASE("a context tensor with an unknown axis") {
        const auto c = run("mesh 4\ndim i=8 j=8 k=8\nW_{j_5 k} x_{i_0 j} -> W_{j_5 k} x_{ij}\n");
        CHECK_MESSAGE(c.plan.errors() > 0, c.text());
        CHECK_MESSAGE(c.plan.statements.empty(), c.text());
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
