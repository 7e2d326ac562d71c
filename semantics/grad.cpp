// Reverse-mode differentiation in the notation (README.md, "Gradients").
//
// The program is swept backwards. Each equation's right-hand side is differentiated as an
// expression tree with the checker's own index scoping (an index is contracted at the lowest
// product where nothing outside needs it): the cotangent of a product's factor is the product
// of the outer cotangent with the other factors, an elementwise function multiplies by its
// derivative at the (recomputed) argument, and so on down to the tensor references, each of
// which receives one contribution. A chain's backward is the reversed chain. Gradients keep
// the placement of the tensor they belong to (a partial tensor's gradient is replicated), and
// the gradient of a tensor an all-gather produced stays partial on the gathered axes, so the
// reversed gather is a reduce-scatter (FSDP, sequence parallelism). The derived statements are
// printed, parsed and checked like any other: their plans hold the backward collectives.
#include "grad.hpp"

#include "grad_builders.hpp"
#include "grad_emit.hpp"
#include "report.hpp"

#include "parser/diagnostic_codes.hpp"
#include "parser/functions.hpp"
#include "parser/printer.hpp"
#include "parser/visit.hpp"

#include <algorithm>
#include <functional>
#include <optional>
#include <set>

namespace shardscope::semantics {

std::string derivative_name(const std::string& function) {
    return "d" + function;
}

int GradResult::errors() const {
    return static_cast<int>(
        std::count_if(diagnostics.begin(), diagnostics.end(),
                      [](const auto& d) { return d.severity == Severity::Error; }));
}

using namespace grad_detail;

namespace {

/// A placement per written part of a tensor (flattened dimensions), and its partial axes.
struct Layout {
    std::vector<std::vector<int>> axes;
    std::vector<int> partial;
    bool operator==(const Layout&) const = default;
};

Layout layout_of(const TensorLayout& t) {
    Layout l;
    for (const auto& a : t.atoms)
        l.axes.push_back(a.axes.to_vector());
    for (std::size_t k = 0; k < t.placements.size(); ++k)
        if (t.placements[k].kind == Placement::Kind::Partial &&
            t.placements[k].reduce == PartialOp::Sum)
            l.partial.push_back(static_cast<int>(k));
    return l;
}

/// A gradient's layout: the tensor's, except that partial becomes replicated.
Layout dual(Layout l) {
    l.partial.clear();
    return l;
}

/// A current gradient: the tensor that holds it and its layout.
struct Grad {
    std::string name;
    std::string label;
    Layout layout;
    std::vector<std::int64_t> shape; ///< its written dimensions' extents (global_shape)
};

/// One contribution to the gradient of a tensor occurrence.
struct Contribution {
    const ast::TensorRef* use;
    ast::Expr expr;
};

class Deriver {
public:
    Deriver(const ast::Program& program, const Plan& plan, std::vector<Diagnostic>& diags)
        : program_(program), plan_(plan), diags_(diags) {}

    bool prepare() {
        int open = -1; // the repeat being read
        for (const auto& item : program_.items) {
            const auto* s = std::get_if<ast::Statement>(&item);
            if (!s) continue;
            if (const auto* rp = std::get_if<ast::RepeatDecl>(&s->node)) {
                if (rp->reverse) {
                    diag(Severity::Error, Code::G203, s->range,
                         "the backward of a reverse repeat (a derived backward pass) is not "
                         "derived",
                         "differentiate the forward program");
                    return false;
                }
                blocks_.push_back(*rp);
                block_first_.push_back(-1);
                open = static_cast<int>(blocks_.size()) - 1;
            }
            if (std::holds_alternative<ast::EndDecl>(s->node)) open = -1;
            if (const auto* f = std::get_if<ast::FnDecl>(&s->node)) declared_[f->name] = f->kind;
            if (const auto* d = std::get_if<ast::DimDecl>(&s->node))
                for (const auto& b : d->bindings)
                    own_range_.insert(id_of(b.index));
            if (const auto* sp = std::get_if<ast::SplitDecl>(&s->node)) {
                program_indices_.insert(id_of(sp->from));
                for (const auto& p : sp->parts) {
                    own_range_.insert(id_of(p));
                    program_indices_.insert(id_of(p));
                }
            }
            if (const auto* d = std::get_if<ast::DimDecl>(&s->node))
                for (const auto& b : d->bindings)
                    program_indices_.insert(id_of(b.index));
            ast::for_each_ref(*s, [&](const ast::TensorRef& r) {
                for (const auto& x : indices_of(r))
                    program_indices_.insert(x);
            });
            if (const auto* eq = std::get_if<ast::Equation>(&s->node))
                for (const auto& x : indices_of(eq->rhs))
                    program_indices_.insert(x);
            const auto* eq = std::get_if<ast::Equation>(&s->node);
            const auto* ch = std::get_if<ast::Chain>(&s->node);
            ast::for_each_ref(*s, [&](const ast::TensorRef& r) { taken_.insert(key_of(r)); });
            if (const auto* t = std::get_if<ast::TensorDecl>(&s->node))
                taken_.insert(parser::tensor_key(t->name, t->label));
            if (!eq && !ch) continue;
            Fwd f;
            f.stmt = s;
            f.eq = eq;
            f.ch = ch;
            f.block = open;
            if (open >= 0 && block_first_[static_cast<std::size_t>(open)] < 0)
                block_first_[static_cast<std::size_t>(open)] = static_cast<int>(fwd_.size());
            fwd_.push_back(std::move(f));
        }
        if (fwd_.size() != plan_.statements.size()) {
            diag(Severity::Error, Code::G100, {},
                 "the checker could not plan every statement; fix the errors first");
            return false;
        }
        for (const auto& st : plan_.statements)
            for (const auto& v : st.values)
                for (const auto& a : v.layout.atoms)
                    ranges_[a.index] = a.extent;
        // Versions: which statement produced the value each occurrence reads.
        std::map<std::string, int> last_def;
        for (std::size_t i = 0; i < fwd_.size(); ++i) {
            auto& f = fwd_[i];
            f.sp = &plan_.statements[i];
            std::vector<const ast::TensorRef*> refs;
            if (f.eq) {
                ast::for_each_ref(f.eq->rhs, [&](const ast::TensorRef& r) { refs.push_back(&r); });
                f.target = key_of(f.eq->lhs);
                f.target_ref = &f.eq->lhs;
            } else {
                refs.push_back(&f.ch->from);
                for (const auto& st : f.ch->steps)
                    refs.push_back(&st.to);
                f.target = key_of(f.ch->steps.back().to);
                f.target_ref = &f.ch->steps.back().to;
            }
            if (f.ch && f.sp->operands.size() > refs.size()) {
                // A chain of products that moves several factors lists each one's occurrences
                // (issue 19); the backward reverses one tensor's chain.
                diag(Severity::Error, Code::G102, f.stmt->range,
                     "this chain moves several tensors, and grad reverses a chain of one",
                     "move each tensor in a chain of its own (A_{i_0 j} -> A_{i j} and "
                     "B_{j k_0} -> B_{j k})");
                return false;
            }
            if (refs.size() != f.sp->operands.size()) {
                diag(Severity::Error, Code::G101, f.stmt->range,
                     "internal: the plan of this statement does not list its tensor occurrences");
                return false;
            }
            for (std::size_t r = 0; r < refs.size(); ++r) {
                f.operand[refs[r]] = static_cast<int>(r);
                if (f.ch && r > 0) continue; // chain steps are written, not read
                auto it = last_def.find(key_of(*refs[r]));
                f.producer[refs[r]] = it == last_def.end() ? -1 : it->second;
                if (it == last_def.end()) inputs_.insert(key_of(*refs[r]));
            }
            if (f.eq && f.eq->op == ast::AssignOp::Accumulate) {
                auto it = last_def.find(f.target);
                f.producer[&f.eq->lhs] = it == last_def.end() ? -1 : it->second;
                if (it == last_def.end()) inputs_.insert(f.target);
            }
            defs_[f.target].push_back(static_cast<int>(i));
            last_def[f.target] = static_cast<int>(i);
        }
        for (const auto& m : plan_.mesh.axes)
            axis_names_.push_back(m.name);
        // Gradient names: the inputs' first (the gradients people ask for get the plain
        // `g` + name where they can), then the defined tensors', in order of appearance.
        for (int pass = 0; pass < 2; ++pass)
            for (const auto& f : fwd_)
                ast::for_each_ref(*f.stmt, [&](const ast::TensorRef& r) {
                    if ((pass == 0) == (inputs_.count(key_of(r)) > 0)) gradient_name(r);
                });
        return true;
    }

    const std::set<std::string>& inputs() const { return inputs_; }
    /// The forward program's repeats, in order.
    const std::vector<ast::RepeatDecl>& blocks() const { return blocks_; }
    bool defined(const std::string& key) const { return defs_.count(key) > 0; }

    /// The reverse sweep.
    void run() {
        sweeping_ = true;
        for (std::size_t i = fwd_.size(); i-- > 0;)
            statement(static_cast<int>(i));
        sweeping_ = false;
    }

    std::vector<Emitted>& emitted() { return out_; }
    const std::vector<Seed>& seeds() const { return seeds_; }
    const std::set<std::string>& functions() const { return functions_used_; }

    /// The tensor holding the gradient of `key` at the end, or empty.
    std::string final_gradient(const std::string& key) const {
        if (auto it = cur_.find(key); it != cur_.end() && inputs_.count(key))
            return parser::tensor_key(it->second.name, it->second.label);
        if (auto it = first_def_grad_.find(key); it != first_def_grad_.end()) return it->second;
        return {};
    }

private:
    struct Fwd {
        const ast::Statement* stmt = nullptr;
        const ast::Equation* eq = nullptr;
        const ast::Chain* ch = nullptr;
        const StatementPlan* sp = nullptr;
        int block = -1; ///< the repeat it is in (blocks_), -1: none
        std::string target;
        const ast::TensorRef* target_ref = nullptr;
        std::map<const ast::TensorRef*, int> operand;
        std::map<const ast::TensorRef*, int> producer;
    };

    void diag(Severity s, Code code, const ast::SourceRange& r, std::string msg,
              std::string fix = {}) {
        Diagnostic d{s, std::string(code_name(code)), r, std::move(msg), std::move(fix)};
        // During the sweep, a problem counts only if its statement's backward is kept.
        if (sweeping_)
            pending_[cur_stmt_->range.line].push_back(std::move(d));
        else
            diags_.push_back(std::move(d));
    }

public:
    /// Reports the sweep's problems of the forward statements on `lines`.
    /// Returns the lines whose backward has errors.
    std::set<std::uint32_t> report(const std::set<std::uint32_t>& lines) {
        std::set<std::uint32_t> bad;
        for (auto& [line, ds] : pending_)
            if (lines.count(line))
                for (auto& d : ds) {
                    if (d.severity == Severity::Error) bad.insert(line);
                    diags_.push_back(std::move(d));
                }
        pending_.clear();
        return bad;
    }

private:
    ast::FunctionKind kind_of(const std::string& f) const {
        if (const auto* b = find_builtin_function(f)) return b->kind;
        auto it = declared_.find(f);
        return it == declared_.end() ? ast::FunctionKind::Elementwise : it->second;
    }

    // ---- names ------------------------------------------------------------------------------

    /// `g` + name, with more `g`s while that tensor exists.
    std::string gradient_name(const ast::TensorRef& r) {
        const auto key = key_of(r);
        if (auto it = gname_.find(key); it != gname_.end()) return it->second;
        std::string name = "g" + r.name;
        while (taken_.count(parser::tensor_key(name, r.label)))
            name = "g" + name;
        taken_.insert(parser::tensor_key(name, r.label));
        gname_[key] = name;
        return name;
    }

    /// A name for a new input or temporary of the derived program: `base`, `base2`, ...
    /// (`reserved`: base is a gradient name, already set aside for this tensor).
    std::string unused_name(const std::string& base, const std::string& label,
                            bool reserved = false) {
        std::string name = base;
        for (int n = 2;
             used_.count(parser::tensor_key(name, label)) ||
             ((!reserved || name != base) && taken_.count(parser::tensor_key(name, label)));
             ++n)
            name = base + std::to_string(n);
        taken_.insert(parser::tensor_key(name, label));
        return name;
    }

    // ---- references -------------------------------------------------------------------------

    /// `r`'s indices under another name, laid out as `l`.
    ast::TensorRef ref_as(const std::string& name, const std::string& label,
                          const ast::TensorRef& r, const Layout& l) {
        ast::TensorRef out;
        out.name = name;
        out.label = label;
        out.style = r.style;
        std::size_t pos = 0;
        for (const auto& d : r.dims) {
            ast::Dimension nd;
            nd.grouped = d.grouped;
            for (const auto& p : d.parts) {
                ast::Index ix;
                ix.name = p.name;
                ix.primes = p.primes;
                if (pos < l.axes.size())
                    for (int k : l.axes[pos])
                        ix.axes.push_back({axis_names_[static_cast<std::size_t>(k)], {}});
                ++pos;
                nd.parts.push_back(std::move(ix));
            }
            out.dims.push_back(std::move(nd));
        }
        if (out.style == ast::IndexStyle::None && !out.dims.empty())
            out.style = ast::IndexStyle::Subscript;
        for (int k : l.partial)
            out.partial_axes.push_back({axis_names_[static_cast<std::size_t>(k)], {}});
        return out;
    }

    /// The shape of occurrence `r` of statement `i`: its written dimensions' extents, as
    /// check's S106 compares them (`x_{(ij)}` and `x_{ij}` are two shapes: the gradient of
    /// one cannot be `+=`'d into the other's).
    std::vector<std::int64_t> shape_of(int i, const ast::TensorRef& r) const {
        const auto& f = fwd_[static_cast<std::size_t>(i)];
        const TensorLayout* t = &f.sp->result;
        if (auto it = f.operand.find(&r); it != f.operand.end())
            t = &f.sp->operands[static_cast<std::size_t>(it->second)];
        return t->global_shape.to_vector();
    }

    /// Whether occurrence `r` has the shape of gradient `g` (a name read with two shapes is
    /// two different inputs to the executor, and has no one gradient).
    bool fits(const Grad& g, const ast::TensorRef& r) {
        if (g.shape == shape_of(cur_index_, r)) return true;
        diag(Severity::Error, Code::G202, r.range,
             key_of(r) + " is used here with another shape than elsewhere: its gradient is not "
                         "derived through this use",
             "give tensors of different shapes different names");
        return false;
    }

    /// The layout of the gradient of the value occurrence `r` of statement `i` reads.
    Layout gradient_layout(int i, const ast::TensorRef& r) {
        const auto& f = fwd_[static_cast<std::size_t>(i)];
        Layout l;
        if (auto it = f.operand.find(&r); it != f.operand.end())
            l = dual(layout_of(f.sp->operands[static_cast<std::size_t>(it->second)]));
        else
            l = dual(layout_of(f.sp->result)); // `+=`: the accumulator as stored
        auto p = f.producer.find(&r);
        if (p == f.producer.end() || p->second < 0) return l;
        // The value an all-gather produced: its gradient stays partial on the gathered axes.
        const auto& pf = fwd_[static_cast<std::size_t>(p->second)];
        if (!pf.ch) return l;
        const auto& from = pf.sp->operands.front();
        const auto& to = pf.sp->result;
        for (std::size_t k = 0; k < from.placements.size() && k < to.placements.size(); ++k) {
            const bool gathered = from.placements[k].kind == Placement::Kind::Shard &&
                                  to.placements[k].kind == Placement::Kind::Replicate;
            bool sharded_here = false;
            for (const auto& a : l.axes)
                sharded_here |= std::count(a.begin(), a.end(), static_cast<int>(k)) > 0;
            if (gathered && !sharded_here) l.partial.push_back(static_cast<int>(k));
        }
        std::sort(l.partial.begin(), l.partial.end());
        return l;
    }

    // ---- index scoping (the checker's rule) -------------------------------------------------

    /// The indices `e`'s value keeps when `outside` is what the rest of the statement needs.
    IndexSet free_of(const ast::Expr& e, const IndexSet& outside) const {
        return std::visit(
            [&](const auto& n) -> IndexSet {
                using T = std::decay_t<decltype(n)>;
                if constexpr (std::is_same_v<T, ast::Number>) {
                    return {};
                } else if constexpr (std::is_same_v<T, ast::TensorRef>) {
                    return indices_of(n);
                } else if constexpr (std::is_same_v<T, ast::Product>) {
                    IndexSet out;
                    auto ops = operand_outsides(n.factors, outside);
                    for (std::size_t i = 0; i < n.factors.size(); ++i)
                        for (const auto& x : free_of(n.factors[i], ops[i]))
                            if (outside.count(x)) out.insert(x);
                    return out;
                } else if constexpr (std::is_same_v<T, ast::Call>) {
                    IndexSet inner = outside;
                    for (const auto& i : n.indices)
                        inner.insert(id_of(i));
                    auto f = free_of(*n.arg, inner);
                    if (kind_of(n.function) == ast::FunctionKind::Reduction)
                        for (const auto& i : n.indices)
                            f.erase(id_of(i));
                    return f;
                } else if constexpr (std::is_same_v<T, ast::Sum>) {
                    IndexSet out;
                    auto ops = operand_outsides(n.terms, outside);
                    for (std::size_t i = 0; i < n.terms.size(); ++i)
                        for (const auto& x : free_of(n.terms[i], ops[i]))
                            out.insert(x);
                    return out;
                } else {
                    auto on = outside, od = outside;
                    for (const auto& x : indices_of(*n.den))
                        on.insert(x);
                    for (const auto& x : indices_of(*n.num))
                        od.insert(x);
                    auto out = free_of(*n.num, on);
                    for (const auto& x : free_of(*n.den, od))
                        out.insert(x);
                    return out;
                }
            },
            e.node);
    }

    /// For each operand of a product or sum: `outside` plus what its siblings mention. The
    /// siblings' indices as the union of those before the operand and those after it, each
    /// union built once: collecting every sibling for every operand was quadratic in their
    /// number (a product of hundreds of factors).
    static std::vector<IndexSet> operand_outsides(const std::vector<ast::Expr>& ops,
                                                  const IndexSet& outside) {
        const std::size_t n = ops.size();
        std::vector<IndexSet> after(n + 1); // after[i]: the indices of operands i..
        for (std::size_t i = n; i-- > 0;) {
            after[i] = indices_of(ops[i]);
            after[i].insert(after[i + 1].begin(), after[i + 1].end());
        }
        std::vector<IndexSet> out;
        out.reserve(n);
        IndexSet before = outside; // `outside` and the indices of the operands before i
        for (std::size_t i = 0; i < n; ++i) {
            IndexSet s = before;
            s.insert(after[i + 1].begin(), after[i + 1].end());
            out.push_back(std::move(s));
            const auto mine = indices_of(ops[i]);
            before.insert(mine.begin(), mine.end());
        }
        return out;
    }

    // ---- copies of forward subexpressions ---------------------------------------------------

    /// A fresh index over the same range: more primes.
    ast::Index fresh(const ast::Index& i) {
        auto& p = primes_[i.name];
        ast::Index out = i;
        // Not an index the program uses anywhere: that one may have a range of its own.
        do
            out.primes = ++p;
        while (program_indices_.count(id_of(out)));
        out.range = {};
        if (i.primes > 0 && own_range_.count(id_of(i)) && !warned_range_.count(id_of(i))) {
            warned_range_.insert(id_of(i));
            diag(Severity::Warning, Code::G110, cur_stmt_->range,
                 "the backward renames the contracted index " + id_of(i).text() + " to " +
                     id_of(out).text() + ", which takes the range of " + i.name +
                     ", not the declared range of " + id_of(i).text(),
                 "give " + id_of(i).text() + " a name of its own (another letter)");
        }
        return out;
    }

    /// The backward reads the forward value of `r` (statement `i`): the derived program reads
    /// it after the whole forward program ran, so it must not have been redefined since.
    void needs_value(const ast::TensorRef& r) {
        const auto key = key_of(r);
        auto it = defs_.find(key);
        if (it == defs_.end()) return;
        for (int j : it->second) {
            if (j < cur_index_) continue;
            const auto& f = fwd_[static_cast<std::size_t>(j)];
            // A chain moves the same values (unless it regroups the dimensions).
            if (f.ch && f.ch->steps.back().to.dims.size() == r.dims.size()) continue;
            if (!reported_.insert(key + "@" + std::to_string(cur_index_)).second) return;
            diag(Severity::Error, Code::G201, cur_stmt_->range,
                 "the backward of this statement needs " + key + " as it is here, but line " +
                     std::to_string(f.stmt->range.line) + " gives " + key +
                     " a new value afterwards",
                 "give the new value its own name");
            return;
        }
    }

    /// A copy of forward subexpression `s` (whose value keeps `keep`), with the indices it
    /// contracts renamed to fresh ones: all of them (`all`), or those that the statement
    /// also uses outside `s`.
    ast::Expr copy(const ast::Expr& s, const IndexSet& keep, bool all) {
        ast::for_each_ref(s, [&](const ast::TensorRef& r) { needs_value(r); });
        const auto inside = indices_of(s);
        std::map<IndexId, int> count_in;
        ast::for_each_index(s, [&](const ast::Index& i) { count_in[id_of(i)]++; });
        std::map<IndexId, ast::Index> rename;
        for (const auto& i : inside) {
            if (keep.count(i)) continue;
            if (!all && count_in[i] >= occurrences_[i]) continue;
            ast::Index src;
            src.name = i.name;
            src.primes = i.primes;
            rename[i] = fresh(src);
        }
        ast::Expr out = s;
        if (!rename.empty())
            rename_indices(out, [&](ast::Index& ix) {
                auto it = rename.find(id_of(ix));
                if (it == rename.end()) return;
                ix.name = it->second.name;
                ix.primes = it->second.primes;
            });
        clear_ranges(out);
        return out;
    }

    static void clear_ranges(ast::Expr& e) {
        e.range = {};
        std::visit(
            [&](auto& n) {
                using T = std::decay_t<decltype(n)>;
                if constexpr (std::is_same_v<T, ast::Call>) {
                    clear_ranges(*n.arg);
                } else if constexpr (std::is_same_v<T, ast::Product>) {
                    for (auto& x : n.factors)
                        clear_ranges(x);
                } else if constexpr (std::is_same_v<T, ast::Sum>) {
                    for (auto& x : n.terms)
                        clear_ranges(x);
                } else if constexpr (std::is_same_v<T, ast::Quotient>) {
                    clear_ranges(*n.num);
                    clear_ranges(*n.den);
                }
            },
            e.node);
    }

    /// A copy of cotangent `c` with the indices it contracts renamed (it appears twice).
    ast::Expr copy_cotangent(const ast::Expr& c, const IndexSet& keep) {
        std::map<IndexId, ast::Index> rename;
        for (const auto& i : indices_of(c)) {
            if (keep.count(i)) continue;
            ast::Index src;
            src.name = i.name;
            src.primes = i.primes;
            rename[i] = fresh(src);
        }
        ast::Expr out = c;
        rename_indices(out, [&](ast::Index& ix) {
            auto it = rename.find(id_of(ix));
            if (it == rename.end()) return;
            ix.name = it->second.name;
            ix.primes = it->second.primes;
        });
        return out;
    }

    std::int64_t range_of(const IndexId& i) const {
        if (auto it = ranges_.find(i); it != ranges_.end()) return it->second;
        if (auto it = ranges_.find({i.name, 0}); it != ranges_.end()) return it->second;
        return 1;
    }

    // ---- the rules --------------------------------------------------------------------------

    /// Sends cotangent `c` (the gradient of `e`'s value) down to the tensor occurrences of `e`.
    void backprop(const ast::Expr& e, const IndexSet& outside, ast::Expr c,
                  std::vector<Contribution>& out) {
        std::visit([&](const auto& n) { rule(n, e, outside, std::move(c), out); }, e.node);
    }

    void rule(const ast::Number&, const ast::Expr&, const IndexSet&, ast::Expr,
              std::vector<Contribution>&) {}

    void rule(const ast::TensorRef& r, const ast::Expr&, const IndexSet&, ast::Expr c,
              std::vector<Contribution>& out) {
        // What the cotangent keeps when the statement's left-hand side has r's indices.
        const auto have = free_of(c, indices_of(r));
        bool missing = false;
        for (const auto& i : indices_of(r))
            missing |= !have.count(i);
        if (missing) {
            // A broadcast: the cotangent lacks some of r's indices (they were summed).
            ast::TensorRef shape = r;
            shape.range = {};
            functions_used_.insert("ones");
            c = product({std::move(c), call("ones", {}, ex(std::move(shape)))});
        }
        out.push_back({&r, std::move(c)});
    }

    void rule(const ast::Product& p, const ast::Expr&, const IndexSet& outside, ast::Expr c,
              std::vector<Contribution>& out) {
        const auto outs = operand_outsides(p.factors, outside);
        for (std::size_t i = 0; i < p.factors.size(); ++i) {
            if (std::holds_alternative<ast::Number>(p.factors[i].node)) continue;
            // The cotangent takes the factor's place: x w -> gy w (for x), x gy (for w).
            std::vector<ast::Expr> fs;
            for (std::size_t j = 0; j < p.factors.size(); ++j)
                fs.push_back(j == i ? c
                                    : copy(p.factors[j], free_of(p.factors[j], outs[j]), false));
            backprop(p.factors[i], outs[i], product(std::move(fs)), out);
        }
    }

    void rule(const ast::Sum& s, const ast::Expr&, const IndexSet& outside, ast::Expr c,
              std::vector<Contribution>& out) {
        const auto outs = operand_outsides(s.terms, outside);
        const auto cf = indices_of(c);
        for (std::size_t i = 0; i < s.terms.size(); ++i) {
            ast::Expr ci = c;
            // Indices the cotangent has and this term does not keep are summed first when the
            // term uses the same names inside (a reduction over them).
            const auto keep = free_of(s.terms[i], outs[i]);
            const auto inside = indices_of(s.terms[i]);
            std::vector<ast::Index> extra;
            for (const auto& x : cf)
                if (!keep.count(x) && inside.count(x)) extra.push_back({x.name, x.primes, {}, {}});
            if (!extra.empty()) ci = call("sum", extra, std::move(ci));
            if (i < s.negated.size() && s.negated[i]) ci = negate(std::move(ci));
            backprop(s.terms[i], outs[i], std::move(ci), out);
        }
    }

    void rule(const ast::Quotient& q, const ast::Expr&, const IndexSet& outside, ast::Expr c,
              std::vector<Contribution>& out) {
        auto on = outside, od = outside;
        for (const auto& x : indices_of(*q.den))
            on.insert(x);
        for (const auto& x : indices_of(*q.num))
            od.insert(x);
        const auto keep_num = free_of(*q.num, on);
        const auto keep_den = free_of(*q.den, od);
        // d(a/b)/da = 1/b
        backprop(*q.num, on,
                 ex(ast::Quotient{ast::Box<ast::Expr>(c),
                                  ast::Box<ast::Expr>(copy(*q.den, keep_den, false))}),
                 out);
        // d(a/b)/db = -a/b^2
        if (!std::holds_alternative<ast::Number>(q.den->node)) {
            auto num = product({c, copy(*q.num, keep_num, false)});
            auto den = product({copy(*q.den, keep_den, false), copy(*q.den, keep_den, true)});
            backprop(*q.den, od,
                     negate(ex(ast::Quotient{ast::Box<ast::Expr>(std::move(num)),
                                             ast::Box<ast::Expr>(std::move(den))})),
                     out);
        }
    }

    void rule(const ast::Call& cl, const ast::Expr& e, const IndexSet& outside, ast::Expr c,
              std::vector<Contribution>& out) {
        IndexSet inner = outside;
        for (const auto& i : cl.indices)
            inner.insert(id_of(i));
        const auto keep = free_of(*cl.arg, inner);
        switch (kind_of(cl.function)) {
        case ast::FunctionKind::Linear:
            // Elementwise and linear (neg, scale, a declared linear fn): its own adjoint.
            backprop(*cl.arg, inner, call(cl.function, {}, std::move(c)), out);
            return;
        case ast::FunctionKind::Elementwise: {
            ast::Expr d = cl.function == "exp"
                              ? call("exp", {}, copy(*cl.arg, keep, true))
                              : call(derivative_name(cl.function), {}, copy(*cl.arg, keep, true));
            if (cl.function != "exp") functions_used_.insert(derivative_name(cl.function));
            backprop(*cl.arg, inner, product({std::move(c), std::move(d)}), out);
            return;
        }
        case ast::FunctionKind::Reduction: {
            if (cl.function == "sum") {
                backprop(*cl.arg, inner, std::move(c), out);
            } else if (cl.function == "mean") {
                std::int64_t n = 1;
                for (const auto& i : cl.indices)
                    n *= range_of(id_of(i));
                backprop(*cl.arg, inner,
                         ex(ast::Quotient{ast::Box<ast::Expr>(std::move(c)),
                                          ast::Box<ast::Expr>(number(std::to_string(n)))}),
                         out);
            } else {
                // max: the cotangent goes to the maximum, dmax(x - max_s(x)) = [x == max].
                auto x1 = copy(*cl.arg, keep, true);
                auto x2 = copy(*cl.arg, keep, true);
                std::vector<ast::Index> subs;
                for (const auto& i : cl.indices)
                    subs.push_back({i.name, i.primes, {}, {}});
                auto diff =
                    ex(ast::Sum{{std::move(x1), call("max", subs, std::move(x2))}, {false, true}});
                functions_used_.insert("dmax");
                backprop(*cl.arg, inner, product({std::move(c), call("dmax", {}, std::move(diff))}),
                         out);
            }
            return;
        }
        case ast::FunctionKind::Softmax: {
            // y = softmax_v(x): gx = y (g - sum_v(g y)).
            std::vector<ast::Index> subs;
            for (const auto& i : cl.indices)
                subs.push_back({i.name, i.primes, {}, {}});
            auto y1 = call("softmax", subs, copy(*cl.arg, keep, true));
            auto y2 = call("softmax", subs, copy(*cl.arg, keep, true));
            const auto keep_c = free_of(e, outside);
            auto c2 = copy_cotangent(c, keep_c);
            auto inner_sum = call("sum", subs, product({std::move(c2), std::move(y2)}));
            auto diff = ex(ast::Sum{{std::move(c), std::move(inner_sum)}, {false, true}});
            backprop(*cl.arg, inner, product({std::move(y1), std::move(diff)}), out);
            return;
        }
        case ast::FunctionKind::Collective:
            if (cl.function == "Permute") {
                // One step round a ring of g devices moves the value forward by one block: its
                // transpose moves it back by one, which is g - 1 steps forward.
                std::vector<int> ring;
                for (const auto& a :
                     cl.indices.empty() ? std::vector<ast::AxisRef>{} : cl.indices.front().axes)
                    plan_.mesh.resolve(a.name, ring);
                std::int64_t g = 1;
                for (int k : ring)
                    g *= plan_.mesh.axes.at(static_cast<std::size_t>(k)).size;
                for (std::int64_t n = 1; n < g; ++n)
                    c = call(cl.function, cl.indices, std::move(c));
            }
            // Collectives move values without changing them (an AllReduce over a device index
            // sums it: the cotangent is broadcast back, as for sum).
            backprop(*cl.arg, inner, std::move(c), out);
            return;
        }
    }

    // ---- statements -------------------------------------------------------------------------

    void emit(ast::Statement s, const std::string& wrt, const std::string& gradient,
              bool accumulate) {
        Emitted em;
        ast::for_each_ref(s, [&](const ast::TensorRef& r) { em.reads.insert(key_of(r)); });
        ast::for_each_ref(s, [&](const ast::TensorRef& r) { used_.insert(key_of(r)); });
        const auto* eq = std::get_if<ast::Equation>(&s.node);
        if (eq && !accumulate) {
            // The left-hand side is written, not read (unless it also appears on the right).
            em.reads.clear();
            ast::for_each_ref(eq->rhs,
                              [&](const ast::TensorRef& r) { em.reads.insert(key_of(r)); });
        } else if (const auto* ch = std::get_if<ast::Chain>(&s.node)) {
            em.reads = {key_of(ch->from)};
        }
        em.stmt = std::move(s);
        em.wrt = wrt;
        em.gradient = gradient;
        em.accumulate = accumulate;
        em.forward_line = cur_stmt_->range.line;
        em.block = fwd_[static_cast<std::size_t>(cur_index_)].block;
        if (!group_started_)
            em.comment = "backward of line " + std::to_string(em.forward_line) + ": " +
                         parser::print(*cur_stmt_);
        group_started_ = true;
        out_.push_back(std::move(em));
    }

    static ast::Statement statement_of(ast::Equation eq) {
        ast::Statement s;
        s.node = std::move(eq);
        return s;
    }

    void statement(int i) {
        const auto& f = fwd_[static_cast<std::size_t>(i)];
        // The sweep enters a repeat at its last statement: its reverse block starts here.
        if (f.block >= 0 && !block_start_.count(f.block)) block_start_[f.block] = out_.size();
        cur_index_ = i;
        cur_stmt_ = f.stmt;
        group_started_ = false;
        primes_.clear();
        occurrences_.clear();
        // Every index occurrence of the statement (call subscripts too), and the most primes
        // each name carries: fresh indices get more.
        auto count = [&](const ast::Index& ix) {
            occurrences_[id_of(ix)]++;
            primes_[ix.name] = std::max(primes_[ix.name], ix.primes);
        };
        ast::for_each_ref(*f.stmt, [&](const ast::TensorRef& r) {
            if (f.eq && &r != &f.eq->lhs) return;
            for (const auto& dm : r.dims)
                for (const auto& p : dm.parts)
                    count(p);
        });
        if (f.eq) ast::for_each_index(f.eq->rhs, count);

        const auto& tref = *f.target_ref;
        // The gradient of what this statement stores: accumulated from later uses, or a seed.
        Grad gout;
        if (auto it = cur_.find(f.target); it != cur_.end()) {
            gout = it->second;
            cur_.erase(it);
        } else {
            gout.label = tref.label;
            gout.name = unused_name(gradient_name(tref), tref.label, true);
            gout.layout = dual(layout_of(f.sp->result));
            gout.shape = shape_of(i, tref);
            if (f.block >= 0 && defined_before_block(f.target, f.block)) {
                // A tensor the layers carry, not read after them: the reverse layers carry its
                // gradient, which enters them as the last layer's seed (each earlier layer's
                // comes from the layer after it), set before the reverse block.
                const auto seed = unused_name(gout.name, tref.label);
                seeds_.push_back(
                    {f.target, parser::tensor_key(seed, gout.label), i, f.stmt->range.line});
                auto lhs = ref_as(gout.name, gout.label, tref, gout.layout);
                auto rhs = ref_as(seed, gout.label, tref, gout.layout);
                emit_before_block(f.block,
                                  statement_of({lhs, ast::AssignOp::Define, ex(std::move(rhs))}),
                                  f.target, parser::tensor_key(gout.name, gout.label),
                                  "the gradient of " + tref.name +
                                      " after the last layer, which the reverse layers carry: "
                                      "its seed");
            } else {
                seeds_.push_back(
                    {f.target, parser::tensor_key(gout.name, gout.label), i, f.stmt->range.line});
            }
        }
        used_.insert(parser::tensor_key(gout.name, gout.label));
        if (is_first_definition(i))
            first_def_grad_[f.target] = parser::tensor_key(gout.name, gout.label);

        if (f.ch) {
            chain(f, gout);
            return;
        }
        const auto& eq = *f.eq;
        ast::Expr c = ex(ref_as(gout.name, gout.label, eq.lhs, gout.layout));
        std::vector<Contribution> contributions;
        if (eq.op == ast::AssignOp::Accumulate) contributions.push_back({&eq.lhs, c});
        const auto outside = indices_of(eq.lhs);
        backprop(eq.rhs, outside, c, contributions);

        // Group by tensor, the statement's own tensor last (its new gradient is read by all).
        std::vector<std::string> order;
        std::map<std::string, std::vector<Contribution*>> by;
        for (auto& ct : contributions) {
            const auto k = key_of(*ct.use);
            if (!by.count(k)) order.push_back(k);
            by[k].push_back(&ct);
        }
        std::stable_partition(order.begin(), order.end(),
                              [&](const std::string& k) { return k != f.target; });
        for (const auto& k : order) {
            auto& cs = by[k];
            const auto& first_use = *cs.front()->use;
            const bool own =
                k == f.target && parser::tensor_key(gout.name, gout.label) ==
                                     parser::tensor_key(gradient_name(first_use), first_use.label);
            bool have = false;
            Grad g = gradient_of(k, i, first_use, have);
            if (!have && f.block >= 0 && defined_before_block(k, f.block) &&
                !stored_in_block(k, f.block)) {
                // Every layer reads the same tensor: each adds to its gradient, which starts
                // at zero before the reverse block (a definition in the body would keep only
                // one layer's share).
                auto lhs = ref_as(g.name, g.label, first_use, g.layout);
                emit_before_block(f.block,
                                  statement_of({lhs, ast::AssignOp::Define,
                                                product({number("0"), ex(first_use)})}),
                                  k, parser::tensor_key(g.name, g.label),
                                  "every layer reads " + first_use.name +
                                      ": its gradient sums theirs, from zero");
                have = true;
            }
            // Several contributions to the statement's own tensor read its new gradient,
            // which the first would overwrite: collect them in a temporary first.
            std::string target = g.name;
            if (own && cs.size() > 1) target = unused_name(g.name + "t", g.label);
            bool accumulate = have;
            for (auto* ct : cs) {
                if (!fits(g, *ct->use)) continue;
                auto lhs = ref_as(target, g.label, *ct->use, g.layout);
                if (!accumulate && own && cs.size() == 1) {
                    if (const auto* r = std::get_if<ast::TensorRef>(&ct->expr.node); r && *r == lhs)
                        break; // gz = gz: nothing to do
                }
                ast::Equation eqn{lhs,
                                  accumulate ? ast::AssignOp::Accumulate : ast::AssignOp::Define,
                                  std::move(ct->expr)};
                emit(statement_of(std::move(eqn)), k, parser::tensor_key(target, g.label),
                     accumulate);
                accumulate = true;
            }
            if (target != g.name) {
                auto lhs = ref_as(g.name, g.label, *cs.front()->use, g.layout);
                auto rhs = ref_as(target, g.label, *cs.front()->use, g.layout);
                emit(statement_of({lhs, have ? ast::AssignOp::Accumulate : ast::AssignOp::Define,
                                   ex(std::move(rhs))}),
                     k, parser::tensor_key(g.name, g.label), have);
            }
            cur_[k] = g;
        }
    }

    /// The gradient accumulated so far for tensor `k` (`have`), or a new one named after
    /// `use`, its occurrence in forward statement `i`.
    Grad gradient_of(const std::string& k, int i, const ast::TensorRef& use, bool& have) {
        if (auto it = cur_.find(k); it != cur_.end()) {
            have = true;
            return it->second;
        }
        have = false;
        return {gradient_name(use), use.label, gradient_layout(i, use), shape_of(i, use)};
    }

    /// The first forward statement of repeat `b` (recorded by prepare()), -1: none.
    int block_first(int b) const { return block_first_[static_cast<std::size_t>(b)]; }
    /// Whether a statement before repeat `b` stores tensor `k`.
    bool defined_before_block(const std::string& k, int b) const {
        auto it = defs_.find(k);
        return it != defs_.end() && !it->second.empty() && it->second.front() < block_first(b);
    }
    /// Whether a statement of repeat `b` stores tensor `k`.
    bool stored_in_block(const std::string& k, int b) const {
        auto it = defs_.find(k);
        if (it == defs_.end()) return false;
        return std::any_of(it->second.begin(), it->second.end(),
                           [&](int d) { return fwd_[static_cast<std::size_t>(d)].block == b; });
    }
    /// Emits `s` before the reverse block of repeat `b` (after what was put there already):
    /// what the block needs on entry.
    void emit_before_block(int b, ast::Statement s, const std::string& wrt,
                           const std::string& gradient, std::string comment) {
        const bool started = group_started_;
        emit(std::move(s), wrt, gradient, false);
        group_started_ = started;
        Emitted e = std::move(out_.back());
        out_.pop_back();
        e.block = -1;
        e.comment = std::move(comment);
        auto& at = block_start_.at(b);
        out_.insert(out_.begin() + static_cast<std::ptrdiff_t>(at), std::move(e));
        ++at;
    }

    bool is_first_definition(int i) const {
        const auto& f = fwd_[static_cast<std::size_t>(i)];
        const auto& d = defs_.at(f.target);
        return !d.empty() && d.front() == i;
    }

    /// A chain's backward: the same steps in reverse, on the gradient.
    void chain(const Fwd& f, const Grad& gout) {
        const auto& ch = *f.ch;
        const auto k = key_of(ch.from);
        bool have = false;
        Grad g = gradient_of(k, cur_index_, ch.from, have);
        if (have && !fits(g, ch.from)) return;
        const std::string target = have ? unused_name(g.name + "t", g.label) : g.name;
        ast::Chain rc;
        const auto n = ch.steps.size();
        rc.from = ref_as(gout.name, gout.label, ch.steps.back().to, gout.layout);
        for (std::size_t s = n; s-- > 0;) {
            ast::ChainStep st;
            if (s == 0)
                st.to = ref_as(target, g.label, ch.from, g.layout);
            else
                st.to =
                    ref_as(target, g.label, ch.steps[s - 1].to, dual(layout_of(f.sp->operands[s])));
            rc.steps.push_back(std::move(st));
        }
        bool noop = !have && rc.from.name == target;
        for (const auto& st : rc.steps)
            noop &= parser::print(st.to) == parser::print(rc.from);
        if (!noop) {
            ast::Statement s;
            s.node = std::move(rc);
            emit(std::move(s), k, parser::tensor_key(target, g.label), false);
        }
        if (have) {
            auto lhs = ref_as(g.name, g.label, ch.from, g.layout);
            auto rhs = ref_as(target, g.label, ch.from, g.layout);
            emit(statement_of({lhs, ast::AssignOp::Accumulate, ex(std::move(rhs))}), k,
                 parser::tensor_key(g.name, g.label), true);
        }
        cur_[k] = g;
    }

    const ast::Program& program_;
    const Plan& plan_;
    std::vector<Diagnostic>& diags_;
    std::vector<Fwd> fwd_;
    std::vector<ast::RepeatDecl> blocks_;
    std::vector<int> block_first_; ///< per repeat: its first forward statement (fwd_), -1: none
    std::map<std::string, ast::FunctionKind> declared_;
    std::set<IndexId> own_range_;
    std::set<IndexId> program_indices_; ///< every index the forward program mentions
    std::set<IndexId> warned_range_;
    std::map<IndexId, std::int64_t> ranges_;
    std::set<std::string> taken_; ///< tensor keys of the forward program and generated ones
    std::set<std::string> used_;  ///< tensor keys the derived statements mention
    std::map<std::string, std::string> gname_;
    std::map<std::string, std::vector<int>> defs_;
    std::set<std::string> inputs_;
    std::vector<std::string> axis_names_;
    std::map<std::string, Grad> cur_;
    std::map<std::string, std::string> first_def_grad_;
    std::vector<Emitted> out_;
    std::map<int, std::size_t> block_start_; ///< per repeat: where its reverse block begins in out_
    std::vector<Seed> seeds_;
    std::set<std::string> functions_used_;
    std::set<std::string> reported_;
    // Per forward statement.
    int cur_index_ = 0;
    const ast::Statement* cur_stmt_ = nullptr;
    bool group_started_ = false;
    bool sweeping_ = false;
    std::map<std::uint32_t, std::vector<Diagnostic>> pending_;
    std::map<std::string, int> primes_;
    std::map<IndexId, int> occurrences_;
};

} // namespace

/// What the derivation keeps between printing its text and reading the text's check.
struct Derivation::Impl {
    Impl(const ast::Program& forward, const Plan& plan) : deriver(forward, plan, diags) {}
    std::vector<Diagnostic> diags;
    Deriver deriver;
    GradResult result;
    bool ok = false;
    std::set<std::uint32_t> bad_lines; ///< forward lines whose derivation failed
    std::set<std::string> functions;   ///< derivative functions the kept statements call
    std::vector<std::uint32_t> lines;  ///< each emitted statement's line in the last text
};

Derivation::Derivation(const ast::Program& forward, const Plan& forward_plan,
                       const GradOptions& options)
    : impl_(std::make_unique<Impl>(forward, forward_plan)) {
    auto& d = impl_->deriver;
    auto& diags = impl_->diags;
    auto& result = impl_->result;
    auto fail = [&] { result.diagnostics = diags; };
    if (!d.prepare()) {
        fail();
        return;
    }
    // What to differentiate. By default the trained weights a `param` line names (a training
    // step needs only their gradients; the data's would inflate the backward), else every input.
    std::vector<std::string> wrt = options.wrt;
    if (wrt.empty())
        for (const auto& item : forward.items)
            if (const auto* st = std::get_if<ast::Statement>(&item))
                if (const auto* p = std::get_if<ast::ParamDecl>(&st->node))
                    for (const auto& t : p->tensors)
                        wrt.push_back(parser::tensor_key(t.name, t.label));
    if (wrt.empty())
        for (const auto& k : d.inputs())
            wrt.push_back(k);
    for (const auto& w : wrt)
        if (!d.inputs().count(w) && !d.defined(w))
            diags.push_back({Severity::Error,
                             std::string(code_name(Code::G001)),
                             {},
                             "--wrt " + w + ": the program has no tensor " + w,
                             "name a tensor of the program, with its label (W^0)"});
    if (std::any_of(diags.begin(), diags.end(),
                    [](const auto& x) { return x.severity == Severity::Error; })) {
        fail();
        return;
    }
    d.run();
    auto& em = d.emitted();
    std::set<std::string> needed;
    for (const auto& w : wrt) {
        const auto g = d.final_gradient(w);
        if (g.empty()) {
            diags.push_back({Severity::Warning,
                             std::string(code_name(Code::G002)),
                             {},
                             "no gradient reaches " + w + " (nothing it feeds has one)",
                             {}});
            continue;
        }
        result.gradients[w] = g;
        needed.insert(g);
    }
    prune(em, needed);
    {
        std::set<std::uint32_t> kept;
        for (const auto& e : em)
            if (e.keep) kept.insert(e.forward_line);
        impl_->bad_lines = d.report(kept);
    }
    // Seeds and functions that the kept statements use.
    std::set<std::string> reads;
    for (const auto& e : em) {
        if (!e.keep) continue;
        reads.insert(e.reads.begin(), e.reads.end());
        if (const auto* eq = std::get_if<ast::Equation>(&e.stmt.node))
            collect_calls(eq->rhs, d.functions(), impl_->functions);
    }
    for (const auto& sd : d.seeds())
        if (reads.count(sd.seed)) result.seeds.push_back(sd);
    impl_->ok = true;
}

Derivation::~Derivation() = default;

bool Derivation::ok() const {
    return impl_->ok;
}

GradResult Derivation::failed() const {
    return impl_->result;
}

std::string Derivation::text(std::uint32_t first_line, const Plan* checked) {
    auto& em = impl_->deriver.emitted();
    std::map<std::size_t, std::vector<std::string>> cols;
    if (checked)
        for (std::size_t i = 0; i < em.size() && i < impl_->lines.size(); ++i)
            for (const auto& sp : checked->statements)
                if (em[i].keep && sp.range.line == impl_->lines[i])
                    cols[i] = collectives_of(checked->mesh, sp);
    return render(em, impl_->deriver.blocks(), impl_->functions, impl_->result.seeds, first_line,
                  checked ? &cols : nullptr, impl_->lines);
}

ast::Program Derivation::program(const ast::Program& forward) {
    // As text() writes it, without the comments and expect lines: the derivatives' `fn`
    // lines, then each kept statement, a repeat's backward in a reverse block.
    ast::Program out = forward;
    auto add = [&](ast::Statement s) { out.items.emplace_back(std::move(s)); };
    for (const auto& f : impl_->functions) {
        ast::Statement s;
        s.node = ast::FnDecl{f, ast::FunctionKind::Elementwise};
        add(std::move(s));
    }
    int open = -1;
    auto close = [&] {
        if (open < 0) return;
        ast::Statement s;
        s.node = ast::EndDecl{};
        add(std::move(s));
        open = -1;
    };
    for (const auto& e : impl_->deriver.emitted()) {
        if (!e.keep) continue;
        if (e.block != open) {
            close();
            if (e.block >= 0) {
                auto decl = impl_->deriver.blocks().at(static_cast<std::size_t>(e.block));
                decl.reverse = true;
                ast::Statement s;
                s.node = std::move(decl);
                add(std::move(s));
                open = e.block;
            }
        }
        add(e.stmt);
    }
    close();
    return out;
}

GradResult Derivation::finish(std::string text, std::uint32_t first_line,
                              const ast::Program& program, Plan plan,
                              const std::vector<Diagnostic>& syntax_errors) {
    auto& em = impl_->deriver.emitted();
    const auto& lines = impl_->lines;
    auto& diags = impl_->diags;
    auto result = std::move(impl_->result);
    for (auto dg : syntax_errors)
        if (dg.range.line >= first_line) {
            dg.message = "internal: a derived statement does not parse: " + dg.message;
            diags.push_back(dg);
        }
    // Every derived statement must read back as the tree it was printed from.
    std::map<std::uint32_t, const ast::Statement*> at;
    for (const auto& item : program.items)
        if (const auto* s = std::get_if<ast::Statement>(&item)) at[s->range.line] = s;
    for (std::size_t i = 0; i < em.size(); ++i) {
        if (!em[i].keep) continue;
        auto it = at.find(lines[i]);
        if (it == at.end() || !(it->second->node == em[i].stmt.node))
            diags.push_back({Severity::Error,
                             std::string(code_name(Code::G900)),
                             {},
                             "internal: the derived statement '" + parser::print(em[i].stmt) +
                                 "' reads back differently",
                             {}});
    }
    result.text = std::move(text);
    result.backward_line = first_line;
    for (std::size_t i = 0; i < em.size(); ++i) {
        if (!em[i].keep) continue;
        DerivedStatement ds;
        ds.text = parser::print(em[i].stmt);
        ds.wrt = em[i].wrt;
        ds.gradient = em[i].gradient;
        ds.line = lines[i];
        ds.forward_line = em[i].forward_line;
        for (std::size_t p = 0; p < plan.statements.size(); ++p)
            if (plan.statements[p].range.line == lines[i]) ds.plan_index = static_cast<int>(p);
        result.statements.push_back(std::move(ds));
    }
    // The checker's word on the derived part (not on statements whose derivation already
    // failed: their errors follow from it).
    std::map<std::uint32_t, std::uint32_t> forward_of;
    for (std::size_t i = 0; i < em.size(); ++i)
        if (em[i].keep) forward_of[lines[i]] = em[i].forward_line;
    for (const auto& dg : plan.diagnostics) {
        if (dg.range.line < first_line && dg.severity != Severity::Error) continue;
        if (auto it = forward_of.find(dg.range.line);
            it != forward_of.end() && impl_->bad_lines.count(it->second))
            continue;
        diags.push_back(dg);
    }
    result.plan = std::move(plan);
    result.diagnostics = std::move(diags);
    return result;
}

Plan training_step_plan(const ast::Program& program, const Plan& plan, const CheckOptions& options,
                        bool* derived) {
    if (derived) *derived = false;
    const auto& training = plan.training;
    if (!training.train || training.params.empty() || plan.errors() > 0) return plan;
    for (const auto& b : plan.repeats)
        if (b.reverse) return plan; // a backward is written
    for (const auto& sp : plan.statements)
        for (const auto& w : training.params)
            if (sp.target == "g" + w) return plan;
    GradOptions go;
    go.check = options;
    go.expectations = false;
    Derivation d(program, plan, go);
    if (!d.ok()) return plan;
    const auto step = d.program(program);
    auto co = options;
    co.text = {}; // the derived statements have no text: plans print them canonically
    Plan out = check(step, co);
    if (out.errors() > 0) return plan;
    if (derived) *derived = true;
    return out;
}

ProgramTotals step_totals(const ast::Program& program, const Plan& plan,
                          const CheckOptions& options) {
    bool derived = false;
    const Plan step = training_step_plan(program, plan, options, &derived);
    auto t = program_totals(step);
    t.backward_derived = derived;
    return t;
}

Plan backward_plan(const GradResult& r, std::vector<std::string>* wrt) {
    Plan p = r.plan;
    p.statements.clear();
    p.repeats.clear(); // statement indices of the whole program; each keeps its `repeat`
    p.diagnostics = r.diagnostics;
    for (const auto& s : r.statements) {
        if (s.plan_index < 0) continue;
        p.statements.push_back(r.plan.statements[static_cast<std::size_t>(s.plan_index)]);
        if (wrt) wrt->push_back(s.wrt);
    }
    return p;
}

std::string derived_text(const GradResult& result) {
    std::size_t pos = 0;
    for (std::uint32_t line = 1; line < result.backward_line && pos != std::string::npos; ++line) {
        pos = result.text.find('\n', pos);
        if (pos != std::string::npos) ++pos;
    }
    return pos == std::string::npos ? std::string() : result.text.substr(pos);
}

std::string derived_summary(const GradResult& result, std::size_t named) {
    const std::size_t n = result.statements.size();
    std::string out = std::to_string(n) + (n == 1 ? " derived statement" : " derived statements");
    std::string names;
    std::size_t listed = 0;
    for (const auto& [w, g] : result.gradients) {
        if (listed == named) break;
        names += (names.empty() ? "" : ", ") + g + " of " + w;
        ++listed;
    }
    if (result.gradients.size() > listed)
        names += ", and " + std::to_string(result.gradients.size() - listed) + " more";
    return names.empty() ? out : out + " (" + names + ")";
}

std::string format_gradient_plans(const GradResult& result, const std::string& path, bool color) {
    return format_plan(backward_plan(result, nullptr), path, color);
}

nlohmann::json gradients_to_json(const GradResult& result, const std::string& path) {
    std::vector<std::string> wrt;
    const Plan p = backward_plan(result, &wrt);
    auto j = plan_to_json(p, path, &wrt);
    nlohmann::json seeds = nlohmann::json::array();
    for (const auto& s : result.seeds)
        seeds.push_back({{"output", s.output}, {"seed", s.seed}, {"line", s.forward_line}});
    j["seeds"] = seeds;
    j["gradients"] = result.gradients;
    j["backward_line"] = result.backward_line;
    return j;
}

} // namespace shardscope::semantics
