// The AST builders of the derivation (grad.cpp): index sets, renaming, and the nodes a
// derived statement is made of (calls, numbers, negations, flattened products), built so
// that the printed text parses back to the same tree.
#pragma once

#include "plan.hpp"

#include "parser/ast.hpp"

#include <functional>
#include <set>
#include <string>
#include <vector>

namespace shardscope::semantics::grad_detail {

using IndexSet = std::set<IndexId>;

template <class N>
ast::Expr ex(N node) {
    ast::Expr e;
    e.node = std::move(node);
    return e;
}

/// An index as the checker names it (letter and primes).
IndexId id_of(const ast::Index& i);

/// The indices written under an expression, or on a tensor reference.
IndexSet indices_of(const ast::Expr& e);
IndexSet indices_of(const ast::TensorRef& r);

/// A tensor's key (`W^0`).
std::string key_of(const ast::TensorRef& r);

/// Applies `f` to every index written under `e` (tensor indices and call subscripts).
void rename_indices(ast::Expr& e, const std::function<void(ast::Index&)>& f);

/// Nodes: `function_{indices}(arg)`, a number, `-x` (a double negation cancels).
ast::Expr call(std::string function, std::vector<ast::Index> indices, ast::Expr arg);
ast::Expr number(std::string text);
ast::Expr negate(ast::Expr x);

/// The product of `factors`, flattened; quotients are lifted (`a (b / c)` is `a b / c`), so
/// the printed text parses back to the same tree.
ast::Expr product(std::vector<ast::Expr> factors);

} // namespace shardscope::semantics::grad_detail
