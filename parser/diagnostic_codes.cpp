#include "diagnostic_codes.hpp"

#include <array>
#include <string>

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
