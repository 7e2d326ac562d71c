// The REPL's session: its state (the accepted entries, the strict flag, the undo stack), the
// check of each input against everything typed so far, the answer to a statement, and the
// commands that change the state (:load, :strict, :undo, :reset).
#include "repl_session.hpp"
#include "repl_text.hpp"

#include "frontend/document.hpp"
#include "inputs.hpp"

#include "parser/diagnostic_codes.hpp"
#include "parser/printer.hpp"
#include "parser/splitter.hpp"
#include "semantics/checker.hpp"
#include "semantics/report.hpp"

#include <algorithm>
#include <set>

namespace shardscope::app {

using namespace repl;
using semantics::TensorLayout;

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
    std::erase_if(c.plan.diagnostics, [](const Diagnostic& d) { return has_code(d, Code::S999); });
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
