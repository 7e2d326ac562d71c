// Declarations and range inference: the program-wide facts the checker plans with.
#include "context.hpp"

#include "parser/printer.hpp"
#include "parser/visit.hpp"

#include <algorithm>
#include <numeric>
#include <optional>
#include <tuple>

namespace shardscope::semantics {

namespace detail {

std::string dim_text(const ast::Dimension& d) {
    std::string out;
    dim_text_into(d, out);
    return out;
}

void dim_text_into(const ast::Dimension& d, std::string& out) {
    // The common case, one index without primes or mesh axes ("b"), is its name.
    if (!d.grouped && d.parts.size() == 1 && d.parts[0].primes == 0 && d.parts[0].axes.empty()) {
        out = d.parts[0].name;
        return;
    }
    if (d.grouped) out += '(';
    for (std::size_t i = 0; i < d.parts.size(); ++i) {
        const auto& p = d.parts[i];
        if (i) out += ' ';
        out += p.name;
        out.append(static_cast<std::size_t>(p.primes), '\'');
        if (p.axes.empty()) continue;
        out += '_';
        if (p.axes.size() == 1) {
            out += p.axes[0].name;
            continue;
        }
        out += '{';
        for (std::size_t k = 0; k < p.axes.size(); ++k) {
            if (k) out += ',';
            out += p.axes[k].name;
        }
        out += '}';
    }
    if (d.grouped) out += ')';
}

namespace {

/// A split defines its index's range as the product of its parts. An index split twice, or
/// one that is among its own parts (directly or through other splits), has no single range,
/// so check and exec would each settle it their own way: these are errors, and the split is
/// left out.
void declare_split(Context& ctx, const ast::SplitDecl& sp, const ast::SourceRange& at) {
    const auto parent = id_of(sp.from);
    std::vector<IndexId> parts;
    for (const auto& p : sp.parts) {
        const auto id = id_of(p);
        if (id == parent) {
            ctx.diag(Severity::Error, Code::S007, p.range,
                     "index " + parent.text() + " is split into itself",
                     "give the part another name, e.g. '" + parent.text() + "1'");
            return;
        }
        if (std::find(parts.begin(), parts.end(), id) != parts.end()) {
            ctx.diag(Severity::Error, Code::S008, p.range,
                     "the split of " + parent.text() + " names part " + id.text() + " twice",
                     "each part of a split is a different index");
            return;
        }
        parts.push_back(id);
    }
    if (auto first = ctx.split_at.find(parent); first != ctx.split_at.end()) {
        ctx.diag(Severity::Error, Code::S006, sp.from.range,
                 "index " + parent.text() + " is split twice (first at line " +
                     std::to_string(first->second.line) + ")",
                 "split an index once; to split it further, split one of its parts");
        return;
    }
    for (std::size_t k = 0; k < parts.size(); ++k) {
        const auto path = split_path(split_parts(ctx.splits), parts[k], parent);
        if (path.empty()) continue;
        std::string cycle = parent.text(), others;
        for (std::size_t i = 0; i < path.size(); ++i) {
            cycle += " -> " + path[i].text();
            if (i + 1 < path.size())
                others += (others.empty() ? "" : ", ") + std::string("the split of ") +
                          path[i].text() + " at line " + std::to_string(ctx.split_at[path[i]].line);
        }
        ctx.diag(Severity::Error, Code::S007, sp.parts[k].range,
                 "index " + parent.text() + " is split into itself through other splits (" + cycle +
                     ")",
                 "remove this split or " + std::string(path.size() > 2 ? "one of: " : "") + others);
        return;
    }
    ctx.splits[parent] = std::move(parts);
    ctx.split_at[parent] = at;
}

} // namespace

void declare(Context& ctx, const ast::Program& program, const CheckOptions& options) {
    std::optional<ast::SourceRange> mesh_at;
    for (const auto& item : program.items) {
        const auto* s = std::get_if<ast::Statement>(&item);
        if (!s) continue;
        if (const auto* m = std::get_if<ast::MeshDecl>(&s->node)) {
            if (mesh_at) {
                ctx.diag(Severity::Error, Code::S001, s->range, "a second mesh declaration",
                         "a program has one mesh; the first is at line " +
                             std::to_string(mesh_at->line));
                continue;
            }
            mesh_at = s->range;
            ctx.mesh = mesh_of(*m);
            ctx.has_mesh = true;
        } else if (const auto* d = std::get_if<ast::DimDecl>(&s->node)) {
            if (options.ignore_dims) {
                for (const auto& b : d->bindings)
                    ctx.ignored_dims.insert(id_of(b.index));
                continue;
            }
            for (const auto& b : d->bindings) {
                const auto id = id_of(b.index);
                if (auto it = ctx.ranges.find(id); it != ctx.ranges.end() && it->second != b.size)
                    ctx.diag(Severity::Error, Code::S002, b.index.range,
                             "index " + id.text() + " is declared with range " +
                                 std::to_string(b.size) + " and " + std::to_string(it->second),
                             "declare each range once");
                ctx.ranges[id] = b.size;
                ctx.range_origin[id] = "declared";
            }
        } else if (const auto* sp = std::get_if<ast::SplitDecl>(&s->node)) {
            declare_split(ctx, *sp, s->range);
        } else if (const auto* dt = std::get_if<ast::DtypeDecl>(&s->node)) {
            ctx.dtype = dt->dtype;
            ctx.dtype_bytes = dtype_size(dt->dtype).value_or(4);
        } else if (const auto* td = std::get_if<ast::TensorDecl>(&s->node)) {
            ctx.tensor_bytes[parser::tensor_key(td->name, td->label)] =
                dtype_size(td->dtype).value_or(4);
        } else if (const auto* hw = std::get_if<ast::HwDecl>(&s->node)) {
            if (const auto* h = find_hardware(hw->preset))
                ctx.hw = h;
            else
                ctx.diag(Severity::Error, Code::S003, s->range,
                         "unknown hardware preset '" + hw->preset + "'",
                         "use one of " + hardware_names());
        } else if (const auto* f = std::get_if<ast::FnDecl>(&s->node)) {
            ctx.functions[f->name] = f->kind;
        }
    }
    if (options.mesh) {
        ctx.mesh = *options.mesh;
        ctx.has_mesh = true;
    }
    if (!ctx.hw) ctx.hw = find_hardware("h100");
    for (const auto& a : ctx.mesh.axes)
        (void)a,
            ctx.links.push_back({ctx.hw->link_bw, ctx.hw->link_latency_s, ctx.hw->link_protocols});
    for (const auto& item : program.items) {
        const auto* s = std::get_if<ast::Statement>(&item);
        if (!s) continue;
        if (const auto* l = std::get_if<ast::LinkDecl>(&s->node)) {
            for (int k : ctx.resolve_axis(l->axis)) {
                ctx.links[static_cast<std::size_t>(k)].bytes_per_second = l->bytes_per_second;
                // A latency written is the plain model's (per step, no protocols); a bandwidth
                // alone keeps the preset's protocols at the new bandwidth.
                if (!l->latency_text.empty()) {
                    ctx.links[static_cast<std::size_t>(k)].latency_s = l->latency_seconds;
                    ctx.links[static_cast<std::size_t>(k)].protocols = {};
                }
            }
        }
    }
}

namespace {

/// Small defaults are per index, and a tensor read as x_{s_0 d} and as x_{t d} needs s and t
/// alike: at the declared sizes they are (or check reports the shapes), but a sharded s took
/// its axis's size and t the plain small default, so `exec --small` refused (S106) what
/// check accepts. The indices written at the same position of the same tensor share a
/// range: one a range was found for gives it to the others (where those found agree), else
/// all take the least common multiple of their shardings. Indices of splits keep theirs
/// (their ranges must multiply out).
void unify_small_ranges(Context& ctx, const ast::Program& program,
                        const std::map<IndexId, std::vector<IndexId>>& splits) {
    std::map<IndexId, IndexId> parent; // union-find over index ids
    auto find = [&](IndexId i) {
        while (true) {
            auto it = parent.find(i);
            if (it == parent.end() || it->second == i) return i;
            i = it->second;
        }
    };
    auto in_split = [&](const IndexId& i) {
        for (const auto& [whole, parts] : splits)
            if (whole == i || std::find(parts.begin(), parts.end(), i) != parts.end()) return true;
        return false;
    };
    // (tensor, rank, position) -> the first index written there: a name read with another
    // number of dimensions is another view (a later statement may redefine it).
    std::map<std::tuple<std::string, std::size_t, std::size_t>, IndexId> first;
    auto visit = [&](const ast::TensorRef& r) {
        const auto key = parser::tensor_key(r.name, r.label);
        for (std::size_t d = 0; d < r.dims.size(); ++d) {
            if (r.dims[d].parts.size() != 1) continue; // a group is its parts' product
            const auto id = id_of(r.dims[d].parts[0]);
            if (in_split(id)) continue;
            parent.emplace(id, id);
            const auto [at, fresh] = first.emplace(std::tuple{key, r.dims.size(), d}, id);
            if (fresh) continue;
            const auto a = find(at->second), b = find(id);
            if (!(a == b)) parent[b] = a;
        }
    };
    for (const auto& item : program.items)
        if (const auto* st = std::get_if<ast::Statement>(&item)) ast::for_each_ref(*st, visit);
    std::map<IndexId, std::vector<IndexId>> classes;
    for (const auto& [i, p] : parent)
        classes[find(i)].push_back(i);
    // An index whose `dim` line was ignored and that is sharded took its device group's size
    // (a device index): check accepted it with its declared range, so it is as free as an
    // undeclared one here, only a multiple of that size.
    auto ignored_device_index = [&](const IndexId& m) {
        if (!ctx.ignored_dims.count(m) && !ctx.ignored_dims.count({m.name, 0})) return false;
        const auto o = ctx.range_origin.find(m);
        return o != ctx.range_origin.end() && o->second.rfind("device index", 0) == 0;
    };
    for (const auto& [root, members] : classes) {
        if (members.size() < 2) continue;
        std::optional<std::int64_t> found;
        bool agree = true;
        std::int64_t lcm = 1;
        for (const auto& m : members) {
            if (ctx.has_range(m)) {
                agree = agree && (!found || *found == ctx.range(m));
                found = ctx.range(m);
            } else if (auto it = ctx.shard_lcm.find({m.name, 0}); it != ctx.shard_lcm.end()) {
                lcm = std::lcm(lcm, it->second);
            }
        }
        if (agree) {
            for (const auto& m : members) {
                if (ctx.has_range(m)) continue;
                if (found && *found % lcm == 0) {
                    ctx.ranges[m] = *found;
                    // A default still (the default-range note names it), only shared.
                    ctx.range_origin[m] = "default";
                } else if (!found) {
                    ctx.shard_lcm[{m.name, 0}] = lcm;
                }
            }
            continue;
        }
        // Found ranges that conflict. Where the conflict is between device indices whose dim
        // lines were ignored (x_{i j}, j_1 and x_{i k}, k_{01}: 2 and 4), they take one range
        // that each group size divides, the other ranges' if they have one; any other conflict
        // is reported as at the declared sizes.
        std::optional<std::int64_t> fixed;
        bool fixed_agree = true;
        std::int64_t group = 1;
        for (const auto& m : members) {
            if (ignored_device_index(m)) {
                group = std::lcm(group, ctx.range(m));
            } else if (ctx.has_range(m)) {
                fixed_agree = fixed_agree && (!fixed || *fixed == ctx.range(m));
                fixed = ctx.range(m);
            } else if (auto it = ctx.shard_lcm.find({m.name, 0}); it != ctx.shard_lcm.end()) {
                group = std::lcm(group, it->second);
            }
        }
        const std::int64_t target = fixed.value_or(group);
        if (!fixed_agree || target % group != 0) continue;
        for (const auto& m : members) {
            if (ctx.has_range(m) && !ignored_device_index(m)) continue;
            ctx.ranges[m] = target;
            ctx.range_origin[m] = "default";
        }
    }
}

} // namespace

void infer_ranges(Context& ctx, const ast::Program& program) {
    // Indices found with a range that no device index gave: they stay so (an origin is given
    // only to an index without a range, and no range is removed), so the occurrences after
    // the first are skipped on their key alone (the maps below compare names).
    FlatSet<IndexKey> settled;
    auto visit_ref = [&](const ast::TensorRef& r) {
        for (const auto& d : r.dims)
            for (const auto& p : d.parts) {
                if (p.axes.empty()) continue;
                const auto key = key_of(p);
                if (settled.count(key)) continue;
                const auto id = id_of(p);
                // A range that no device index gave (declared, or from a split) is kept
                // whatever the axes say: nothing below would change or report anything (the
                // common case, every index declared, skips resolving the axes).
                if (!ctx.small_defaults && ctx.has_range(id)) {
                    const auto o = ctx.range_origin.find(id);
                    if (o == ctx.range_origin.end() || o->second.rfind("device index", 0) != 0) {
                        settled.insert(key);
                        continue;
                    }
                }
                std::int64_t size = 1;
                AxisList all;
                bool ok = true;
                for (const auto& a : p.axes) {
                    auto ks = ctx.resolve_axis(a, false);
                    if (ks.empty()) ok = false;
                    for (int k : ks) {
                        size = sat_mul(size, ctx.axis_size(k));
                        all.push_back(k);
                    }
                }
                if (!ok) continue;
                // Words only where a message or an origin needs them (this runs three times
                // over every tensor occurrence of the program).
                auto axes_text = [&] {
                    std::string axes;
                    for (int k : all)
                        axes += (axes.empty() ? "" : ",") + ctx.axis_name(k);
                    return axes;
                };
                if (ctx.small_defaults) {
                    auto& l = ctx.shard_lcm[{id.name, 0}];
                    l = std::lcm(l == 0 ? 1 : l, size);
                }
                if (auto o = ctx.range_origin.find(id); o != ctx.range_origin.end() &&
                                                        o->second.rfind("device index", 0) == 0 &&
                                                        ctx.range(id) != size) {
                    if (ctx.ignored_dims.count(id) || ctx.ignored_dims.count({id.name, 0})) {
                        // Declared (and accepted so) but ignored for small sizes: a range
                        // every one of its shardings divides.
                        ctx.ranges[id] = std::lcm(ctx.range(id), size);
                        continue;
                    }
                    if (ctx.conflicts.insert(id).second)
                        ctx.diag(Severity::Error, Code::S005, p.range,
                                 "index " + id.text() +
                                     " has no declared range and is the device index of " +
                                     o->second.substr(16) + " (" + std::to_string(ctx.range(id)) +
                                     ") and of axis " + axes_text() + " (" + std::to_string(size) +
                                     ")",
                                 "declare its range with 'dim " + id.text() + "=N'");
                    continue;
                }
                if (ctx.has_range(id)) continue;
                ctx.ranges[id] = size;
                ctx.range_origin[id] = "device index of axis " + axes_text();
            }
    };
    // A chain that groups an index (x_{bsd} -> x_{(r c) s d}) splits it as a declaration does:
    // the ranges must multiply out.
    auto splits = ctx.splits;
    for (const auto& item : program.items) {
        const auto* s = std::get_if<ast::Statement>(&item);
        const auto* ch = s ? std::get_if<ast::Chain>(&s->node) : nullptr;
        if (!ch) continue;
        // Every factor of a chain of products, side to side (a group may be written on any).
        auto learn = [&](const ast::TensorRef* cur, const ast::TensorRef& next) {
            if (cur->dims.size() != next.dims.size()) return;
            for (std::size_t d = 0; d < cur->dims.size(); ++d) {
                const auto& a = cur->dims[d].parts;
                const auto& b = next.dims[d].parts;
                const auto* one = a.size() == 1 && b.size() > 1   ? &a
                                  : b.size() == 1 && a.size() > 1 ? &b
                                                                  : nullptr;
                if (!one) continue;
                const auto& many = one == &a ? b : a;
                std::vector<IndexId> parts;
                for (const auto& p : many)
                    parts.push_back(id_of(p));
                // A group that would make an index part of itself is the chain's error
                // (S007 from the evaluator); learning it here would only loop the ranges.
                const auto parent = id_of((*one)[0]);
                bool cycle = false;
                for (const auto& p : parts)
                    cycle = cycle || !split_path(split_parts(splits), p, parent).empty();
                if (!cycle) splits.emplace(parent, parts);
            }
        };
        const auto sides = ast::chain_sides(*ch);
        for (std::size_t k = 1; k < sides.size(); ++k)
            for (std::size_t f = 0; f < sides[k - 1].size() && f < sides[k].size(); ++f)
                learn(sides[k - 1][f], *sides[k][f]);
    }
    // Splits first where they decide a device index: split s -> r t with r sharded.
    for (int pass = 0; pass < 3; ++pass) {
        // A pass that changes nothing leaves the next with the same facts, so it would change
        // nothing either (nor report anything: reports come with a new conflict).
        const auto ranges_before = ctx.ranges;
        const auto lcm_before = ctx.shard_lcm;
        const auto conflicts_before = ctx.conflicts.size();
        for (const auto& item : program.items)
            if (const auto* s = std::get_if<ast::Statement>(&item))
                ast::for_each_ref(*s, visit_ref);
        // Splits: parent = product of parts; one missing part = parent / the others.
        bool changed = true;
        while (changed) {
            changed = false;
            for (const auto& [parent, parts] : splits) {
                std::int64_t known = 1;
                int unknown = 0;
                IndexId missing;
                for (const auto& p : parts) {
                    if (ctx.has_range(p))
                        known = sat_mul(known, ctx.range(p));
                    else
                        ++unknown, missing = p;
                }
                if (unknown == 0 && !ctx.has_range(parent)) {
                    if (known == kMaxRange) { // saturated: no int64 holds the product
                        if (ctx.conflicts.insert(parent).second)
                            ctx.diag(Severity::Error, Code::S004, ctx.split_at[parent],
                                     "split of " + parent.text() +
                                         ": its parts multiply to more than " +
                                         std::to_string(kMaxRange),
                                     "choose smaller ranges for the parts");
                        continue;
                    }
                    ctx.ranges[parent] = known;
                    ctx.range_origin[parent] = "split";
                    changed = true;
                } else if (unknown == 1 && ctx.has_range(parent)) {
                    const auto whole = ctx.range(parent);
                    if (known <= 0 || whole % known != 0) {
                        if (ctx.conflicts.insert(parent).second)
                            ctx.diag(Severity::Error, Code::S004, ctx.split_at[parent],
                                     "split of " + parent.text() + "=" + std::to_string(whole) +
                                         ": the other parts multiply to " + std::to_string(known) +
                                         ", which does not divide it",
                                     "choose ranges whose product is " + std::to_string(whole));
                        continue;
                    }
                    ctx.ranges[missing] = whole / known;
                    ctx.range_origin[missing] = "split of " + parent.text();
                    changed = true;
                }
            }
            if (changed || ctx.small_defaults) continue;
            // A whole and one of its parts both unknown (a chain's group, x_{b} -> x_{(f_0 c)}
            // without dim lines): the whole takes the default range and the part what is left,
            // so that a reshape keeps the element count. (Small defaults give the parts
            // theirs below.)
            for (const auto& [parent, parts] : splits) {
                if (ctx.has_range(parent)) continue;
                std::int64_t known = 1;
                int unknown = 0;
                for (const auto& p : parts)
                    if (ctx.has_range(p))
                        known = sat_mul(known, ctx.range(p));
                    else
                        ++unknown;
                const auto whole = ctx.range(parent);
                if (unknown != 1 || known <= 0 || whole % known != 0) continue;
                ctx.ranges[parent] = whole;
                ctx.range_origin[parent] = "default";
                changed = true;
                break;
            }
        }
        // Small defaults for the parts of a split whose whole is unknown; the first part also
        // takes the whole's shardings, so that they divide the product.
        if (ctx.small_defaults && pass == 1)
            for (const auto& [parent, parts] : splits) {
                if (ctx.has_range(parent)) continue;
                bool first = true;
                for (const auto& p : parts) {
                    if (ctx.has_range(p)) continue;
                    auto r = ctx.range(p);
                    if (auto it = ctx.shard_lcm.find({parent.name, 0});
                        first && it != ctx.shard_lcm.end())
                        r *= it->second;
                    first = false;
                    ctx.ranges[p] = r;
                    ctx.range_origin[p] = "small default";
                }
            }
        // (Pass 1 always runs under small defaults: it gives the split parts theirs.)
        if ((!ctx.small_defaults || pass >= 1) && ctx.ranges == ranges_before &&
            ctx.shard_lcm == lcm_before && ctx.conflicts.size() == conflicts_before)
            break;
        // Without splits, no range changes after the first pass: every device index got its
        // range (or its conflict) there, from the first occurrence on.
        if (splits.empty()) break;
    }
    if (ctx.small_defaults) unify_small_ranges(ctx, program, splits);
}

void check_splits(Context& ctx, const ast::Program& program) {
    for (const auto& item : program.items) {
        const auto* s = std::get_if<ast::Statement>(&item);
        if (!s) continue;
        const auto* sp = std::get_if<ast::SplitDecl>(&s->node);
        if (!sp) continue;
        const auto parent = id_of(sp->from);
        // Only the splits declare() kept: the others are reported already.
        const auto kept = ctx.split_at.find(parent);
        if (kept == ctx.split_at.end() || kept->second.offset != s->range.offset) continue;
        if (!ctx.has_range(parent)) continue;
        std::int64_t product = 1;
        bool all_known = true;
        std::string parts;
        for (const auto& p : sp->parts) {
            all_known &= ctx.has_range(id_of(p));
            product = sat_mul(product, ctx.range(id_of(p)));
            parts += (parts.empty() ? "" : "·") + id_of(p).text() + "=" +
                     std::to_string(ctx.range(id_of(p)));
        }
        // A saturated product never matches, even a parent declared as large.
        if (all_known && (product != ctx.range(parent) || product == kMaxRange))
            ctx.diag(Severity::Error, Code::S004, s->range,
                     "split of " + parent.text() + "=" + std::to_string(ctx.range(parent)) +
                         " into " + parts + " does not multiply out (" +
                         (product == kMaxRange ? "more than " : "") + std::to_string(product) + ")",
                     "choose ranges whose product is " + std::to_string(ctx.range(parent)));
    }
}

} // namespace detail

Mesh mesh_of(const ast::MeshDecl& m) {
    Mesh mesh;
    for (const auto& a : m.axes)
        mesh.axes.push_back({a.name, a.size});
    mesh.devices = m.devices;
    return mesh;
}

} // namespace shardscope::semantics
