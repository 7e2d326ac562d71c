// The REPL's session model (app/repl_session.hpp) without a terminal: answers, carets under
// the typed column, rejected lines, continuation, undo, strict, save/load, viz, exec.
#include "repl_session.hpp"

#include "frontend/document.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

using namespace shardscope;
using app::Answer;
using app::Session;

namespace {

bool has(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

/// Evaluates every line, REQUIREs that none is rejected, returns the last answer.
Answer feed(Session& s, const std::vector<std::string>& lines) {
    Answer a;
    for (const auto& l : lines) {
        a = s.eval(l);
        REQUIRE_MESSAGE(!a.error, l << "\n" << a.text);
    }
    return a;
}

/// A temporary directory, removed at the end of the test.
struct TempDir {
    std::filesystem::path path;
    TempDir() {
        char tmpl[] = "/tmp/shardscope-repl-XXXXXX";
        path = mkdtemp(tmpl);
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
    std::string operator/(const std::string& name) const { return (path / name).string(); }
};

std::string read(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

/// The session text parses and checks with no error (what `check` would say).
int check_errors(const std::string& text) {
    const auto checked = frontend::check_text("saved.ein", text);
    if (!checked.syntax_ok()) return 1000;
    return checked.plan.errors();
}

} // namespace

TEST_CASE("a statement: Unicode, placements of every tensor, collectives with bytes and time") {
    Session s;
    feed(s, {"mesh 2x2", "dim a=4 b=4 k=4"});
    const auto a = s.eval("Z_{a b} = W_{a_0 k_1} X_{k_1 b}");
    INFO(a.text);
    CHECK_FALSE(a.error);
    CHECK(has(a.text, "repl:3: Z_{ab} = W_{a₀ k₁} X_{k₁ b}"));
    CHECK(has(a.text, "operand  W          [a_0 k_1]        (S(0), S(1))  local 2×2 of 4×4"));
    CHECK(has(a.text, "result   Z          [a b]            (R, R)"));
    // The partial sum is reduced before it is gathered: the all-reduce moves half the data.
    // Times are latency, NCCL's LL protocol on h100's NVLink: 6.6 us per collective and
    // 0.6 per ring step, 2 steps for the all-reduce and 1 for the all-gather.
    CHECK(has(a.text, "all-reduce(1)      %1           7.8 us  32 B/device"));
    CHECK(has(a.text, "collectives: all-reduce(1), all-gather(0)   time 15 us, 64 B sent/device"));
    CHECK(s.plan().statements.size() == 1);
    SUBCASE("declarations answer with their canonical form") {
        Session t;
        CHECK(t.eval("mesh dp=2 tp=4").text == "mesh dp=2 tp=4  (a mesh of 8 devices)\n");
        CHECK(t.eval("dim   b=8").text == "dim b=8\n");
        CHECK(t.eval("   ").text.empty());
        CHECK(t.eval("# a comment").text.empty());
        CHECK(t.text() == "mesh dp=2 tp=4\ndim   b=8\n# a comment\n");
    }
}

TEST_CASE("an error: a caret under the column of the typed line, and the line is not added") {
    Session s;
    feed(s, {"mesh 2x2", "dim a=4 b=4 k=4"});
    const std::string line = "Z_{a b} = W_{a_0 k_7} X_{k b}";
    const auto a = s.eval(line);
    INFO(a.text);
    CHECK(a.error);
    CHECK(has(a.text, "repl:3:20: error: unknown mesh axis '7' [S102]"));
    // The source line, then the caret under `7` (column 20).
    const auto at = a.text.find("    " + line + "\n");
    REQUIRE(at != std::string::npos);
    const auto caret_line = a.text.substr(at + 4 + line.size() + 1, 4 + 20);
    CHECK(caret_line == std::string(4 + 19, ' ') + "^");
    CHECK(has(a.text, "not added to the session"));
    CHECK(s.text() == "mesh 2x2\ndim a=4 b=4 k=4\n");
    SUBCASE("a syntax error too, and the session goes on") {
        const auto p = s.eval("y_{a = x_{a}");
        CHECK(p.error);
        CHECK(has(p.text, "repl:3:"));
        CHECK_FALSE(has(p.text, "S999"));
        CHECK_FALSE(s.eval("y_{a} = x_{a_0}").error);
        CHECK(s.plan().statements.size() == 1);
    }
    SUBCASE("did you mean: misspelt functions (P108) and tensors (S132), as check says") {
        feed(s, {"hidden_{a b} = X_{a k} W_{k b}"});
        const auto t = s.eval("y_{a b} = hiden_{a b}");
        INFO(t.text);
        CHECK_FALSE(t.error);
        CHECK(has(t.text, "note: hiden is read but no statement defines it"));
        CHECK(has(t.text, "did you mean hidden"));
        CHECK(has(t.text, "[S132]"));
        const auto f = s.eval("q_{a b} = gelux(hidden_{a b})");
        INFO(f.text);
        CHECK(f.error);
        CHECK(has(f.text, "[P108]"));
        CHECK(has(f.text, "gelu"));
    }
    SUBCASE("earlier lines' diagnostics are not repeated") {
        const auto w = s.eval("dim n=7");
        CHECK_FALSE(w.error);
        const auto u = s.eval("u_{n_0} = v_{n_0}"); // uneven over 2: a warning
        CHECK_FALSE(u.error);
        CHECK(has(u.text, "warning"));
        const auto next = s.eval("q_{a} = r_{a}");
        CHECK_FALSE(has(next.text, "warning"));
    }
}

TEST_CASE("continuation lines: a trailing backslash goes on") {
    CHECK(Session::continues("y_{a} = \\"));
    CHECK_FALSE(Session::continues("y_{a} = x_{a}"));
    CHECK_FALSE(Session::continues("y_{a} = x_{a} \\\\"));      // LaTeX line break
    CHECK_FALSE(Session::continues("y_{a} = x_{a} # note \\")); // in a comment
    Session s;
    feed(s, {"mesh 4"});
    const auto a = s.eval("y_{a_0} = \\\n   x_{a_0}");
    CHECK_FALSE(a.error);
    CHECK(has(a.text, "repl:2: y_{a₀} = x_{a₀}"));
    CHECK(s.text() == "mesh 4\ny_{a_0} = \\\n   x_{a_0}\n");
    CHECK(has(s.eval("z_{a} = w_{a_0}").text, "repl:4:"));
}

TEST_CASE(":undo takes back statements, loads, :strict and :reset") {
    Session s;
    feed(s, {"mesh 4", "y_{a} = x_{a_0}", "z_{a_0} = y_{a}"});
    CHECK(s.eval(":undo").text == "took back: z_{a_0} = y_{a}\n");
    CHECK(s.text() == "mesh 4\ny_{a} = x_{a_0}\n");
    CHECK(s.eval(":reset").text == "the session is empty (:undo brings it back)\n");
    CHECK(s.text().empty());
    CHECK(s.tensor_names().empty());
    CHECK_FALSE(s.eval(":undo").error);
    CHECK(s.text() == "mesh 4\ny_{a} = x_{a_0}\n");
    CHECK(s.tensor_names() == std::vector<std::string>{"x", "y"});
    s.eval(":undo");
    s.eval(":undo");
    CHECK(s.eval(":undo").text == "nothing to undo\n");
}

TEST_CASE(":strict on: implicit redistributions become errors; new lines are held to it") {
    Session s;
    feed(s, {"mesh 4", "dim i=8 j=8 k=8", "z_{ik} = x_{i_0 j} y_{j_0 k}"});
    const auto on = s.eval(":strict on");
    INFO(on.text);
    CHECK(s.strict());
    CHECK(has(on.text, "strict on"));
    CHECK(has(on.text, "repl:3:"));
    CHECK(has(on.text, "1 error under strict"));
    CHECK(s.eval("w_{ik} = x_{i_0 j} y_{j_0 k}").error);
    CHECK(s.eval(":strict").text == "strict is on (:strict on|off)\n");
    CHECK(s.eval(":undo").text == "strict back off\n");
    CHECK_FALSE(s.strict());
    CHECK_FALSE(s.eval("w_{ik} = x_{i_0 j} y_{j_0 k}").error);
    CHECK(s.eval(":strict maybe").error);
}

TEST_CASE(":save writes a file that check accepts; :load reads it back") {
    TempDir dir;
    Session s;
    feed(s, {"mesh 2x2", "dim a=4 b=4 k=4", "# the product", "Z_{a b} = W_{a_0 k_1} \\\n X_{k_1 b}",
             "expect all-reduce(1), all-gather(0)"});
    const auto path = dir / "session.ein";
    const auto a = s.eval(":save " + path);
    CHECK(a.text == "saved 6 lines to " + path + "\n");
    CHECK(read(path) == s.text());
    CHECK(check_errors(read(path)) == 0);
    // No temporary file is left next to it.
    CHECK(std::distance(std::filesystem::directory_iterator(dir.path),
                        std::filesystem::directory_iterator{}) == 1);
    CHECK(s.eval(":save " + (dir / "missing/x.ein")).error);
    CHECK(s.eval(":save").error);

    Session t;
    const auto l = t.eval(":load " + path);
    CHECK_FALSE(l.error);
    CHECK(l.text == "loaded " + path + ": 1 statement (:plan shows them)\n");
    CHECK(t.text() == s.text());
    CHECK(t.eval(":load " + path).error); // a second mesh
    CHECK(t.eval(":undo").text == "unloaded " + path + "\n");
    CHECK(t.text().empty());
    SUBCASE("errors in a loaded file name the file and its own lines") {
        const auto bad = dir / "bad.ein";
        std::ofstream(bad) << "mesh 4\ny_{a} = x_{a_9}\n";
        Session u;
        feed(u, {"# a line before"});
        const auto e = u.eval(":load " + bad);
        CHECK(e.error);
        CHECK(has(e.text, bad + ":2:"));
        CHECK(has(e.text, "not loaded"));
        CHECK(u.eval(":load " + (dir / "none.ein")).error);
    }
    SUBCASE("a loaded file with a syntax error: the statements that parse are checked too") {
        // As `shardscope check` does (frontend/document.cpp's check_source, one path for both).
        const auto bad = dir / "mixed.ein";
        std::ofstream(bad) << "mesh 4\ny_{a = x_{a}\nz_{a} = w_{a_9}\n";
        Session u;
        const auto e = u.eval(":load " + bad);
        INFO(e.text);
        CHECK(e.error);
        CHECK(has(e.text, bad + ":2:"));
        CHECK(has(e.text, bad + ":3:14: error: unknown mesh axis '9' [S102]"));
        CHECK(has(e.text, "not loaded"));
        CHECK(u.text().empty());
        // A declaration with a syntax error stops the checker, as in check.
        const auto decl = dir / "decl.ein";
        std::ofstream(decl) << "mesh 4 x\nz_{a} = w_{a_9}\n";
        const auto d = u.eval(":load " + decl);
        CHECK(d.error);
        CHECK_FALSE(has(d.text, "S102"));
    }
    SUBCASE("a directory, a missing file and a file that is not UTF-8 say which") {
        Session u;
        const auto d = u.eval(":load " + dir.path.string());
        CHECK(d.error);
        CHECK(d.text == "'" + dir.path.string() + "' is a directory\n");
        CHECK(u.eval(":load " + (dir / "none.ein")).text ==
              "no such file: '" + (dir / "none.ein") + "'\n");
        const auto latin = dir / "latin1.ein";
        std::ofstream(latin) << "mesh 2\nz_{i} = x_{k} \xff y\n";
        const auto l = u.eval(":load " + latin);
        CHECK(l.error);
        CHECK(l.text == latin + ":2:15: error: the file is not valid UTF-8 (byte 0xFF)\n");
    }
}

TEST_CASE(":tensors, :show, :mesh, :dims, :plan") {
    Session s;
    feed(s, {"mesh dp=2 tp=2 devices [3 2 1 0]", "dim b=8 d=4 f=6", "split b -> r c",
             "h_{b d_{tp}} = x_{b d} w_{d_{tp}}", "y_{b f} = h_{b d_{tp}} v_{d_{tp} f}"});
    const auto t = s.eval(":tensors").text;
    CHECK(has(t, "input    x          [b d]"));
    CHECK(has(t, "result   h          [b d_tp]         (R, S(1))  local 8×2 of 8×4  line 4"));
    CHECK(has(t, "result   y          [b f]"));
    const auto show = s.eval(":show h").text;
    CHECK(has(show, "repl:4:"));
    CHECK(has(show, "repl:5:"));
    CHECK(has(show, "d: 4, over mesh axis tp in 2 chunks of at most 2"));
    CHECK(s.eval(":show nope").error);
    CHECK(s.eval(":mesh").text ==
          "mesh 2x2: 4 devices\n  axis 0: dp, size 2\n  axis 1: tp, size 2\n"
          "  devices, row-major over the axes: 3 2 1 0\n");
    const auto dims = s.eval(":dims").text;
    CHECK(has(dims, "declared:\n  b = 8\n  d = 4\n  f = 6\n"));
    CHECK(has(dims, "split:\n  b -> r c\n"));
    CHECK(has(s.eval(":plan").text, "repl:5:"));
    CHECK(has(s.eval(":plan 5").text, "repl:5:"));
    CHECK_FALSE(has(s.eval(":plan 5").text, "repl:4:"));
    const auto none = s.eval(":plan 2");
    CHECK(none.error);
    CHECK(none.text == "no statement at line 2; statements are at lines 4, 5\n");
    CHECK(s.eval(":plan x").error);
    CHECK(s.eval(":mesh extra").error);
    Session empty;
    CHECK(has(empty.eval(":mesh").text, "no mesh declared"));
    CHECK(has(empty.eval(":tensors").text, "no tensors yet"));
}

TEST_CASE(":viz draws the tiling; dimensions by number or index name") {
    Session s({false, 80});
    feed(s, {"mesh 2x2x2", "dim i=8 j=8 k=2", "y_{i_0 j_{12} k} = x_{i_0 j_{12} k}",
             "s{U_0} = a_{i_0} b_{i_0}"});
    const auto by_name = s.eval(":viz y i j").text;
    CHECK(by_name == s.eval(":viz y 0 1").text);
    CHECK(has(by_name, "rows: i_0 (8, 2 tiles)"));
    CHECK(has(by_name, "not drawn: k (2, whole)"));
    // i is sharded but not drawn: one grid per slice of it, so no box lists devices 0 and 4
    // (which hold different halves of i) together.
    CHECK(has(s.eval(":viz y").text, "slice 2 of 2: i[4:8]"));
    CHECK_FALSE(has(s.eval(":viz y").text, "0,4"));
    CHECK(has(s.eval(":viz s").text, "│ 0-7 Σ │"));
    CHECK(s.eval(":viz y i i").error);
    CHECK(s.eval(":viz y 0 5").error);
    CHECK(s.eval(":viz s 0 1").error);
    CHECK(s.eval(":viz").error);
    CHECK(s.eval(":viz nope").error);
    Session c({true, 80});
    feed(c, {"mesh 2", "y_{a_0} = x_{a_0}"});
    CHECK(has(c.eval(":viz y").text, "\033[30;48;5;"));
}

TEST_CASE(":exec runs the session on sim; --backend mpi is refused with the way to run it") {
    Session s;
    CHECK(s.eval(":exec").error); // nothing to run
    feed(s, {"mesh 2x2", "dim a=4 b=4 k=4", "Z_{a b} = W_{a_0 k_1} X_{k_1 b}"});
    const auto a = s.eval(":exec --data ints");
    INFO(a.text);
    CHECK_FALSE(a.error);
    CHECK(has(a.text, "1 of 1 statements verified"));
    const auto m = s.eval(":exec --backend mpi");
    CHECK(m.error);
    CHECK(has(m.text, "mpirun -np N shardscope exec --backend mpi FILE"));
    CHECK(s.eval(":exec --bogus").error);
    CHECK(has(s.eval(":exec --help").text, "--data"));
}

TEST_CASE(":grad derives the backward statements with their collectives") {
    Session s;
    CHECK(s.eval(":grad").error); // nothing yet
    feed(s, {"mesh 4", "dim s=8 b=2 i=16 o=32", "y_{s b o_0} = x_{s b i} w_{i o_0}"});
    const auto a = s.eval(":grad");
    INFO(a.text);
    CHECK_FALSE(a.error);
    // The worked example: gx sums over the sharded o (an all-reduce), gw needs nothing.
    CHECK(has(a.text, "gx_{sbi} = gy_{s b o_0} w_{i o_0}"));
    CHECK(has(a.text, "expect all-reduce(0)"));
    CHECK(has(a.text, "gw_{i o_0} = x_{sbi} gy_{s b o_0}"));
    CHECK(has(a.text, "derived statements"));
    const auto w = s.eval(":grad w");
    CHECK_FALSE(w.error);
    CHECK_FALSE(has(w.text, "gx_"));
    CHECK(s.eval(":grad nosuch").error);
    // Nothing was added to the session.
    CHECK(s.text().find("gw") == std::string::npos);
}

TEST_CASE(":export prints or writes torch, jax and LaTeX; bad targets are refused") {
    Session s;
    CHECK(s.eval(":export latex").error); // nothing yet
    feed(s, {"mesh 2", "dim a=4 k=4 b=4", "Z_{a b} = W_{a k_0} X_{k_0 b}"});
    const auto latex = s.eval(":export latex");
    INFO(latex.text);
    CHECK_FALSE(latex.error);
    CHECK(has(latex.text, "\\textrm{"));
    CHECK(has(s.eval(":export jax").text, "NamedSharding"));
    CHECK(has(s.eval(":export torch").text, "distribute_tensor"));
    CHECK(s.eval(":export").error);
    CHECK(s.eval(":export cobol").error);
    TempDir dir;
    const auto w = s.eval(":export jax " + (dir / "z.py"));
    CHECK_FALSE(w.error);
    CHECK(has(read(dir / "z.py"), "jax.jit"));
    CHECK(s.eval(":export jax " + (dir / "no/such/dir/z.py")).error);
}

TEST_CASE("commands: unknown ones, usage errors, :quit, :help") {
    Session s;
    CHECK(s.eval(":nope").error);
    CHECK(has(s.eval(":nope").text, ":help lists the commands"));
    CHECK(s.eval(":quit").quit);
    CHECK(s.eval(":q").quit);
    const auto h = s.eval(":help").text;
    for (const auto& c : Session::commands())
        CHECK_MESSAGE(has(h, "  " + c), c);
}

TEST_CASE("completion lists: tensors without intermediates, indices, axes") {
    Session s;
    feed(s, {"mesh dp=2 tp=2", "dim b=8 d=4 batch=2", "split b -> r c",
             "y_{b d} = x_{b_{dp} d} + z_{b d}"});
    CHECK(s.tensor_names() == std::vector<std::string>{"x", "z", "y"});
    const auto idx = s.index_names();
    for (const char* i : {"b", "d", "r", "c", "batch"})
        CHECK_MESSAGE(std::find(idx.begin(), idx.end(), i) != idx.end(), std::string(i));
    CHECK(s.axis_names() == std::vector<std::string>{"dp", "tp"});
}
