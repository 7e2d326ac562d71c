// Inputs the fuzzer once broke, replayed with the fuzzer's own oracle: parse, format every
// diagnostic, and round-trip whatever parsed.
#include "helpers.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace shardscope::test {

TEST_CASE("fuzz regressions: no crash, and the round trip holds") {
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
        for (const auto& d : result.diagnostics) {
            const auto out = format_diagnostic(file, d);
            CHECK(out.size() < 4 * text.size() + 1024); // no runaway caret line
        }
        if (!result.has_errors())
            for (bool unicode : {false, true})
                CHECK(parse_text(parser::print(result.program, {unicode})).program ==
                      result.program);
        ++files;
    }
    CHECK(files >= 1);
}

} // namespace shardscope::test
