// Small helpers shared by the parser tests.
#pragma once

#include "parser/parser.hpp"
#include "parser/printer.hpp"

#include <doctest/doctest.h>

#include <string>

namespace shardscope::test {

/// Parses `text` as a file named "test.ein".
inline parser::ParseResult parse_text(const std::string& text) {
    SourceFile file("test.ein", text);
    return parser::parse(file);
}

/// All diagnostics of a result, formatted, for failure messages.
inline std::string diagnostics_text(const std::string& text, const parser::ParseResult& r) {
    SourceFile file("test.ein", text);
    std::string out;
    for (const auto& d : r.diagnostics)
        out += format_diagnostic(file, d);
    return out;
}

/// The only statement of a one-statement program (fails the test otherwise).
inline ast::Statement single_statement(const std::string& text) {
    auto r = parse_text(text);
    REQUIRE_MESSAGE(!r.has_errors(), diagnostics_text(text, r));
    REQUIRE(r.program.items.size() == 1);
    REQUIRE(std::holds_alternative<ast::Statement>(r.program.items[0]));
    return std::get<ast::Statement>(r.program.items[0]);
}

} // namespace shardscope::test
