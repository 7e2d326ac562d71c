// Inputs the fuzzer once broke, replayed with the fuzzer's own oracle: parse, format every
// diagnostic, round-trip whatever parsed, and check it (plain and --strict) with both reports.
#include "parser/parser.hpp"
#include "parser/printer.hpp"
#include "semantics/checker.hpp"
#include "semantics/report.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace shardscope::test {

TEST_CASE("fuzz regressions: no crash, runaway output or memory, and the round trip holds") {
    const std::filesystem::path dir = SHARDSCOPE_FUZZ_REGRESSIONS_DIR;
    int files = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
        std::ifstream in(e.path(), std::ios::binary);
        std::ostringstream ss;
        ss << in.rdbuf();
        const std::string text = ss.str();
        CAPTURE(e.path().string());
        if (find_invalid_utf8(text)) continue;
        const SourceFile file("regression.ein", text);
        const auto result = parser::parse(file);
        for (const auto& d : result.diagnostics)
            CHECK(format_diagnostic(file, d).size() < 4 * text.size() + 1024);
        ++files;
        if (result.has_errors()) continue;
        for (bool unicode : {false, true}) {
            const auto printed = parser::print(result.program, {unicode});
            CHECK(parser::parse(SourceFile("printed.ein", printed)).program == result.program);
        }
        for (bool strict : {false, true}) {
            semantics::CheckOptions options;
            options.strict = strict;
            const auto plan = semantics::check(result.program, options);
            CHECK(plan.mesh.devices.size() <= 1u << 24);
            CHECK(!semantics::format_plan(plan, "r.ein").empty() == !plan.statements.empty());
            CHECK(semantics::plan_to_json(plan, "r.ein").contains("statements"));
        }
    }
    CHECK(files >= 2);
}

} // namespace shardscope::test
