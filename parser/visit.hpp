// Visitors over the AST: every tensor reference of an expression or statement, in source
// order. (Nodes in ast.hpp, printers in printer.hpp, traversals here.)
#pragma once

#include "ast.hpp"

#include <type_traits>

namespace shardscope::ast {

/// Calls f(const TensorRef&) for every tensor reference under `e`.
template <typename F>
void for_each_ref(const Expr& e, F&& f) {
    std::visit(
        [&](const auto& n) {
            using T = std::decay_t<decltype(n)>;
            if constexpr (std::is_same_v<T, TensorRef>) {
                f(n);
            } else if constexpr (std::is_same_v<T, Call>) {
                for_each_ref(*n.arg, f);
            } else if constexpr (std::is_same_v<T, Product>) {
                for (const auto& x : n.factors)
                    for_each_ref(x, f);
            } else if constexpr (std::is_same_v<T, Sum>) {
                for (const auto& x : n.terms)
                    for_each_ref(x, f);
            } else if constexpr (std::is_same_v<T, Quotient>) {
                for_each_ref(*n.num, f);
                for_each_ref(*n.den, f);
            }
        },
        e.node);
}

/// Calls f(const Index&) for every index written under `e`: the indices of its tensor
/// references and the subscripts of its calls (`softmax_v`, `sum_s`).
template <typename F>
void for_each_index(const Expr& e, F&& f) {
    std::visit(
        [&](const auto& n) {
            using T = std::decay_t<decltype(n)>;
            if constexpr (std::is_same_v<T, TensorRef>) {
                for (const auto& d : n.dims)
                    for (const auto& p : d.parts)
                        f(p);
            } else if constexpr (std::is_same_v<T, Call>) {
                for (const auto& i : n.indices)
                    f(i);
                for_each_index(*n.arg, f);
            } else if constexpr (std::is_same_v<T, Product>) {
                for (const auto& x : n.factors)
                    for_each_index(x, f);
            } else if constexpr (std::is_same_v<T, Sum>) {
                for (const auto& x : n.terms)
                    for_each_index(x, f);
            } else if constexpr (std::is_same_v<T, Quotient>) {
                for_each_index(*n.num, f);
                for_each_index(*n.den, f);
            }
        },
        e.node);
}

/// Calls f(const TensorRef&) for every tensor reference of an equation (left-hand side
/// first) or a chain (its moved tensor side by side, then a product's other factors side by
/// side); other statements have none.
template <typename F>
void for_each_ref(const Statement& s, F&& f) {
    if (const auto* eq = std::get_if<Equation>(&s.node)) {
        f(eq->lhs);
        for_each_ref(eq->rhs, f);
    } else if (const auto* ch = std::get_if<Chain>(&s.node)) {
        f(ch->from);
        for (const auto& st : ch->steps)
            f(st.to);
        for (const auto& r : ch->with)
            f(r);
        for (const auto& st : ch->steps)
            for (const auto& r : st.with)
                f(r);
    }
}

} // namespace shardscope::ast
