// Open shardings: the variables, their conflicts, the rewrite (open.hpp).
#include "open.hpp"

#include "diagnostic_codes.hpp"

#include <algorithm>
#include <map>
#include <type_traits>

namespace shardscope::ast {

namespace {

/// Calls f(TensorRef&) (or const) for every tensor reference under an expression.
template <typename E, typename F>
void refs_of_expr(E& e, F&& f) {
    std::visit(
        [&](auto& n) {
            using T = std::decay_t<decltype(n)>;
            if constexpr (std::is_same_v<T, TensorRef>) {
                f(n);
            } else if constexpr (std::is_same_v<T, Call>) {
                refs_of_expr(*n.arg, f);
            } else if constexpr (std::is_same_v<T, Product>) {
                for (auto& x : n.factors)
                    refs_of_expr(x, f);
            } else if constexpr (std::is_same_v<T, Sum>) {
                for (auto& x : n.terms)
                    refs_of_expr(x, f);
            } else if constexpr (std::is_same_v<T, Quotient>) {
                refs_of_expr(*n.num, f);
                refs_of_expr(*n.den, f);
            }
        },
        e.node);
}

/// Calls f(TensorRef&) for every tensor reference of the program's statements.
template <typename P, typename F>
void refs_of_program(P& program, F&& f) {
    for (auto& item : program.items) {
        auto* s = std::get_if<Statement>(&item);
        if (!s) continue;
        if (auto* eq = std::get_if<Equation>(&s->node)) {
            f(eq->lhs);
            refs_of_expr(eq->rhs, f);
        } else if (auto* ch = std::get_if<Chain>(&s->node)) {
            f(ch->from);
            for (auto& r : ch->with)
                f(r);
            for (auto& st : ch->steps) {
                f(st.to);
                for (auto& r : st.with)
                    f(r);
            }
        }
    }
}

std::vector<std::string> axis_names(const Index& ix) {
    std::vector<std::string> out;
    for (const auto& a : ix.open_axes)
        out.push_back(a.name);
    return out;
}

std::string list_text(const std::vector<std::string>& axes) {
    if (axes.empty()) return "any axis";
    std::string out = "{";
    for (const auto& a : axes)
        out += (out.size() > 1 ? "," : "") + a;
    return out + "}";
}

} // namespace

std::string open_key(const TensorRef& ref, const Index& index) {
    std::string out = ref.name;
    if (!ref.label.empty()) out += "^" + ref.label;
    out += " " + index.name + std::string(static_cast<std::size_t>(index.primes), '\'');
    return out;
}

bool has_open(const Program& program) {
    bool found = false;
    refs_of_program(program, [&](const TensorRef& r) {
        for (const auto& d : r.dims)
            for (const auto& p : d.parts)
                found = found || p.open;
    });
    return found;
}

std::vector<OpenDimension> open_dimensions(const Program& program) {
    std::vector<OpenDimension> out;
    std::map<std::string, std::size_t> at;
    refs_of_program(program, [&](const TensorRef& r) {
        for (const auto& d : r.dims)
            for (const auto& p : d.parts) {
                if (!p.open) continue;
                const std::string key = open_key(r, p);
                auto [it, fresh] = at.try_emplace(key, out.size());
                if (fresh) {
                    OpenDimension o;
                    o.key = key;
                    o.tensor = key.substr(0, key.find(' '));
                    o.index = key.substr(key.find(' ') + 1);
                    o.axes = axis_names(p);
                    o.at = p.range;
                    out.push_back(std::move(o));
                }
                ++out[it->second].occurrences;
            }
    });
    return out;
}

std::vector<Diagnostic> open_marker_conflicts(const Program& program) {
    std::vector<Diagnostic> out;
    std::map<std::string, std::pair<std::vector<std::string>, SourceRange>> first;
    refs_of_program(program, [&](const TensorRef& r) {
        for (const auto& d : r.dims)
            for (const auto& p : d.parts) {
                if (!p.open) continue;
                const std::string key = open_key(r, p);
                auto axes = axis_names(p);
                std::vector<std::string> sorted = axes;
                std::sort(sorted.begin(), sorted.end());
                auto [it, fresh] = first.try_emplace(key, sorted, p.range);
                if (fresh || it->second.first == sorted) continue;
                auto before = it->second.first;
                out.push_back({Severity::Error, std::string(code_name(Code::P241)), p.range,
                               "the open dimension " + key + " is left to " + list_text(axes) +
                                   " here but to " + list_text(before) + " on line " +
                                   std::to_string(it->second.second.line) +
                                   ": an open dimension is one choice for the whole program",
                               "write the same axes before '?' at every occurrence"});
            }
    });
    return out;
}

std::vector<OpenRef> open_refs(const Program& program) {
    std::vector<OpenRef> out;
    refs_of_program(program, [&](const TensorRef& r) {
        OpenRef o;
        for (const auto& d : r.dims)
            for (const auto& p : d.parts) {
                if (p.open)
                    o.keys.push_back(open_key(r, p));
                else
                    for (const auto& a : p.axes)
                        o.fixed_axes.push_back(a.name);
            }
        if (!o.keys.empty()) out.push_back(std::move(o));
    });
    return out;
}

std::vector<std::pair<std::string, Index*>> open_indices(Program& program) {
    std::vector<std::pair<std::string, Index*>> out;
    refs_of_program(program, [&](TensorRef& r) {
        for (auto& d : r.dims)
            for (auto& p : d.parts)
                if (p.open) out.emplace_back(open_key(r, p), &p);
    });
    return out;
}

void close_open(Program& program,
                const std::function<std::vector<std::string>(const std::string& key)>& choice) {
    for (auto& [key, ix] : open_indices(program)) {
        const auto axes = choice(key);
        ix->axes.clear();
        for (const auto& a : axes)
            ix->axes.push_back({a, ix->range});
        ix->open = false;
        ix->open_axes.clear();
    }
}

} // namespace shardscope::ast
