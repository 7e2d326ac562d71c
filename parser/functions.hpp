// The built-in function vocabulary (NOTATION.md section 4): canonical names, kinds and the
// spellings people write (ASCII, LaTeX, Unicode). One table for parser and semantics.
#pragma once

#include "ast.hpp"

#include <optional>
#include <span>
#include <string_view>

namespace shardscope {

/// A built-in function: canonical name, kind, and for collectives the collective it performs.
struct FunctionInfo {
    std::string_view name;
    ast::FunctionKind kind;
    std::string_view unicode; ///< pretty spelling, or empty to use `name`
};

/// All built-in functions.
std::span<const FunctionInfo> builtin_functions();

/// The built-in function written as a plain name: canonical (`phi`, `softmax`), the blog's
/// `Soft`, or a Unicode letter (`φ`, `σ`, `Σ`).
const FunctionInfo* find_builtin_function(std::string_view spelling);

/// The built-in function written as a LaTeX command, name without its backslash: the plain
/// names, and LaTeX's own (`sigma`, `varphi`). Plain `sigma` stays a tensor name.
const FunctionInfo* find_latex_function(std::string_view command);

/// Spellings of collectives in `expect` lines: all-reduce, all_reduce, allreduce, AllReduce...
std::optional<ast::CollectiveKind> parse_collective_name(std::string_view spelling);

/// Canonical spelling in expectations and plans: "all-reduce", "all-gather", ...
std::string_view collective_name(ast::CollectiveKind kind);

/// The element types `dtype` and `tensor` accept, and their size in bytes.
std::optional<int> dtype_size(std::string_view dtype);

} // namespace shardscope
