#include "functions.hpp"

#include <array>
#include <string>

namespace shardscope {

using K = ast::FunctionKind;

static constexpr std::array<FunctionInfo, 20> kBuiltins{{
    {"phi", K::Elementwise, "φ"},     {"relu", K::Elementwise, ""},
    {"gelu", K::Elementwise, ""},     {"silu", K::Elementwise, ""},
    {"sigmoid", K::Elementwise, "σ"}, {"tanh", K::Elementwise, ""},
    {"exp", K::Elementwise, ""},      {"log", K::Elementwise, ""},
    {"sqrt", K::Elementwise, ""},     {"neg", K::Linear, ""},
    {"scale", K::Linear, ""},         {"softmax", K::Softmax, ""},
    {"sum", K::Reduction, ""},        {"max", K::Reduction, ""},
    {"mean", K::Reduction, ""},       {"AllReduce", K::Collective, ""},
    {"AllGather", K::Collective, ""}, {"ReduceScatter", K::Collective, ""},
    {"AllToAll", K::Collective, ""},  {"Permute", K::Collective, ""},
}};

/// Other spellings of built-ins: the blog's `Soft` and Unicode letters...
struct Alias {
    std::string_view spelling;
    std::string_view name;
};
static constexpr std::array<Alias, 5> kAliases{{
    {"Soft", "softmax"},
    {"φ", "phi"},
    {"ϕ", "phi"},
    {"σ", "sigmoid"},
    {"Σ", "sum"},
}};
/// ...and LaTeX command names that are not plain names (`\sigma` is sigmoid, `sigma` a tensor).
static constexpr std::array<Alias, 2> kLatexAliases{{
    {"sigma", "sigmoid"},
    {"varphi", "phi"},
}};

std::span<const FunctionInfo> builtin_functions() {
    return kBuiltins;
}

const FunctionInfo* find_latex_function(std::string_view command) {
    for (const auto& a : kLatexAliases)
        if (a.spelling == command) command = a.name;
    return find_builtin_function(command);
}

/// The bytes a built-in's name or alias can start with: most names asked about (every
/// tensor of a product) are rejected on their first byte.
static constexpr std::array<bool, 256> kFirstBytes = [] {
    std::array<bool, 256> t{};
    for (const auto& f : kBuiltins)
        t[static_cast<unsigned char>(f.name[0])] = true;
    for (const auto& a : kAliases)
        t[static_cast<unsigned char>(a.spelling[0])] = true;
    return t;
}();

const FunctionInfo* find_builtin_function(std::string_view spelling) {
    if (spelling.empty() || !kFirstBytes[static_cast<unsigned char>(spelling[0])]) return nullptr;
    for (const auto& a : kAliases)
        if (a.spelling == spelling) spelling = a.name;
    for (const auto& f : kBuiltins)
        if (f.name == spelling) return &f;
    return nullptr;
}

std::optional<ast::CollectiveKind> parse_collective_name(std::string_view spelling) {
    // Compare letters only, case-insensitively: all-reduce = all_reduce = AllReduce. The
    // letters are gathered in a buffer of their own (a std::string grown a byte at a time,
    // through the locale's isalpha and tolower, cost most of an expectation's conversion);
    // no name has more letters than it holds. ASCII letters, as the "C" locale's isalpha.
    char key[24];
    std::size_t n = 0;
    for (char c : spelling) {
        const char lower = static_cast<char>(c | 0x20);
        if (lower < 'a' || lower > 'z') continue;
        if (n == sizeof key) return std::nullopt;
        key[n++] = lower;
    }
    const std::string_view k(key, n);
    using C = ast::CollectiveKind;
    if (k == "allreduce") return C::AllReduce;
    if (k == "allgather") return C::AllGather;
    if (k == "reducescatter") return C::ReduceScatter;
    if (k == "alltoall") return C::AllToAll;
    if (k == "permute" || k == "collectivepermute") return C::Permute;
    return std::nullopt;
}

std::string_view collective_name(ast::CollectiveKind kind) {
    using C = ast::CollectiveKind;
    switch (kind) {
    case C::AllReduce:
        return "all-reduce";
    case C::AllGather:
        return "all-gather";
    case C::ReduceScatter:
        return "reduce-scatter";
    case C::AllToAll:
        return "all-to-all";
    case C::Permute:
        return "permute";
    }
    return "?";
}

std::optional<int> dtype_size(std::string_view d) {
    if (d == "f64" || d == "i64") return 8;
    if (d == "f32" || d == "i32" || d == "tf32") return 4;
    if (d == "bf16" || d == "f16") return 2;
    if (d == "fp8" || d == "e4m3" || d == "e5m2" || d == "i8") return 1;
    return std::nullopt;
}

} // namespace shardscope
