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

namespace shardscope::test {

TEST_CASE("the text report keeps a tensor line of any length whole") {
    // 24 indices of range 100000: the lines of x and z are over 1000 bytes; a fixed buffer of
    // 512 cut them off, newline and all, and ran the next line into them.
    std::string dims = "dim", idx;
    for (int i = 0; i < 24; ++i) {
        dims += " i" + std::to_string(i) + "=100000";
        idx += " {i" + std::to_string(i) + "}";
    }
    const std::string text = "mesh 4\n" + dims + "\nz_{r_0" + idx + "} = x_{r_0" + idx + "}\n";
    const SourceFile file("long.ein", text);
    const auto result = parser::parse(file);
    REQUIRE(result.diagnostics.empty());
    const auto plan = semantics::check(result.program, {});
    const auto report = semantics::format_plan(plan, "long.ein");
    std::istringstream lines(report);
    std::string line;
    int whole = 0;
    while (std::getline(lines, line)) {
        if (line.rfind("  operand ", 0) != 0 && line.rfind("  result ", 0) != 0) continue;
        CAPTURE(line);
        CHECK(line.size() > 512);
        // One tensor per line, ending with its global shape (24 times 100000).
        CHECK(line.find(" result ", 10) == std::string::npos);
        const std::string last = "×100000";
        REQUIRE(line.size() > last.size());
        CHECK(line.compare(line.size() - last.size(), last.size(), last) == 0);
        ++whole;
    }
    CHECK(whole == 2);
}

} // namespace shardscope::test

TEST_CASE("a zero time prints with its unit, as every other time does") {
    // QA: "time 0", "exposed communication 0" read as a count, not a duration.
    CHECK(shardscope::semantics::format_seconds(0) == "0 s");
    CHECK(shardscope::semantics::format_seconds(2e-9) == "2 ns");
}
