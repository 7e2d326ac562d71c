// Notation extracted from Markdown and LaTeX documents (app/documents.hpp): what is kept,
// what is blanked, and that every kept character stays at its line and column.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include "app/documents.hpp"
#include "app/inputs.hpp"

#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

using shardscope::app::contains_notation;
using shardscope::app::extract_notation;
using shardscope::app::is_document;

namespace {

std::vector<std::string> lines(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);)
        out.push_back(l);
    return out;
}

std::string trimmed(std::string s) {
    while (!s.empty() && s.back() == ' ')
        s.pop_back();
    return s;
}

} // namespace

TEST_CASE("documents: which paths are documents") {
    CHECK(is_document("a/design.md"));
    CHECK(is_document("paper.TEX"));
    CHECK(is_document("x.markdown"));
    CHECK_FALSE(is_document("prog.ein"));
    CHECK_FALSE(is_document("md"));
}

TEST_CASE("documents: a .tex is a document when it is a whole LaTeX document") {
    using shardscope::app::read_as_document;
    CHECK(read_as_document("p.tex", "\\documentclass{article}\n"));
    CHECK(read_as_document("p.tex", "\\begin{document}\n"));
    // export --to latex writes notation with LaTeX displays: read as it stands.
    CHECK_FALSE(read_as_document("lin.tex", "mesh 4\n\\begin{align}\ny = x\n\\end{align}\n"));
    CHECK(read_as_document("d.md", "anything"));
    CHECK_FALSE(read_as_document("p.ein", "\\documentclass{article}"));
}

TEST_CASE("documents: Markdown ```ein blocks keep their lines; prose and other code go") {
    const std::string md = "# Title\n"
                           "prose with z = x_{i} in it\n"
                           "```python\n"
                           "y = x\n"
                           "```\n"
                           "```ein\n"
                           "mesh 4\n"
                           "  z_{i} = x_{i k_0} y_{k_0}\n"
                           "```\n"
                           "tail\n";
    const auto doc = extract_notation("d.md", md);
    const auto l = lines(doc.text);
    REQUIRE(l.size() == 10);
    CHECK(trimmed(l[0]).empty());
    CHECK(trimmed(l[1]).empty());
    CHECK(trimmed(l[3]).empty()); // python code is not notation
    CHECK(trimmed(l[5]).empty()); // the fence itself
    CHECK(l[6] == "mesh 4");
    CHECK(l[7] == "  z_{i} = x_{i k_0} y_{k_0}"); // indentation (columns) kept
    CHECK(trimmed(l[9]).empty());
    REQUIRE(doc.fences.size() == 1);
    CHECK(doc.fences[0].first_line == 7);
    CHECK(md.substr(doc.fences[0].begin, doc.fences[0].end - doc.fences[0].begin) ==
          "mesh 4\n  z_{i} = x_{i k_0} y_{k_0}\n");
    CHECK(doc.declares_mesh);
    CHECK(contains_notation(doc));
}

TEST_CASE("documents: LaTeX math environments at their columns, comments and prose blanked") {
    const std::string tex = "\\documentclass{article}\n"
                            "Text $a$ and % $$ not maths\n"
                            "\\begin{align*}\n"
                            "mesh 4 \\\\\n"
                            "z &= x_{i} \\nonumber\n"
                            "\\end{align*} after\n"
                            "Ünïcode prose \\begin{equation} w = v_{i} \\end{equation} more\n";
    const auto doc = extract_notation("p.tex", tex);
    const auto l = lines(doc.text);
    REQUIRE(l.size() == 7);
    CHECK(trimmed(l[0]).empty());
    CHECK(trimmed(l[1]).empty()); // inline $a$ and the comment's $$ are not maths
    CHECK(l[2] == "\\begin{align} ");
    CHECK(l[3] == "mesh 4 \\\\");
    CHECK(l[4] == "z &= x_{i} \\nonumber");
    CHECK(trimmed(l[5]) == "\\end{align}");
    // "Ünïcode prose " is 14 code points: blanked one space per code point, so 'w' keeps
    // its column (index 31) though the line had more bytes.
    const std::string& last = l[6];
    CHECK(last.find('w') == 14 + 16 + 1);
    CHECK(last.find("\\begin{align}") == 14);
    CHECK(doc.math_regions == 2);
    CHECK(doc.declares_mesh);
    CHECK(contains_notation(doc));
}

TEST_CASE("documents: $$ displays in Markdown; maths without a mesh is not notation") {
    const auto plain = extract_notation("n.md", "# Physics\n$$ E = m c^2 $$\n");
    CHECK(plain.math_regions == 1);
    CHECK(lines(plain.text)[1] == "   E = m c^2   ");
    CHECK_FALSE(contains_notation(plain));
    const auto with_mesh = extract_notation("n.md", "$$\nmesh 2\ny = x\n$$\n");
    CHECK(contains_notation(with_mesh));
    CHECK(lines(with_mesh.text)[1] == "mesh 2");
}

TEST_CASE("documents: $$ in inline code is prose, not a display") {
    SUBCASE("a code span's $$ neither opens nor closes a display") {
        const auto doc =
            extract_notation("p.md", "In bash, `$$` is the PID and `echo $$` prints it.\n"
                                     "Use `$$ ... $$` for display maths, ``a ` $$ b`` too.\n");
        CHECK(doc.math_regions == 0);
        CHECK(trimmed(lines(doc.text)[0]).empty());
        CHECK(trimmed(lines(doc.text)[1]).empty());
    }
    SUBCASE("a display after a code span on the same line keeps its columns") {
        const auto doc = extract_notation("p.md", "`$$` then $$ y = x $$\n");
        REQUIRE(doc.math.size() == 1u);
        CHECK(doc.math[0].column == 11u);
        CHECK(lines(doc.text)[0] == "             y = x   ");
    }
    SUBCASE("an unclosed backtick run is literal: the $$ after it is maths") {
        const auto doc = extract_notation("p.md", "a `` b $$ y = x $$\n");
        CHECK(doc.math_regions == 1);
    }
    SUBCASE("a run length unclosed on one line may close on the next") {
        const auto doc = extract_notation("p.md", "a `` b\n``$$`` $$ y = x $$\n");
        REQUIRE(doc.math.size() == 1u);
        CHECK(doc.math[0].line == 2u);
        CHECK(doc.math[0].column == 8u);
    }
    SUBCASE("many unclosed runs on one line: each literal, the display after them read") {
        // Runs of 1 to 300 backticks, none closed (each length once): searched once per
        // length, not to the line's end once per run.
        std::string line;
        for (int n = 1; n <= 300; ++n)
            line += std::string(static_cast<std::size_t>(n), '`') + " ";
        const auto doc = extract_notation("p.md", line + "$$ y = x $$\n");
        CHECK(doc.math_regions == 1);
    }
    SUBCASE("an escaped backtick opens no span") {
        const auto doc = extract_notation("p.md", "\\` $$ y = x $$ `\n");
        CHECK(doc.math_regions == 1);
    }
    SUBCASE("inside a display, backticks are the display's") {
        const auto doc = extract_notation("p.md", "$$\nmesh 2\n`y` = x\n$$\n");
        CHECK(doc.math_regions == 1);
        CHECK(lines(doc.text)[2] == "`y` = x");
    }
    SUBCASE("LaTeX has no code spans") {
        const auto doc = extract_notation("p.tex", "\\documentclass{article}\n`$$ y = x $$`\n");
        CHECK(doc.math_regions == 1);
    }
}

TEST_CASE("documents: an unclosed fence keeps its notation to the end") {
    const auto doc = extract_notation("u.md", "```ein\nmesh 2\ny = x\n");
    REQUIRE(doc.fences.size() == 1);
    CHECK(doc.fences[0].end == std::string("```ein\nmesh 2\ny = x\n").size());
    CHECK(lines(doc.text)[2] == "y = x");
}

TEST_CASE("documents: a fence indented 1-3 spaces is read without its indentation") {
    using shardscope::app::fence_content;
    using shardscope::app::indent_fence_content;
    const std::string md = "- item:\n"
                           "\n"
                           "  ```ein\n"
                           "  mesh 4\n"
                           "\n"
                           "    z = x_{r_0 e} y_{r_0 e}\n"
                           " expect none\n"
                           "   ```\n" // a closing fence may be indented up to 3 spaces
                           "- next\n";
    const auto doc = extract_notation("li.md", md);
    REQUIRE(doc.fences.size() == 1);
    CHECK(doc.fences[0].indent == 2);
    CHECK(doc.fences[0].first_line == 4);
    // The extracted text keeps the document's columns for diagnostics.
    const auto l = lines(doc.text);
    CHECK(l[3] == "  mesh 4");
    CHECK(l[5] == "    z = x_{r_0 e} y_{r_0 e}");
    CHECK(trimmed(l[7]).empty());
    // Up to 2 spaces come off each line, fewer where a line has fewer.
    const std::string content = fence_content(md, doc.fences[0]);
    CHECK(content == "mesh 4\n\n  z = x_{r_0 e} y_{r_0 e}\nexpect none\n");
    // Written back: the indentation in front of every line but the blank ones.
    CHECK(indent_fence_content("mesh 4\n\nz = x\n", 2) == "  mesh 4\n\n  z = x\n");
    CHECK(indent_fence_content("mesh 4\r\n\r\nz = x\r\n", 3) == "   mesh 4\r\n\r\n   z = x\r\n");
    CHECK(indent_fence_content("mesh 4\n", 0) == "mesh 4\n");
}

TEST_CASE("documents: four spaces make an indented code block, not a fence") {
    const std::string md = "Code:\n"
                           "\n"
                           "    ```ein\n"
                           "    w = foo(x)\n"
                           "    ```\n";
    const auto doc = extract_notation("c.md", md);
    CHECK(doc.fences.empty());
    for (const auto& l : lines(doc.text))
        CHECK(trimmed(l).empty());
    CHECK_FALSE(contains_notation(doc));
    SUBCASE("nor a closing fence: a line indented 4 inside a block is its content") {
        const std::string open = "```ein\nmesh 2\n    ```\ny = x\n```\n";
        const auto d = extract_notation("o.md", open);
        REQUIRE(d.fences.size() == 1);
        CHECK(shardscope::app::fence_content(open, d.fences[0]) == "mesh 2\n    ```\ny = x\n");
    }
}

TEST_CASE("documents: a byte order mark is no part of a fence's indentation") {
    const std::string md = "\xEF\xBB\xBF```ein\nmesh 4\n```\n";
    const auto doc = extract_notation("b.md", md);
    REQUIRE(doc.fences.size() == 1);
    CHECK(doc.fences[0].indent == 0);
    CHECK(shardscope::app::fence_content(md, doc.fences[0]) == "mesh 4\n");
    const auto three = extract_notation("b3.md", "\xEF\xBB\xBF   ```ein\n   mesh 4\n```\n");
    REQUIRE(three.fences.size() == 1);
    CHECK(three.fences[0].indent == 3);
}

TEST_CASE("inputs: a byte order mark at the start of a line is one space") {
    using shardscope::app::byte_order_marks_as_spaces;
    std::string text = "\xEF\xBB\xBFw = foo(x)\n\xEF\xBB\xBFy = x\nz = a\xEF\xBB\xBF\n";
    byte_order_marks_as_spaces(text);
    // Inside a line it is a character like another (the parser says what it makes of it).
    CHECK(text == " w = foo(x)\n y = x\nz = a\xEF\xBB\xBF\n");
    std::string none = "y = x\n";
    byte_order_marks_as_spaces(none);
    CHECK(none == "y = x\n");
}

// Not documents, but the same binary: the reviewer-facing helpers of check's text output.
#include "parser/suggest.hpp"
#include "semantics/report.hpp"

TEST_CASE("did you mean: the closest known name, only when close") {
    const std::vector<std::string> fns = {"exp", "log", "softmax", "relu", "phi"};
    CHECK(shardscope::closest_name("exq", fns) == "exp");
    CHECK(shardscope::closest_name("sofmtax", fns) == "softmax"); // a transposition
    CHECK(shardscope::closest_name("rleu", fns) == "relu");       // a transposition
    CHECK(shardscope::closest_name("foo", fns).empty());
    CHECK(shardscope::closest_name("exp", fns).empty()); // itself is not a suggestion
    CHECK(shardscope::edit_distance("hidden", "hiden") == 1);
    CHECK(shardscope::edit_distance("ab", "ba") == 1);
}

TEST_CASE("report: placements by axis name on named meshes; alternatives name tensors") {
    using namespace shardscope::semantics;
    Placement s0;
    s0.kind = Placement::Kind::Shard;
    s0.dim = 0;
    const Placement r{};
    Mesh named;
    named.axes = {{"dp", 2}, {"tp", 4}};
    const std::vector<Placement> both{s0, r};
    CHECK(placements_text(both, &named) == "dp:S(0) tp:R");
    Mesh numbered;
    numbered.axes = {{"0", 2}, {"1", 4}};
    CHECK(placements_text(both, &numbered) == "S(0), R");
    CHECK(placements_text(both) == "S(0), R");
    Alternative a;
    a.collectives = {"all-gather(tp)", "all-gather(tp)"};
    a.description = "all-gather W^1 over axis tp (unshard r): gather first; all-gather %2 over "
                    "axis tp (unshard r): gather first";
    CHECK(alternative_text(a) == "all-gather W^1 over axis tp, all-gather %2 over axis tp");
    a.description = "no communication";
    CHECK(alternative_text(a) == "all-gather(tp), all-gather(tp)");
}

// The document check that `check`, the GUI and the REPL share (frontend/document.hpp).
#include "frontend/document.hpp"

#include <algorithm>

namespace {

bool has_diagnostic(const shardscope::semantics::Plan& p, const std::string& code,
                    std::uint32_t line) {
    return std::any_of(p.diagnostics.begin(), p.diagnostics.end(), [&](const auto& d) {
        return d.code == code && (line == 0 || d.range.line == line);
    });
}

} // namespace

TEST_CASE("document check: statements that parse are checked past a syntax error") {
    const auto c = shardscope::frontend::check_text(
        "d.ein", "mesh 2\ndim a=4\ny_{a = x_{a}\nz_{a} = w_{a_9}\nhidden_{a} = x_{a_0}\n"
                 "q_{a} = hiden_{a}\n");
    CHECK_FALSE(c.syntax_ok());
    CHECK(c.checked);
    std::string all;
    for (const auto& d : c.plan.diagnostics)
        all += std::to_string(d.range.line) + " " + d.code + " " + d.message + "\n";
    INFO(all);
    CHECK(c.plan.statements.size() == 2u);            // hidden and q; z has an error
    CHECK(has_diagnostic(c.plan, "S102", 4));         // checked although line 3 does not parse
    CHECK(has_diagnostic(c.plan, "S132", 6));         // did you mean hidden
    CHECK(has_diagnostic(c.plan, "S999", 0));         // which statements were not checked
    CHECK(c.plan.diagnostics.front().code == "S999"); // line 0 sorts first
    // By line, the parser's and the checker's merged.
    CHECK(std::is_sorted(c.plan.diagnostics.begin(), c.plan.diagnostics.end(),
                         [](const auto& a, const auto& b) { return a.range.line < b.range.line; }));
}

TEST_CASE("document check: a misspelt function with a subscript is read as a tensor (S133)") {
    auto warned = [](const std::string& text, std::uint32_t line) {
        const auto c = shardscope::frontend::check_text("f.ein", text);
        std::string all;
        for (const auto& d : c.plan.diagnostics)
            all += std::to_string(d.range.line) + " " + d.code + " " + d.message + "\n";
        INFO(all);
        const auto it = std::find_if(c.plan.diagnostics.begin(), c.plan.diagnostics.end(),
                                     [](const auto& d) { return d.code == "S133"; });
        if (it == c.plan.diagnostics.end()) return false;
        CHECK(it->severity == shardscope::Severity::Warning); // not hidden by -q
        CHECK(it->range.line == line);
        return true;
    };
    SUBCASE("built-in functions, one or two edits away, right before a parenthesis") {
        CHECK(warned("y_{bd} = sofmax_d(z_{bd})\n", 1));
        CHECK(warned("dim b=4\ny_{b} = a_{b} rleu(z_{b})\n", 2) == false); // P108, no tensor
        CHECK(warned("y_{bd} = x_{bd} + sigmod_{d}(z_{bd})\n", 1));
    }
    SUBCASE("a program's own fn") {
        CHECK(warned("fn swiglu elementwise\ny_{b} = swiglo_b(z_{b})\n", 2));
    }
    SUBCASE("not flagged") {
        CHECK_FALSE(warned("y_{bd} = softmax_d(z_{bd})\n", 1));  // the function itself
        CHECK_FALSE(warned("y_{ij} = mask_{ij} (x_{ij})\n", 1)); // a space: a product
        CHECK_FALSE(warned("y_{ij} = mask_{ij}(x_{ij})\n", 1));  // no function is near
        CHECK_FALSE(warned("s_{d} = z_{d}\ny_{d} = exps_{d} + exp_d(z_{d})\n", 2)); // no (
        CHECK_FALSE(warned("relus_{d} = z_{d}\ny_{d} = relus_{d}(z_{d})\n", 2));    // defined
    }
}

TEST_CASE("document check: a declaration with a syntax error stops the checker") {
    const auto c = shardscope::frontend::check_text("d.ein", "mesh 2 x\nz_{a} = w_{a_9}\n");
    CHECK_FALSE(c.checked);
    CHECK(c.plan.statements.empty());
    CHECK_FALSE(has_diagnostic(c.plan, "S102", 0));
    CHECK(has_diagnostic(c.plan, "S999", 0));
}

TEST_CASE("document check: the cache gives what a check from scratch gives") {
    shardscope::semantics::CheckCache cache;
    const std::string text = "mesh 2\ndim a=4\ny_{a = x_{a}\nhidden_{a} = x_{a_0}\n"
                             "q_{a} = hiden_{a}\n";
    const auto plain = shardscope::frontend::check_text("d.ein", text);
    for (int k = 0; k < 2; ++k)
        CHECK(shardscope::frontend::check_text("d.ein", text, {}, &cache).plan == plain.plan);
}

TEST_CASE("documents: where each math environment opens") {
    const auto doc = extract_notation("m.md", "# T\n$$ y = x $$\n  \\begin{align*}\ny = x\n"
                                              "\\end{align*} and é $$z$$\n");
    REQUIRE(doc.math.size() == 3u);
    CHECK(doc.math[0].line == 2u);
    CHECK(doc.math[0].column == 1u);
    CHECK(doc.math[0].opening == "$$");
    CHECK(doc.math[1].line == 3u);
    CHECK(doc.math[1].column == 3u);
    CHECK(doc.math[1].opening == "\\begin{align*}");
    CHECK(doc.math[2].line == 5u);
    CHECK(doc.math[2].column == 20u); // code points: é is one
    CHECK(doc.math_regions == 3);
}

// Open shardings (`f_?`): the front door resolves them before the check; the tree as written
// stays for the strategy search; check_program does the same for a tree parsed elsewhere.
#include "parser/open.hpp"
#include "semantics/search.hpp"

TEST_CASE("check_source resolves open shardings and keeps the tree as written") {
    const std::string text = "mesh dp=2 tp=4\ndim b=8 s=256 d=1024 f=4096\n"
                             "h_{b_{dp} s f_?} = W^0_{f_{tp?} d} x_{b_{dp} s d}\n"
                             "z_{b_{dp} s d} = W^1_{d f_{tp?}} phi(h_{b_{dp} s f_?})\n";
    const auto c = shardscope::frontend::check_text("o.ein", text);
    REQUIRE(c.checked);
    CHECK(c.plan.errors() == 0);
    CHECK_FALSE(shardscope::ast::has_open(c.parsed.program));
    REQUIRE(c.open_program.has_value());
    CHECK(shardscope::ast::has_open(c.written()));
    bool note = false;
    for (const auto& d : c.plan.diagnostics)
        note = note || (d.code == "S402" && d.range.line == 3);
    CHECK(note);
    // The search reads the markers from written(), not the resolved tree.
    shardscope::semantics::SearchOptions so;
    so.devices = 8;
    so.threads = 1;
    CHECK(shardscope::semantics::search(c.written(), so).open_dimensions.size() == 3);
    CHECK(shardscope::semantics::search(c.parsed.program, so).open_dimensions.empty());
    // check_program: the same resolution in place, the note in the plan.
    auto program = c.written();
    const auto plan = shardscope::frontend::check_program(program, {});
    CHECK_FALSE(shardscope::ast::has_open(program));
    CHECK(program == c.parsed.program);
    CHECK(plan.errors() == 0);
    // Without markers nothing changes.
    const auto plain = shardscope::frontend::check_text("p.ein", "mesh 2\ny_{b_0} = x_{b_0}\n");
    CHECK_FALSE(plain.open_program.has_value());
}
