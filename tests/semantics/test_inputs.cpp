// Issue 20: a program input (a tensor no statement assigns) is one tensor. Read with two
// shapes it is an error (S106, as grad's G202); read in two layouts a warning (S217). The
// agreement with grad is tested in tests/grad/test_grad.cpp ("inputs read twice").
#include "helpers.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

using namespace shardscope;
using namespace shardscope::test;

namespace {

const Diagnostic* find_code(const semantics::Plan& p, const std::string& code) {
    auto it = std::find_if(p.diagnostics.begin(), p.diagnostics.end(),
                           [&](const auto& d) { return d.code == code; });
    return it == p.diagnostics.end() ? nullptr : &*it;
}

} // namespace

TEST_CASE("S106: an input read with two shapes, at the second read, naming the first") {
    const std::string src = "mesh 2\ndim i=4 j=8\ny_{i} = x_{i}\nz_{ij} = x_{ij} w_{j}\n";
    const auto plan = check_text(src);
    CHECK_MESSAGE(plan.errors() == 1, plan_text(src, plan));
    const auto* d = find_code(plan, "S106");
    REQUIRE_MESSAGE(d, plan_text(src, plan));
    CHECK(d->severity == Severity::Error);
    CHECK(d->range.line == 4u);
    CHECK(d->range.column == 10u); // x_{ij}
    CHECK_MESSAGE(d->message.find("line 3, column 9") != std::string::npos, d->message);
    CHECK_MESSAGE(d->message.find("4×8") != std::string::npos, d->message);
    CHECK_MESSAGE(d->message.find("x_{i}") != std::string::npos, d->message);
    CHECK(!d->fix.empty());
    // Both statements are still planned.
    CHECK(plan.statements.size() == 2u);
}

TEST_CASE("S106: the same elements in another shape, where both reads reach an output") {
    // Grouped: 4×8 and 32.
    const std::string grouped = "mesh 2\ndim i=4 j=8\ny_{ij} = x_{ij}\nz_{(ij)} = x_{(ij)}\n";
    const auto g = check_text(grouped);
    const auto* d = find_code(g, "S106");
    REQUIRE_MESSAGE(d, plan_text(grouped, g));
    CHECK_MESSAGE(d->message.find("both reads reach an output") != std::string::npos, d->message);
    // The first value overwritten unread (latex_blog.ein's displays): grad derives nothing
    // through the first read.
    const std::string dead = "mesh 2\ndim k=32 r=4 e=8\nz = x_{k} y_{k}\nz = x_{r_0 e} y_{r_0 e}\n";
    const auto p = check_text(dead);
    CHECK_MESSAGE(!find_code(p, "S106"), plan_text(dead, p));
    // Read again in the last statement, the first value reaches an output after all.
    const std::string used = "mesh 2\ndim k=32 r=4 e=8\nz = x_{k} y_{k}\nw = z\n"
                             "z = x_{r_0 e} y_{r_0 e}\n";
    const auto u = check_text(used);
    CHECK_MESSAGE(find_code(u, "S106"), plan_text(used, u));
    // Even with another number of elements (exec --small's ranges break latex_blog's k = r e).
    const std::string sized =
        "mesh 2\ndim k=16 r=4 e=8\nz = x_{k} y_{k}\nz = x_{r_0 e} y_{r_0 e}\n";
    const auto z = check_text(sized);
    CHECK_MESSAGE(!find_code(z, "S106"), plan_text(sized, z));
}

TEST_CASE("S106: a third shape is reported again; a read in the first shape is not") {
    const std::string src = "mesh 2\ndim i=4 j=8\na_{i} = x_{i}\nb_{j} = x_{j}\n"
                            "c_{i} = x_{i}\nd_{ij} = x_{ij}\n";
    const auto plan = check_text(src);
    std::vector<std::uint32_t> lines;
    for (const auto& d : plan.diagnostics)
        if (d.code == "S106") lines.push_back(d.range.line);
    CHECK_MESSAGE((lines == std::vector<std::uint32_t>{4u, 6u}), plan_text(src, plan));
}

TEST_CASE("S217: an input read in two layouts is a warning, once per new layout") {
    const std::string src = "mesh dp=2 tp=2\ndim i=4 j=8\na_{i_{dp} j} = x_{i_{dp} j}\n"
                            "b_{i j_{tp}} = x_{i j_{tp}}\nc_{i_{dp} j} = x_{i_{dp} j}\n"
                            "d_{i j_{tp}} = x_{i j_{tp}}\n";
    const auto plan = check_text(src);
    CHECK_MESSAGE(plan.errors() == 0, plan_text(src, plan));
    CHECK_MESSAGE(plan.warnings() == 1, plan_text(src, plan));
    const auto* d = find_code(plan, "S217");
    REQUIRE_MESSAGE(d, plan_text(src, plan));
    CHECK(d->severity == Severity::Warning);
    CHECK(d->range.line == 4u);
    CHECK_MESSAGE(d->message.find("line 3, column 16") != std::string::npos, d->message);
    // Placements by axis name on a named mesh, both layouts.
    CHECK_MESSAGE(d->message.find("dp:R tp:S(1)") != std::string::npos, d->message);
    CHECK_MESSAGE(d->message.find("dp:S(0) tp:R") != std::string::npos, d->message);
}

TEST_CASE("S106/S217 leave alone names a statement assigns, and inputs read one way") {
    for (const std::string src : {
             "mesh 2\ndim i=4\nx_{i_0} = a_{i_0}\ny_{i} = x_{i}\n", // a definition
             "mesh 2\ndim i=4\ny_{i} = x_{i}\nx_{i_0} = a_{i_0}\nz_{i_0} = x_{i_0}\n",
             "mesh 2\ndim i=4 k=4\ny_{i_0} = x_{i_0}\nz_{k_0} = x_{k_0}\n",  // renamed
             "mesh 2\ndim i=4 j=8\nx_{ij} -> x_{(ij)}\nz_{i} = x_{i_0 j}\n", // a chain's
         }) {
        const auto plan = check_text(src);
        CHECK_MESSAGE(!find_code(plan, "S106"), plan_text(src, plan));
        CHECK_MESSAGE(!find_code(plan, "S217"), plan_text(src, plan));
    }
}

TEST_CASE("S106 and S217 are the same with the re-check cache") {
    const std::string src = "mesh 2\ndim i=4 j=8\ny_{i} = x_{i}\nz_{j} = x_{j}\n"
                            "u_{i_0 j} = v_{i_0 j}\nw_{i j_0} = v_{i j_0}\n";
    SourceFile file("t.ein", src);
    const auto parsed = parser::parse(file);
    semantics::CheckCache cache;
    const auto plain = semantics::check(parsed.program);
    CHECK((codes(plain) == std::vector<std::string>{"S106", "S217"}));
    for (int k = 0; k < 2; ++k)
        CHECK(semantics::check(parsed.program, {}, cache) == plain);
}

TEST_CASE("S106/S217 with reads whose values are overwritten unread") {
    // A dead read of another shape first: the live reads of one shape warn about their two
    // layouts, naming the first live read of that shape.
    const std::string a = "mesh 2\ndim k=32 i=4 j=8\nz = x_{k} y_{k}\nz = y_{k} y_{k}\n"
                          "a_{i_0 j} = x_{i_0 j}\nb_{ij} = x_{ij}\n";
    const auto pa = check_text(a);
    CHECK_MESSAGE(!find_code(pa, "S106"), plan_text(a, pa));
    const auto* w = find_code(pa, "S217");
    REQUIRE_MESSAGE(w, plan_text(a, pa));
    CHECK(w->range.line == 6u);
    CHECK_MESSAGE(w->message.find("line 5, column 13") != std::string::npos, w->message);
    // A shape first read where its value dies, then read again where it reaches an output
    // (in the same layout): refused there.
    const std::string b = "mesh 2\ndim k=32 i=4 j=8\na_{ij} = x_{ij}\nz = x_{k} w_{k}\n"
                          "z = w_{k} w_{k}\nb = x_{k} w_{k}\n";
    const auto pb = check_text(b);
    const auto* e = find_code(pb, "S106");
    REQUIRE_MESSAGE(e, plan_text(b, pb));
    CHECK(e->range.line == 6u);
    CHECK_MESSAGE(e->message.find("line 3, column 10") != std::string::npos, e->message);
    CHECK(pb.errors() == 1);
}

TEST_CASE("S106: reads before a later statement stores the name still read the input") {
    // B is read as 8x8x4, then as 8x8 by the chain that stores it: grad refuses the same
    // program (G202), so check must too.
    const std::string src = "mesh 2\ndim i=8 j=8 k=8 e=4\ny_{ike} = A_{ij} B_{jke}\n"
                            "B_{j k_0} -> B_{jk}\nz_{ik} = A_{ij} B_{jk}\n";
    const auto plan = check_text(src);
    const auto* d = find_code(plan, "S106");
    REQUIRE_MESSAGE(d, plan_text(src, plan));
    CHECK(d->range.line == 4u);
    CHECK(d->range.column == 1u);
    CHECK_MESSAGE(d->message.find("line 3, column 18") != std::string::npos, d->message);
    // Read in one shape before the store and in another after it: two tensors, no error.
    const std::string two = "mesh 2\ndim i=8 j=8 k=8 e=4\ny_{ike} = A_{ij} B_{jke}\n"
                            "B_{jk} = A_{jk}\nz_{ik} = A_{ij} B_{jk}\n";
    const auto p2 = check_text(two);
    CHECK_MESSAGE(!find_code(p2, "S106"), plan_text(two, p2));
}

TEST_CASE("S106/S217: every factor a chain of products moves is a read of its input") {
    // The second moved factor, B, is an input read as 8x8 and before as 8x8x4.
    const std::string src = "mesh 2\ndim i=8 j=8 k=8 e=4\ny_{ike} = C_{ij} B_{jke}\n"
                            "A_{i_0 j} B_{j k_0} -> A_{ij} B_{jk}\nz_{ik} = A_{ij} B_{jk}\n";
    const auto plan = check_text(src);
    const auto* d = find_code(plan, "S106");
    REQUIRE_MESSAGE(d, plan_text(src, plan));
    CHECK(d->range.line == 4u);
    CHECK(d->range.column == 11u); // B_{j k_0}
    // The chain reaches an output through B although A is stored again, unread, after it.
    const std::string dead_a = "mesh 2\ndim i=8 j=8 k=8 e=4\ny_{ike} = C_{ij} B_{jke}\n"
                               "A_{i_0 j} B_{j k_0} -> A_{ij} B_{jk}\nA_{ij} = C_{ij}\n"
                               "z_{jk} = B_{jk}\n";
    const auto p2 = check_text(dead_a);
    CHECK_MESSAGE(find_code(p2, "S106"), plan_text(dead_a, p2));
    // The same shape in another layout: a warning at the chain's read of B.
    const std::string layout = "mesh 2\ndim i=8 j=8 k=8\ny_{ik} = C_{ij} B_{j_0 k}\n"
                               "A_{i_0 j} B_{j k_0} -> A_{ij} B_{jk}\nz_{ik} = A_{ij} B_{jk}\n";
    const auto p3 = check_text(layout);
    CHECK_MESSAGE(!find_code(p3, "S106"), plan_text(layout, p3));
    const auto* w = find_code(p3, "S217");
    REQUIRE_MESSAGE(w, plan_text(layout, p3));
    CHECK(w->range.line == 4u);
    CHECK(w->range.column == 11u);
}

TEST_CASE("S106/S217 over many inputs, their reads interleaved") {
    // Fifty inputs, read in rounds so that each input's reads are far apart and the checker's
    // per-name table holds many names at once: input k is read once (k % 4 == 0), in two
    // shapes (1: S106 at the second read), in two layouts of one shape (2: S217 at the second),
    // or in a first shape, a second and the first again (3: S106 at the second read only).
    const std::vector<std::vector<std::string>> reads_of = {
        {"{i}"}, {"{i}", "{j}"}, {"{i_0 j}", "{i j_0}"}, {"{i}", "{j}", "{i}"}};
    std::string src = "mesh 2\ndim i=4 j=8\n";
    std::uint32_t line = 3;
    std::vector<std::pair<std::string, std::uint32_t>> expected;
    for (std::size_t round = 0; round < 3; ++round)
        for (int k = 0; k < 50; ++k) {
            const auto& reads = reads_of[static_cast<std::size_t>(k % 4)];
            if (round >= reads.size()) continue;
            const auto& dims = reads[round];
            src += "y" + std::to_string(k) + "r" + std::to_string(round) + "_" + dims + " = x" +
                   std::to_string(k) + "_" + dims + "\n";
            if (round == 1) expected.emplace_back(k % 4 == 2 ? "S217" : "S106", line);
            ++line;
        }
    const auto plan = check_text(src);
    std::vector<std::pair<std::string, std::uint32_t>> found;
    for (const auto& d : plan.diagnostics)
        if (d.code == "S106" || d.code == "S217") found.emplace_back(d.code, d.range.line);
    std::sort(found.begin(), found.end(),
              [](const auto& a, const auto& b) { return a.second < b.second; });
    CHECK_MESSAGE(found == expected, plan_text(src, plan));
    CHECK(plan.statements.size() == static_cast<std::size_t>(line - 3));
}
