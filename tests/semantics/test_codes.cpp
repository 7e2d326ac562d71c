// The diagnostic code table (parser/diagnostic_codes.hpp): the enumeration and the table agree,
// and every diagnostic the parser and checker raise on the examples of docs/reference.md (its
// deliberate mistakes included), the samples and the regression corpora carries a code of the
// table, at the table's severity (or an error where --strict makes a note one).
#include "parser/diagnostic_codes.hpp"
#include "parser/parser.hpp"
#include "semantics/checker.hpp"

#include "tests/read_file.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

using namespace shardscope;

namespace {

/// The text of every ```ein, ```ein-error and ```ein-warning block of a Markdown file.
std::vector<std::string> ein_blocks(const std::string& markdown) {
    std::vector<std::string> blocks;
    std::size_t pos = 0;
    while ((pos = markdown.find("```ein", pos)) != std::string::npos) {
        const auto body = markdown.find('\n', pos);
        const auto end = markdown.find("\n```", body);
        if (body == std::string::npos || end == std::string::npos) break;
        blocks.push_back(markdown.substr(body + 1, end - body));
        pos = end + 4;
    }
    return blocks;
}

/// Every diagnostic of parsing and checking `text` (strict or not).
std::vector<Diagnostic> diagnostics_of(const std::string& text, bool strict) {
    auto parsed = parser::parse(SourceFile("t.ein", text));
    std::vector<Diagnostic> out = parsed.diagnostics;
    semantics::CheckOptions options;
    options.strict = strict;
    const auto plan = semantics::check(parsed.program, options);
    out.insert(out.end(), plan.diagnostics.begin(), plan.diagnostics.end());
    return out;
}

} // namespace

TEST_CASE("diagnostic codes: the enumeration and the table agree") {
    const auto codes = diagnostic_codes();
    REQUIRE(codes.size() >= 100);
    std::set<std::string_view> names;
    for (std::size_t i = 0; i < codes.size(); ++i) {
        CHECK(static_cast<std::size_t>(codes[i].code) == i);
        CHECK(code_name(codes[i].code) == codes[i].name);
        CHECK(find_code(codes[i].name) == &codes[i]);
        CHECK_MESSAGE(names.insert(codes[i].name).second, codes[i].name);
        CHECK(!codes[i].meaning.empty());
    }
    CHECK(code_name(Code::S106) == "S106");
    CHECK(find_code("S999x") == nullptr);
    CHECK(codes_markdown().find("| `S106` | ") != std::string::npos);
}

TEST_CASE("diagnostic codes: everything raised is in the table") {
    std::vector<std::string> texts;
    for (const auto& block : ein_blocks(test::read_file(SHARDSCOPE_REFERENCE_MD)))
        texts.push_back(block);
    const auto reference_blocks = texts.size();
    for (const char* dir :
         {SHARDSCOPE_SAMPLES_DIR, SHARDSCOPE_FUZZ_REGRESSIONS_DIR, SHARDSCOPE_DIFF_REGRESSIONS_DIR})
        for (const auto& e : std::filesystem::directory_iterator(dir))
            if (e.is_regular_file()) texts.push_back(test::read_file(e.path().string()));
    REQUIRE(reference_blocks >= 40);
    std::set<std::string> seen;
    for (const auto& text : texts)
        for (bool strict : {false, true})
            for (const auto& d : diagnostics_of(text, strict)) {
                const auto* info = find_code(d.code);
                CHECK_MESSAGE(info != nullptr, d.code << ": " << d.message << "\n" << text);
                if (info == nullptr) continue;
                seen.insert(d.code);
                const bool strict_error = strict && d.severity == Severity::Error;
                CHECK_MESSAGE((d.severity == info->severity || strict_error),
                              d.code << " raised as " << std::string(severity_name(d.severity))
                                     << ", the table says "
                                     << std::string(severity_name(info->severity)) << ": "
                                     << d.message);
            }
    // The examples reach a good part of the table (the rest: tests/docs/check_codes.sh
    // checks that each code is at least raised somewhere in the sources).
    CHECK(seen.size() >= 40); // 44 today
}
