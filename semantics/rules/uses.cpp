// Uses across statements: NOTATION.md section 3 (tensor references) and section 6, "Across
// statements". An occurrence as written is S(d) on an axis that subscripts its dimension d,
// P on an axis of its {U_k} marker, R elsewhere, and no axis may be claimed twice (S101). A
// tensor that an earlier statement defined keeps that statement's placement: a use without
// mesh subscripts inherits it, a use with subscripts asks for its own placement, and the
// difference is redistributed and noted (S210). A tensor no statement defines is an input,
// exactly as written.
#include "internal.hpp"

#include "parser/printer.hpp"

#include <algorithm>

namespace shardscope::semantics::detail {

const Value* Evaluator::written(const ast::TensorRef& r) {
    const std::size_t used = ctx_.written_used;
    for (std::size_t e = 0; e < used && e < Context::kWrittenScan; ++e)
        if (ctx_.written_cache[e].first == &r) return ctx_.written_cache[e].second.get();
    if (used > Context::kWrittenScan)
        if (const auto it = ctx_.written_index.find(&r); it != ctx_.written_index.end())
            return ctx_.written_cache[it->second].second.get();
    // written_uncached sets `failed` only when it fails: whether the value is cached is known
    // before it is built. A cached one is built into a spare value of the context.
    if (report_ && !failed) {
        if (used == ctx_.written_cache.size())
            ctx_.written_cache.emplace_back(nullptr, std::make_unique<Value>());
        auto& [ref, value] = ctx_.written_cache[used];
        Value& v = *value;
        v.name.clear();
        v.dims.clear();
        v.sharding.clear();
        v.partial.clear();
        v.elem_bytes = 4;
        v.id = -1;
        if (!written_uncached(r, v)) return nullptr;
        ref = &r;
        if (used >= Context::kWrittenScan) ctx_.written_index.emplace(&r, used);
        ctx_.written_used = used + 1;
        return &v;
    }
    auto owned = std::make_unique<Value>(); // built in place: a value is large
    if (!written_uncached(r, *owned)) return nullptr;
    written_here_.push_back(std::move(owned));
    return written_here_.back().get();
}

bool Evaluator::written_uncached(const ast::TensorRef& r, Value& v) {
    v.name = parser::tensor_key(r.name, r.label);
    v.elem_bytes = ctx_.bytes_of(v.name);
    // Which index (or, as nullptr, the partial marker) uses each axis; words only on error.
    struct Owner {
        int axis;
        const ast::Index* who;
    };
    SmallVec<Owner, 4> owner;
    auto claim = [&](int k, const ast::Index* ix, const ast::SourceRange& at) {
        for (const auto& [axis, who] : owner) {
            if (axis != k) continue;
            auto what = [](const ast::Index* i) {
                return i ? "index " + id_of(*i).text() : std::string("the partial marker");
            };
            error(Code::S101, at,
                  "tensor " + v.name + " uses " + ctx_.axis_label(k) + " twice (" + what(who) +
                      " and " + what(ix) + "): a tensor has one placement per mesh axis",
                  "shard at most one index over " + ctx_.axis_label(k) +
                      "; all-gather one of them first");
            return false;
        }
        owner.push_back({k, ix});
        return true;
    };
    v.dims.reserve(r.dims.size());
    for (const auto& d : r.dims) {
        // Built in place (v.has below then sees this dimension's parts too).
        Dim& dim = v.dims.emplace_back();
        dim_text_into(d, dim.text);
        dim.parts.reserve(d.parts.size());
        for (const auto& p : d.parts) {
            const auto id = key_of(p);
            if (v.has(id)) {
                error(Code::S103, p.range,
                      "index " + id.text() + " appears twice in tensor " + v.name +
                          " (a diagonal is not supported)",
                      "use a primed index for the second dimension (" + id.text() + "')");
                return false;
            }
            dim.parts.push_back(id);
            for (const auto& a : p.axes) {
                const auto ks = ctx_.resolve_axis(a, report_);
                if (ks.empty()) {
                    failed = true;
                    return false;
                }
                for (int k : ks) {
                    if (!claim(k, &p, a.range)) return false;
                    v.sharding[id].push_back(k);
                }
            }
        }
    }
    for (const auto& a : r.partial_axes) {
        auto ks = ctx_.resolve_axis(a, report_);
        if (ks.empty()) {
            failed = true;
            return false;
        }
        for (int k : ks) {
            if (!claim(k, nullptr, a.range)) return false;
            v.partial.set(k, PartialOp::Sum);
        }
    }
    return true;
}

bool Evaluator::writes_placement(const ast::TensorRef& r) {
    if (!r.partial_axes.empty()) return true;
    for (const auto& d : r.dims)
        for (const auto& p : d.parts)
            if (!p.axes.empty()) return true;
    return false;
}

std::optional<Value> Evaluator::use(const ast::TensorRef& r) {
    const Value* v = written(r);
    if (!v) return std::nullopt;
    auto it = defined_.find(v->name);
    if (it != defined_.end()) {
        const Value& def = it->second;
        if (def.dims.size() != v->dims.size()) {
            error(Code::S104, r.range,
                  "tensor " + v->name + " was defined with " + std::to_string(def.dims.size()) +
                      " dimensions and is used with " + std::to_string(v->dims.size()));
            return std::nullopt;
        }
        if (!same_extents(r, *v, def, "used")) return std::nullopt;
        // The definition's layout, in this occurrence's index names (by position).
        Value have; // *v without its sharding (replaced below)
        have.name = v->name;
        have.dims = v->dims;
        have.partial = def.partial;
        have.elem_bytes = v->elem_bytes;
        have.id = v->id;
        for (std::size_t d = 0; d < def.dims.size(); ++d) {
            const auto& dp = def.dims[d].parts;
            const auto& up = v->dims[d].parts;
            for (std::size_t p = 0; p < dp.size(); ++p) {
                auto s = def.sharding.find(dp[p]);
                if (s == def.sharding.end()) continue;
                // Map to this use's index in the same position (or the dimension's first).
                const auto& target = p < up.size() ? up[p] : up.front();
                have.sharding[target] = s->second;
            }
        }
        have.id = new_value(have, v->name);
        if (!writes_placement(r)) {
            record_operand(have);
            return have;
        }
        // The use asks for a placement: redistribute if it differs.
        const auto before = steps.size();
        transition(have, *v, r.range, "requested by this use of " + v->name);
        if (steps.size() != before) {
            std::string moved;
            for (std::size_t s = before; s < steps.size(); ++s)
                if (is_collective(steps[s].kind))
                    moved +=
                        (moved.empty() ? "" : ", ") + std::string(step_kind_name(steps[s].kind));
            if (!moved.empty()) {
                const auto msg = v->name + " was defined with a different placement; " + moved +
                                 " inserted to give it the placement written here";
                not_as_written(Code::S210, r.range, msg,
                               "write the use without mesh subscripts to inherit the "
                               "placement, or add the collective explicitly",
                               true);
            }
        }
        record_operand(have);
        return have;
    }
    Value out = *v;
    out.id = new_value(out, out.name);
    record_operand(out);
    return out;
}

std::optional<Value> Evaluator::eval_node(const ast::TensorRef& r, const ast::Expr&,
                                          const IndexSet&) {
    auto v = use(r);
    if (v && gather_contracted && lhs_indices_ && !v->sharding.empty()) fsdp_use(*v);
    if (v && !early_slices_.empty()) slice_early(*v);
    return v;
}

void Evaluator::plan_early_slices(const ast::Expr& rhs, const Value& lhs) {
    // The same for every run of the search over one statement: found once (plan_statement
    // forgets it for the next statement).
    early_lhs_ = &lhs;
    if (ctx_.early_slices_for == &rhs) {
        early_slices_ = ctx_.early_slices;
        return;
    }
    early_slices_.clear();
    find_early_slices(rhs, lhs);
    ctx_.early_slices_for = &rhs;
    ctx_.early_slices = early_slices_;
}

void Evaluator::find_early_slices(const ast::Expr& rhs, const Value& lhs) {
    // A single occurrence is sliced by the left-hand side's transition alike: nothing to save.
    if (std::holds_alternative<ast::TensorRef>(rhs.node)) return;
    for (const auto& [i, axes] : lhs.sharding) {
        const int d = lhs.dim_of(i);
        if (d < 0 || lhs.dims[static_cast<std::size_t>(d)].parts.size() != 1) continue;
        early_slices_.push_back(i);
    }
    if (early_slices_.empty()) return;
    // Mesh axes the right-hand side uses (as written, or as an earlier statement stored a
    // tensor it reads) rule a candidate out, as does an index sharded, grouped or normalised
    // along there: slicing must commute with everything between the uses and the result.
    auto drop_if = [&](auto&& pred) {
        early_slices_.erase(std::remove_if(early_slices_.begin(), early_slices_.end(), pred),
                            early_slices_.end());
    };
    auto drop_axis = [&](int k) {
        drop_if([&](IndexKey c) {
            const auto& axes = lhs.sharding.find(c)->second;
            return std::find(axes.begin(), axes.end(), k) != axes.end();
        });
    };
    auto drop_index = [&](IndexKey i) { drop_if([&](IndexKey c) { return c == i; }); };
    // Three passes, cheapest first (most candidates end in the first: an operand holds the
    // index sharded): indices sharded or grouped as written; the axes written (resolved by
    // name); the layouts stored by earlier statements and the functions (a name each).
    enum class Pass { Indices, Axes, Stored };
    auto walk = [&](auto& self, const ast::Expr& e, Pass pass) -> void {
        if (early_slices_.empty()) return;
        if (const auto* r = std::get_if<ast::TensorRef>(&e.node)) {
            if (pass == Pass::Indices) {
                for (const auto& dim : r->dims)
                    for (const auto& p : dim.parts)
                        if (!p.axes.empty() || dim.parts.size() != 1) drop_index(key_of(p));
                return;
            }
            if (pass == Pass::Axes) {
                for (const auto& dim : r->dims)
                    for (const auto& p : dim.parts)
                        for (const auto& a : p.axes)
                            for (int k : ctx_.resolve_axis(a, false))
                                drop_axis(k);
                for (const auto& a : r->partial_axes)
                    for (int k : ctx_.resolve_axis(a, false))
                        drop_axis(k);
                return;
            }
            if (defined_.empty()) return;
            const auto it = defined_.find(parser::tensor_key(r->name, r->label));
            if (it == defined_.end()) return;
            // Inherited by position (use): the stored sharding's axes, and its indices'
            // positions, as this occurrence names them.
            const Value& def = it->second;
            for (std::size_t d = 0; d < def.dims.size(); ++d)
                for (const auto& part : def.dims[d].parts)
                    if (const auto sh = def.sharding.find(part); sh != def.sharding.end()) {
                        for (int k : sh->second)
                            drop_axis(k);
                        if (d < r->dims.size())
                            for (const auto& p : r->dims[d].parts)
                                drop_index(key_of(p));
                    }
            for (const auto& [k, op] : def.partial)
                drop_axis(k);
        } else if (const auto* c = std::get_if<ast::Call>(&e.node)) {
            if (pass == Pass::Stored) {
                if (ctx_.function_kind(c->function) == ast::FunctionKind::Collective)
                    early_slices_.clear();
                for (const auto& i : c->indices)
                    drop_index(key_of(i));
            }
            self(self, *c->arg, pass);
        } else if (const auto* p = std::get_if<ast::Product>(&e.node)) {
            for (const auto& f : p->factors)
                self(self, f, pass);
        } else if (const auto* q = std::get_if<ast::Quotient>(&e.node)) {
            self(self, *q->num, pass);
            self(self, *q->den, pass);
        } else if (const auto* sum = std::get_if<ast::Sum>(&e.node)) {
            for (const auto& t : sum->terms)
                self(self, t, pass);
        }
    };
    for (const auto pass : {Pass::Indices, Pass::Axes, Pass::Stored})
        walk(walk, rhs, pass);
}

void Evaluator::slice_early(Value& v) {
    for (const IndexKey i : early_slices_) {
        if (!v.has(i) || v.sharding.find(i) != v.sharding.end()) continue;
        const AxisList axes = early_lhs_->sharding.find(i)->second; // slice() may move v's
        for (int k : axes)
            slice(v, k, i,
                  "the left-hand side keeps only this block, so only it is computed (sliced "
                  "before the compute, not after)");
    }
}

void Evaluator::fsdp_use(Value& v) {
    SmallVec<IndexKey, 4> contracted; // sharded, and absent from the left-hand side
    for (const auto& [i, axes] : v.sharding)
        if (!lhs_indices_->count(i)) contracted.push_back(i);
    // Each index in turn (the sharding's order), its axes minor to major: plan_statement's
    // bound prices the gathers in this order (fsdp_gather_time).
    for (const IndexKey i : contracted)
        if (const auto it = v.sharding.find(i); it != v.sharding.end())
            all_gather(v, it->second.front(),
                       "gathered at its use, before the contraction, rather than the result "
                       "reduced after (FSDP, for a weight)");
}

} // namespace shardscope::semantics::detail
