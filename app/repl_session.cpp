#include "repl_session.hpp"
#include "frontend/document.hpp"
#include "frontend/gradients.hpp"

#include "exec_cli.hpp"
#include "inputs.hpp"

#include "codegen/export.hpp"
#include "parser/parser.hpp"
#include "parser/printer.hpp"
#include "parser/splitter.hpp"
#include "render/text_tiles.hpp"
#include "render/tiles.hpp"
#include "semantics/checker.hpp"
#include "semantics/grad.hpp"
#include "semantics/report.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <sstream>

namespace shardscope::app {

using semantics::TensorLayout;

namespace {

/// The name diagnostics and plans give the session (the file `:save` writes has the same
/// lines).
constexpr const char* kName = "repl";

std::string trim(const std::string& s) {
    const auto b = s.find_first_not_of(" \t\r\n");
    if (b == std::string::npos) return "";
    const auto e = s.find_last_not_of(" \t\r\n");
    return s.substr(b, e - b + 1);
}

std::vector<std::string> words(const std::string& s) {
    std::istringstream in(s);
    std::vector<std::string> out;
    for (std::string w; in >> w;)
        out.push_back(w);
    return out;
}

std::string first_line(const std::string& s) {
    const auto t = trim(s);
    const auto nl = t.find('\n');
    return nl == std::string::npos ? t : t.substr(0, nl) + " ...";
}

/// A diagnostic's identity, to tell the new ones of a candidate text from those the session
/// already had (earlier entries keep their offsets when text is appended).
std::string key(const Diagnostic& d) {
    return d.code + ":" + std::to_string(d.range.offset) + ":" + d.message;
}

/// Every layout of the plan, in plan order (operands, then results, then the data flow's).
template <class F>
void for_each_layout(const semantics::Plan& plan, F&& f) {
    for (const auto& s : plan.statements) {
        for (const auto& o : s.operands)
            f(o, s, false);
        f(s.result, s, true);
    }
}

std::string plural(std::size_t n, const char* one, const char* many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
}

constexpr const char* kIntro =
    R"(Type notation to add it to the session: a statement (y_{b s_0 f} = x_{b s_0 d} W_{d f}),
or a declaration (mesh 2x4, dim d=1024, split b -> r c, fn act elementwise), or expect ...
for the statement before. Each line is checked with everything typed so far: you see it in
Unicode, the placements of every tensor, the collectives with bytes and time, and errors with
a caret under the column. A line with errors is not added. A line ending in \ goes on.
)";

} // namespace

Session::Session(SessionOptions options) : options_(options) {
    auto c = check_text("", false);
    plan_ = std::move(c.plan);
}

bool Session::continues(const std::string& line) {
    if (line.empty() || line.back() != '\\') return false;
    const std::string text = line + "\n";
    for (const auto& p : parser::split_statements(text))
        if (p.kind == parser::Piece::Kind::LineEnd && p.begin == line.size()) return false;
    return true;
}

std::string Session::text() const {
    std::string out;
    for (const auto& e : entries_)
        out += e.text;
    return out;
}

Session::Checked Session::check_text(const std::string& text, bool strict) const {
    // As `shardscope check` and the GUI check (app/document.cpp): statements that parse are
    // checked even where another has a syntax error, with the same "did you mean" notes.
    semantics::CheckOptions co;
    co.strict = strict;
    auto checked = frontend::check_text(std::string(kName), text, co, &cache_);
    Checked c;
    c.text = text;
    c.parsed = checked.syntax_ok();
    c.plan = std::move(checked.plan);
    // The entry with the syntax error is refused as a whole ("not added"): check's note that
    // the statements with syntax errors were not checked would only repeat that.
    std::erase_if(c.plan.diagnostics, [](const Diagnostic& d) { return d.code == "S999"; });
    c.program = std::move(checked.parsed.program);
    return c;
}

std::string Session::diagnostic_text(const std::string& text, const std::vector<Entry>& entries,
                                     const Diagnostic& d) const {
    if (d.range.line == 0)
        return std::string(severity_name(d.severity)) + ": " + d.message + " [" + d.code + "]\n";
    // The entry holding it: loaded files show their own name and lines.
    std::size_t begin = 0;
    std::uint32_t line = 1;
    for (const auto& e : entries) {
        const std::size_t end = begin + e.text.size();
        if (d.range.offset < end) {
            if (e.origin.empty()) break;
            Diagnostic shifted = d;
            shifted.range.offset -= static_cast<std::uint32_t>(begin);
            shifted.range.line -= line - 1;
            shifted.range.end_line -= line - 1;
            return format_diagnostic(SourceFile(e.origin, e.text), shifted, options_.color);
        }
        begin = end;
        line += static_cast<std::uint32_t>(std::count(e.text.begin(), e.text.end(), '\n'));
    }
    return format_diagnostic(SourceFile(kName, text), d, options_.color);
}

void Session::commit(State s, Checked checked, bool undoable) {
    if (undoable) undo_.push_back({entries_, strict_});
    entries_ = std::move(s.entries);
    strict_ = s.strict;
    plan_ = std::move(checked.plan);
    program_ = std::move(checked.program);
}

Answer Session::eval(const std::string& input) {
    const auto t = trim(input);
    if (t.empty()) return {};
    if (t[0] == ':') return command(t);
    std::string text = input;
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r'))
        text.pop_back();
    return add({text + "\n", ""});
}

Answer Session::add(Entry entry) {
    State next{entries_, strict_};
    const std::size_t begin = text().size();
    const bool loaded = !entry.origin.empty();
    const std::string origin = entry.origin;
    next.entries.push_back(std::move(entry));
    std::string candidate;
    for (const auto& e : next.entries)
        candidate += e.text;
    auto checked = check_text(candidate, strict_);

    std::set<std::string> old;
    for (const auto& d : plan_.diagnostics)
        old.insert(key(d));
    std::vector<Diagnostic> fresh;
    bool errors = false;
    for (const auto& d : checked.plan.diagnostics) {
        if (old.count(key(d))) continue;
        fresh.push_back(d);
        errors |= d.severity == Severity::Error;
    }
    Answer a;
    std::string diags;
    for (const auto& d : fresh)
        diags += diagnostic_text(candidate, next.entries, d);
    if (errors) {
        a.error = true;
        a.text = diags + (loaded ? "not loaded: " + origin + " adds errors to the session\n"
                                 : "not added to the session\n");
        return a;
    }
    // The statements the entry adds.
    semantics::Plan added = checked.plan;
    added.diagnostics.clear();
    added.statements.clear();
    for (const auto& s : checked.plan.statements)
        if (s.range.offset >= begin) added.statements.push_back(s);
    if (loaded) {
        std::set<std::string> tensors;
        for (const auto& s : added.statements)
            if (!s.target.empty()) tensors.insert(s.target);
        a.text = "loaded " + origin + ": " +
                 plural(added.statements.size(), "statement", "statements") +
                 " (:plan shows them)\n";
    } else if (!added.statements.empty()) {
        a.text = semantics::format_plan(added, kName, options_.color);
        if (!a.text.empty() && a.text.back() == '\n' && a.text.size() > 1 &&
            a.text[a.text.size() - 2] == '\n')
            a.text.pop_back(); // format_plan ends each statement with a blank line
    } else {
        // A declaration or an expectation: its canonical form says it was understood.
        for (const auto& item : checked.program.items)
            if (const auto* s = std::get_if<ast::Statement>(&item); s && s->range.offset >= begin) {
                a.text += parser::print(*s, {true});
                if (const auto* m = std::get_if<ast::MeshDecl>(&s->node)) {
                    std::int64_t n = 1;
                    for (const auto& ax : m->axes)
                        n *= ax.size;
                    a.text += "  (a mesh of " +
                              plural(static_cast<std::size_t>(n), "device", "devices") + ")";
                } else if (std::holds_alternative<ast::Expect>(s->node)) {
                    a.text += "  (holds)";
                }
                a.text += "\n";
            }
    }
    a.text += diags;
    commit(std::move(next), std::move(checked));
    return a;
}

Answer Session::load(const std::string& path) {
    std::string text;
    if (const auto why = read_whole_file(path, text); !why.empty()) return {why + "\n", true};
    if (const auto why = utf8_problem(path, text); !why.empty()) return {why + "\n", true};
    if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.erase(0, 3);
    if (trim(text).empty()) return {"'" + path + "' is empty: nothing loaded\n", false};
    if (text.back() != '\n') text += "\n";
    return add({std::move(text), path});
}

const TensorLayout* Session::layout_of(const std::string& name) const {
    const TensorLayout* found = nullptr;
    for_each_layout(plan_, [&](const TensorLayout& t, const auto&, bool) {
        if (t.tensor == name) found = &t;
    });
    return found;
}

std::vector<std::string> Session::tensor_names() const {
    std::vector<std::string> out;
    for_each_layout(plan_, [&](const TensorLayout& t, const auto&, bool) {
        if (!t.tensor.empty() && t.tensor[0] != '%' &&
            std::find(out.begin(), out.end(), t.tensor) == out.end())
            out.push_back(t.tensor);
    });
    return out;
}

std::vector<std::string> Session::index_names() const {
    std::set<std::string> out;
    for_each_layout(plan_, [&](const TensorLayout& t, const auto&, bool) {
        for (const auto& a : t.atoms)
            out.insert(a.index.text());
    });
    for (const auto& item : program_.items)
        if (const auto* s = std::get_if<ast::Statement>(&item)) {
            if (const auto* d = std::get_if<ast::DimDecl>(&s->node))
                for (const auto& b : d->bindings)
                    out.insert(semantics::IndexId{b.index.name, b.index.primes}.text());
            if (const auto* sp = std::get_if<ast::SplitDecl>(&s->node))
                for (const auto& p : sp->parts)
                    out.insert(semantics::IndexId{p.name, p.primes}.text());
        }
    return {out.begin(), out.end()};
}

std::vector<std::string> Session::axis_names() const {
    std::vector<std::string> out;
    for (const auto& a : plan_.mesh.axes)
        out.push_back(a.name);
    return out;
}

// ---- commands ------------------------------------------------------------------------------

/// One REPL command: what `:help` says of it, how many arguments it takes, and what runs it.
/// The help text, the completion list and the dispatch all come from this one table.
struct Session::Command {
    enum class Args {
        None,      ///< no arguments
        One,       ///< exactly one word
        AtMostOne, ///< zero or one word
        Text,      ///< the rest of the line, possibly empty, for the command to parse
        Required,  ///< the rest of the line, not empty (a file name may hold spaces)
    };
    std::vector<std::string> names; ///< the name, then its aliases
    std::string usage;              ///< ":show NAME"
    std::string summary;            ///< what it does; lines after the first are continuations
    Args args = Args::None;
    std::function<Answer(Session&, const std::string& rest, const std::vector<std::string>&)> run;
};

const std::vector<Session::Command>& Session::command_table() {
    using A = Command::Args;
    using Words = std::vector<std::string>;
    static const std::vector<Command> table = {
        {{":help", ":h", ":?"},
         ":help",
         "this text",
         A::Text,
         [](Session& s, const std::string&, const Words&) { return s.help(); }},
        {{":mesh"},
         ":mesh",
         "the mesh: axes, sizes, device order",
         A::None,
         [](Session& s, const std::string&, const Words&) { return s.show_mesh(); }},
        {{":dims"},
         ":dims",
         "index ranges: declared, split, inferred",
         A::None,
         [](Session& s, const std::string&, const Words&) { return s.show_dims(); }},
        {{":tensors"},
         ":tensors",
         "every tensor as the session leaves it (placements, local and global shape)",
         A::None,
         [](Session& s, const std::string&, const Words&) { return s.show_tensors(); }},
        {{":show"},
         ":show NAME",
         "one tensor: where it appears, its layout, its storage",
         A::One,
         [](Session& s, const std::string&, const Words& w) { return s.show(w[0]); }},
        {{":plan"},
         ":plan [LINE]",
         "the plans of every statement, or of the one at LINE (as in repl:LINE)",
         A::AtMostOne,
         [](Session& s, const std::string&, const Words& w) {
             return s.show_plan(w.empty() ? "" : w[0]);
         }},
        {{":viz"},
         ":viz NAME [R C]",
         "which device holds which tile of NAME; R C: the dimensions to draw\n"
         "(numbers from 0, or index names; default the last two)",
         A::Text,
         [](Session& s, const std::string&, const Words& w) { return s.viz(w); }},
        {{":exec"},
         ":exec [OPTIONS]",
         "run the session on simulated ranks and verify it (--data, --seed,\n"
         "--dtype, --show NAME, --small; :exec --help lists them)",
         A::Text,
         [](Session& s, const std::string& rest, const Words&) { return s.exec(rest); }},
        {{":grad"},
         ":grad [NAME...]",
         "the backward statements (gX is the gradient of X) with their checked\n"
         "collectives; default: with respect to every program input",
         A::Text,
         [](Session& s, const std::string&, const Words& w) { return s.grad(w); }},
        {{":export"},
         ":export torch|jax|latex [FILE]",
         "the session as a DTensor script, a JAX script or LaTeX (to FILE)",
         A::Text,
         [](Session& s, const std::string&, const Words& w) { return s.export_to(w); }},
        {{":strict"},
         ":strict on|off",
         "every implicit redistribution or chosen fix is an error",
         A::Text,
         [](Session& s, const std::string& rest, const Words&) { return s.set_strict(rest); }},
        {{":load"},
         ":load FILE",
         "add a notation file's statements",
         A::Required,
         [](Session& s, const std::string& rest, const Words&) { return s.load(rest); }},
        {{":save"},
         ":save FILE",
         "write the session as a notation file (check accepts it)",
         A::Required,
         [](Session& s, const std::string& rest, const Words&) { return s.save(rest); }},
        {{":undo"},
         ":undo",
         "take back the last change (a statement, a load, :strict, :reset)",
         A::None,
         [](Session& s, const std::string&, const Words&) { return s.undo(); }},
        {{":reset"},
         ":reset",
         "start again from an empty session",
         A::None,
         [](Session& s, const std::string&, const Words&) { return s.reset(); }},
        {{":quit", ":q", ":exit"},
         ":quit",
         "leave (Ctrl-D too); Ctrl-C cancels the line being typed",
         A::Text,
         [](Session&, const std::string&, const Words&) {
             Answer a;
             a.quit = true;
             return a;
         }},
    };
    return table;
}

const std::vector<std::string>& Session::commands() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> out;
        for (const auto& c : command_table())
            out.push_back(c.names.front());
        return out;
    }();
    return names;
}

Answer Session::command(const std::string& line) {
    using A = Command::Args;
    const auto sp = line.find_first_of(" \t");
    const std::string name = line.substr(0, sp);
    const std::string rest = sp == std::string::npos ? "" : trim(line.substr(sp));
    const auto args = words(rest);
    for (const auto& c : command_table()) {
        if (std::find(c.names.begin(), c.names.end(), name) == c.names.end()) continue;
        const bool ok = (c.args == A::None && args.empty()) ||
                        (c.args == A::One && args.size() == 1) ||
                        (c.args == A::AtMostOne && args.size() <= 1) || c.args == A::Text ||
                        (c.args == A::Required && !rest.empty());
        if (!ok) {
            if (c.args == A::None) return {name + " takes no arguments\n", true};
            return {"usage: " + c.usage +
                        (c.names.front() == ":show" ? " (:tensors lists them)" : "") + "\n",
                    true};
        }
        return c.run(*this, rest, args);
    }
    return {"unknown command " + name + " (:help lists the commands)\n", true};
}

Answer Session::help() const {
    // Usage in a column of 20, the summary after it (or on the next line when the usage is
    // longer), continuation lines under the summary.
    constexpr std::size_t kColumn = 20;
    std::string out = std::string(kIntro) + "\n";
    for (const auto& c : command_table()) {
        std::string line = "  " + c.usage;
        if (c.usage.size() < kColumn - 1)
            line += std::string(kColumn - c.usage.size(), ' ');
        else
            line += "\n" + std::string(kColumn + 2, ' ');
        std::string summary = c.summary;
        for (std::size_t p = 0; (p = summary.find('\n', p)) != std::string::npos; p += kColumn + 3)
            summary.insert(p + 1, std::string(kColumn + 2, ' '));
        out += line + summary + "\n";
    }
    return {out, false};
}

Answer Session::show_mesh() const {
    const auto& m = plan_.mesh;
    if (m.axes.empty())
        return {"no mesh declared: one device (declare one: mesh 2x4, or mesh dp=2 tp=4)\n"};
    std::string sizes;
    for (const auto& a : m.axes)
        sizes += (sizes.empty() ? "" : "x") + std::to_string(a.size);
    std::string out = "mesh " + sizes + ": " +
                      plural(static_cast<std::size_t>(m.device_count()), "device", "devices") +
                      "\n";
    for (std::size_t k = 0; k < m.axes.size(); ++k)
        out += "  axis " + std::to_string(k) + ": " +
               (m.axes[k].name == std::to_string(k) ? "" : m.axes[k].name + ", ") + "size " +
               std::to_string(m.axes[k].size) + "\n";
    std::string devices;
    const std::int64_t n = m.device_count();
    for (std::int64_t p = 0; p < n && p < 64; ++p)
        devices += (devices.empty() ? "" : " ") +
                   std::to_string(m.devices.empty() ? p : m.devices[static_cast<std::size_t>(p)]);
    if (n > 64) devices += " ...";
    out += "  devices, row-major over the axes: " + devices +
           (m.devices.empty() ? " (in order)" : "") + "\n";
    return {out};
}

Answer Session::show_dims() const {
    std::map<std::string, std::int64_t> ranges; // from every layout
    for_each_layout(plan_, [&](const TensorLayout& t, const auto&, bool) {
        for (const auto& a : t.atoms)
            ranges.emplace(a.index.text(), a.extent);
    });
    std::string declared, splits;
    std::set<std::string> seen;
    for (const auto& item : program_.items) {
        const auto* s = std::get_if<ast::Statement>(&item);
        if (!s) continue;
        if (const auto* d = std::get_if<ast::DimDecl>(&s->node))
            for (const auto& b : d->bindings) {
                const auto i = parser::print(b.index);
                if (!seen.insert(i).second) continue;
                declared += "  " + i + " = " + std::to_string(b.size) + "\n";
            }
        if (const auto* sp = std::get_if<ast::SplitDecl>(&s->node)) {
            std::string parts;
            for (const auto& p : sp->parts) {
                const auto i = parser::print(p);
                seen.insert(i);
                auto it = ranges.find(i);
                parts += (parts.empty() ? "" : " ") + i +
                         (it != ranges.end() ? "=" + std::to_string(it->second) : "");
            }
            splits += "  " + parser::print(sp->from) + " -> " + parts + "\n";
        }
    }
    std::string inferred;
    for (const auto& [i, n] : ranges)
        if (!seen.count(i)) inferred += "  " + i + " = " + std::to_string(n) + "\n";
    std::string out;
    if (!declared.empty()) out += "declared:\n" + declared;
    if (!splits.empty()) out += "split:\n" + splits;
    if (!inferred.empty()) out += "inferred (not declared):\n" + inferred;
    if (out.empty()) out = "no indices yet (declare ranges with: dim b=8 d=1024)\n";
    return {out};
}

Answer Session::show_tensors() const {
    const auto names = tensor_names();
    if (names.empty()) return {"no tensors yet\n"};
    std::string out;
    for (const auto& n : names) {
        const TensorLayout* last = nullptr;
        bool defined = false;
        std::uint32_t line = 0;
        for_each_layout(plan_,
                        [&](const TensorLayout& t, const semantics::StatementPlan& s, bool result) {
                            if (t.tensor != n) return;
                            last = &t;
                            if (result) {
                                defined = true;
                                line = s.range.line;
                            }
                        });
        auto text = semantics::format_tensor_line(*last, defined ? "result" : "input");
        text.pop_back();
        out += text + (defined ? "  line " + std::to_string(line) : "") + "\n";
    }
    return {out};
}

Answer Session::show(const std::string& name) const {
    const auto* t = layout_of(name);
    if (!t) return {"no tensor " + name + " in the session (:tensors lists them)\n", true};
    std::string out;
    for (const auto& s : plan_.statements) {
        std::string lines;
        for (const auto& o : s.operands)
            if (o.tensor == name) lines += semantics::format_tensor_line(o, "operand");
        if (s.result.tensor == name) lines += semantics::format_tensor_line(s.result, "result");
        if (!lines.empty())
            out += std::string(kName) + ":" + std::to_string(s.range.line) + ": " + s.pretty +
                   "\n" + lines;
    }
    out += "now: (" + semantics::placements_text(t->placements) + "), local " +
           semantics::shape_text(t->local_shape) + " of " + semantics::shape_text(t->global_shape) +
           "\n";
    for (const auto& a : t->atoms) {
        std::string axes;
        std::int64_t n = 1;
        for (int k : a.axes) {
            axes += (axes.empty() ? "" : ",") + plan_.mesh.axes[static_cast<std::size_t>(k)].name;
            n *= plan_.mesh.axes[static_cast<std::size_t>(k)].size;
        }
        out += "  " + a.index.text() + ": " + std::to_string(a.extent) +
               (axes.empty() ? ", whole on every device"
                             : ", over mesh axis " + axes + " in " + std::to_string(n) +
                                   " chunks of at most " +
                                   std::to_string(semantics::chunk(a.extent, n, 0).size())) +
               "\n";
    }
    return {out};
}

Answer Session::show_plan(const std::string& arg) const {
    if (plan_.statements.empty()) return {"no statements yet\n"};
    if (arg.empty()) {
        auto text = semantics::format_plan(plan_, kName, options_.color);
        if (text.size() > 1 && text.back() == '\n' && text[text.size() - 2] == '\n')
            text.pop_back();
        return {text};
    }
    std::uint32_t line = 0;
    try {
        std::size_t used = 0;
        const long v = std::stol(arg, &used);
        if (used != arg.size() || v <= 0) throw std::invalid_argument(arg);
        line = static_cast<std::uint32_t>(v);
    } catch (const std::exception&) {
        return {"usage: :plan [LINE], LINE a number as in repl:LINE\n", true};
    }
    std::string lines;
    for (const auto& s : plan_.statements) {
        if (s.range.line <= line && line <= std::max(s.range.line, s.range.end_line)) {
            semantics::Plan one = plan_;
            one.statements = {s};
            auto text = semantics::format_plan(one, kName, options_.color);
            text.pop_back();
            return {text};
        }
        lines += (lines.empty() ? "" : ", ") + std::to_string(s.range.line);
    }
    return {"no statement at line " + arg + "; statements are at lines " + lines + "\n", true};
}

Answer Session::viz(const std::vector<std::string>& args) const {
    if (args.size() != 1 && args.size() != 3)
        return {"usage: :viz NAME [ROW COL] (ROW COL: dimensions by number or index)\n", true};
    const auto* t = layout_of(args[0]);
    if (!t) return {"no tensor " + args[0] + " in the session (:tensors lists them)\n", true};
    render::Drawn drawn;
    if (args.size() == 3) {
        auto dim_of = [&](const std::string& w) -> int {
            for (std::size_t d = 0; d < t->indices.size(); ++d) {
                const auto& i = t->indices[d];
                if (i == w || i.substr(0, i.find('_')) == w) return static_cast<int>(d);
            }
            try {
                std::size_t used = 0;
                const int v = std::stoi(w, &used);
                if (used == w.size()) return v;
            } catch (const std::exception&) {
            }
            return -2;
        };
        drawn = {dim_of(args[1]), dim_of(args[2])};
        const int rank = static_cast<int>(t->indices.size());
        std::string dims;
        for (int d = 0; d < rank; ++d)
            dims += (dims.empty() ? "" : ", ") + std::to_string(d) + " " +
                    t->indices[static_cast<std::size_t>(d)];
        if (dims.empty()) dims = "none: it is a scalar";
        for (int k : {1, 2}) {
            const int d = k == 1 ? drawn.row : drawn.col;
            if (d < 0 || d >= rank)
                return {args[0] + " has no dimension '" + args[static_cast<std::size_t>(k)] +
                            "' (its dimensions: " + dims + ")\n",
                        true};
        }
        if (drawn.row == drawn.col)
            return {"ROW and COL name the same dimension of " + args[0] +
                        ": draw two different ones (" + dims + ")\n",
                    true};
    }
    try {
        const auto model = render::tile_model(plan_.mesh, *t, drawn);
        return {render::draw_tiles(model, {options_.color, options_.width})};
    } catch (const std::invalid_argument& e) {
        return {std::string(e.what()) + "\n", true};
    }
}

Answer Session::exec(const std::string& args) const {
    ExecCliOptions o;
    CLI::App cli(":exec: run the session's plans on simulated ranks and verify them", ":exec");
    add_exec_options(cli, o);
    try {
        cli.parse(args, false);
    } catch (const CLI::CallForHelp&) {
        return {cli.help()};
    } catch (const CLI::ParseError& e) {
        return {std::string(":exec: ") + e.what() + "\n", true};
    }
    if (o.backend == "mpi" || o.backend == "nccl")
        return {":exec runs on simulated ranks (threads) inside this process; --backend " +
                    o.backend +
                    " needs one process per rank: :save FILE, then run 'mpirun -np N "
                    "shardscope exec --backend " +
                    o.backend + " FILE'\n",
                true};
    if (plan_.statements.empty()) return {"nothing to run: no statements yet\n", true};
    std::ostringstream out, err;
    const int rc = exec_source(SourceFile(kName, text()), o,
                               {out, err, options_.color, options_.color, false});
    return {err.str() + out.str(), rc != kExitOk};
}

Answer Session::grad(const std::vector<std::string>& wrt) const {
    if (plan_.statements.empty()) return {"nothing to differentiate: no statements yet\n", true};
    semantics::GradOptions go;
    go.wrt = wrt;
    go.check.strict = strict_;
    const auto result = frontend::derive_gradients(SourceFile(kName, text()), go);
    const SourceFile shown(kName, result.text.empty() ? text() : result.text);
    std::string out = semantics::derived_text(result);
    for (const auto& d : result.diagnostics)
        if (d.severity != Severity::Note) out += format_diagnostic(shown, d, options_.color);
    std::string names;
    for (const auto& [w, g] : result.gradients)
        names += (names.empty() ? "" : ", ") + g + " of " + w;
    out += plural(result.statements.size(), "derived statement", "derived statements") +
           (names.empty() ? "" : " (" + names + ")") + "; :save and 'shardscope grad FILE' " +
           "write the whole program\n";
    return {out, result.errors() > 0};
}

Answer Session::export_to(const std::vector<std::string>& args) const {
    const char* usage = "usage: :export torch|jax|latex [FILE]\n";
    if (args.empty() || args.size() > 2) return {usage, true};
    const auto target = codegen::parse_export_target(args[0]);
    if (!target) return {usage, true};
    if (plan_.statements.empty()) return {"nothing to export: no statements yet\n", true};
    if (plan_.errors() > 0)
        return {"the session has errors (:strict off, or :undo); nothing exported\n", true};
    codegen::ExportOptions eo;
    eo.source = kName;
    eo.command = ":export " + args[0];
    std::string out;
    try {
        out = codegen::export_program(program_, plan_, *target, eo);
    } catch (const std::exception& e) {
        return {std::string(":export: ") + e.what() + "\n", true};
    }
    if (args.size() == 1) return {out};
    if (!write_file_atomically(args[1], out)) return {"cannot write '" + args[1] + "'\n", true};
    return {"wrote " +
            plural(static_cast<std::size_t>(std::count(out.begin(), out.end(), '\n')), "line",
                   "lines") +
            " to " + args[1] + "\n"};
}

Answer Session::set_strict(const std::string& arg) {
    if (arg.empty())
        return {std::string("strict is ") + (strict_ ? "on" : "off") + " (:strict on|off)\n"};
    if (arg != "on" && arg != "off") return {"usage: :strict on|off\n", true};
    const bool on = arg == "on";
    if (on == strict_) return {"strict is already " + arg + "\n"};
    auto checked = check_text(text(), on);
    std::set<std::string> old;
    for (const auto& d : plan_.diagnostics)
        old.insert(key(d));
    std::string diags;
    int errors = 0;
    for (const auto& d : checked.plan.diagnostics)
        if (!old.count(key(d)) && d.severity == Severity::Error) {
            diags += diagnostic_text(checked.text, entries_, d);
            ++errors;
        }
    std::string out = "strict " + arg + "\n" + diags;
    if (errors > 0)
        out += plural(static_cast<std::size_t>(errors), "error", "errors") +
               " under strict in what the session holds (:undo or :strict off takes it back)\n";
    commit({entries_, on}, std::move(checked));
    return {out};
}

Answer Session::save(const std::string& path) const {
    const auto t = text();
    if (!write_file_atomically(path, t)) return {"cannot write '" + path + "'\n", true};
    return {
        "saved " +
        plural(static_cast<std::size_t>(std::count(t.begin(), t.end(), '\n')), "line", "lines") +
        " to " + path + "\n"};
}

Answer Session::undo() {
    if (undo_.empty()) return {"nothing to undo\n"};
    State s = std::move(undo_.back());
    undo_.pop_back();
    std::string what;
    if (s.strict != strict_) {
        what = std::string("strict back ") + (s.strict ? "on" : "off");
    } else if (s.entries.size() < entries_.size()) {
        const auto& e = entries_.back();
        what = e.origin.empty() ? "took back: " + first_line(e.text) : "unloaded " + e.origin;
    } else {
        what = "the session is back (" + plural(s.entries.size(), "entry", "entries") + ")";
    }
    std::string t;
    for (const auto& e : s.entries)
        t += e.text;
    auto checked = check_text(t, s.strict);
    commit(std::move(s), std::move(checked), false);
    return {what + "\n"};
}

Answer Session::reset() {
    if (entries_.empty() && !strict_) return {"the session is already empty\n"};
    commit({}, check_text("", false));
    return {"the session is empty (:undo brings it back)\n"};
}

} // namespace shardscope::app
