#include "redistribute.hpp"

#include "mesh_coords.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <queue>

namespace shardscope::semantics::detail {

int LayoutState::atom_of(int k) const {
    for (std::size_t a = 0; a < axes.size(); ++a)
        if (std::find(axes[a].begin(), axes[a].end(), k) != axes[a].end())
            return static_cast<int>(a);
    return -1;
}

namespace {

Move mv(MoveKind kind, std::vector<int> axes, int from = -1, int to = -1) {
    Move m;
    m.kind = kind;
    m.axes = std::move(axes);
    m.from = from;
    m.to = to;
    return m;
}

Move mv(MoveKind kind, int axis, int from = -1, int to = -1) {
    return mv(kind, std::vector<int>{axis}, from, to);
}

bool valid_atom(const LayoutState& s, int a) {
    return a >= 0 && static_cast<std::size_t>(a) < s.axes.size();
}

bool valid_axis(const LayoutState& s, int k) {
    return k >= 0 && static_cast<std::size_t>(k) < s.partial.size();
}

bool minor_of(const LayoutState& s, int a, int k) {
    return valid_atom(s, a) && !s.axes[static_cast<std::size_t>(a)].empty() &&
           s.axes[static_cast<std::size_t>(a)].back() == k;
}

bool unused(const LayoutState& s, int k) {
    return valid_axis(s, k) && !s.partial[static_cast<std::size_t>(k)] && s.atom_of(k) < 0;
}

/// Whether `axes` are the minor-most axes of atom `a`, in order.
bool suffix_of(const LayoutState& s, int a, const std::vector<int>& axes) {
    if (!valid_atom(s, a) || axes.empty()) return false;
    const auto& list = s.axes[static_cast<std::size_t>(a)];
    return list.size() >= axes.size() && std::equal(axes.rbegin(), axes.rend(), list.rbegin());
}

/// Whether `axes` are distinct and all partial with one reduction.
bool partial_group(const LayoutState& s, const std::vector<int>& axes) {
    if (axes.empty()) return false;
    for (std::size_t i = 0; i < axes.size(); ++i) {
        if (!valid_axis(s, axes[i]) || !s.partial[static_cast<std::size_t>(axes[i])] ||
            s.partial[static_cast<std::size_t>(axes[i])] !=
                s.partial[static_cast<std::size_t>(axes[0])])
            return false;
        for (std::size_t j = 0; j < i; ++j)
            if (axes[j] == axes[i]) return false;
    }
    return true;
}

/// The common prefix length of two axis lists.
std::size_t common_prefix(const std::vector<int>& a, const std::vector<int>& b) {
    std::size_t n = 0;
    while (n < a.size() && n < b.size() && a[n] == b[n])
        ++n;
    return n;
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
    return a / b + (a % b != 0);
}

std::int64_t device_count(const RedistributionProblem& p) {
    std::int64_t n = 1;
    for (auto s : p.axis_sizes)
        if (__builtin_mul_overflow(n, s, &n)) return std::numeric_limits<std::int64_t>::max();
    return n;
}

std::int64_t device_id(const RedistributionProblem& p, std::size_t at) {
    return p.devices.empty() ? static_cast<std::int64_t>(at) : p.devices.at(at);
}

/// Row-major coordinates of position `at`.
std::vector<int> coords_of(const RedistributionProblem& p, std::int64_t at) {
    std::vector<int> c(p.axis_sizes.size());
    row_major_coords(p.axis_sizes, at, c);
    return c;
}

bool contains(const Range& outer, const Range& inner) {
    return inner.size() == 0 || (outer.begin <= inner.begin && inner.end <= outer.end);
}

/// The most peers one device of a permute sends to or receives from: its steps.
std::int64_t permute_peers(const std::vector<std::pair<std::int64_t, std::int64_t>>& pairs) {
    std::map<std::int64_t, std::int64_t> out, in;
    std::int64_t most = 0;
    for (const auto& [s, d] : pairs)
        most = std::max({most, ++out[s], ++in[d]});
    return most;
}

/// Prices `m` (bytes, time, local) as it applies to `s`.
void price(const RedistributionProblem& p, const LayoutState& s, Move& m) {
    const double local = local_elements(p, s) * p.elem_bytes;
    if (m.kind == MoveKind::Slice || m.kind == MoveKind::KeepOne) {
        m.local = true;
        return;
    }
    if (m.kind == MoveKind::Permute) {
        m.local = m.pairs.empty();
        m.time_s = 0;
        m.protocol = NcclProtocol::None;
        if (!m.local) {
            const auto timing = timing_in_steps(StepKind::Permute, permute_peers(m.pairs), m.bytes,
                                                group_link(p.links, m.permute_axes));
            m.time_s = timing.time_s;
            m.protocol = timing.protocol;
        }
        return;
    }
    std::int64_t n = 1;
    for (int k : m.axes)
        n *= p.axis_sizes.at(static_cast<std::size_t>(k));
    if (n == 1) {
        m.local = true; // nothing moves over a single device
        m.bytes = m.time_s = 0;
        return;
    }
    StepKind kind = StepKind::AllReduce;
    double group = local;
    switch (m.kind) {
    case MoveKind::AllReduce:
        break;
    case MoveKind::ReduceScatter:
        kind = StepKind::ReduceScatter;
        break;
    case MoveKind::AllGather:
        kind = StepKind::AllGather;
        group = local * static_cast<double>(n);
        break;
    default:
        kind = StepKind::AllToAll;
        group = 0;
        break;
    }
    m.bytes = collective_bytes(kind, n, group, local);
    const auto timing = collective_timing(kind, n, m.bytes, group_link(p.links, m.axes));
    m.time_s = timing.time_s;
    m.protocol = timing.protocol;
}

/// Total order of plans: estimated time (relative tolerance), then steps, then bytes.
struct Cost {
    double time = 0;
    int steps = 0;
    double bytes = 0;
    bool operator<(const Cost& o) const {
        const double tol = 1e-12 * std::max(std::abs(time), std::abs(o.time));
        if (std::abs(time - o.time) > tol) return time < o.time;
        if (steps != o.steps) return steps < o.steps;
        return bytes < o.bytes * (1 - 1e-12);
    }
};

Cost cost_of(const std::vector<Move>& moves) {
    Cost c;
    for (const auto& m : moves) {
        c.time += m.time_s;
        c.bytes += m.bytes;
        c.steps += m.local ? 0 : 1;
    }
    return c;
}

/// One collective over a group of axes, where it leads towards `t`: an all-reduce of partial
/// axes `t` wants complete; a reduce-scatter, all-gather or all-to-all of several minor-most
/// axes that `t` wants (or does not want) together, in its order.
void group_candidates(const LayoutState& s, const LayoutState& t, std::vector<Move>& out) {
    const int axes = static_cast<int>(s.partial.size());
    const int atoms = static_cast<int>(s.axes.size());
    for (PartialOp op : {PartialOp::Sum, PartialOp::Max}) {
        std::vector<int> reducible;
        for (int k = 0; k < axes; ++k)
            if (s.partial[static_cast<std::size_t>(k)] == op &&
                t.partial[static_cast<std::size_t>(k)] != op)
                reducible.push_back(k);
        if (reducible.size() < 2 || reducible.size() > 8) continue;
        for (unsigned mask = 1; mask < (1u << reducible.size()); ++mask) {
            std::vector<int> group;
            for (std::size_t i = 0; i < reducible.size(); ++i)
                if (mask & (1u << i)) group.push_back(reducible[i]);
            if (group.size() < 2) continue;
            bool complete = true; // the target keeps none of them sharded: an all-reduce
            for (int k : group)
                complete = complete && t.atom_of(k) < 0;
            if (complete) out.push_back(mv(MoveKind::AllReduce, group));
        }
    }
    for (int a = 0; a < atoms; ++a) {
        const auto& have = s.axes[static_cast<std::size_t>(a)];
        const auto& want = t.axes[static_cast<std::size_t>(a)];
        const auto keep = common_prefix(have, want);
        // Gather several minor-most axes the target does not keep here at once.
        for (std::size_t len = 2; len + keep <= have.size(); ++len) {
            std::vector<int> group(have.end() - static_cast<std::ptrdiff_t>(len), have.end());
            out.push_back(mv(MoveKind::AllGather, group, a));
            // ...or move them to the index that wants them next, in that order.
            for (int b = 0; b < atoms; ++b) {
                const auto& bh = s.axes[static_cast<std::size_t>(b)];
                const auto& bw = t.axes[static_cast<std::size_t>(b)];
                if (b == a || common_prefix(bh, bw) != bh.size() ||
                    bw.size() < bh.size() + group.size() ||
                    !std::equal(group.begin(), group.end(),
                                bw.begin() + static_cast<std::ptrdiff_t>(bh.size())))
                    continue;
                out.push_back(mv(MoveKind::AllToAll, group, a, b));
            }
        }
        // Scatter several partial axes onto the index that wants them next, in its order.
        if (keep == have.size() && want.size() >= have.size() + 2) {
            std::vector<int> group;
            for (std::size_t i = have.size(); i < want.size(); ++i) {
                const int k = want[i];
                if (!s.partial[static_cast<std::size_t>(k)] ||
                    s.partial[static_cast<std::size_t>(k)] !=
                        s.partial[static_cast<std::size_t>(want[have.size()])])
                    break;
                group.push_back(k);
                if (group.size() >= 2) out.push_back(mv(MoveKind::ReduceScatter, group, -1, a));
            }
        }
    }
}

/// The moves worth trying from `s` towards `t` (never one that undoes what `t` wants kept).
std::vector<Move> candidates(const LayoutState& s, const LayoutState& t) {
    std::vector<Move> out;
    const int axes = static_cast<int>(s.partial.size());
    for (int k = 0; k < axes; ++k) {
        const auto ku = static_cast<std::size_t>(k);
        const int want = t.atom_of(k);
        if (s.partial[ku]) {
            if (t.partial[ku] == s.partial[ku]) continue;
            out.push_back(mv(MoveKind::AllReduce, k));
            if (want >= 0)
                out.push_back(mv(MoveKind::ReduceScatter, k, -1, want));
            else if (!t.partial[ku]) // scatter now, gather later: a hierarchical reduction
                for (int a = 0; a < static_cast<int>(s.axes.size()); ++a)
                    out.push_back(mv(MoveKind::ReduceScatter, k, -1, a));
            continue;
        }
        const int have = s.atom_of(k);
        if (have < 0) {
            if (t.partial[ku]) {
                Move m = mv(MoveKind::KeepOne, k);
                m.op = *t.partial[ku];
                out.push_back(m);
            }
            if (want >= 0) // onto the target's index, or another one that an all-to-all moves on
                for (int a = 0; a < static_cast<int>(s.axes.size()); ++a)
                    out.push_back(mv(MoveKind::Slice, k, -1, a));
            continue;
        }
        if (!minor_of(s, have, k)) continue;
        out.push_back(mv(MoveKind::AllGather, k, have));
        if (want >= 0 && want != have) out.push_back(mv(MoveKind::AllToAll, k, have, want));
    }
    group_candidates(s, t, out);
    return out;
}

/// The order the checker always used, where it is exact: per axis, partial values reduced
/// (or scattered), shards gathered from the minor end or moved by an all-to-all; then slices.
std::vector<Move> axis_by_axis(const LayoutState& from, const LayoutState& to) {
    std::vector<Move> out;
    LayoutState s = from;
    auto add = [&](Move m) {
        if (!move_applies(s, m)) return false;
        s = apply_move(s, m);
        out.push_back(std::move(m));
        return true;
    };
    const int axes = static_cast<int>(s.partial.size());
    for (int k = 0; k < axes; ++k) {
        const auto ku = static_cast<std::size_t>(k);
        const int want = to.atom_of(k), have = s.atom_of(k);
        if (s.partial[ku]) {
            if (to.partial[ku] == s.partial[ku]) continue;
            if (!add(want >= 0 ? mv(MoveKind::ReduceScatter, k, -1, want)
                               : mv(MoveKind::AllReduce, k)))
                return {};
        } else if (have < 0) {
            if (to.partial[ku]) {
                Move m = mv(MoveKind::KeepOne, k);
                m.op = *to.partial[ku];
                if (!add(m)) return {};
            }
        } else if (want < 0) {
            // Gather from the minor end down to k.
            const auto& list = s.axes[static_cast<std::size_t>(have)];
            const auto pos = std::find(list.begin(), list.end(), k) - list.begin();
            while (static_cast<std::ptrdiff_t>(s.axes[static_cast<std::size_t>(have)].size()) > pos)
                if (!add(mv(MoveKind::AllGather, s.axes[static_cast<std::size_t>(have)].back(),
                            have)))
                    return {};
        } else if (want != have) {
            if (!add(mv(MoveKind::AllToAll, k, have, want))) return {};
        }
    }
    for (int k = 0; k < axes; ++k)
        if (unused(s, k) && to.atom_of(k) >= 0)
            if (!add(mv(MoveKind::Slice, k, -1, to.atom_of(k)))) return {};
    if (!(s == to)) return {};
    return out;
}

} // namespace

Link group_link(const std::vector<Link>& links, std::span<const int> axes) {
    Link out{0, 0, {}};
    bool first = true;
    for (int k : axes) {
        const auto& l = links.at(static_cast<std::size_t>(k));
        if (first || l.bytes_per_second < out.bytes_per_second)
            out.bytes_per_second = l.bytes_per_second;
        out.latency_s = std::max(out.latency_s, l.latency_s);
        // Protocols only when every axis has the same ones; a plain link in the group makes
        // the whole ring plain, at the largest latency (its protocols' figures do not apply).
        out.protocols =
            first || same_protocols(out.protocols, l.protocols) ? l.protocols : Protocols{};
        first = false;
    }
    return out;
}

bool move_applies(const LayoutState& s, const Move& m) {
    const bool one = m.axes.size() == 1;
    switch (m.kind) {
    case MoveKind::AllReduce:
        return partial_group(s, m.axes);
    case MoveKind::ReduceScatter:
        return partial_group(s, m.axes) && valid_atom(s, m.to);
    case MoveKind::AllGather:
        return suffix_of(s, m.from, m.axes);
    case MoveKind::AllToAll:
        return suffix_of(s, m.from, m.axes) && valid_atom(s, m.to) && m.to != m.from;
    case MoveKind::Slice:
        return one && unused(s, m.axes[0]) && valid_atom(s, m.to);
    case MoveKind::KeepOne:
        return one && unused(s, m.axes[0]);
    case MoveKind::Permute:
        return true;
    }
    return false;
}

LayoutState apply_move(const LayoutState& s, const Move& m) {
    LayoutState out = s;
    auto& axes = out.axes;
    switch (m.kind) {
    case MoveKind::AllReduce:
        for (int k : m.axes)
            out.partial[static_cast<std::size_t>(k)] = std::nullopt;
        break;
    case MoveKind::ReduceScatter:
        for (int k : m.axes) {
            out.partial[static_cast<std::size_t>(k)] = std::nullopt;
            axes[static_cast<std::size_t>(m.to)].push_back(k);
        }
        break;
    case MoveKind::AllGather:
        axes[static_cast<std::size_t>(m.from)].resize(
            axes[static_cast<std::size_t>(m.from)].size() - m.axes.size());
        break;
    case MoveKind::AllToAll:
        axes[static_cast<std::size_t>(m.from)].resize(
            axes[static_cast<std::size_t>(m.from)].size() - m.axes.size());
        for (int k : m.axes)
            axes[static_cast<std::size_t>(m.to)].push_back(k);
        break;
    case MoveKind::Slice:
        axes[static_cast<std::size_t>(m.to)].push_back(m.axes.front());
        break;
    case MoveKind::KeepOne:
        out.partial[static_cast<std::size_t>(m.axes.front())] = m.op;
        break;
    case MoveKind::Permute:
        if (!m.target.partial.empty()) out = m.target; // else the caller replaces the state
        break;
    }
    return out;
}

double local_elements(const RedistributionProblem& p, const LayoutState& s) {
    double n = 1;
    for (std::size_t a = 0; a < s.axes.size(); ++a) {
        std::int64_t split = 1;
        for (int k : s.axes[a])
            split *= p.axis_sizes.at(static_cast<std::size_t>(k));
        n *= static_cast<double>(ceil_div(p.extents.at(a), split));
    }
    return n;
}

std::vector<std::vector<Range>> device_blocks(const RedistributionProblem& p,
                                              const LayoutState& s) {
    const auto n = device_count(p);
    std::vector<std::vector<Range>> out(static_cast<std::size_t>(n));
    for (std::int64_t d = 0; d < n; ++d) {
        const auto c = coords_of(p, d);
        auto& blocks = out[static_cast<std::size_t>(d)];
        for (std::size_t a = 0; a < s.axes.size(); ++a)
            blocks.push_back(atom_range(p.extents[a], s.axes[a], p.axis_sizes, c));
    }
    return out;
}

namespace {

bool partial(const LayoutState& s) {
    return std::any_of(s.partial.begin(), s.partial.end(),
                       [](const auto& x) { return x.has_value(); });
}

/// Devices grouped by identical blocks: `members[g]` lists group g's devices ascending; the
/// result maps each device to its group.
std::vector<std::size_t> group_by_block(const std::vector<std::vector<Range>>& blocks,
                                        std::vector<std::vector<std::size_t>>& members) {
    std::map<std::vector<std::pair<std::int64_t, std::int64_t>>, std::size_t> ids;
    std::vector<std::size_t> of(blocks.size());
    for (std::size_t d = 0; d < blocks.size(); ++d) {
        std::vector<std::pair<std::int64_t, std::int64_t>> key;
        key.reserve(blocks[d].size());
        for (const auto& r : blocks[d])
            key.emplace_back(r.begin, r.end);
        const auto [it, fresh] = ids.emplace(std::move(key), members.size());
        if (fresh) members.emplace_back();
        members[it->second].push_back(d);
        of[d] = it->second;
    }
    return of;
}

/// A permute's pairs (device ids, sorted) and the mesh axes whose coordinates differ in one,
/// from (sender, receiver) positions.
void set_pairs(const RedistributionProblem& p,
               const std::vector<std::pair<std::size_t, std::size_t>>& moves, Move& m) {
    std::vector<char> moved_axis(p.axis_sizes.size(), 0);
    for (const auto& [s, d] : moves) {
        m.pairs.push_back({device_id(p, s), device_id(p, d)});
        const auto cs = coords_of(p, static_cast<std::int64_t>(s)),
                   cd = coords_of(p, static_cast<std::int64_t>(d));
        for (std::size_t k = 0; k < cs.size(); ++k)
            if (cs[k] != cd[k]) moved_axis[k] = 1;
    }
    for (std::size_t k = 0; k < moved_axis.size(); ++k)
        if (moved_axis[k]) m.permute_axes.push_back(static_cast<int>(k));
    std::sort(m.pairs.begin(), m.pairs.end());
}

} // namespace

std::optional<Move> permute_move(const RedistributionProblem& p, const LayoutState& from,
                                 const LayoutState& to) {
    if (partial(from) || partial(to) || from == to) return std::nullopt;
    const auto n = device_count(p);
    if (n > 1024) return std::nullopt;
    // A target block lies inside a source block only if it is no larger.
    if (local_elements(p, to) > local_elements(p, from)) {
        // device 0 holds the largest blocks of both; a larger target needs more than one sender
        return std::nullopt;
    }
    const auto src = device_blocks(p, from), dst = device_blocks(p, to);
    const auto N = static_cast<std::size_t>(n);
    // Devices holding the same block are interchangeable: test containment once per pair of
    // distinct blocks (a replicated layout has few), not per pair of devices (up to 1024²).
    std::vector<std::vector<std::size_t>> src_members, dst_members;
    const auto src_group = group_by_block(src, src_members),
               dst_group = group_by_block(dst, dst_members);
    // fits[g][h]: source block g holds destination block h.
    std::vector<std::vector<char>> fits(src_members.size(),
                                        std::vector<char>(dst_members.size(), 0));
    for (std::size_t g = 0; g < src_members.size(); ++g)
        for (std::size_t h = 0; h < dst_members.size(); ++h) {
            const auto& a = src[src_members[g].front()];
            const auto& b = dst[dst_members[h].front()];
            bool ok = true;
            for (std::size_t k = 0; k < a.size() && ok; ++k)
                ok = contains(a[k], b[k]);
            fits[g][h] = ok;
        }
    // The source groups that can send each destination group its block.
    std::vector<std::vector<std::size_t>> senders(dst_members.size());
    for (std::size_t h = 0; h < dst_members.size(); ++h) {
        for (std::size_t g = 0; g < src_members.size(); ++g)
            if (fits[g][h]) senders[h].push_back(g);
        if (senders[h].empty()) return std::nullopt;
    }
    auto stays = [&](std::size_t d) { return fits[src_group[d]][dst_group[d]] != 0; };
    // The devices that can send device d its block, ascending (as a scan of all devices would
    // meet them, so the matching is the one a device-by-device search finds).
    auto senders_of = [&](std::size_t d) {
        std::vector<std::size_t> out;
        for (auto g : senders[dst_group[d]])
            out.insert(out.end(), src_members[g].begin(), src_members[g].end());
        std::sort(out.begin(), out.end());
        return out;
    };
    // A bijection: Kuhn's augmenting paths, from the matching that keeps every block that
    // can stay where it is.
    std::vector<std::int64_t> sender_of(N, -1), receiver_of(N, -1);
    for (std::size_t d = 0; d < N; ++d)
        if (stays(d))
            sender_of[d] = static_cast<std::int64_t>(d),
            receiver_of[d] = static_cast<std::int64_t>(d);
    std::vector<char> seen;
    std::function<bool(std::size_t)> augment = [&](std::size_t d) {
        const auto options = senders_of(d);
        for (auto s : options) // an idle sender first: no block that stays is moved
            if (!seen[s] && receiver_of[s] < 0) {
                seen[s] = 1;
                receiver_of[s] = static_cast<std::int64_t>(d);
                sender_of[d] = static_cast<std::int64_t>(s);
                return true;
            }
        for (auto s : options) {
            if (seen[s]) continue;
            seen[s] = 1;
            if (receiver_of[s] < 0 || augment(static_cast<std::size_t>(receiver_of[s]))) {
                receiver_of[s] = static_cast<std::int64_t>(d);
                sender_of[d] = static_cast<std::int64_t>(s);
                return true;
            }
        }
        return false;
    };
    for (std::size_t d = 0; d < N; ++d) {
        if (sender_of[d] >= 0) continue;
        seen.assign(N, 0);
        if (!augment(d)) return std::nullopt;
    }
    Move m;
    m.kind = MoveKind::Permute;
    std::vector<std::pair<std::size_t, std::size_t>> moves;
    double largest = 0;
    for (std::size_t d = 0; d < N; ++d) {
        const auto s = static_cast<std::size_t>(sender_of[d]);
        double elems = 1;
        for (const auto& r : dst[d])
            elems *= static_cast<double>(r.size());
        // Every pair of the bijection, empty blocks too: each device then sends to and
        // receives from exactly one other (or itself), as a collective permute needs. A
        // device whose own block holds its target keeps it, even where the matching gave it a
        // sender (a replica): it must not receive what it holds (the executor refuses that).
        if (s == d || stays(d)) continue;
        moves.emplace_back(s, d);
        largest = std::max(largest, elems);
    }
    set_pairs(p, moves, m);
    m.target = to;
    m.bytes = largest * p.elem_bytes;
    price(p, from, m);
    return m;
}

std::optional<Move> exchange_move(const RedistributionProblem& p, const LayoutState& from,
                                  const LayoutState& to, bool grow) {
    if (partial(from) || partial(to) || from == to) return std::nullopt;
    // Bounded: each device's parts are matched against every holder (N² on a sharded layout;
    // the strategy search tries it on every mesh): on up to 256 devices, or from the start
    // layout (`grow`) on up to 1024.
    const auto n = device_count(p);
    if (n > (grow ? 1024 : 256)) return std::nullopt;
    // Where `to` only drops minor-most axes of `from`'s atoms, an all-gather (over one axis
    // or a group) is the move: an exchange that sends every device its group's blocks is an
    // all-gather by another name. Other growing blocks (a shard moved to a smaller axis, each
    // device collecting its larger block from the few that hold it) are an exchange.
    const bool grows = local_elements(p, to) > local_elements(p, from);
    if (grows && !grow) return std::nullopt;
    bool gather = grows;
    for (std::size_t a = 0; a < to.axes.size() && gather; ++a)
        gather = to.axes[a].size() <= from.axes[a].size() &&
                 std::equal(to.axes[a].begin(), to.axes[a].end(), from.axes[a].begin());
    if (gather) return std::nullopt;
    const auto src = device_blocks(p, from), dst = device_blocks(p, to);
    const auto N = static_cast<std::size_t>(n);
    // The distinct blocks of `from` (cells) partition the tensor (nested chunks per atom); the
    // devices of a cell hold the same copy.
    std::vector<std::vector<std::size_t>> holders;
    const auto cell_of = group_by_block(src, holders);
    std::vector<std::vector<int>> coords(N);
    for (std::size_t d = 0; d < N; ++d)
        coords[d] = coords_of(p, static_cast<std::int64_t>(d));
    auto overlap = [](const std::vector<Range>& a, const std::vector<Range>& b) {
        double e = 1;
        for (std::size_t k = 0; k < a.size() && e > 0; ++k)
            e *= static_cast<double>(std::max<std::int64_t>(
                0, std::min(a[k].end, b[k].end) - std::max(a[k].begin, b[k].begin)));
        return e;
    };
    // Each part from the holder that has sent the least so far; on a tie the one sharing the
    // most coordinates with the receiver (a neighbour on the mesh), then the lowest position.
    std::vector<double> sent(N, 0), received(N, 0);
    std::vector<std::pair<std::size_t, std::size_t>> moves; // (sender, receiver) positions
    for (std::size_t d = 0; d < N; ++d) {
        const auto& cd = coords[d];
        for (std::size_t g = 0; g < holders.size(); ++g) {
            if (g == cell_of[d]) continue; // what it holds itself stays
            const double e = overlap(src[holders[g].front()], dst[d]);
            if (e == 0) continue;
            std::size_t best = holders[g].front();
            int best_shared = -1;
            for (auto h : holders[g]) {
                const auto& ch = coords[h];
                int shared = 0;
                for (std::size_t k = 0; k < ch.size(); ++k)
                    shared += ch[k] == cd[k];
                if (best_shared < 0 || sent[h] < sent[best] ||
                    (sent[h] == sent[best] && shared > best_shared)) {
                    best = h;
                    best_shared = shared;
                }
            }
            sent[best] += e;
            received[d] += e;
            moves.emplace_back(best, d);
        }
    }
    if (moves.empty()) return std::nullopt; // every new block is part of the old: a slice
    Move m;
    m.kind = MoveKind::Permute;
    set_pairs(p, moves, m);
    m.target = to;
    m.bytes = std::max(*std::max_element(sent.begin(), sent.end()),
                       *std::max_element(received.begin(), received.end())) *
              p.elem_bytes;
    price(p, from, m);
    return m;
}

std::vector<LayoutState> relabelled_layouts(const RedistributionProblem& p, const LayoutState& s) {
    std::vector<LayoutState> out;
    if (std::any_of(s.partial.begin(), s.partial.end(),
                    [](const auto& x) { return x.has_value(); }))
        return out;
    std::vector<int> slots; // the axes in use, atom by atom
    for (const auto& a : s.axes)
        slots.insert(slots.end(), a.begin(), a.end());
    std::vector<int> free; // every axis that could shard: size > 1
    for (std::size_t k = 0; k < p.axis_sizes.size(); ++k)
        if (p.axis_sizes[k] > 1) free.push_back(static_cast<int>(k));
    // Bounded: up to 4 slots over up to 6 axes (360 assignments at most).
    if (slots.empty() || slots.size() > 4 || free.size() > 6 || slots.size() > free.size())
        return out;
    auto size_of = [&](const std::vector<int>& axes) {
        std::int64_t n = 1;
        for (int k : axes)
            n *= p.axis_sizes[static_cast<std::size_t>(k)];
        return n;
    };
    std::vector<int> pick;
    std::vector<char> used(p.axis_sizes.size(), 0);
    std::function<void()> assign = [&] {
        if (pick.size() == slots.size()) {
            LayoutState t = s;
            std::size_t at = 0;
            for (auto& a : t.axes) {
                const auto want = size_of(a);
                for (auto& k : a)
                    k = pick[at++];
                if (size_of(a) != want) return;
            }
            if (!(t == s)) out.push_back(std::move(t));
            return;
        }
        for (int k : free) {
            if (used[static_cast<std::size_t>(k)]) continue;
            used[static_cast<std::size_t>(k)] = 1;
            pick.push_back(k);
            assign();
            pick.pop_back();
            used[static_cast<std::size_t>(k)] = 0;
        }
    };
    assign();
    return out;
}

std::vector<Move> gather_then_slice(const LayoutState& from, const LayoutState& to) {
    std::vector<Move> out;
    LayoutState s = from;
    auto add = [&](Move m) {
        s = apply_move(s, m);
        out.push_back(std::move(m));
    };
    for (std::size_t a = 0; a < s.axes.size(); ++a) {
        std::size_t keep = 0;
        while (keep < s.axes[a].size() && keep < to.axes[a].size() &&
               s.axes[a][keep] == to.axes[a][keep])
            ++keep;
        while (s.axes[a].size() > keep)
            add(mv(MoveKind::AllGather, s.axes[a].back(), static_cast<int>(a)));
    }
    for (std::size_t k = 0; k < s.partial.size(); ++k)
        if (s.partial[k] && s.partial[k] != to.partial[k])
            add(mv(MoveKind::AllReduce, static_cast<int>(k)));
    for (std::size_t a = 0; a < s.axes.size(); ++a)
        for (std::size_t i = s.axes[a].size(); i < to.axes[a].size(); ++i)
            add(mv(MoveKind::Slice, to.axes[a][i], -1, static_cast<int>(a)));
    for (std::size_t k = 0; k < s.partial.size(); ++k)
        if (!s.partial[k] && to.partial[k]) {
            Move m = mv(MoveKind::KeepOne, static_cast<int>(k));
            m.op = *to.partial[k];
            add(m);
        }
    return out;
}

std::optional<std::vector<Move>> plan_redistribution(const RedistributionProblem& p,
                                                     const LayoutState& from, const LayoutState& to,
                                                     const std::vector<Move>& preferred) {
    if (from == to) return std::vector<Move>{};
    // The common case needs no search: an exact axis-by-axis order of one collective and
    // nothing else that changes the blocks' sizes (a slice before a gather would shrink it).
    // Nothing beats it: a second step adds a latency, and a permute needs every new block
    // inside an old one, which no single all-gather's or all-to-all's target is.
    if (preferred.empty()) {
        auto moves = axis_by_axis(from, to);
        int collectives = 0, resizing = 0;
        LayoutState s = from;
        for (auto& m : moves) {
            price(p, s, m);
            s = apply_move(s, m);
            if (!m.local)
                ++collectives;
            else if (m.kind == MoveKind::Slice &&
                     p.axis_sizes.at(static_cast<std::size_t>(m.axes.front())) > 1)
                ++resizing;
        }
        if (!moves.empty() && collectives <= 1 && resizing == 0) return moves;
    }
    // Dijkstra over layouts. Moves are priced where they apply; a permute goes straight to
    // the target, or to a layout of the same blocks with the mesh axes reassigned, from which
    // a collective over another axis finishes (mesh 2x4, i_{01} -> i_1: a permute to i_{10},
    // then an all-gather over axis 0, 2.5x fewer bytes than gathering axis 1 and permuting).
    // Bounded: a mesh of many axes falls back to the axis-by-axis order.
    struct Node {
        Cost cost;
        LayoutState state;
        int parent = -1;
        Move move;
    };
    std::vector<Node> nodes;
    std::map<LayoutState, Cost> best;
    auto cmp = [&](int a, int b) {
        return nodes[static_cast<std::size_t>(b)].cost < nodes[static_cast<std::size_t>(a)].cost;
    };
    std::priority_queue<int, std::vector<int>, decltype(cmp)> open(cmp);
    nodes.push_back({Cost{}, from, -1, {}});
    best[from] = Cost{};
    open.push(0);
    int expanded = 0, permutes = 0, relabels = 0, found = -1;
    constexpr int kMaxExpanded = 4096, kMaxPermutes = 64, kMaxRelabels = 64;
    const bool relabel = device_count(p) <= 256;
    while (!open.empty() && expanded < kMaxExpanded) {
        const int at = open.top();
        open.pop();
        const Node cur = nodes[static_cast<std::size_t>(at)];
        if (best[cur.state] < cur.cost) continue; // a stale entry
        if (cur.state == to) {
            found = at;
            break;
        }
        ++expanded;
        auto relax = [&](Move m, LayoutState next) {
            Cost c = cur.cost;
            c.time += m.time_s;
            c.bytes += m.bytes;
            c.steps += m.local ? 0 : 1;
            auto it = best.find(next);
            if (it != best.end() && !(c < it->second)) return;
            best[next] = c;
            nodes.push_back({c, std::move(next), at, std::move(m)});
            open.push(static_cast<int>(nodes.size() - 1));
        };
        for (auto& m : candidates(cur.state, to)) {
            price(p, cur.state, m);
            relax(m, apply_move(cur.state, m));
        }
        if (permutes < kMaxPermutes) {
            ++permutes;
            if (auto m = permute_move(p, cur.state, to)) relax(std::move(*m), to);
            // A device may need parts of several blocks: a sparse exchange (a swap of blocks
            // over axes of different sizes, a shard moved to a smaller axis).
            // Growing blocks only from the start: the holder matching costs N² a try, and
            // the search reaches many layouts whose blocks grow towards the target (the
            // strategy search at 256 devices took 3.4x as long when every one tried it).
            if (auto m = exchange_move(p, cur.state, to, at == 0)) relax(std::move(*m), to);
        }
        if (relabel && relabels < kMaxRelabels)
            for (auto& t : relabelled_layouts(p, cur.state)) {
                if (t == to || relabels >= kMaxRelabels) continue;
                ++relabels;
                if (auto m = permute_move(p, cur.state, t)) relax(std::move(*m), std::move(t));
            }
    }
    std::optional<std::vector<Move>> out;
    if (found >= 0) {
        std::vector<Move> moves;
        for (int at = found; nodes[static_cast<std::size_t>(at)].parent >= 0;
             at = nodes[static_cast<std::size_t>(at)].parent)
            moves.push_back(nodes[static_cast<std::size_t>(at)].move);
        std::reverse(moves.begin(), moves.end());
        out = std::move(moves);
    }
    // The axis-by-axis order when it is exact and no dearer (or when the search gave up).
    auto priced = [&](std::vector<Move> moves) {
        LayoutState s = from;
        for (auto& m : moves) {
            if (!move_applies(s, m)) return std::optional<std::vector<Move>>{};
            price(p, s, m);
            s = m.kind == MoveKind::Permute && m.target.partial.empty() ? to : apply_move(s, m);
        }
        if (!(s == to)) return std::optional<std::vector<Move>>{};
        return std::optional<std::vector<Move>>{std::move(moves)};
    };
    for (const auto& seq : {preferred, axis_by_axis(from, to)}) {
        if (seq.empty()) continue;
        auto mine = priced(seq);
        if (mine && (!out || !(cost_of(*out) < cost_of(*mine)))) return mine;
    }
    if (!out) out = priced(gather_then_slice(from, to));
    return out;
}

} // namespace shardscope::semantics::detail
