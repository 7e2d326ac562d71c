#include "frontend/gradients.hpp"

#include "frontend/document.hpp"

#include "parser/diagnostic_codes.hpp"
#include "parser/open.hpp"
#include "parser/parser.hpp"
#include "parser/printer.hpp"
#include "semantics/checker.hpp"
#include "semantics/search.hpp"

#include <algorithm>

namespace shardscope::frontend {

using semantics::GradResult;
using semantics::Plan;

GradResult derive_gradients(const SourceFile& forward, const semantics::GradOptions& options) {
    GradResult result;
    const auto parsed = parser::parse(forward);
    if (parsed.has_errors()) {
        result.diagnostics = parsed.diagnostics;
        result.diagnostics.push_back(make_diagnostic(Severity::Note, Code::G000, {},
                                                     "no gradients: fix the syntax errors first"));
        return result;
    }
    auto co = options.check;
    co.text = forward.text();
    if (ast::has_open(parsed.program)) {
        // Open shardings (`f_?`): the gradients of the resolved program (the choice check
        // makes, note S402), whose canonical text stands for the forward.
        auto resolved = resolve_at_declared_sizes(parsed.program, co);
        const SourceFile file(forward.name(), parser::print(resolved.program));
        GradResult out = derive_gradients(file, options);
        out.diagnostics.insert(out.diagnostics.begin(), resolved.diagnostics.begin(),
                               resolved.diagnostics.end());
        return out;
    }
    const Plan fplan = semantics::check(parsed.program, co);
    if (fplan.errors() > 0) {
        result.diagnostics = fplan.diagnostics;
        result.diagnostics.push_back(make_diagnostic(Severity::Note, Code::G000, {},
                                                     "no gradients: the program has errors"));
        return result;
    }
    semantics::Derivation derivation(parsed.program, fplan, options);
    if (!derivation.ok()) return derivation.failed();

    // The program: the forward text, a blank line, then the derived part.
    std::string head = forward.text();
    if (!head.empty() && head.back() != '\n') head += '\n';
    head += '\n';
    const auto first_line =
        static_cast<std::uint32_t>(std::count(head.begin(), head.end(), '\n') + 1);
    std::string text;
    ast::Program program;
    Plan plan;
    std::vector<Diagnostic> syntax_errors;
    auto read_back = [&](const Plan* checked) {
        text = head + derivation.text(first_line, checked);
        SourceFile file(forward.name(), text);
        auto p = parser::parse(file);
        if (p.has_errors()) {
            syntax_errors = p.diagnostics;
            return false;
        }
        auto opts = options.check;
        opts.text = file.text();
        plan = semantics::check(p.program, opts);
        program = std::move(p.program);
        return true;
    };
    if (read_back(nullptr) && options.expectations) {
        const Plan first = plan;
        read_back(&first);
    }
    return derivation.finish(std::move(text), first_line, program, std::move(plan), syntax_errors);
}

} // namespace shardscope::frontend
