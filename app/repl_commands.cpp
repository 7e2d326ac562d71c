// The REPL's commands: the one table (repl_commands.hpp) and what reads it (the dispatch and
// `:help`), and the commands that run something on the session's text (:exec, :grad,
// :export, :save).
#include "repl_commands.hpp"
#include "repl_session.hpp"
#include "repl_text.hpp"

#include "exec_cli.hpp"
#include "frontend/gradients.hpp"
#include "inputs.hpp"

#include "codegen/export.hpp"
#include "semantics/grad.hpp"

#include <algorithm>
#include <sstream>

namespace shardscope::app {

using namespace repl;

namespace {

/// What `:help` says before the commands.
constexpr const char* kIntro =
    R"(Type notation to add it to the session: a statement (y_{b s_0 f} = x_{b s_0 d} W_{d f}),
or a declaration (mesh 2x4, dim d=1024, split b -> r c, fn act elementwise), or expect ...
for the statement before. Each line is checked with everything typed so far: you see it in
Unicode, the placements of every tensor, the collectives with bytes and time, and errors with
a caret under the column. A line with errors is not added. A line ending in \ goes on.
)";

} // namespace

const std::vector<ReplCommand>& repl_commands() {
    using A = ReplCommand::Args;
    using C = ReplCommand::Completes;
    using Words = std::vector<std::string>;
    static const std::vector<ReplCommand> table = {
        {{":help", ":h", ":?"},
         ":help",
         "this text",
         A::Text,
         C::Nothing,
         {},
         [](Session& s, const std::string&, const Words&) { return s.help(); }},
        {{":mesh"},
         ":mesh",
         "the mesh: axes, sizes, device order",
         A::None,
         C::Nothing,
         {},
         [](Session& s, const std::string&, const Words&) { return s.show_mesh(); }},
        {{":dims"},
         ":dims",
         "index ranges: declared, split, inferred",
         A::None,
         C::Nothing,
         {},
         [](Session& s, const std::string&, const Words&) { return s.show_dims(); }},
        {{":tensors"},
         ":tensors",
         "every tensor as the session leaves it (placements, local and global shape)",
         A::None,
         C::Nothing,
         {},
         [](Session& s, const std::string&, const Words&) { return s.show_tensors(); }},
        {{":show"},
         ":show NAME",
         "one tensor: where it appears, its layout, its storage",
         A::One,
         C::Tensor,
         {},
         [](Session& s, const std::string&, const Words& w) { return s.show(w[0]); }},
        {{":plan"},
         ":plan [LINE]",
         "the plans of every statement, or of the one at LINE (as in repl:LINE)",
         A::AtMostOne,
         C::Nothing,
         {},
         [](Session& s, const std::string&, const Words& w) {
             return s.show_plan(w.empty() ? "" : w[0]);
         }},
        {{":viz"},
         ":viz NAME [R C]",
         "which device holds which tile of NAME; R C: the dimensions to draw\n"
         "(numbers from 0, or index names; default the last two)",
         A::Text,
         C::Tensor,
         {},
         [](Session& s, const std::string&, const Words& w) { return s.viz(w); }},
        {{":exec"},
         ":exec [OPTIONS]",
         "run the session on simulated ranks and verify it (--data, --seed,\n"
         "--dtype, --show NAME, --small; :exec --help lists them)",
         A::Text,
         C::Choices,
         {"--backend", "--data", "--seed", "--dtype", "--show", "--small", "--json", "--mesh",
          "sim", "random", "arange", "ints", "f32", "f64"},
         [](Session& s, const std::string& rest, const Words&) { return s.exec(rest); }},
        {{":grad"},
         ":grad [NAME...]",
         "the backward statements (gX is the gradient of X) with their checked\n"
         "collectives; default: with respect to every program input",
         A::Text,
         C::Nothing,
         {},
         [](Session& s, const std::string&, const Words& w) { return s.grad(w); }},
        {{":export"},
         ":export torch|jax|latex [FILE]",
         "the session as a DTensor script, a JAX script or LaTeX (to FILE)",
         A::Text,
         C::Nothing,
         {},
         [](Session& s, const std::string&, const Words& w) { return s.export_to(w); }},
        {{":strict"},
         ":strict on|off",
         "every implicit redistribution or chosen fix is an error",
         A::Text,
         C::Choices,
         {"on", "off"},
         [](Session& s, const std::string& rest, const Words&) { return s.set_strict(rest); }},
        {{":load"},
         ":load FILE",
         "add a notation file's statements",
         A::Required,
         C::File,
         {},
         [](Session& s, const std::string& rest, const Words&) { return s.load(rest); }},
        {{":save"},
         ":save FILE",
         "write the session as a notation file (check accepts it)",
         A::Required,
         C::File,
         {},
         [](Session& s, const std::string& rest, const Words&) { return s.save(rest); }},
        {{":undo"},
         ":undo",
         "take back the last change (a statement, a load, :strict, :reset)",
         A::None,
         C::Nothing,
         {},
         [](Session& s, const std::string&, const Words&) { return s.undo(); }},
        {{":reset"},
         ":reset",
         "start again from an empty session",
         A::None,
         C::Nothing,
         {},
         [](Session& s, const std::string&, const Words&) { return s.reset(); }},
        {{":quit", ":q", ":exit"},
         ":quit",
         "leave (Ctrl-D too); Ctrl-C cancels the line being typed",
         A::Text,
         C::Nothing,
         {},
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
        for (const auto& c : repl_commands())
            out.push_back(c.names.front());
        return out;
    }();
    return names;
}

Answer Session::command(const std::string& line) {
    using A = ReplCommand::Args;
    const auto sp = line.find_first_of(" \t");
    const std::string name = line.substr(0, sp);
    const std::string rest = sp == std::string::npos ? "" : trim(line.substr(sp));
    const auto args = words(rest);
    const auto* c = find_repl_command(name);
    if (!c) return {"unknown command " + name + " (:help lists the commands)\n", true};
    const bool ok = (c->args == A::None && args.empty()) ||
                    (c->args == A::One && args.size() == 1) ||
                    (c->args == A::AtMostOne && args.size() <= 1) || c->args == A::Text ||
                    (c->args == A::Required && !rest.empty());
    if (!ok) {
        if (c->args == A::None) return {name + " takes no arguments\n", true};
        return {"usage: " + c->usage +
                    (c->names.front() == ":show" ? " (:tensors lists them)" : "") + "\n",
                true};
    }
    return c->run(*this, rest, args);
}

Answer Session::help() const {
    // Usage in a column of 20, the summary after it (or on the next line when the usage is
    // longer), continuation lines under the summary.
    constexpr std::size_t kColumn = 20;
    std::string out = std::string(kIntro) + "\n";
    for (const auto& c : repl_commands()) {
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

const ReplCommand* find_repl_command(std::string_view name) {
    for (const auto& c : repl_commands())
        if (std::find(c.names.begin(), c.names.end(), name) != c.names.end()) return &c;
    return nullptr;
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
    out += semantics::derived_summary(result) + "; :save and 'shardscope grad FILE' " +
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

Answer Session::save(const std::string& path) const {
    const auto t = text();
    if (!write_file_atomically(path, t)) return {"cannot write '" + path + "'\n", true};
    return {
        "saved " +
        plural(static_cast<std::size_t>(std::count(t.begin(), t.end(), '\n')), "line", "lines") +
        " to " + path + "\n"};
}

} // namespace shardscope::app
