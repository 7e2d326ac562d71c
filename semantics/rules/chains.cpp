// Chains: NOTATION.md section 4 (x_{...} -> x_{...} -> ...) and section 5 (split). Each step
// of a chain only moves placements, or splits and merges indices into the parts a split
// declares (or a group shows); its indices may not change otherwise (S140, S007). A chain of
// products moves every factor whose layout changes, each by its own redistribution, in
// written order on every arrow; the others are context, written unchanged (S141; a tensor
// written twice that changes is S142). Each step is a left-hand side of its own: the
// redistribution table of section 6 applies.
#include "internal.hpp"

#include "parser/printer.hpp"
#include "parser/visit.hpp"

#include <functional>
#include <map>

namespace shardscope::semantics::detail {

std::vector<IndexId>
Evaluator::atoms(const std::vector<Dim>& dims,
                 const std::map<IndexId, std::vector<IndexId>>& learned) const {
    std::vector<IndexId> out;
    // Depth-limited: `split a -> b c` with `split b -> a d` must not recurse forever.
    std::function<void(const IndexId&, int)> expand = [&](const IndexId& i, int depth) {
        const std::vector<IndexId>* parts = nullptr;
        if (auto l = learned.find(i); l != learned.end())
            parts = &l->second;
        else if (auto d = ctx_.splits.find(i); d != ctx_.splits.end())
            parts = &d->second;
        if (!parts || depth > 16) {
            out.push_back(i);
            return;
        }
        for (const auto& p : *parts)
            expand(p, depth + 1);
    };
    for (const auto& d : dims)
        for (const auto p : d.parts)
            expand(p.id(), 0);
    return out;
}

bool Evaluator::product_sides(const ast::Chain& ch) {
    bool product = ch.product();
    for (const auto& st : ch.steps)
        product |= !st.with.empty();
    if (!product) return true;
    // A chain of products (`W^0 x -> W^0 x'`) moves every factor whose layout changes; the
    // others are context, written on every side as they are. A product implies no contraction
    // (NOTATION.md section 4).
    const auto key = [](const ast::TensorRef& r) { return parser::tensor_key(r.name, r.label); };
    const auto sides = ast::chain_sides(ch);
    const auto& first = sides.front();
    for (std::size_t s = 1; s < sides.size(); ++s) {
        const auto& side = sides[s];
        if (side.size() != first.size()) {
            const auto tensors = [](std::size_t n) {
                return std::to_string(n) + (n == 1 ? " tensor" : " tensors");
            };
            error(Code::S141, side.back()->range,
                  "this side of the chain has " + tensors(side.size()) + ", the first side " +
                      tensors(first.size()) + ": every side of a chain lists the same tensors",
                  "write the first side's tensors on every side, in the same order (a chain "
                  "only moves tensors; compute a product with an equation, y = W x)");
            return false;
        }
        for (std::size_t p = 0; p < side.size(); ++p)
            if (key(*side[p]) != key(*first[p])) {
                error(Code::S141, side[p]->range,
                      "this side of the chain has " + key(*side[p]) + " where the first side has " +
                          key(*first[p]) + ": every side of a chain lists the same tensors",
                      "write the first side's tensors on every side, in the same order (a chain "
                      "only moves tensors; compute a product with an equation, y = W x)");
                return false;
            }
    }
    // A tensor written twice in the product (x x) that changes would be moved twice, to
    // layouts that need not agree: S142.
    const auto moved = ast::chain_moved_positions(ch);
    for (std::size_t p : moved)
        for (std::size_t q = 0; q < first.size(); ++q)
            if (q != p && key(*first[q]) == key(*first[p])) {
                const auto at = std::max(p, q);
                const ast::TensorRef* where = first[at];
                for (std::size_t s = 1; s < sides.size(); ++s)
                    if (!(*sides[s][p] == *sides[s - 1][p])) {
                        where = sides[s][p];
                        break;
                    }
                error(Code::S142, where->range,
                      key(*first[p]) + " is a factor twice and changes here: a chain moves each "
                                       "tensor once, to one layout per side",
                      "write " + key(*first[p]) + " once on every side of the chain");
                return false;
            }
    // The context factors must be valid occurrences (axes, ranges); they move nothing.
    for (std::size_t p = 0; p < first.size(); ++p)
        if (std::find(moved.begin(), moved.end(), p) == moved.end() && !written(*first[p]))
            return false;
    return true;
}

std::optional<Value> Evaluator::chain(const ast::Chain& ch, const ast::SourceRange&,
                                      std::vector<std::vector<std::string>>& step_collectives) {
    if (!product_sides(ch)) return std::nullopt;
    // Every factor whose layout changes moves, each by its own redistribution, in written
    // order on every arrow; ch.from (the first of them) is the statement's result.
    const auto sides = ast::chain_sides(ch);
    const auto positions = ast::chain_moved_positions(ch);
    struct Moving {
        std::size_t position = 0;
        Value cur;
        // Splits learned from groups: x_{bsd} -> x_{(rc)sd} says b = (r c).
        std::map<IndexId, std::vector<IndexId>> learned;
    };
    std::vector<Moving> moving;
    for (std::size_t p : positions) {
        auto v = use(*sides.front()[p]);
        if (!v) return std::nullopt;
        moving.push_back({p, std::move(*v), {}});
    }
    // One tensor through one arrow: the placements it keeps, splits or merges, then the
    // redistribution to the written layout.
    const auto step_one = [&](Moving& m, const ast::TensorRef& to) -> bool {
        auto& cur = m.cur;
        auto& learned = m.learned;
        const Value* next = written(to);
        if (!next) return false;
        if (report_) operands.push_back(layout(*next));
        if (cur.dims.size() == next->dims.size())
            for (std::size_t d = 0; d < cur.dims.size(); ++d) {
                const auto& a = cur.dims[d].parts;
                const auto& b = next->dims[d].parts;
                const OneInline<IndexKey>* group = nullptr;
                IndexId whole;
                if (a.size() == 1 && b.size() > 1 && std::find(b.begin(), b.end(), a[0]) == b.end())
                    group = &b, whole = a[0].id();
                // Merging a group back (x_{(rc)sd} -> x_{bsd}) says the same.
                else if (b.size() == 1 && a.size() > 1 &&
                         std::find(a.begin(), a.end(), b[0]) == a.end())
                    group = &a, whole = b[0].id();
                if (!group) continue;
                // A group that holds the index it groups through other splits has no range.
                auto parts_of = [&](const IndexId& i) -> const std::vector<IndexId>* {
                    if (auto l = learned.find(i); l != learned.end()) return &l->second;
                    return split_parts(ctx_.splits)(i);
                };
                for (const auto p : *group)
                    if (auto path = split_path(parts_of, p.id(), whole); !path.empty()) {
                        std::string cycle = whole.text();
                        for (const auto& i : path)
                            cycle += " -> " + i.text();
                        error(Code::S007, to.range,
                              "this step makes index " + whole.text() +
                                  " a part of itself through splits (" + cycle + ")",
                              "name the group's parts apart from the splits of " + whole.text());
                        return false;
                    }
                auto& parts = learned[whole];
                parts.clear();
                for (const auto p : *group)
                    parts.push_back(p.id());
            }
        const auto from_atoms = atoms(cur.dims, learned);
        const auto to_atoms = atoms(next->dims, learned);
        if (from_atoms != to_atoms) {
            std::string fa, ta;
            for (const auto& i : from_atoms)
                fa += i.text();
            for (const auto& i : to_atoms)
                ta += i.text();
            error(Code::S140, to.range,
                  "this step changes the tensor's indices (" + fa + " -> " + ta +
                      "): a chain may only split, merge or move placements",
                  "declare the split ('split b -> r c') or write the group, as in x_{(r c) s d}");
            return false;
        }
        bool reshaped = cur.dims.size() != next->dims.size();
        for (std::size_t d = 0; !reshaped && d < cur.dims.size(); ++d)
            reshaped = cur.dims[d].parts != next->dims[d].parts;
        // A sharded index shards its major atom; in the next layout, that is the index whose
        // own major atom it is (`g` of `(g n)` is `m` once `split m -> g n` merges them).
        auto major_atom = [&](IndexKey x) -> IndexId {
            std::vector<Dim> one{{{x}, x.text()}};
            auto parts = atoms(one, learned);
            return parts.empty() ? x.id() : parts.front();
        };
        // A sharded index that is split or merged here stays a local reshape only when both it
        // and the index that takes its sharding divide evenly over its devices (s_0 over 4
        // devices is no r_0 when r = 2): otherwise it is gathered before the reshape.
        if (reshaped) {
            std::vector<std::pair<IndexKey, int>> uneven;
            for (const auto& [i, axes] : cur.sharding) {
                const auto a0 = major_atom(i);
                IndexId target = a0;
                bool found = false; // a minor part merged into a whole is no local reshape
                for (const auto& d : next->dims)
                    for (const auto& p : d.parts)
                        if (major_atom(p) == a0) target = p.id(), found = true;
                std::int64_t n = 1;
                for (int k : axes)
                    n *= ctx_.axis_size(k);
                if (!found || ctx_.range(i) % n != 0 || ctx_.range(target) % n != 0)
                    uneven.push_back({i, axes.front()});
            }
            for (const auto& [i, k] : uneven) {
                all_gather(cur, k,
                           "reshaping needs " + i.text() + " evenly sharded (its parts too)");
                not_as_written(Code::S216, to.range,
                               "this step splits or merges " + i.text() +
                                   ", whose shards are not whole shards of the next layout "
                                   "(uneven over its devices, or a minor part merged): it is "
                                   "all-gathered before the reshape",
                               "gather " + i.text() +
                                   " in an earlier step, or shard a part "
                                   "whose range the devices divide",
                               true);
            }
        }
        // Express the current sharding in atoms, then move it to the next layout.
        Value have = *next;
        have.sharding.clear();
        have.partial = cur.partial;
        for (const auto& [i, axes] : cur.sharding) {
            const auto a0 = major_atom(i);
            IndexId target = a0;
            for (const auto& d : next->dims)
                for (const auto& p : d.parts)
                    if (major_atom(p) == a0) target = p.id();
            have.sharding[target] = axes;
        }
        have.id = cur.id;
        if (reshaped) {
            add_local(StepKind::Split, have, {},
                      "reshape " + next->name + " (split or merge indices, free)");
            flow(cur.id, have);
        }
        transition(have, *next, to.range, "the chain asks for it");
        cur = *next;
        cur.id = have.id;
        return true;
    };
    for (std::size_t s = 1; s < sides.size(); ++s) {
        // The arrow's collectives, every moved tensor's in written order (its label's order);
        // where several tensors move, each names its tensor (S302 says whose step is whose).
        std::vector<std::string> cols;
        for (auto& m : moving) {
            const auto before = steps.size();
            if (!step_one(m, *sides[s][m.position])) return std::nullopt;
            for (std::size_t i = before; i < steps.size(); ++i)
                if (is_collective(steps[i].kind))
                    cols.push_back(collective_text(ctx_, steps[i]) +
                                   (moving.size() > 1 ? " of " + m.cur.name : std::string()));
        }
        step_collectives.push_back(std::move(cols));
    }
    result_id = moving.front().cur.id;
    for (std::size_t m = 1; m < moving.size(); ++m)
        moved_also.push_back(std::move(moving[m].cur));
    return moving.front().cur;
}

} // namespace shardscope::semantics::detail
