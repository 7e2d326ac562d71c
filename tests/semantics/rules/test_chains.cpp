// Chains of products (issue 19): the notation post's sequence-parallel step
// `W^0_{r'_0 f d'} x_{b r_0 t d'} \xrightarrow{all-gather} W^0_{r'_0 f d'} x_{b s d'}`.
// A chain only changes layouts: it moves every factor that changes, the others are context.
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
    CHECK_MESSAGE(cols(c, sp) == "all-gather(0)", c.text());
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
    CHECK_MESSAGE(cols(alone, a) == cols(c, sp), (c.text() + alone.text()));
    CHECK_MESSAGE(a.cost.comm_bytes_per_device == rel(sp.cost.comm_bytes_per_device),
                  (c.text() + alone.text()));
    CHECK_MESSAGE(a.steps.size() == sp.steps.size(), (c.text() + alone.text()));
}

TEST_CASE("chain of products: the product that follows uses the moved tensor") {
    const auto c = run(kHead + kBlog + "expect all-gather(0)\n" +
                       "y_{b s r'_0 f} = W^0_{r'_0 f d'} x_{b s d'}\nexpect none\n");
    CHECK_MESSAGE(c.plan.errors() == 0, c.text());
    CHECK_MESSAGE(cols(c, stmt(c, "y")) == "none", c.text());
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
    CHECK_MESSAGE(cols(two, two.plan.statements[0]) == "all-gather(0)", two.text());
    CHECK_MESSAGE(pl(two.plan.statements[0].result) == "S(1)", two.text());
}

TEST_CASE("chain of products: sides with other tensors are S141, a tensor twice S142") {
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
    SUBCASE("a tensor written twice that changes: it would move twice") {
        const auto c = run("mesh 4\ndim i=8 j=8\nx_{i_0 j} x_{i_0 j} -> x_{ij} x_{ij}\n");
        const auto* d = find_code(c.plan, "S142");
        REQUIRE_MESSAGE(d != nullptr, c.text());
        CHECK_MESSAGE(d->severity == Severity::Error, c.text());
        CHECK_MESSAGE(d->range.line == 3, c.text());
        CHECK_MESSAGE(d->range.column == 24, c.text()); // the first x that changes
        CHECK_MESSAGE(d->message.find("twice") != std::string::npos, c.text());
        CHECK_MESSAGE(!d->fix.empty(), c.text());
        CHECK_MESSAGE(c.plan.statements.empty(), c.text());
        // Written twice but unchanged, it is context: no error.
        const auto ok = run("mesh 4\ndim i=8 j=8\nx_{ij} W_{jj'} W_{jj'} -> x_{i_0 j} W_{jj'} "
                            "W_{jj'}\n");
        CHECK_MESSAGE(ok.plan.errors() == 0, ok.text());
    }
    SUBCASE("a second tensor whose indices change: S140 at its occurrence") {
        const auto c =
            run("mesh 4\ndim i=8 j=8 k=8\nx_{i_0 j} W_{jk} -> x_{ij} W_{jk} -> x_{ij} W_{kj}\n");
        const auto* d = find_code(c.plan, "S140");
        REQUIRE_MESSAGE(d != nullptr, c.text());
        CHECK_MESSAGE(d->range.line == 3, c.text());
        CHECK_MESSAGE(d->range.column == 45, c.text());
        CHECK_MESSAGE(find_code(c.plan, "S142") == nullptr, c.text());
        CHECK_MESSAGE(c.plan.statements.empty(), c.text());
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
    SUBCASE("a second moved tensor with an unknown axis") {
        const auto c = run("mesh 4\ndim i=8 j=8 k=8\nx_{i_0 j} W_{j k} -> x_{ij} W_{j_5 k}\n");
        CHECK_MESSAGE(c.plan.errors() > 0, c.text());
        CHECK_MESSAGE(c.plan.statements.empty(), c.text());
    }
}

// Issue 19: "each arrow moves the operands whose layout changes".
namespace {

const std::string kTwo = "mesh 4\ndim i=64 j=64 k=64\n";

/// The tensors of a statement's collective steps, in order ("A B").
std::string moved_tensors(const semantics::StatementPlan& sp) {
    std::string out;
    for (const auto& st : sp.steps)
        if (semantics::is_collective(st.kind)) out += (out.empty() ? "" : " ") + st.tensor;
    return out;
}

} // namespace

TEST_CASE("chain of products: two tensors move, each by its own redistribution") {
    const auto c = run(kTwo + "A_{i_0 j} B_{j k_0} -> A_{i j} B_{j k}\n");
    REQUIRE_MESSAGE(c.plan.errors() == 0, c.text());
    REQUIRE_MESSAGE(c.plan.statements.size() == 1, c.text());
    const auto& sp = c.plan.statements[0];
    CHECK_MESSAGE(sp.target == "A", c.text());
    CHECK_MESSAGE(pl(sp.result) == "R", c.text());
    CHECK_MESSAGE(cols(c, sp) == "all-gather(0), all-gather(0)", c.text());
    CHECK_MESSAGE(moved_tensors(sp) == "A B", c.text()); // in written order
    CHECK_MESSAGE(count_steps(sp, StepKind::AllGather, "A") == 1, c.text());
    CHECK_MESSAGE(count_steps(sp, StepKind::AllGather, "B") == 1, c.text());
    // Operands: both tensors before the arrow, then both after it, in written order.
    REQUIRE_MESSAGE(sp.operands.size() == 4, c.text());
    CHECK_MESSAGE(sp.operands[0].tensor == "A", c.text());
    CHECK_MESSAGE(sp.operands[1].tensor == "B", c.text());
    CHECK_MESSAGE(pl(sp.operands[1]) == "S(1)", c.text());
    CHECK_MESSAGE(sp.operands[2].tensor == "A", c.text());
    CHECK_MESSAGE(sp.operands[3].tensor == "B", c.text());
    CHECK_MESSAGE(pl(sp.operands[3]) == "R", c.text());
    CHECK_MESSAGE(shape(sp.operands[3].local_shape) == "64x64", c.text());
    // Costs add up: exactly the two single-tensor chains.
    const auto a = run(kTwo + "A_{i_0 j} -> A_{i j}\n");
    const auto b = run(kTwo + "B_{j k_0} -> B_{j k}\n");
    REQUIRE(a.plan.statements.size() == 1);
    REQUIRE(b.plan.statements.size() == 1);
    const auto& sa = a.plan.statements[0].cost;
    const auto& sb = b.plan.statements[0].cost;
    CHECK_MESSAGE(sa.comm_bytes_per_device > 0, a.text());
    CHECK_MESSAGE(sp.cost.comm_bytes_per_device ==
                      rel(sa.comm_bytes_per_device + sb.comm_bytes_per_device),
                  c.text());
    CHECK_MESSAGE(sp.cost.time_s == rel(sa.time_s + sb.time_s), c.text());
    // all-gather of 64x64 f32 over 4 devices: each device receives 3/4 of 16 KiB, twice.
    CHECK_MESSAGE(sp.cost.comm_bytes_per_device == rel(2 * 0.75 * 64 * 64 * 4), c.text());
}

TEST_CASE("chain of products: a group on a factor other than the first splits its index") {
    // B's k = f·c, c inferred from k (64 / 4 devices = 16), as for a one-tensor chain: a chain
    // never changes the element count (issue 19 item 5, on the second factor).
    const auto c = run(kTwo + "A_{i_0 j} B_{j k} -> A_{i j} B_{j (f_0 c)}\n");
    REQUIRE_MESSAGE(c.plan.errors() == 0, c.text());
    REQUIRE_MESSAGE(c.plan.statements.size() == 1, c.text());
    const auto& sp = c.plan.statements[0];
    REQUIRE_MESSAGE(sp.operands.size() == 4, c.text());
    CHECK_MESSAGE(sp.operands[3].tensor == "B", c.text());
    CHECK_MESSAGE(shape(sp.operands[3].global_shape) == "64x64", c.text());
    CHECK_MESSAGE(shape(sp.operands[3].local_shape) == "64x16", c.text());
}

TEST_CASE("chain of products: every arrow moves the tensors that change on it") {
    SUBCASE("A on the first arrow, B on the second") {
        const auto c = run(kTwo + "A_{i_0 j} B_{j k_0} \\xrightarrow{all-gather} A_{ij} "
                                  "B_{j k_0} \\xrightarrow{all-gather} A_{ij} B_{jk}\n");
        REQUIRE_MESSAGE(c.plan.errors() == 0, c.text());
        const auto& sp = c.plan.statements.at(0);
        CHECK_MESSAGE(moved_tensors(sp) == "A B", c.text());
        CHECK_MESSAGE(pl(sp.result) == "R", c.text());
    }
    SUBCASE("different moves: an all-to-all of A, an all-gather of B") {
        const auto c = run(kTwo + "A_{i_0 j} B_{j_0 k} \\xrightarrow{all-to-all, all-gather} "
                                  "A_{i j_0} B_{jk}\n");
        REQUIRE_MESSAGE(c.plan.errors() == 0, c.text());
        const auto& sp = c.plan.statements.at(0);
        CHECK_MESSAGE(cols(c, sp) == "all-to-all(0), all-gather(0)", c.text());
        CHECK_MESSAGE(moved_tensors(sp) == "A B", c.text());
        CHECK_MESSAGE(pl(sp.result) == "S(1)", c.text());
    }
    SUBCASE("the notation post's step with W^0 gathered as well") {
        const auto c = run(kHead + "W^0_{r'_0 f d'} x_{b r_0 t d'} \\xrightarrow{all-gather, "
                                   "all-gather} W^0_{r' f d'} x_{b s d'}\n");
        REQUIRE_MESSAGE(c.plan.errors() == 0, c.text());
        const auto& sp = c.plan.statements.at(0);
        // The parser's moved factor is the first that changes: W^0, the statement's target.
        CHECK_MESSAGE(sp.target == "W^0", c.text());
        CHECK_MESSAGE(moved_tensors(sp) == "W^0 x", c.text());
        CHECK_MESSAGE(sp.operands.size() == 4, c.text());
    }
    SUBCASE("a context factor between two moved ones stays out of the plan") {
        const auto c = run(kTwo + "A_{i_0 j} C_{jk} B_{j k_0} -> A_{ij} C_{jk} B_{jk}\n");
        REQUIRE_MESSAGE(c.plan.errors() == 0, c.text());
        const auto& sp = c.plan.statements.at(0);
        CHECK_MESSAGE(moved_tensors(sp) == "A B", c.text());
        for (const auto& o : sp.operands)
            CHECK_MESSAGE(o.tensor != "C", c.text());
        for (const auto& st : sp.steps)
            CHECK_MESSAGE(st.tensor != "C", c.text());
    }
    SUBCASE("a moved tensor an earlier statement defined starts from its definition") {
        const auto c = run(kTwo + "B_{j k_0} = E_{j k_0}\nA_{i_0 j} B_{jk} -> A_{ij} B_{jk}\n");
        REQUIRE_MESSAGE(c.plan.errors() == 0, c.text());
        // B is written without subscripts: it inherits S(1) and is gathered by the use
        // (S210 is only for a use that asks for another layout), A by the arrow.
        CHECK_MESSAGE(moved_tensors(c.plan.statements.at(1)) == "A", c.text());
    }
}

TEST_CASE("chain of products: every moved tensor is defined in its last layout") {
    // B is an input read in two layouts without the chain's definition (S217); with it, a
    // later use sees B replicated, as the chain left it.
    const auto c = run(kTwo + "A_{i_0 j} B_{j k_0} -> A_{ij} B_{jk}\n"
                              "z_{ik} = A_{ij} B_{jk}\nexpect none\n");
    CHECK_MESSAGE(c.plan.errors() == 0, c.text());
    CHECK_MESSAGE(c.plan.warnings() == 0, c.text());
    CHECK_MESSAGE(find_code(c.plan, "S217") == nullptr, c.text());
    // A use without subscripts inherits the moved layout: B_{j_0 k} stays cut on j, and a
    // replicated result gathers it.
    const auto inherit = run(kTwo + "A_{i_0 j} B_{j k_0} -> A_{ij} B_{j_0 k}\n"
                                    "u_{jk} = relu(B_{jk})\nexpect all-gather(0)\n");
    CHECK_MESSAGE(inherit.plan.errors() == 0, inherit.text());
    CHECK_MESSAGE(cols(inherit, stmt(inherit, "u")) == "all-gather(0)", inherit.text());
}

TEST_CASE("chain of products: a label describes every moved tensor's step, in written order") {
    SUBCASE("one collective per moved tensor, listed") {
        const auto c = run(kTwo + "A_{i_0 j} B_{j k_0} \\xrightarrow{all-gather, all-gather} "
                                  "A_{i j} B_{j k}\n");
        CHECK_MESSAGE(c.plan.errors() == 0, c.text());
        CHECK_MESSAGE(find_code(c.plan, "S302") == nullptr, c.text());
    }
    SUBCASE("a label naming one tensor's step only: S302, naming whose steps are missing") {
        const auto c =
            run(kTwo + "A_{i_0 j} B_{j k_0} \\xrightarrow{all-gather} A_{i j} B_{j k}\n");
        const auto* d = find_code(c.plan, "S302");
        REQUIRE_MESSAGE(d != nullptr, c.text());
        CHECK_MESSAGE(d->severity == Severity::Error, c.text());
        CHECK_MESSAGE(d->range.line == 3, c.text());
        CHECK_MESSAGE(d->range.column == 46, c.text()); // A on the arrow's right
        CHECK_MESSAGE(d->message.find("all-gather(0) of A, all-gather(0) of B") !=
                          std::string::npos,
                      c.text());
        CHECK_MESSAGE(d->fix.find("every moved tensor") != std::string::npos, c.text());
    }
    SUBCASE("the right collectives in the wrong order: S302") {
        const auto c = run(kTwo + "A_{i_0 j} B_{j_0 k} \\xrightarrow{all-gather, all-to-all} "
                                  "A_{i j_0} B_{jk}\n");
        CHECK_MESSAGE(find_code(c.plan, "S302") != nullptr, c.text());
    }
    SUBCASE("none where tensors move: S302") {
        const auto c = run(kTwo + "A_{i_0 j} B_{j k_0} \\xrightarrow{none} A_{i j} B_{j k}\n");
        CHECK_MESSAGE(find_code(c.plan, "S302") != nullptr, c.text());
    }
    SUBCASE("an expect line after the chain lists all of its collectives") {
        const auto ok = run(kTwo + "A_{i_0 j} B_{j k_0} -> A_{i j} B_{j k}\n"
                                   "expect all-gather(0), all-gather(0)\n");
        CHECK_MESSAGE(ok.plan.errors() == 0, ok.text());
        const auto bad = run(kTwo + "A_{i_0 j} B_{j k_0} -> A_{i j} B_{j k}\n"
                                    "expect all-gather(0)\n");
        const auto* d = find_code(bad.plan, "S301");
        REQUIRE_MESSAGE(d != nullptr, bad.text());
        CHECK_MESSAGE(d->range.line == 4, bad.text());
    }
}

TEST_CASE("issue 22: a chain that regroups an unevenly sharded index gathers it first") {
    const auto c = run("mesh 4\ndim s=8 r=2\nsplit s -> r t\nx_{s_0} -> x_{(r t)}\n"
                       "y_{(r t_0)} -> y_{s}\n"
                       "u_{s_0} -> u_{(r_0 t)}\n");
    REQUIRE_MESSAGE(c.plan.errors() == 0, c.text());
    CHECK_MESSAGE(cols(c, c.plan.statements.at(0)) == "all-gather(0)", c.text());
    CHECK_MESSAGE(c.plan.statements.at(0).steps.at(0).kind == StepKind::AllGather, c.text());
    CHECK_MESSAGE(cols(c, c.plan.statements.at(1)) == "all-gather(0)", c.text());
    // s_0 -> (r_0 t) with r = 2 over 4 devices: gathered, then sliced (uneven, torch.chunk).
    CHECK_MESSAGE(cols(c, c.plan.statements.at(2)) == "all-gather(0)", c.text());
    CHECK_MESSAGE(has_code(c.plan, "S216", Severity::Note), c.text());
    // Even parts reshape locally.
    const auto even = run("mesh 2\ndim s=8 r=2\nsplit s -> r t\nx_{s_0} -> x_{(r_0 t)}\n");
    CHECK_MESSAGE(cols(even, even.plan.statements.at(0)) == "none", even.text());
    CHECK_MESSAGE(!has_code(even.plan, "S216", Severity::Note), even.text());
}
