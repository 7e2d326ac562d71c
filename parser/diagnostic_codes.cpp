#include "diagnostic_codes.hpp"

#include <array>
#include <string>
#include <utility>

namespace shardscope {

namespace {

constexpr CodeInfo kCodes[] = {
#define SHARDSCOPE_CODE_ROW(code, severity, group, meaning)                                        \
    {Code::code, #code, Severity::severity, group, meaning},
    SHARDSCOPE_DIAGNOSTIC_CODES(SHARDSCOPE_CODE_ROW)
#undef SHARDSCOPE_CODE_ROW
};

} // namespace

std::span<const CodeInfo> diagnostic_codes() {
    return kCodes;
}

const CodeInfo* find_code(std::string_view name) {
    for (const auto& c : kCodes)
        if (c.name == name) return &c;
    return nullptr;
}

std::string_view code_name(Code code) {
    return kCodes[static_cast<std::size_t>(code)].name;
}

Diagnostic make_diagnostic(Severity severity, Code code, ast::SourceRange range,
                           std::string message, std::string fix) {
    return {severity, std::string(code_name(code)), range, std::move(message), std::move(fix)};
}

bool has_code(const Diagnostic& d, Code code) {
    return d.code == code_name(code);
}

std::string codes_markdown() {
    std::string out;
    std::string_view group;
    for (const auto& c : kCodes) {
        if (c.group != group) {
            group = c.group;
            out += std::string(out.empty() ? "" : "\n") + "### " + std::string(group) +
                   "\n\n| code | meaning |\n|---|---|\n";
        }
        const std::string note = c.severity == Severity::Note      ? "(note) "
                                 : c.severity == Severity::Warning ? "(warning) "
                                                                   : "";
        out += "| `" + std::string(c.name) + "` | " + note + std::string(c.meaning) + " |\n";
    }
    return out;
}

} // namespace shardscope
