// The AST as JSON, for `shardscope parse --json` and for tools.
#pragma once

#include "ast.hpp"
#include "source.hpp"

#include <nlohmann/json.hpp>

namespace shardscope::parser {

nlohmann::json to_json(const ast::SourceRange& range);
nlohmann::json to_json(const ast::TensorRef& ref);
nlohmann::json to_json(const ast::Expr& expr);
nlohmann::json to_json(const ast::Statement& statement);
nlohmann::json to_json(const ast::Program& program);
nlohmann::json to_json(const Diagnostic& diagnostic);

} // namespace shardscope::parser
