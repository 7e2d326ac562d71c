#include "grad_builders.hpp"

#include "parser/printer.hpp"
#include "parser/visit.hpp"

#include <algorithm>

namespace shardscope::semantics::grad_detail {

IndexId id_of(const ast::Index& i) {
    return {i.name, i.primes};
}

IndexSet indices_of(const ast::Expr& e) {
    IndexSet s;
    ast::for_each_index(e, [&](const ast::Index& i) { s.insert(id_of(i)); });
    return s;
}

IndexSet indices_of(const ast::TensorRef& r) {
    IndexSet s;
    for (const auto& d : r.dims)
        for (const auto& p : d.parts)
            s.insert(id_of(p));
    return s;
}

std::string key_of(const ast::TensorRef& r) {
    return parser::tensor_key(r.name, r.label);
}

/// Applies `f` to every index written under `e` (tensor indices and call subscripts).
void rename_indices(ast::Expr& e, const std::function<void(ast::Index&)>& f) {
    std::visit(
        [&](auto& n) {
            using T = std::decay_t<decltype(n)>;
            if constexpr (std::is_same_v<T, ast::TensorRef>) {
                for (auto& d : n.dims)
                    for (auto& p : d.parts)
                        f(p);
            } else if constexpr (std::is_same_v<T, ast::Call>) {
                for (auto& i : n.indices)
                    f(i);
                rename_indices(*n.arg, f);
            } else if constexpr (std::is_same_v<T, ast::Product>) {
                for (auto& x : n.factors)
                    rename_indices(x, f);
            } else if constexpr (std::is_same_v<T, ast::Sum>) {
                for (auto& x : n.terms)
                    rename_indices(x, f);
            } else if constexpr (std::is_same_v<T, ast::Quotient>) {
                rename_indices(*n.num, f);
                rename_indices(*n.den, f);
            }
        },
        e.node);
}

ast::Expr call(std::string function, std::vector<ast::Index> indices, ast::Expr arg) {
    return ex(
        ast::Call{std::move(function), std::move(indices), ast::Box<ast::Expr>(std::move(arg))});
}

ast::Expr number(std::string text) {
    return ex(ast::Number{std::move(text)});
}

ast::Expr negate(ast::Expr x) {
    if (auto* s = std::get_if<ast::Sum>(&x.node);
        s && s->terms.size() == 1 && !s->negated.empty() && s->negated[0])
        return s->terms[0]; // --x = x
    return ex(ast::Sum{{std::move(x)}, {true}});
}

/// The product of `factors`, flattened; quotients are lifted (`a (b / c)` is `a b / c`), so
/// the printed text parses back to the same tree.
ast::Expr product(std::vector<ast::Expr> factors) {
    std::vector<ast::Expr> nums, dens;
    std::function<void(ast::Expr)> add = [&](ast::Expr f) {
        if (auto* p = std::get_if<ast::Product>(&f.node)) {
            for (auto& x : p->factors)
                add(std::move(x));
        } else if (auto* q = std::get_if<ast::Quotient>(&f.node)) {
            add(std::move(*q->num));
            dens.push_back(std::move(*q->den));
        } else {
            nums.push_back(std::move(f));
        }
    };
    for (auto& f : factors)
        add(std::move(f));
    auto join = [](std::vector<ast::Expr> v) {
        if (v.empty()) return number("1");
        if (v.size() == 1) return std::move(v[0]);
        return ex(ast::Product{std::move(v)});
    };
    // A negation among the factors moves to the front of the product: -(a b).
    bool negative = false;
    for (auto& f : nums)
        if (auto* s = std::get_if<ast::Sum>(&f.node);
            s && s->terms.size() == 1 && !s->negated.empty() && s->negated[0]) {
            negative = !negative;
            ast::Expr inner = std::move(s->terms[0]);
            f = std::move(inner);
        }
    // Flatten again: a negated product may have been unwrapped into a product.
    std::vector<ast::Expr> flat;
    for (auto& f : nums) {
        if (auto* p = std::get_if<ast::Product>(&f.node))
            for (auto& x : p->factors)
                flat.push_back(std::move(x));
        else
            flat.push_back(std::move(f));
    }
    ast::Expr out = dens.empty() ? join(std::move(flat))
                                 : ex(ast::Quotient{ast::Box<ast::Expr>(join(std::move(flat))),
                                                    ast::Box<ast::Expr>(join(std::move(dens)))});
    return negative ? negate(std::move(out)) : out;
}

} // namespace shardscope::semantics::grad_detail
