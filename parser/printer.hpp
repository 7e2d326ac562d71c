// The canonical printer: ASCII (what `shardscope fmt` writes) or pretty Unicode (`r₀`, `W¹`,
// `d′`, `φ`). For every program p, parse(print(p)) == p, in both forms.
#pragma once

#include "ast.hpp"

#include <string>

namespace shardscope::parser {

struct PrintOptions {
    bool unicode = false;
};

std::string print(const ast::Program& program, PrintOptions options = {});
/// One statement on one line, without its trailing comment.
std::string print(const ast::Statement& statement, PrintOptions options = {});
std::string print(const ast::TensorRef& ref, PrintOptions options = {});
std::string print(const ast::Expr& expr, PrintOptions options = {});
std::string print(const ast::Index& index, PrintOptions options = {});
std::string print(const ast::Expect& expect);

/// The identity of a tensor: name plus superscript label (`W^0`), as printed.
std::string tensor_key(const std::string& name, const std::string& label);

} // namespace shardscope::parser
