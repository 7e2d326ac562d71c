#include "frontend/document.hpp"

#include "parser/diagnostic_codes.hpp"
#include "parser/functions.hpp"
#include "parser/open.hpp"
#include "parser/printer.hpp"
#include "parser/suggest.hpp"
#include "parser/visit.hpp"
#include "semantics/search.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>

namespace shardscope::frontend {

namespace {

/// Whether a syntax error is on a declaration line (mesh, dim, split, dtype, tensor, hw, link,
/// fn): then the statements around it cannot be checked meaningfully.
bool declaration_failed(const parser::ParseResult& parsed, const SourceFile& source) {
    static const char* const kDeclarations[] = {"mesh",   "dim", "split", "dtype",
                                                "tensor", "hw",  "link",  "fn"};
    const std::string& text = source.text();
    for (const auto& d : parsed.diagnostics) {
        if (d.severity != Severity::Error) continue;
        // The start of the diagnostic's line.
        std::size_t at = std::min<std::size_t>(d.range.offset, text.size());
        while (at > 0 && text[at - 1] != '\n')
            --at;
        while (at < text.size() && (text[at] == ' ' || text[at] == '\t'))
            ++at;
        for (const char* kw : kDeclarations) {
            const std::size_t n = std::strlen(kw);
            if (text.compare(at, n, kw) == 0 &&
                (at + n == text.size() || std::isspace(static_cast<unsigned char>(text[at + n]))))
                return true;
        }
    }
    return false;
}

/// "Did you mean" for tensors (S132, a note): a tensor that a statement reads but no
/// statement defines (so a program input) whose name is one edit or two from a tensor that
/// one does define, as a misspelling would be.
void misspelt_tensor_notes(semantics::Plan& plan) {
    std::vector<std::string> defined;
    for (const auto& s : plan.statements)
        if (!s.target.empty()) defined.push_back(s.target);
    std::vector<std::string> reported;
    for (const auto& s : plan.statements)
        for (const auto& op : s.operands) {
            const std::string& name = op.tensor;
            if (name.empty() || name[0] == '%') continue;
            if (std::find(defined.begin(), defined.end(), name) != defined.end()) continue;
            if (std::find(reported.begin(), reported.end(), name) != reported.end()) continue;
            // Only names long enough for a misspelling to be unlikely a convention (x and gx,
            // W^0 and W^1 are different tensors on purpose), with the same label.
            const auto base = [](const std::string& n) { return n.substr(0, n.find('^')); };
            const auto label = [](const std::string& n) {
                const auto hat = n.find('^');
                return hat == std::string::npos ? std::string() : n.substr(hat);
            };
            if (base(name).size() < 4) continue;
            std::vector<std::string> alike;
            for (const auto& d : defined)
                if (label(d) == label(name) && base(d).size() >= 4) alike.push_back(base(d));
            const std::string near_base = closest_name(base(name), alike);
            if (near_base.empty()) continue;
            const std::string near = near_base + label(name);
            reported.push_back(name);
            plan.diagnostics.push_back(make_diagnostic(
                Severity::Note, Code::S132, s.range,
                name +
                    " is read but no statement defines it, so it is a program input; did "
                    "you mean " +
                    near + ", which a statement defines?",
                "write " + near + " if that is the tensor meant"));
        }
}

/// A misspelt function read as a tensor (S133, a warning): `sofmax_d(z)` parses as the product
/// of an input tensor `sofmax_d` and `(z)`, silently, where `sofmax(z)` is an unknown function
/// (P108). Flagged when a tensor no statement defines is written right before a parenthesis
/// (no space: `mask_{ij} (x)` stays a product) and its name is one or two edits from a function's.
void function_read_as_tensor_warnings(const ast::Program& program, semantics::Plan& plan,
                                      std::string_view text) {
    std::vector<std::string_view> functions;
    for (const auto& f : builtin_functions())
        functions.push_back(f.name);
    std::vector<std::string> declared; // the program's `fn` lines
    for (const auto& item : program.items)
        if (const auto* s = std::get_if<ast::Statement>(&item))
            if (const auto* f = std::get_if<ast::FnDecl>(&s->node)) declared.push_back(f->name);
    for (const auto& d : declared)
        functions.push_back(d);
    std::vector<std::string> defined;
    for (const auto& s : plan.statements)
        if (!s.target.empty()) defined.push_back(s.target);
    std::vector<std::string> reported;
    for (const auto& item : program.items) {
        const auto* s = std::get_if<ast::Statement>(&item);
        if (!s) continue;
        ast::for_each_ref(*s, [&](const ast::TensorRef& r) {
            const std::size_t end = std::size_t{r.range.offset} + r.range.length;
            if (r.range.length == 0 || end >= text.size() || text[end] != '(') return;
            const std::string key = parser::tensor_key(r.name, r.label);
            if (std::find(defined.begin(), defined.end(), key) != defined.end() ||
                std::find(reported.begin(), reported.end(), key) != reported.end())
                return;
            const std::string near = closest_name(r.name, functions);
            if (near.empty()) return;
            reported.push_back(key);
            // In the statement's own spelling: `sofmax_d` -> `softmax_d`.
            const std::string written(text.substr(r.range.offset, r.range.length));
            const std::string meant =
                written.starts_with(r.name) ? near + written.substr(r.name.size()) : near;
            plan.diagnostics.push_back(make_diagnostic(
                Severity::Warning, Code::S133, r.range,
                written + "(...) reads the program input " + key +
                    " times the parenthesis; did you mean the function " + near + "?",
                "write " + meant + "(...) for the function, or '" + written +
                    " (...)' (a space) if a product is meant"));
        });
    }
}

} // namespace

CheckedText check_source(std::shared_ptr<const SourceFile> source, semantics::CheckOptions options,
                         semantics::CheckCache* cache) {
    CheckedText out;
    out.source = source;
    out.parsed = parser::parse(*source);
    // Statements that parse are checked even where others have syntax errors, unless a
    // declaration failed (the mesh or a range missing would make every check wrong).
    if (out.parsed.has_errors() && declaration_failed(out.parsed, *source)) {
        out.plan.diagnostics = out.parsed.diagnostics;
        out.plan.diagnostics.push_back(make_diagnostic(
            Severity::Note, Code::S999, {},
            "the checker did not run: a declaration has a syntax error; fix it first"));
    } else {
        options.text = source->text();
        // Open shardings (`f_?`): the cheapest consistent choice for the written mesh replaces
        // them (note S402), so every consumer of the tree and the plan sees layouts only.
        // (The cache stays right: it knows a statement by its text and its tree as printed,
        // and a rewritten index prints differently.)
        std::vector<Diagnostic> resolved;
        if (ast::has_open(out.parsed.program)) {
            auto r = resolve_at_declared_sizes(out.parsed.program, options);
            out.open_program = std::move(out.parsed.program);
            out.parsed.program = std::move(r.program);
            resolved = std::move(r.diagnostics);
        }
        out.plan = cache ? semantics::check(out.parsed.program, options, *cache)
                         : semantics::check(out.parsed.program, options);
        out.checked = true;
        out.plan.diagnostics.insert(out.plan.diagnostics.begin(), resolved.begin(), resolved.end());
        out.plan.diagnostics.insert(out.plan.diagnostics.begin(), out.parsed.diagnostics.begin(),
                                    out.parsed.diagnostics.end());
        misspelt_tensor_notes(out.plan);
        function_read_as_tensor_warnings(out.parsed.program, out.plan, source->text());
        if (out.parsed.has_errors())
            out.plan.diagnostics.push_back(make_diagnostic(
                Severity::Note, Code::S999, {},
                "the statements with syntax errors were not checked; the others were"));
    }
    std::stable_sort(out.plan.diagnostics.begin(), out.plan.diagnostics.end(),
                     [](const auto& a, const auto& b) { return a.range.line < b.range.line; });
    return out;
}

semantics::ResolvedOpen resolve_at_declared_sizes(const ast::Program& program,
                                                  const semantics::CheckOptions& options) {
    auto at_declared = options;
    at_declared.small_defaults = false;
    at_declared.ignore_dims = false;
    return semantics::resolve_open(program, at_declared);
}

semantics::Plan check_program(ast::Program& program, const semantics::CheckOptions& options) {
    if (!ast::has_open(program)) return semantics::check(program, options);
    auto r = resolve_at_declared_sizes(program, options);
    program = std::move(r.program);
    semantics::Plan plan = semantics::check(program, options);
    plan.diagnostics.insert(plan.diagnostics.begin(), r.diagnostics.begin(), r.diagnostics.end());
    return plan;
}

CheckedText check_text(const std::string& name, const std::string& text,
                       semantics::CheckOptions options, semantics::CheckCache* cache) {
    return check_source(std::make_shared<SourceFile>(name, text), std::move(options), cache);
}

} // namespace shardscope::frontend
