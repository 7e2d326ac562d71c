#include "exec/reference.hpp"

#include "exec/functions.hpp"
#include "exec/interpreter.hpp"
#include "exec/kernels.hpp"
#include "parser/functions.hpp"
#include "parser/printer.hpp"
#include "parser/visit.hpp"

#include <algorithm>
#include <set>

namespace shardscope::exec {

namespace {

using semantics::IndexId;

IndexId id_of(const ast::Index& i) {
    return {i.name, i.primes};
}

class Evaluator {
public:
    Evaluator(const ast::Program& program, const semantics::Plan& plan, LabelTable& labels,
              const DataOptions& data)
        : labels_(labels), data_(data), mesh_(plan.mesh), tape_(plan) {
        for (const auto& s : plan.statements) {
            for (const auto& a : s.result.atoms)
                ranges_[a.index] = a.extent;
            for (const auto& v : s.values)
                for (const auto& a : v.layout.atoms)
                    ranges_[a.index] = a.extent;
        }
        for (const auto& item : program.items)
            if (const auto* s = std::get_if<ast::Statement>(&item))
                if (const auto* f = std::get_if<ast::FnDecl>(&s->node))
                    declared_[f->name] = f->kind;
    }

    /// One run of the schedule (a statement in its layer).
    Tensor<double> run(const ast::Statement& s, const Run& r) {
        tape_.before(r, state_);
        run_ = &r;
        auto out = statement(s);
        run_ = nullptr;
        tape_.after(r, state_);
        return out;
    }

    Tensor<double> statement(const ast::Statement& s) {
        if (const auto* eq = std::get_if<ast::Equation>(&s.node)) return equation(*eq);
        return chain(std::get<ast::Chain>(s.node));
    }

private:
    std::vector<int> atoms(const ast::TensorRef& r) {
        std::vector<int> out;
        for (const auto& d : r.dims)
            for (const auto& p : d.parts)
                out.push_back(labels_.of(id_of(p)));
        return out;
    }
    std::int64_t range(int label) const {
        auto it = ranges_.find(labels_.name(label));
        if (it == ranges_.end())
            throw ExecError("internal: index " + labels_.name(label).text() + " has no range");
        return it->second;
    }

    /// A tensor occurrence: an earlier result (renamed by position) or a program input.
    Tensor<double> load(const ast::TensorRef& r) {
        const auto key = parser::tensor_key(r.name, r.label);
        Tensor<double> x;
        x.labels = atoms(r);
        for (int l : x.labels)
            x.shape.push_back(range(l));
        if (auto it = state_.find(key); it != state_.end()) {
            x.data = it->second.data;
        } else {
            x.data = input_values(run_ ? input_key(*run_, key) : key, x.size(), data_);
        }
        if (static_cast<std::int64_t>(x.data.size()) != x.size())
            throw ExecError(key + " is used with another size than it has");
        return x;
    }

    static void collect(const ast::Expr& e, std::set<int>& out, LabelTable& labels) {
        ast::for_each_index(e, [&](const ast::Index& i) { out.insert(labels.of(id_of(i))); });
    }

    /// Operands of a product or sum: each keeps the indices its siblings or the outside need.
    std::vector<Tensor<double>> operands(const std::vector<ast::Expr>& es,
                                         const std::set<int>& outside) {
        std::vector<std::set<int>> idx(es.size());
        for (std::size_t i = 0; i < es.size(); ++i)
            collect(es[i], idx[i], labels_);
        std::vector<Tensor<double>> out;
        for (std::size_t i = 0; i < es.size(); ++i) {
            auto o = outside;
            for (std::size_t j = 0; j < es.size(); ++j)
                if (j != i) o.insert(idx[j].begin(), idx[j].end());
            out.push_back(eval(es[i], o));
        }
        return out;
    }

    static std::vector<int> first_appearance(const std::vector<Tensor<double>>& ts,
                                             const std::set<int>& keep) {
        std::vector<int> out;
        for (const auto& t : ts)
            for (int l : t.labels)
                if (keep.count(l) && std::find(out.begin(), out.end(), l) == out.end())
                    out.push_back(l);
        return out;
    }

    Tensor<double> eval(const ast::Expr& e, const std::set<int>& outside) {
        return std::visit([&](const auto& n) { return eval_node(n, outside); }, e.node);
    }
    Tensor<double> eval_node(const ast::Number& n, const std::set<int>&) {
        return Tensor<double>::scalar(std::stod(n.text));
    }
    Tensor<double> eval_node(const ast::TensorRef& r, const std::set<int>&) { return load(r); }
    Tensor<double> eval_node(const ast::Product& p, const std::set<int>& outside) {
        auto ops = operands(p.factors, outside);
        std::vector<const Tensor<double>*> ptrs;
        for (const auto& o : ops)
            ptrs.push_back(&o);
        return einsum(ptrs, first_appearance(ops, outside));
    }
    Tensor<double> eval_node(const ast::Sum& s, const std::set<int>& outside) {
        auto ops = operands(s.terms, outside);
        std::set<int> all;
        for (const auto& o : ops)
            all.insert(o.labels.begin(), o.labels.end());
        const auto out = first_appearance(ops, all);
        Tensor<double> acc = ops[0];
        if (s.negated.size() > 0 && s.negated[0]) apply(acc, Unary::Neg);
        for (std::size_t i = 1; i < ops.size(); ++i) {
            std::vector<int> u;
            for (int l : out)
                if (acc.dim_of(l) >= 0 || ops[i].dim_of(l) >= 0) u.push_back(l);
            acc = binary(acc, ops[i],
                         i < s.negated.size() && s.negated[i] ? Binary::Sub : Binary::Add, u);
        }
        return acc;
    }
    Tensor<double> eval_node(const ast::Quotient& q, const std::set<int>& outside) {
        std::set<int> in_num, in_den;
        collect(*q.num, in_num, labels_);
        collect(*q.den, in_den, labels_);
        auto on = outside, od = outside;
        on.insert(in_den.begin(), in_den.end());
        od.insert(in_num.begin(), in_num.end());
        auto num = eval(*q.num, on);
        auto den = eval(*q.den, od);
        std::set<int> all(num.labels.begin(), num.labels.end());
        all.insert(den.labels.begin(), den.labels.end());
        return binary(num, den, Binary::Div, first_appearance({num, den}, all));
    }
    Tensor<double> eval_node(const ast::Call& c, const std::set<int>& outside) {
        auto inner = outside;
        for (const auto& i : c.indices)
            inner.insert(labels_.of(id_of(i)));
        auto x = eval(*c.arg, inner);
        ast::FunctionKind kind = ast::FunctionKind::Elementwise;
        if (const auto* f = find_builtin_function(c.function))
            kind = f->kind;
        else if (auto it = declared_.find(c.function); it != declared_.end())
            kind = it->second;
        auto without = [&](const std::vector<int>& gone) {
            std::vector<int> keep;
            for (int l : x.labels)
                if (std::find(gone.begin(), gone.end(), l) == gone.end()) keep.push_back(l);
            return keep;
        };
        std::vector<int> subs;
        for (const auto& i : c.indices)
            subs.push_back(labels_.of(id_of(i)));
        switch (kind) {
        case ast::FunctionKind::Elementwise:
        case ast::FunctionKind::Linear:
            apply_function(x, c.function, kind == ast::FunctionKind::Linear);
            return x;
        case ast::FunctionKind::Softmax:
            softmax(x, subs.at(0));
            return x;
        case ast::FunctionKind::Reduction: {
            const auto fn = semantics::reduce_fn_of(c.function).value_or(semantics::ReduceFn::Sum);
            auto r = reduce(x, without(subs), semantics::combine_of(fn));
            if (fn == semantics::ReduceFn::Mean) {
                double n = 1;
                for (int l : subs)
                    n *= static_cast<double>(range(l));
                scale(r, 1.0 / n);
            }
            return r;
        }
        case ast::FunctionKind::Collective: {
            if (c.function == "Permute") return ring_step(std::move(x), c);
            // Collectives do not change the logical value, except that AllReduce over a
            // device index sums that index away.
            const bool written_partial = [&] {
                const auto* r = std::get_if<ast::TensorRef>(&c.arg->node);
                return r && !r->partial_axes.empty();
            }();
            if (c.function == "AllReduce" && !written_partial) {
                std::vector<int> gone;
                for (int l : subs)
                    if (x.dim_of(l) >= 0) gone.push_back(l);
                if (!gone.empty()) return reduce(x, without(gone), PartialOp::Sum);
            }
            return x;
        }
        }
        return x;
    }

    /// Permute_{i_k}(x), one step round a ring of g devices: x moved forward by one of g
    /// blocks along i, cyclically (numpy's roll by range/g). What the checker accepts only.
    Tensor<double> ring_step(Tensor<double> x, const ast::Call& c) {
        if (c.indices.size() != 1) throw ExecError("internal: Permute needs one index");
        std::vector<int> ring;
        for (const auto& a : c.indices.front().axes)
            if (!mesh_.resolve(a.name, ring)) throw ExecError("internal: no mesh axis " + a.name);
        std::int64_t g = 1;
        for (int k : ring)
            g *= mesh_.axes.at(static_cast<std::size_t>(k)).size;
        const int d = x.dim_of(labels_.of(id_of(c.indices.front())));
        if (d < 0) throw ExecError("internal: Permute along an index its value lacks");
        const auto n = x.shape[static_cast<std::size_t>(d)], shift = n / g;
        std::int64_t inner = 1;
        for (std::size_t k = static_cast<std::size_t>(d) + 1; k < x.shape.size(); ++k)
            inner *= x.shape[k];
        const std::int64_t outer = n == 0 ? 0 : x.size() / (n * inner);
        auto out = x;
        for (std::int64_t o = 0; o < outer; ++o)
            for (std::int64_t j = 0; j < n; ++j)
                std::copy_n(x.data.begin() + (o * n + j) * inner, inner,
                            out.data.begin() + (o * n + (j + shift) % n) * inner);
        return out;
    }

    Tensor<double> equation(const ast::Equation& eq) {
        const auto lhs = atoms(eq.lhs);
        const std::set<int> outside(lhs.begin(), lhs.end());
        auto v = eval(eq.rhs, outside);
        std::vector<int> keep;
        for (int l : v.labels)
            if (outside.count(l)) keep.push_back(l);
        if (keep.size() != v.labels.size()) v = reduce(v, keep, PartialOp::Sum);
        if (v.labels != lhs) v = permute(v, lhs);
        const auto key = parser::tensor_key(eq.lhs.name, eq.lhs.label);
        if (eq.op == ast::AssignOp::Accumulate) {
            auto old = load(eq.lhs);
            accumulate(old, v, PartialOp::Sum);
            v = std::move(old);
        }
        state_[key] = v;
        return v;
    }

    /// A chain is the identity on values: every factor it moves (the checker's, ast::
    /// chain_moved_positions) is relabelled to each side's indices and stored as its last side
    /// writes it; the first is the statement's value.
    Tensor<double> chain(const ast::Chain& ch) {
        const auto sides = ast::chain_sides(ch);
        std::vector<std::pair<std::string, Tensor<double>>> moved;
        for (std::size_t p : ast::chain_moved_positions(ch)) {
            auto x = load(*sides.front()[p]);
            for (std::size_t s = 1; s < sides.size(); ++s) {
                const auto& to = *sides[s][p];
                x.labels = atoms(to);
                x.shape.clear();
                for (int l : x.labels)
                    x.shape.push_back(range(l));
                if (static_cast<std::int64_t>(x.data.size()) != x.size())
                    throw ExecError("a chain step changes the size of " + to.name);
            }
            const auto& last = *sides.back()[p];
            moved.emplace_back(parser::tensor_key(last.name, last.label), std::move(x));
        }
        for (const auto& [key, x] : moved)
            state_[key] = x;
        return moved.front().second;
    }

    LabelTable& labels_;
    DataOptions data_;
    semantics::Mesh mesh_; ///< the declared mesh: a ring's size (Permute_{i_k})
    std::map<IndexId, std::int64_t> ranges_;
    std::map<std::string, ast::FunctionKind> declared_;
    std::map<std::string, Tensor<double>> state_;
    Tape<std::map<std::string, Tensor<double>>> tape_;
    const Run* run_ = nullptr;
};

} // namespace

std::vector<Tensor<double>> evaluate_reference(const ast::Program& program,
                                               const semantics::Plan& plan, LabelTable& labels,
                                               const DataOptions& data) {
    auto runs = evaluate_runs(program, plan, labels, data);
    std::vector<Tensor<double>> out(plan.statements.size());
    const auto order = schedule(plan);
    for (std::size_t i = 0; i < order.size(); ++i)
        out[order[i].statement] = std::move(runs[i]);
    return out;
}

std::vector<Tensor<double>> evaluate_runs(const ast::Program& program, const semantics::Plan& plan,
                                          LabelTable& labels, const DataOptions& data) {
    Evaluator ev(program, plan, labels, data);
    std::vector<const ast::Statement*> statements;
    for (const auto& item : program.items) {
        const auto* s = std::get_if<ast::Statement>(&item);
        if (s && (std::holds_alternative<ast::Equation>(s->node) ||
                  std::holds_alternative<ast::Chain>(s->node)))
            statements.push_back(s);
    }
    if (statements.size() != plan.statements.size())
        throw ExecError("the program has statements the checker could not plan");
    std::vector<Tensor<double>> out;
    for (const auto& r : schedule(plan))
        out.push_back(ev.run(*statements[r.statement], r));
    return out;
}

} // namespace shardscope::exec
