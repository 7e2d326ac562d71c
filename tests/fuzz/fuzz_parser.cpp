// libFuzzer target: no input may crash or hang the parser or the checker. Whatever parses
// must round-trip through the canonical printer (ASCII and Unicode) to the same AST, and
// is then checked, with its plan formatted as text and as JSON. What checks cleanly is
// differentiated (every derived statement must read back as printed) and exported: the
// LaTeX must parse back.
#include "codegen/export.hpp"
#include "frontend/gradients.hpp"
#include "parser/parser.hpp"
#include "parser/printer.hpp"
#include "semantics/checker.hpp"
#include "semantics/grad.hpp"
#include "semantics/report.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string text(reinterpret_cast<const char*>(data), size);
    if (shardscope::find_invalid_utf8(text)) return 0; // the CLI refuses non-UTF-8 up front
    const shardscope::SourceFile file("fuzz.ein", text);
    const auto result = shardscope::parser::parse(file);
    for (const auto& d : result.diagnostics)
        (void)shardscope::format_diagnostic(file, d);
    if (result.has_errors()) return 0;
    for (bool unicode : {false, true}) {
        const auto printed = shardscope::parser::print(result.program, {unicode});
        const auto again =
            shardscope::parser::parse(shardscope::SourceFile("printed.ein", printed));
        if (again.has_errors() || !(again.program == result.program)) {
            std::fprintf(stderr, "round trip failed (%s):\n--- input\n%s\n--- printed\n%s\n",
                         unicode ? "unicode" : "ascii", text.c_str(), printed.c_str());
            std::abort();
        }
    }
    for (bool strict : {false, true}) {
        shardscope::semantics::CheckOptions options;
        options.strict = strict;
        options.text = text;
        const auto plan = shardscope::semantics::check(result.program, options);
        for (const auto& d : plan.diagnostics)
            (void)shardscope::format_diagnostic(file, d);
        (void)shardscope::semantics::format_plan(plan, "fuzz.ein");
        (void)shardscope::semantics::plan_to_json(plan, "fuzz.ein").dump();
        if (strict || plan.errors() > 0 || plan.statements.size() > 12) continue;
        const auto grad = shardscope::frontend::derive_gradients(file);
        for (const auto& d : grad.diagnostics)
            if (d.code == "G900") {
                std::fprintf(stderr, "derived statement reads back differently:\n%s\n%s\n",
                             text.c_str(), d.message.c_str());
                std::abort();
            }
        (void)shardscope::semantics::gradients_to_json(grad, "fuzz.ein").dump();
        try {
            namespace codegen = shardscope::codegen;
            const auto tex = codegen::export_latex(result.program, plan);
            if (shardscope::parser::parse(shardscope::SourceFile("fuzz.tex", tex)).has_errors()) {
                std::fprintf(stderr, "LaTeX export does not parse:\n%s\n--- export\n%s\n",
                             text.c_str(), tex.c_str());
                std::abort();
            }
            (void)codegen::export_jax(result.program, plan);
            (void)codegen::export_torch(result.program, plan);
        } catch (const shardscope::codegen::ExportError&) {
            // more than 52 indices in a statement
        }
    }
    return 0;
}
