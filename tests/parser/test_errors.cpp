// Parse errors: stable codes, positions (1-based line, code-point column), messages, the
// formatted output, recovery after a bad statement, and robustness on hostile input.
#include "helpers.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

using namespace shardscope;
using shardscope::test::diagnostics_text;
using shardscope::test::parse_text;

namespace {

/// One input with exactly one expected error.
struct ErrorCase {
    std::string text;
    std::string code;
    std::uint32_t line;
    std::uint32_t column;
    std::uint32_t end_column = 0; ///< 0: not checked
    std::string message_part = {};
};

/// Checks that `c.text` gives exactly one error, with the expected code, position and message,
/// and that the failed statement is left out of the program.
void check_error(const ErrorCase& c) {
    INFO("input: ", c.text);
    const auto r = parse_text(c.text);
    INFO("diagnostics:\n", diagnostics_text(c.text, r));
    REQUIRE(r.diagnostics.size() == 1);
    const auto& d = r.diagnostics[0];
    CHECK(d.severity == Severity::Error);
    CHECK(d.code == c.code);
    CHECK(d.range.line == c.line);
    CHECK(d.range.column == c.column);
    if (c.end_column != 0) CHECK(d.range.end_column == c.end_column);
    if (!c.message_part.empty()) CHECK(d.message.find(c.message_part) != std::string::npos);
    CHECK_FALSE(d.message.empty());
    CHECK(r.has_errors());
}

void check_errors(const std::vector<ErrorCase>& cases) {
    for (const auto& c : cases)
        check_error(c);
}

std::size_t count_statements(const ast::Program& p) {
    std::size_t n = 0;
    for (const auto& it : p.items)
        n += std::holds_alternative<ast::Statement>(it) ? 1 : 0;
    return n;
}

std::string repeat(const std::string& s, std::size_t n) {
    std::string out;
    out.reserve(s.size() * n);
    for (std::size_t i = 0; i < n; ++i)
        out += s;
    return out;
}

/// The one diagnostic of `text`, formatted.
std::string formatted(const std::string& text) {
    const auto r = parse_text(text);
    REQUIRE_MESSAGE(r.diagnostics.size() == 1, diagnostics_text(text, r));
    SourceFile file("test.ein", text);
    return format_diagnostic(file, r.diagnostics[0]);
}

} // namespace

// =============================================================================================
// Grammar errors (errors.hpp): the code of the construct that was expected, at the place where
// it should have begun.

TEST_CASE("errors: statements and expressions (P100-P118)") {
    check_errors({
        {"= x_{i}", "P100", 1, 1, 0, "expected a statement"},
        {"(a) = b", "P100", 1, 1},
        {"y = a b )", "P101", 1, 9, 0, "unexpected text"},
        {"y x", "P102", 1, 3, 0, "expected '='"},
        {"y = )", "P103", 1, 5, 0, "expected an expression"},
        {"y =", "P103", 1, 4},
        {"y = a + )", "P104", 1, 9, 0, "after '+' or '-'"},
        {"y = a - ", "P104", 1, 9},
        {"y = a * )", "P105", 1, 9, 0, "after '*' or '/'"},
        {"y = a / ]", "P105", 1, 9},
        {"y = ( )", "P106", 1, 7, 0, "inside the parentheses"},
        {"y = (a b ]", "P107", 1, 10, 0, "expected ')'"},
        {"y = phi+x", "P109", 1, 8, 0, "after the function name"},
        {"y = phi()", "P110", 1, 9, 0, "argument"},
        {"y = sum_(x)", "P111", 1, 9, 0, "index after '_'"},
        {"y = \\frac a b", "P112", 1, 11, 0, "'{' after \\frac"},
        {"y = \\frac{}{b}", "P113", 1, 11, 0, "numerator"},
        {"y = \\frac{a}{}", "P114", 1, 14, 0, "denominator"},
        {"y = \\frac{a b)", "P115", 1, 14, 0, "expected '}'"},
        {"x_{ij} -> 3", "P116", 1, 11, 0, "tensor after the arrow"},
        {"x_{ij} -> y_{ij} ->", "P116", 1, 20},
        {"x \\xrightarrow y", "P117", 1, 16, 0, "\\xrightarrow"},
        // Chains of products: the same positions as single-tensor chains.
        {"W_{ij} x_{jk} -> W_{ij} 3", "P101", 1, 25, 0, "after the end of the statement"},
        {"W_{ij} x_{jk} -> 3", "P116", 1, 18, 0, "tensor after the arrow"},
        {"W_{ij} x_{jk} -> W_{ij} x_{j_0 k} ->", "P116", 1, 37},
        {"W_{ij} x_{jk} = y", "P102", 1, 8, 0, "expected '='"},
    });
}

TEST_CASE("errors: indices and references (P120-P133)") {
    check_errors({
        {"y = x_(a)", "P120", 1, 7, 0, "expected an index after '_'"},
        {"y = x_{b-}", "P121", 1, 9, 0, "index list"},
        {"y = x_{() s}", "P122", 1, 9, 0, "after '(' in a group"},
        {"y = x_{(r c] s}", "P123", 1, 12, 0, "close the group"},
        {"y = A[I - J]", "P124", 1, 9, 0, "bracket index list"},
        {"y = A[() J]", "P125", 1, 8, 0, "after '(' in a group"},
        {"y = x_{r_}", "P126", 1, 10, 0, "mesh axis after '_'"},
        {"y = A[I_, J]", "P127", 1, 9, 0, "mesh axis after '_'"},
        {"y = x_{r_{}}", "P128", 1, 11, 0, "expected a mesh axis"},
        {"y = x_{r_{0 -}}", "P129", 1, 13, 0, "mesh axis or '}'"},
        {"y = W^ + x", "P130", 1, 8, 0, "superscript label"},
        {"y = W^{} x", "P131", 1, 8, 0, "letters or digits"},
        {"y = W^{up x}", "P132", 1, 11, 0, "close the superscript"},
        {"y = z{U_0 x}", "P133", 1, 11, 0, "partial marker"},
    });
}

TEST_CASE("errors: declarations (P140-P158)") {
    check_errors({
        {"mesh +", "P140", 1, 6, 0, "mesh shape"},
        {"mesh dp 2", "P141", 1, 9, 0, "'=' and a size"},
        {"mesh dp=x", "P142", 1, 9, 0, "whole number"},
        {"mesh 2x", "P142", 1, 8},
        {"mesh 4 devices 0 1 2 3", "P143", 1, 16, 0, "'[' and a list"},
        {"dim 8", "P144", 1, 5, 0, "after 'dim'"},
        {"dim b=x", "P145", 1, 7, 0, "range of the index"},
        {"split 3 -> r t", "P146", 1, 7, 0, "index to split"},
        {"split s r t", "P147", 1, 9, 0, "'->'"},
        {"split s -> 3", "P148", 1, 12, 0, "indices the split produces"},
        {"dtype 16", "P149", 1, 7, 0, "element type"},
        {"tensor : f32", "P150", 1, 8, 0, "tensor name"},
        {"tensor x f32", "P151", 1, 10, 0, "':'"},
        {"hw 100", "P152", 1, 4, 0, "preset"},
        {"link - 1GB/s", "P153", 1, 6, 0, "mesh axis after 'link'"},
        {"link tp fast", "P154", 1, 9, 0, "bandwidth"},
        {"link tp 450GB", "P155", 1, 12, 0, "bandwidth unit"},
        {"link tp 450GB/s 1 parsec", "P156", 1, 19, 0, "time unit"},
        {"fn 3 linear", "P157", 1, 4, 0, "function name"},
        {"fn swish nonlinear", "P158", 1, 10, 0, "'elementwise' or 'linear'"},
    });
}

TEST_CASE("errors: expectations (P160-P164)") {
    check_errors({
        {"expect 3", "P160", 1, 8, 0, "'none' or a list"},
        {"expect all-reduce(0), 5", "P161", 1, 23, 0, "after ','"},
        {"expect all-reduce()", "P162", 1, 19, 0, "inside the parentheses"},
        {"expect all-reduce(0 -)", "P163", 1, 21, 0, "',' or ')'"},
        {"y = x \\textrm{(all-reduce}", "P164", 1, 26, 0, "')}'"},
    });
}

TEST_CASE("errors: positions on later lines and after multi-byte characters") {
    check_errors({
        {"mesh 4\ndim d=8\ny = a + )", "P104", 3, 9},
        {"mesh 4\r\ny = a + )\r\n", "P104", 2, 9},
        // r₀ and e′ are 6 bytes but 4 code points: the column counts code points.
        {"y = x_{r₀ e′} + )", "P104", 1, 17},
        {"# φ → σ\ny = φ(x₀) * )", "P105", 2, 13},
        {"y = a b \\\n  + )", "P104", 2, 5},
    });
}

// =============================================================================================
// Errors found while converting the parse tree (parser.cpp).

TEST_CASE("errors: P108 unknown function") {
    const std::string text = "y = swish(x)";
    const auto r = parse_text(text);
    REQUIRE(r.diagnostics.size() == 1);
    const auto& d = r.diagnostics[0];
    CHECK(d.code == "P108");
    CHECK(d.range.line == 1);
    CHECK(d.range.column == 5);
    CHECK(d.range.end_column == 10);
    CHECK(d.message.find("'swish'") != std::string::npos);
    CHECK(d.fix.find("fn swish elementwise") != std::string::npos);
    CHECK(r.program.items.empty());

    SUBCASE("inside an expression, after a known function") {
        check_error({"y = phi(W_{de} gelu(foo(x_{e})))", "P108", 1, 21, 24, "'foo'"});
    }
    SUBCASE("with space before the parenthesis") {
        check_error({"y = a mystery (x)", "P108", 1, 7, 14, "'mystery'"});
    }
}

TEST_CASE("errors: P119 unknown LaTeX command") {
    check_errors({
        {"y = \\foo x", "P119", 1, 5, 9, "'\\foo'"},
        {"y = a \\bar", "P119", 1, 7, 11, "'\\bar'"},
        {"y = \\mathbb{R} x", "P119", 1, 5, 12, "'\\mathbb'"},
    });
}

TEST_CASE("errors: P200 unknown collective") {
    const auto r = parse_text("expect all-bcast(0)");
    REQUIRE(r.diagnostics.size() == 1);
    CHECK(r.diagnostics[0].code == "P200");
    CHECK(r.diagnostics[0].range.column == 8);
    CHECK(r.diagnostics[0].range.end_column == 17);
    CHECK(r.diagnostics[0].message.find("'all-bcast'") != std::string::npos);
    CHECK(r.diagnostics[0].fix.find("all-reduce") != std::string::npos);
    check_errors({
        {"expect all-reduce(0), broadcast(1)", "P200", 1, 23, 32, "'broadcast'"},
        {"y = a b \\textrm{(gather)}", "P200", 1, 18, 24, "'gather'"},
    });
}

TEST_CASE("errors: P202 unknown element type") {
    const auto r = parse_text("dtype f8");
    REQUIRE(r.diagnostics.size() == 1);
    CHECK(r.diagnostics[0].code == "P202");
    CHECK(r.diagnostics[0].range.column == 7);
    CHECK(r.diagnostics[0].range.end_column == 9);
    CHECK(r.diagnostics[0].message.find("'f8'") != std::string::npos);
    CHECK(r.diagnostics[0].fix.find("bf16") != std::string::npos);
    check_error({"tensor x : q4", "P202", 1, 12, 14, "'q4'"});
}

TEST_CASE("errors: P203 two superscript labels") {
    check_errors({
        {"y = W^0_{de}^1 x_{e}", "P203", 1, 14, 15, "two superscript labels"},
        {"y = W^{up}^{down}", "P203", 1, 13, 17, "'W'"},
        {"y = W⁰_{de}¹", "P203", 1, 12, 13},
    });
}

TEST_CASE("errors: P205 sizes") {
    check_errors({
        {"mesh 0", "P205", 1, 6, 7, "at least 1"},
        {"mesh 2x0", "P205", 1, 8, 9, "at least 1"},
        {"dim b=0", "P205", 1, 7, 8, "at least 1"},
        {"dim b=99999999999999999999", "P205", 1, 7, 27, "too large"},
        {"mesh 2000000x2000000", "P205", 1, 14, 21, "too many devices"},
        {"mesh 2 devices [0 99999999999999999999]", "P205", 1, 19, 0, "too large"},
    });
}

TEST_CASE("errors: P206 and P207") {
    check_errors({
        {"y = sum_{(a b)}(x)", "P206", 1, 10, 15, "group"},
        {"y = z_0{U_1}", "P207", 1, 8, 13, "partial twice"},
    });
}

TEST_CASE("errors: P208 duplicate mesh axis") {
    const auto r = parse_text("mesh dp=2 dp=4");
    REQUIRE(r.diagnostics.size() == 1);
    CHECK(r.diagnostics[0].code == "P208");
    CHECK(r.diagnostics[0].range.line == 1);
    CHECK(r.diagnostics[0].message.find("'dp'") != std::string::npos);
    CHECK(r.diagnostics[0].message.find("declared twice") != std::string::npos);
    CHECK(r.program.items.empty());
    const auto q = parse_text("mesh X=2, Y=2, X=4");
    REQUIRE(q.diagnostics.size() == 1);
    CHECK(q.diagnostics[0].code == "P208");
}

TEST_CASE("P208 points at the repeated axis name") {
    // The caret is under the second `dp`, not under its size `4`.
    check_error({"mesh dp=2 dp=4", "P208", 1, 11, 13, "declared twice"});
}

TEST_CASE("errors: P209 bad device list") {
    check_errors({
        {"mesh 2x2 devices [0 1 2]", "P209", 1, 1, 0, "(3 given)"},
        {"mesh 2 devices [0 0]", "P209", 1, 1, 0, "exactly once"},
        {"mesh 2 devices [1 2]", "P209", 1, 1, 0, "0..1"},
        {"mesh 2x2 devices [0 1 2 3 4]", "P209", 1, 1, 0, "(5 given)"},
    });
}

TEST_CASE("errors: P210 split, P211 link axis, P212 bandwidth, P213 builtin") {
    check_errors({
        {"split s -> r", "P210", 1, 1, 0, "at least two parts"},
        {"split s -> (r)", "P210", 1, 1, 0, "at least two parts"},
        {"link 01 1GB/s", "P211", 1, 6, 8, "exactly one mesh axis"},
        {"link tp 0GB/s", "P212", 1, 9, 0, "positive"},
        {"fn relu elementwise", "P213", 1, 4, 8, "'relu' is a built-in"},
        {"fn sigmoid linear", "P213", 1, 4, 11, "built-in"},
        {"fn AllReduce linear", "P213", 1, 4, 13, "built-in"},
    });
}

// =============================================================================================
// format_diagnostic

TEST_CASE("format_diagnostic: a long line is shown as a window around the column") {
    // 200 terms and an error after term 100: 60 characters before the column, 150 in all.
    std::string terms;
    for (int k = 0; k < 200; ++k)
        terms += (k ? " + " : "") + std::string("a") + std::to_string(k % 10);
    const std::string line = "y = " + terms.substr(0, 500) + " swish(x)" + terms.substr(500);
    const auto out = formatted(line);
    const auto rows = [&] {
        std::vector<std::string> r;
        std::istringstream in(out);
        for (std::string l; std::getline(in, l);)
            r.push_back(l);
        return r;
    }();
    REQUIRE(rows.size() >= 3);
    CHECK(rows[0] == "test.ein:1:506: error: unknown function 'swish' [P108]");
    const std::string shown = rows[1].substr(4), caret = rows[2].substr(4);
    CHECK(shown.starts_with("..."));
    CHECK(shown.ends_with("..."));
    CHECK(shown.size() == 3 + 150 + 3);
    // The caret and its underline sit under "swish", 60 characters into the window.
    CHECK(caret.find('^') == 3 + 60);
    CHECK(shown.substr(caret.find('^'), 5) == "swish");
    CHECK(caret.substr(caret.find('^')) == "^~~~~");
    // Near the end, only the start is cut; short lines are shown whole (the cases below).
    const auto tail = formatted("y = " + terms + " swish(x)");
    CHECK(tail.find("    ...") != std::string::npos);
    CHECK(tail.find("swish(x)\n") != std::string::npos);
}

TEST_CASE("format_diagnostic: exact output") {
    SUBCASE("with a range and a fix") {
        CHECK(formatted("y = swish(x)") ==
              "test.ein:1:5: error: unknown function 'swish' [P108]\n"
              "    y = swish(x)\n"
              "        ^~~~~\n"
              "    fix: declare it with 'fn swish elementwise' (or linear), or write "
              "'swish * (...)' for a product\n");
    }
    SUBCASE("multi-byte characters before the error on line 2") {
        // r₀ and e′ take 3 bytes each: the caret goes under code point 15, not byte 19.
        CHECK(formatted("mesh 4\nz = x_{r₀ e′} swish(y_{e′})") ==
              "test.ein:2:15: error: unknown function 'swish' [P108]\n"
              "    z = x_{r₀ e′} swish(y_{e′})\n"
              "                  ^~~~~\n"
              "    fix: declare it with 'fn swish elementwise' (or linear), or write "
              "'swish * (...)' for a product\n");
    }
    SUBCASE("one-character range, no fix") {
        CHECK(formatted("y = (a b ]") ==
              "test.ein:1:10: error: expected ')' to close the parenthesis [P107]\n"
              "    y = (a b ]\n"
              "             ^\n");
    }
    SUBCASE("Unicode label and a fix") {
        CHECK(formatted("y = φ(W⁰_{de}^1 x_{e})") ==
              "test.ein:1:15: error: tensor 'W' has two superscript labels [P203]\n"
              "    y = φ(W⁰_{de}^1 x_{e})\n"
              "                  ^\n"
              "    fix: keep one label: the label is part of the tensor's name\n");
    }
    SUBCASE("a tab keeps its width in the caret line") {
        CHECK(formatted("\ty = swish(x)") ==
              "test.ein:1:6: error: unknown function 'swish' [P108]\n"
              "    \ty = swish(x)\n"
              "    \t    ^~~~~\n"
              "    fix: declare it with 'fn swish elementwise' (or linear), or write "
              "'swish * (...)' for a product\n");
    }
}

TEST_CASE("format_diagnostic: control bytes are shown as symbols, the caret under its column") {
    SUBCASE("a NUL in the parsed line") {
        const auto r = parse_text(std::string("y = a\0b", 7));
        REQUIRE(!r.diagnostics.empty());
        SourceFile file("test.ein", std::string("y = a\0b", 7));
        const auto out = format_diagnostic(file, r.diagnostics[0]);
        CHECK(out.find('\0') == std::string::npos);
        CHECK(out.find("    y = a\u2400b\n") != std::string::npos);
    }
    SUBCASE("NUL, ESC, CR and DEL before the column") {
        // Columns 2 to 5 are control bytes; the diagnostic points at column 7, the 'b'.
        const std::string text("a\0\x1b\r\x7f b = c\n", 12);
        SourceFile file("test.ein", text);
        Diagnostic d;
        d.code = "P999";
        d.message = "m";
        d.range.line = d.range.end_line = 1;
        d.range.column = 7;
        d.range.end_column = 8;
        CHECK(format_diagnostic(file, d) == "test.ein:1:7: error: m [P999]\n"
                                            "    a\u2400\u241b\u240d\u2421 b = c\n"
                                            "          ^\n");
    }
}

// =============================================================================================
// Recovery

TEST_CASE("recovery: every bad statement is reported, every good one is kept") {
    const std::string text = "mesh 4\n"                  // 1 good
                             "dim b=8 s=2048\n"          // 2 good
                             "y = a +\n"                 // 3 P104
                             "z = x_{r_0 e} y_{r_0 e}\n" // 4 good
                             "w = swish(x)\n"            // 5 P108
                             "expect all-reduce(0)\n"    // 6 good
                             "dtype f7\n"                // 7 P202
                             "q = (a b\n"                // 8 P107
                             "u = a b  # still here\n"   // 9 good
                             "mesh dp=2 dp=4\n"          // 10 P208
                             "split s -> r t\n";         // 11 good
    const auto r = parse_text(text);
    INFO(diagnostics_text(text, r));
    REQUIRE(r.diagnostics.size() == 5);
    const std::vector<std::string> codes{"P104", "P108", "P202", "P107", "P208"};
    const std::vector<std::uint32_t> lines{3, 5, 7, 8, 10};
    for (std::size_t i = 0; i < 5; ++i) {
        CHECK(r.diagnostics[i].code == codes[i]);
        CHECK(r.diagnostics[i].range.line == lines[i]);
        CHECK(r.diagnostics[i].severity == Severity::Error);
    }
    REQUIRE(r.program.items.size() == 6);
    REQUIRE(count_statements(r.program) == 6);
    const auto& s = [&](std::size_t i) -> const ast::Statement& {
        return std::get<ast::Statement>(r.program.items.at(i));
    };
    CHECK(std::holds_alternative<ast::MeshDecl>(s(0).node));
    CHECK(std::holds_alternative<ast::DimDecl>(s(1).node));
    REQUIRE(std::holds_alternative<ast::Equation>(s(2).node));
    CHECK(std::get<ast::Equation>(s(2).node).lhs.name == "z");
    CHECK(std::holds_alternative<ast::Expect>(s(3).node));
    REQUIRE(std::holds_alternative<ast::Equation>(s(4).node));
    CHECK(std::get<ast::Equation>(s(4).node).lhs.name == "u");
    CHECK(s(4).comment == "still here");
    CHECK(std::holds_alternative<ast::SplitDecl>(s(5).node));
    CHECK(s(5).range.line == 11);
}

TEST_CASE("recovery: errors in statements sharing a line and inside an align block") {
    const std::string text = "y = a +; z = b c; w = (d\n"
                             "\\begin{align}\n"
                             "p &= q r \\\\\n"
                             "s &= \\frac{t}{} \\\\\n"
                             "v &= u\n"
                             "\\end{align}\n";
    const auto r = parse_text(text);
    INFO(diagnostics_text(text, r));
    REQUIRE(r.diagnostics.size() == 3);
    CHECK(r.diagnostics[0].code == "P104");
    CHECK(r.diagnostics[0].range.column == 8);
    CHECK(r.diagnostics[1].code == "P107");
    CHECK(r.diagnostics[1].range.column == 25);
    CHECK(r.diagnostics[2].code == "P114");
    CHECK(r.diagnostics[2].range.line == 4);
    REQUIRE(count_statements(r.program) == 3);
    const auto name = [&](std::size_t i) {
        return std::get<ast::Equation>(std::get<ast::Statement>(r.program.items.at(i)).node)
            .lhs.name;
    };
    CHECK(name(0) == "z");
    CHECK(name(1) == "p");
    CHECK(name(2) == "v");
}

// =============================================================================================
// Robustness

TEST_CASE("robustness: deep nesting is an error, not a crash") {
    SUBCASE("10000 balanced parentheses") {
        const std::string text = "y = " + repeat("(", 10000) + "x" + repeat(")", 10000);
        const auto r = parse_text(text);
        REQUIRE(r.diagnostics.size() == 1);
        CHECK(r.diagnostics[0].code == "P118");
        CHECK(r.diagnostics[0].range.line == 1);
        CHECK(r.diagnostics[0].range.column == 205); // the 201st '('
        CHECK(r.program.items.empty());
    }
    SUBCASE("10000 unclosed parentheses, then a good line") {
        const std::string text = "y = " + repeat("(", 10000) + "\nz = a b";
        const auto r = parse_text(text);
        REQUIRE(r.diagnostics.size() == 1);
        CHECK(r.diagnostics[0].code == "P118");
        REQUIRE(r.program.items.size() == 1);
        CHECK(std::get<ast::Equation>(std::get<ast::Statement>(r.program.items[0]).node).lhs.name ==
              "z");
    }
    SUBCASE("nested calls, fractions, signs and brackets") {
        for (const std::string& text :
             {"y = " + repeat("phi(", 10000) + "x" + repeat(")", 10000),
              "y = " + repeat("\\frac{", 5000) + "x",
              "y = " + repeat("-(", 10000) + "x" + repeat(")", 10000),
              "y = " + repeat("\\left(", 10000) + "x" + repeat("\\right)", 10000),
              "x \\xrightarrow{" + repeat("{", 10000) + repeat("}", 10000) + "} y"}) {
            INFO("input starts ", text.substr(0, 30));
            const auto r = parse_text(text);
            REQUIRE(r.diagnostics.size() == 1);
            CHECK(r.diagnostics[0].code == "P118");
            CHECK(r.program.items.empty());
        }
    }
    SUBCASE("200 levels are still allowed") {
        const std::string text = "y = " + repeat("(", 150) + "x" + repeat(")", 150);
        const auto r = parse_text(text);
        CHECK_MESSAGE(!r.has_errors(), diagnostics_text(text, r));
        CHECK(r.program.items.size() == 1);
    }
}

TEST_CASE("robustness: a 1 MB line of random junk terminates" * doctest::timeout(60)) {
    std::mt19937 rng(20240611u);
    // clang-format off
    const std::vector<std::string> pieces = {
        "₀", "₁", "′", "″", "φ", "σ", "→", "×", "⁰", "¹", "·", "é", "中", "😀",
        "\\frac{", "\\xrightarrow{", "\\textrm{(", "\\left(", "\\right)", "\\begin{align}",
        "x_{", "^{", "{U_", "phi(", "_", "^", "'", "\\\\", "\\", "&", "$", "->", ":=", "+="};
    // clang-format on
    std::uniform_int_distribution<int> pick_kind(0, 3);
    std::uniform_int_distribution<int> pick_ascii(32, 126);
    std::uniform_int_distribution<std::size_t> pick_piece(0, pieces.size() - 1);
    std::string text;
    text.reserve((1u << 20) + 64);
    while (text.size() < (1u << 20)) {
        if (pick_kind(rng) == 0)
            text += pieces[pick_piece(rng)];
        else
            text += static_cast<char>(pick_ascii(rng));
    }
    REQUIRE(text.find('\n') == std::string::npos);
    const auto r = parse_text(text);
    CHECK(r.has_errors());
    SourceFile file("test.ein", text);
    for (const auto& d : r.diagnostics) {
        CHECK(d.range.line == 1);
        CHECK(d.range.column >= 1);
        CHECK(d.range.offset + d.range.length <= text.size());
        CHECK(d.code.size() == 4);
        CHECK(d.code[0] == 'P');
    }
    // Formatting the first diagnostics of a huge line must work too.
    for (std::size_t i = 0; i < r.diagnostics.size() && i < 3; ++i)
        CHECK(format_diagnostic(file, r.diagnostics[i]).find(r.diagnostics[i].code) !=
              std::string::npos);
}

TEST_CASE("robustness: many lines of random junk keep diagnostics in order" *
          doctest::timeout(60)) {
    std::mt19937 rng(7u);
    const std::vector<std::string> tokens = {"x",      "y_{",     "r_0",
                                             "}",      "(",       ")",
                                             "=",      "+",       "-",
                                             "*",      "/",       "phi",
                                             "swish",  "\\frac{", "W^0",
                                             "[",      "]",       ",",
                                             "mesh",   "dim",     "expect",
                                             "4",      "2x",      "->",
                                             "\\\\",   "#",       "%",
                                             "₀",      "′",       "{U_0}",
                                             "\\quad", "\\foo",   "\\textrm{(all-reduce)}",
                                             " ",      " ",       " "};
    std::uniform_int_distribution<std::size_t> pick(0, tokens.size() - 1);
    std::uniform_int_distribution<int> length(0, 12);
    std::string text;
    const int lines = 5000;
    for (int l = 0; l < lines; ++l) {
        const int n = length(rng);
        for (int k = 0; k < n; ++k)
            text += tokens[pick(rng)];
        text += '\n';
    }
    const auto r = parse_text(text);
    CHECK(r.has_errors());
    std::uint32_t last = 0;
    for (const auto& d : r.diagnostics) {
        CHECK(d.range.line >= last);
        CHECK(d.range.line <= static_cast<std::uint32_t>(lines));
        last = d.range.line;
    }
    CHECK(r.diagnostics.size() <= static_cast<std::size_t>(lines) * 4);
}

TEST_CASE("robustness: invalid UTF-8 and control bytes do not crash") {
    for (const std::string& text :
         {std::string("y = a \xff b"), std::string("y = x_{\xc3}"), std::string("\xe2\x82"),
          std::string("y = a\0b", 7), std::string("mesh 4\x01")}) {
        const auto r = parse_text(text);
        CHECK(r.has_errors());
        for (const auto& d : r.diagnostics)
            CHECK(d.range.line == 1);
    }
}

TEST_CASE("robustness: empty and content-free input") {
    SUBCASE("empty") {
        const auto r = parse_text("");
        CHECK(r.diagnostics.empty());
        CHECK(r.program.items.empty());
    }
    SUBCASE("whitespace only") {
        const auto r = parse_text("  \n\t\n\r\n\n   ");
        CHECK(r.diagnostics.empty());
        CHECK(r.program.items.empty());
    }
    SUBCASE("comments only: no statements, no errors") {
        const auto r = parse_text("# one\n\n% two\n   # three\n\n");
        CHECK(r.diagnostics.empty());
        CHECK(count_statements(r.program) == 0);
        std::size_t comments = 0;
        for (const auto& it : r.program.items)
            comments += std::holds_alternative<ast::Comment>(it) ? 1 : 0;
        CHECK(comments == 3);
    }
    SUBCASE("LaTeX layout only") {
        const auto r = parse_text("\\begin{align}\n\\end{align}\n$$\n;;\n\\quad\n");
        CHECK(r.diagnostics.empty());
        CHECK(r.program.items.empty());
    }
}

// =============================================================================================
// Regressions of bugs found while writing these tests.

TEST_CASE("unknown function in LaTeX spelling is P108") {
    // NOTATION.md section 4: \mathrm{...} and \operatorname{...} spell functions, and an
    // unknown name before '(' is an unknown function.
    check_error({"y = \\mathrm{swish}(x)", "P108", 1, 5, 0, "'swish'"});
    check_error({"y = \\operatorname{swish}(x_{i})", "P108", 1, 5, 0, "'swish'"});
}

TEST_CASE("a LaTeX command name stops at the first non-letter") {
    // LaTeX command names are letters only: `\foo2` is the command `\foo` then `2`, and
    // `\times4` is the known command `\times` (so no P119 at all).
    check_error({"y = \\foo2 x", "P119", 1, 5, 9, "'\\foo'"});
    const auto r = parse_text("mesh 2\\times4");
    REQUIRE(r.diagnostics.size() == 1);
    CHECK(r.diagnostics[0].code != "P119");
}

TEST_CASE("an out-of-range latency is P212") {
    // from_chars leaves 0 on overflow: the parser must not read `1e400us` as a latency of 0.
    check_error({"link tp 1GB/s 1e400us", "P212", 1, 15, 0, "latency"});
}

TEST_CASE("grammar analysis finds no problems") {
    CHECK(parser::analyze_grammar() == 0);
}

namespace shardscope::test {

TEST_CASE("named mesh axes and dim bindings need a separator") {
    // `X=4batch=8` once read as a second axis `batch` (a fuzzer found a 2.7e11-device mesh).
    for (const char* text : {"mesh X=4batch=8", "dim b=8s=4"}) {
        CAPTURE(text);
        const auto r = parse_text(text);
        REQUIRE(r.diagnostics.size() == 1);
        CHECK(r.diagnostics[0].code == "P101");
    }
    for (const char* text : {"mesh X=4 batch=8", "mesh X=4, batch=8", "dim b=8,s=4"}) {
        CAPTURE(text);
        CHECK(!parse_text(text).has_errors());
    }
}

} // namespace shardscope::test
