// The redistribution planner against a block-level simulation of what each move does to the
// elements every device holds, over every pair of layouts of 1-D to 3-D meshes of up to 8
// devices. The simulation knows only the collectives' definitions (MPI semantics on the
// local buffers) and the layout's meaning (nested torch.chunk), not the planner's algebra.
#include "semantics/context.hpp"
#include "semantics/flat.hpp"
#include "semantics/redistribute.hpp"
#include "semantics/small_vec.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <sstream>

using namespace shardscope::semantics;
using namespace shardscope::semantics::detail;

namespace {

// A layout's partial reduction per mesh axis, as LayoutState lists them.
constexpr std::optional<PartialOp> kNo{}, kSum{PartialOp::Sum}, kMax{PartialOp::Max};

/// What one device holds: per atom the global positions of its local rows, in local order,
/// and the partial shares summed into its buffer (a share: coordinates on the source's
/// partial axes; empty set = zeros).
struct Held {
    std::vector<std::vector<std::int64_t>> lists;
    std::set<std::vector<int>> shares;
    bool operator==(const Held&) const = default;
};

std::vector<int> coords_of(const std::vector<std::int64_t>& sizes, std::int64_t at) {
    std::vector<int> c(sizes.size());
    for (std::size_t k = sizes.size(); k-- > 0;) {
        c[k] = static_cast<int>(at % sizes[k]);
        at /= sizes[k];
    }
    return c;
}

std::int64_t count_of(const std::vector<std::int64_t>& sizes) {
    std::int64_t n = 1;
    for (auto s : sizes)
        n *= s;
    return n;
}

/// torch.chunk of a list: chunk q of n.
std::vector<std::int64_t> chunk_of(const std::vector<std::int64_t>& list, std::int64_t n,
                                   std::int64_t q) {
    const auto len = static_cast<std::int64_t>(list.size());
    const auto size = (len + n - 1) / n;
    const auto b = std::min(q * size, len), e = std::min(b + size, len);
    return {list.begin() + b, list.begin() + e};
}

/// The positions a layout assigns the device at `c`: nested chunks of 0..extent-1.
std::vector<std::vector<std::int64_t>> expected(const RedistributionProblem& p,
                                                const LayoutState& s, const std::vector<int>& c) {
    std::vector<std::vector<std::int64_t>> out;
    for (std::size_t a = 0; a < s.axes.size(); ++a) {
        std::vector<std::int64_t> list(static_cast<std::size_t>(p.extents[a]));
        for (std::size_t i = 0; i < list.size(); ++i)
            list[i] = static_cast<std::int64_t>(i);
        for (int k : s.axes[a])
            list = chunk_of(list, p.axis_sizes[static_cast<std::size_t>(k)],
                            c[static_cast<std::size_t>(k)]);
        out.push_back(list);
    }
    return out;
}

/// The partial axes of a layout.
std::vector<int> partial_axes_of(const LayoutState& s) {
    std::vector<int> out;
    for (std::size_t k = 0; k < s.partial.size(); ++k)
        if (s.partial[k]) out.push_back(static_cast<int>(k));
    return out;
}

/// The devices of the group along axis k through device `d` (by position along k).
std::vector<std::int64_t> group_of(const std::vector<std::int64_t>& sizes, std::int64_t d, int k) {
    auto c = coords_of(sizes, d);
    std::vector<std::int64_t> out;
    for (int q = 0; q < sizes[static_cast<std::size_t>(k)]; ++q) {
        c[static_cast<std::size_t>(k)] = q;
        std::int64_t at = 0;
        for (std::size_t j = 0; j < sizes.size(); ++j)
            at = at * sizes[j] + c[j];
        out.push_back(at);
    }
    return out;
}

/// A collective over a group of axes as the single-axis moves it does in one collective: its
/// blocks are theirs (the executor runs it as one, and proves it on data).
std::vector<Move> single_axis_moves(const std::vector<Move>& moves) {
    std::vector<Move> out;
    for (const auto& m : moves) {
        if (m.axes.size() <= 1) {
            out.push_back(m);
            continue;
        }
        auto one = [&](MoveKind kind, int k, int from, int to) {
            Move s = m;
            s.kind = kind;
            s.axes = {k};
            s.from = from;
            s.to = to;
            out.push_back(s);
        };
        switch (m.kind) {
        case MoveKind::AllReduce:
        case MoveKind::ReduceScatter:
            for (int k : m.axes)
                one(m.kind, k, -1, m.to);
            break;
        case MoveKind::AllGather:
        case MoveKind::AllToAll:
            for (auto k = m.axes.rbegin(); k != m.axes.rend(); ++k)
                one(MoveKind::AllGather, *k, m.from, -1);
            if (m.kind == MoveKind::AllToAll)
                for (int k : m.axes)
                    one(MoveKind::Slice, k, -1, m.to);
            break;
        default:
            out.push_back(m);
        }
    }
    return out;
}

/// Runs `moves` from layout `from` on the block model; returns an error text or "".
std::string simulate(const RedistributionProblem& p, const LayoutState& from, const LayoutState& to,
                     const std::vector<Move>& given) {
    const auto moves = single_axis_moves(given);
    const auto n = count_of(p.axis_sizes);
    const auto partial = partial_axes_of(from);
    std::vector<Held> held(static_cast<std::size_t>(n));
    for (std::int64_t d = 0; d < n; ++d) {
        const auto c = coords_of(p.axis_sizes, d);
        held[static_cast<std::size_t>(d)].lists = expected(p, from, c);
        std::vector<int> share;
        for (int k : partial)
            share.push_back(c[static_cast<std::size_t>(k)]);
        held[static_cast<std::size_t>(d)].shares = {share};
    }
    auto position_of = [&](std::int64_t id) {
        if (p.devices.empty()) return id;
        return static_cast<std::int64_t>(std::find(p.devices.begin(), p.devices.end(), id) -
                                         p.devices.begin());
    };
    for (const auto& m : moves) {
        auto next = held;
        if (m.kind == MoveKind::Permute) {
            // Its own target (a layout on the way), or the plan's (a permute made by hand).
            const LayoutState& after = m.target.partial.empty() ? to : m.target;
            // Each destination keeps what it holds of its new block and receives from each
            // source the part of that block the source holds: every position from exactly one.
            std::map<std::int64_t, std::vector<std::int64_t>> sources;
            for (const auto& [src, dst] : m.pairs) {
                const auto s = position_of(src), d = position_of(dst);
                if (s == d) return "a permute sends to the device itself";
                auto& list = sources[d];
                if (std::find(list.begin(), list.end(), s) != list.end())
                    return "a permute lists a pair twice";
                list.push_back(s);
            }
            auto holds = [](const Held& h, const std::vector<std::int64_t>& at) {
                for (std::size_t a = 0; a < at.size(); ++a)
                    if (std::find(h.lists[a].begin(), h.lists[a].end(), at[a]) == h.lists[a].end())
                        return false;
                return true;
            };
            for (std::int64_t d = 0; d < n; ++d) {
                const auto want = expected(p, after, coords_of(p.axis_sizes, d));
                const auto& from_list = sources[d];
                std::vector<int> used(from_list.size(), 0);
                // Every position of the new block (the product of the per-atom lists).
                std::vector<std::size_t> i(want.size(), 0);
                bool empty = false;
                for (const auto& w : want)
                    empty = empty || w.empty();
                while (!empty) {
                    std::vector<std::int64_t> at;
                    for (std::size_t a = 0; a < want.size(); ++a)
                        at.push_back(want[a][i[a]]);
                    int providers = holds(held[static_cast<std::size_t>(d)], at) ? 1 : 0;
                    for (std::size_t q = 0; q < from_list.size(); ++q)
                        if (holds(held[static_cast<std::size_t>(from_list[q])], at)) {
                            ++providers;
                            used[q] = 1;
                        }
                    if (providers == 0)
                        return "a permute leaves a device without part of its block";
                    if (providers > 1) return "a permute gives a device a position twice";
                    std::size_t a = want.size();
                    while (a > 0 && ++i[a - 1] == want[a - 1].size())
                        i[--a] = 0;
                    if (a == 0) break;
                }
                // (A permute_move pairs every device of its bijection, empty blocks too.)
                if (!empty && std::find(used.begin(), used.end(), 0) != used.end())
                    return "a permute sends a device nothing it needs";
                next[static_cast<std::size_t>(d)].lists = want;
            }
            held = std::move(next);
            continue;
        }
        const int k = m.axes.front();
        const auto size = p.axis_sizes[static_cast<std::size_t>(k)];
        for (std::int64_t d = 0; d < n; ++d) {
            const auto c = coords_of(p.axis_sizes, d);
            const auto q = c[static_cast<std::size_t>(k)];
            const auto group = group_of(p.axis_sizes, d, k);
            auto& out = next[static_cast<std::size_t>(d)];
            const auto& mine = held[static_cast<std::size_t>(d)];
            auto same_except = [&](int atom, bool shares_too) {
                for (auto g : group) {
                    const auto& o = held[static_cast<std::size_t>(g)];
                    for (std::size_t a = 0; a < o.lists.size(); ++a)
                        if (static_cast<int>(a) != atom && o.lists[a] != mine.lists[a])
                            return false;
                    if (shares_too && o.shares != mine.shares) return false;
                }
                return true;
            };
            switch (m.kind) {
            case MoveKind::AllReduce:
            case MoveKind::ReduceScatter: {
                if (!same_except(-1, false)) return "a reduction over misaligned buffers";
                std::set<std::vector<int>> sum;
                for (auto g : group)
                    for (const auto& s : held[static_cast<std::size_t>(g)].shares)
                        if (!sum.insert(s).second) return "a share is summed twice";
                out.shares = sum;
                if (m.kind == MoveKind::ReduceScatter) {
                    auto& l = out.lists[static_cast<std::size_t>(m.to)];
                    l = chunk_of(l, size, q);
                }
                break;
            }
            case MoveKind::AllGather:
            case MoveKind::AllToAll: {
                // Member q's rows of `from` land at block q, in member order; an all-to-all
                // also keeps chunk q of `to` (every member sent this one its chunk q).
                if (!same_except(m.from, true)) return "a gather of misaligned buffers";
                auto& cat = out.lists[static_cast<std::size_t>(m.from)];
                cat.clear();
                for (auto g : group) {
                    const auto& l =
                        held[static_cast<std::size_t>(g)].lists[static_cast<std::size_t>(m.from)];
                    cat.insert(cat.end(), l.begin(), l.end());
                }
                if (m.kind == MoveKind::AllToAll) {
                    auto& l = out.lists[static_cast<std::size_t>(m.to)];
                    l = chunk_of(l, size, q);
                }
                break;
            }
            case MoveKind::Slice: {
                auto& l = out.lists[static_cast<std::size_t>(m.to)];
                l = chunk_of(l, size, q);
                break;
            }
            case MoveKind::KeepOne:
                if (q != 0) out.shares.clear();
                break;
            case MoveKind::Permute:
                break;
            }
        }
        held = std::move(next);
    }
    // Every device holds its target block; within each group of the target's partial axes
    // the shares partition the whole sum.
    std::set<std::vector<int>> all = {{}};
    for (int k : partial) {
        std::set<std::vector<int>> more;
        for (const auto& s : all)
            for (int q = 0; q < p.axis_sizes[static_cast<std::size_t>(k)]; ++q) {
                auto t = s;
                t.push_back(q);
                more.insert(t);
            }
        all = more;
    }
    const auto target_partial = partial_axes_of(to);
    for (std::int64_t d = 0; d < n; ++d) {
        const auto c = coords_of(p.axis_sizes, d);
        if (held[static_cast<std::size_t>(d)].lists != expected(p, to, c))
            return "device " + std::to_string(d) + " does not hold its target block";
        std::vector<std::int64_t> members = {d};
        for (int k : target_partial) {
            std::vector<std::int64_t> wider;
            for (auto x : members)
                for (auto g : group_of(p.axis_sizes, x, k))
                    wider.push_back(g);
            std::sort(wider.begin(), wider.end());
            wider.erase(std::unique(wider.begin(), wider.end()), wider.end());
            members = wider;
        }
        std::set<std::vector<int>> sum;
        for (auto g : members)
            for (const auto& s : held[static_cast<std::size_t>(g)].shares)
                if (!sum.insert(s).second) return "a share is counted twice";
        if (sum != all) return "device " + std::to_string(d) + "'s group does not sum to the value";
    }
    return "";
}

/// Every layout of `atoms` atoms on a mesh of `axes` axes: each axis unused, partial (sum) or
/// on one atom, in every order within an atom.
std::vector<LayoutState> all_layouts(int axes, int atoms, bool with_partial) {
    std::vector<LayoutState> out;
    const int choices = atoms + 1 + (with_partial ? 1 : 0);
    int total = 1;
    for (int k = 0; k < axes; ++k)
        total *= choices;
    for (int code = 0; code < total; ++code) {
        std::vector<int> where(static_cast<std::size_t>(axes));
        int c = code;
        for (int k = 0; k < axes; ++k) {
            where[static_cast<std::size_t>(k)] = c % choices;
            c /= choices;
        }
        // Axes in every order: permutations of 0..axes-1 decide the order within atoms.
        std::vector<int> order(static_cast<std::size_t>(axes));
        for (int k = 0; k < axes; ++k)
            order[static_cast<std::size_t>(k)] = k;
        std::set<LayoutState> seen;
        do {
            LayoutState s;
            s.axes.resize(static_cast<std::size_t>(atoms));
            s.partial.assign(static_cast<std::size_t>(axes), kNo);
            for (int k : order) {
                const int w = where[static_cast<std::size_t>(k)];
                if (w < atoms)
                    s.axes[static_cast<std::size_t>(w)].push_back(k);
                else if (w == atoms + 1)
                    s.partial[static_cast<std::size_t>(k)] = kSum;
            }
            if (seen.insert(s).second) out.push_back(s);
        } while (std::next_permutation(order.begin(), order.end()));
    }
    return out;
}

std::string text(const LayoutState& s) {
    std::ostringstream o;
    for (std::size_t a = 0; a < s.axes.size(); ++a) {
        o << "abc"[a] << "_{";
        for (int k : s.axes[a])
            o << k;
        o << "} ";
    }
    for (std::size_t k = 0; k < s.partial.size(); ++k)
        if (s.partial[k]) o << "P" << k << " ";
    return o.str();
}

std::string text(const std::vector<Move>& moves) {
    std::ostringstream o;
    for (const auto& m : moves) {
        o << static_cast<int>(m.kind) << "(";
        for (int k : m.axes)
            o << k;
        o << "," << m.from << "," << m.to << ") ";
    }
    return o.str();
}

RedistributionProblem problem(std::vector<std::int64_t> sizes, std::vector<std::int64_t> extents) {
    RedistributionProblem p;
    p.axis_sizes = std::move(sizes);
    p.extents = std::move(extents);
    p.links.assign(p.axis_sizes.size(), Link{450e9, 5e-6, {}});
    return p;
}

/// Plans every pair of layouts and simulates each plan; returns the pairs checked.
int check_all_pairs(const RedistributionProblem& p, bool with_partial) {
    const auto layouts = all_layouts(static_cast<int>(p.axis_sizes.size()),
                                     static_cast<int>(p.extents.size()), with_partial);
    int checked = 0;
    for (const auto& from : layouts)
        for (const auto& to : layouts) {
            const auto moves = plan_redistribution(p, from, to);
            INFO("from ", text(from), " to ", text(to));
            REQUIRE(moves.has_value());
            const auto err = simulate(p, from, to, *moves);
            CHECK_MESSAGE(err.empty(), err, " for plan ", text(*moves));
            ++checked;
        }
    return checked;
}

} // namespace

/// Every mesh of `axes` axes (sizes 1 to 8) with at most 8 devices.
std::vector<std::vector<std::int64_t>> meshes(int axes) {
    std::vector<std::vector<std::int64_t>> out = {{}};
    for (int k = 0; k < axes; ++k) {
        std::vector<std::vector<std::int64_t>> more;
        for (const auto& m : out)
            for (std::int64_t n = 1; n <= 8; ++n) {
                auto w = m;
                w.push_back(n);
                if (count_of(w) <= 8) more.push_back(w);
            }
        out = more;
    }
    // A mesh of one device has nothing to move.
    out.erase(
        std::remove_if(out.begin(), out.end(), [](const auto& m) { return count_of(m) == 1; }),
        out.end());
    return out;
}

TEST_CASE("redistribution: every plan between every pair of layouts is exact (1-D meshes)") {
    for (const auto& sizes : meshes(1)) {
        CAPTURE(sizes[0]);
        CHECK(check_all_pairs(problem(sizes, {8, 6}), true) > 0);
    }
}

TEST_CASE("redistribution: every plan between every pair of layouts is exact (2-D meshes)") {
    for (const auto& sizes : meshes(2)) {
        CAPTURE(sizes[0]);
        CAPTURE(sizes[1]);
        CHECK(check_all_pairs(problem(sizes, {8, 6}), true) > 0);
    }
    // Three atoms: a move between two of them past the third.
    CHECK(check_all_pairs(problem({2, 2}, {4, 8, 2}), false) > 0);
}

TEST_CASE("redistribution: every plan between every pair of layouts is exact (3-D meshes)") {
    for (const auto& sizes : meshes(3)) {
        CAPTURE(sizes[0]);
        CAPTURE(sizes[1]);
        CAPTURE(sizes[2]);
        // Partial sums on the meshes of 8 devices (the largest state spaces) only on 2x2x2.
        const bool partial = count_of(sizes) < 8 || sizes == std::vector<std::int64_t>{2, 2, 2};
        CHECK(check_all_pairs(problem(sizes, {8, 6}), partial) > 0);
    }
}

TEST_CASE("redistribution: a mesh with its own device order") {
    auto p = problem({2, 2}, {8, 8});
    p.devices = {3, 1, 2, 0};
    CHECK(check_all_pairs(p, false) > 0);
}

TEST_CASE("redistribution: the simulation refuses wrong plans") {
    // The case: two per-axis all-to-alls do not swap i_0 j_1 into i_1 j_0.
    auto p = problem({2, 2}, {8, 8});
    LayoutState from{{{0}, {1}}, {kNo, kNo}}, to{{{1}, {0}}, {kNo, kNo}};
    Move a;
    a.kind = MoveKind::AllToAll;
    a.axes = {0};
    a.from = 0;
    a.to = 1;
    Move b = a;
    b.axes = {1};
    b.from = 1;
    b.to = 0;
    CHECK_FALSE(simulate(p, from, to, {a, b}).empty());
    // An all-gather over an axis that is not the index's minor-most one.
    LayoutState ab{{{0, 1}, {}}, {kNo, kNo}}, b1{{{1}, {}}, {kNo, kNo}};
    Move g;
    g.kind = MoveKind::AllGather;
    g.axes = {0};
    g.from = 0;
    CHECK_FALSE(simulate(p, ab, b1, {g}).empty());
    CHECK_FALSE(move_applies(ab, g));
    // And accepts the planner's.
    const auto plan = plan_redistribution(p, from, to);
    REQUIRE(plan.has_value());
    CHECK(simulate(p, from, to, *plan).empty());
}

TEST_CASE("redistribution: the issue's cases get the cheap exact plan") {
    SUBCASE("a block swap on 2x2 is one permute of the two off-diagonal blocks") {
        auto p = problem({2, 2}, {8, 8});
        const auto plan = plan_redistribution(p, LayoutState{{{0}, {1}}, {kNo, kNo}},
                                              LayoutState{{{1}, {0}}, {kNo, kNo}});
        REQUIRE(plan.has_value());
        REQUIRE(plan->size() == 1);
        CHECK(plan->front().kind == MoveKind::Permute);
        CHECK(plan->front().pairs ==
              std::vector<std::pair<std::int64_t, std::int64_t>>{{1, 2}, {2, 1}});
        CHECK(plan->front().bytes == 16 * 4);
    }
    SUBCASE("a_{01} -> a_{10} is a pairwise swap") {
        auto p = problem({2, 2}, {8, 8});
        const auto plan = plan_redistribution(p, LayoutState{{{0, 1}, {}}, {kNo, kNo}},
                                              LayoutState{{{1, 0}, {}}, {kNo, kNo}});
        REQUIRE(plan.has_value());
        REQUIRE(plan->size() == 1);
        CHECK(plan->front().kind == MoveKind::Permute);
        CHECK(plan->front().pairs.size() == 2);
    }
    SUBCASE("one exchange where each new block comes from two devices") {
        auto p = problem({2, 2, 2}, {8, 8, 8});
        const LayoutState from{{{0, 1}, {2}, {}}, {kNo, kNo, kNo}},
            to{{{0}, {1}, {2}}, {kNo, kNo, kNo}};
        const auto plan = plan_redistribution(p, from, to);
        REQUIRE(plan.has_value());
        REQUIRE(plan->size() == 1);
        CHECK(plan->front().kind == MoveKind::Permute);
        CHECK(plan->front().bytes == 64 * 4); // two parts of 32 elements, each device
        CHECK(simulate(p, from, to, *plan).empty());
    }
    SUBCASE("right collectives in the right order: minor-most axis first") {
        // A slow axis 1 makes the exchange (two peers over axes 1 and 2) dearer.
        auto p = problem({2, 2, 2}, {8, 8, 8});
        p.links[1].latency_s = 20e-6;
        const auto plan = plan_redistribution(p, LayoutState{{{0, 1}, {2}, {}}, {kNo, kNo, kNo}},
                                              LayoutState{{{0}, {1}, {2}}, {kNo, kNo, kNo}});
        REQUIRE(plan.has_value());
        CHECK(simulate(p, LayoutState{{{0, 1}, {2}, {}}, {kNo, kNo, kNo}},
                       LayoutState{{{0}, {1}, {2}}, {kNo, kNo, kNo}}, *plan)
                  .empty());
        std::vector<int> axes;
        for (const auto& m : *plan)
            if (!m.local) axes.insert(axes.end(), m.axes.begin(), m.axes.end());
        CHECK(axes == std::vector<int>{2, 1});
    }
    SUBCASE("nothing moves over an axis of size 1") {
        auto p = problem({4, 1}, {8, 8});
        const auto plan = plan_redistribution(p, LayoutState{{{0}, {}}, {kNo, kSum}},
                                              LayoutState{{{0}, {}}, {kNo, kNo}});
        REQUIRE(plan.has_value());
        REQUIRE(plan->size() == 1);
        CHECK(plan->front().local);
        CHECK(plan->front().bytes == 0);
    }
    SUBCASE("a shard moved to another axis is sliced and sent once, not gathered") {
        auto p = problem({2, 4}, {512, 512});
        const auto plan = plan_redistribution(p, LayoutState{{{0}, {}}, {kNo, kNo}},
                                              LayoutState{{{1}, {}}, {kNo, kNo}});
        REQUIRE(plan.has_value());
        REQUIRE(plan->size() == 1);
        CHECK(plan->front().kind == MoveKind::Permute);
        CHECK(plan->front().bytes == 128 * 512 * 4); // one target block, not half the tensor
    }
}

TEST_CASE("redistribution: a permute to a layout on the way, then a collective") {
    SUBCASE("the layouts a permute can reach keep each index's number of blocks") {
        auto p = problem({2, 4}, {1024, 1024});
        // i_{01}: i_{10} only (8 blocks either way); i_0: none (axis 1 has 4 devices).
        CHECK(relabelled_layouts(p, LayoutState{{{0, 1}, {}}, {kNo, kNo}}) ==
              std::vector<LayoutState>{LayoutState{{{1, 0}, {}}, {kNo, kNo}}});
        CHECK(relabelled_layouts(p, LayoutState{{{0}, {}}, {kNo, kNo}}).empty());
        // On 2x2 a shard may move to the other axis, or the two indices swap axes.
        auto q = problem({2, 2}, {8, 8});
        CHECK(relabelled_layouts(q, LayoutState{{{0}, {1}}, {kNo, kNo}}) ==
              std::vector<LayoutState>{LayoutState{{{1}, {0}}, {kNo, kNo}}});
        CHECK(relabelled_layouts(q, LayoutState{{{0}, {}}, {kNo, kNo}}) ==
              std::vector<LayoutState>{LayoutState{{{1}, {}}, {kNo, kNo}}});
        // A partial layout: no permute applies.
        CHECK(relabelled_layouts(q, LayoutState{{{0}, {}}, {kNo, kSum}}).empty());
    }
    SUBCASE("issue 19: the minor axis of i_{01} gathered, axis 1 kept: one exchange") {
        // Each device's quarter of i from the two devices holding its eighths: XLA's bytes
        // (1.05 MB, not 2.62) in one step of two peers, where a permute on the way and an
        // all-gather take two collectives.
        auto p = problem({2, 4}, {1024, 1024});
        const LayoutState from{{{0, 1}, {}}, {kNo, kNo}}, to{{{1}, {}}, {kNo, kNo}};
        const auto plan = plan_redistribution(p, from, to);
        REQUIRE(plan.has_value());
        REQUIRE(plan->size() == 1);
        CHECK((*plan)[0].kind == MoveKind::Permute);
        CHECK((*plan)[0].bytes == 2 * 128 * 1024 * 4);
        CHECK(simulate(p, from, to, *plan).empty());
    }
    SUBCASE("issue 19: a permute on the way and an all-gather move the same, in two steps") {
        // The plan before the exchange could grow blocks: permute to i_{10}, then gather
        // axis 0. The search still tries permutes to such layouts on the way.
        auto p = problem({2, 4}, {1024, 1024});
        const LayoutState from{{{0, 1}, {}}, {kNo, kNo}}, to{{{1}, {}}, {kNo, kNo}};
        const LayoutState mid{{{1, 0}, {}}, {kNo, kNo}};
        auto permute = permute_move(p, from, mid);
        REQUIRE(permute.has_value());
        CHECK(permute->bytes == 128 * 1024 * 4);
        Move gather;
        gather.kind = MoveKind::AllGather;
        gather.axes = {0};
        gather.from = 0;
        std::vector<Move> plan{*permute, gather};
        CHECK(simulate(p, from, to, plan).empty());
        // The simulation holds a permute to its own target: to the final layout it fails.
        auto wrong = plan;
        wrong[0].target = to;
        CHECK_FALSE(simulate(p, from, to, wrong).empty());
    }
}

TEST_CASE("redistribution: beyond 256 devices, the exchange from the start layout") {
    // 512 devices (small ranges: the simulation walks every position of every device). The
    // block swap is one exchange, each new block from the 32 devices holding its parts (at
    // 4096 x 1024 f32 32.8 kB per device; it was an all-gather and an all-to-all, 228 kB),
    // the shard moved to the smaller axis too.
    auto p = problem({4, 128}, {256, 256});
    const LayoutState from{{{0}, {1}}, {kNo, kNo}}, to{{{1}, {0}}, {kNo, kNo}};
    const auto plan = plan_redistribution(p, from, to);
    REQUIRE(plan.has_value());
    REQUIRE(plan->size() == 1);
    CHECK((*plan)[0].kind == MoveKind::Permute);
    CHECK((*plan)[0].bytes == 2 * 64 * 4);
    CHECK(simulate(p, from, to, *plan).empty());
    const LayoutState moved{{{1}, {}}, {kNo, kNo}}, smaller{{{0}, {}}, {kNo, kNo}};
    const auto exchange = plan_redistribution(p, moved, smaller);
    REQUIRE(exchange.has_value());
    REQUIRE(exchange->size() == 1);
    CHECK((*exchange)[0].kind == MoveKind::Permute);
    CHECK(simulate(p, moved, smaller, *exchange).empty());
    // The minor axis of i_{01} dropped on 2x256: it gathered over the 256-device axis (at
    // 4096 x 1024 f32 8.36 MB per device); one exchange of two parts of i per device.
    auto q = problem({2, 256}, {1024, 4});
    const LayoutState both{{{0, 1}, {}}, {kNo, kNo}}, minor{{{1}, {}}, {kNo, kNo}};
    const auto one = plan_redistribution(q, both, minor);
    REQUIRE(one.has_value());
    REQUIRE(one->size() == 1);
    CHECK((*one)[0].kind == MoveKind::Permute);
    CHECK((*one)[0].bytes == 2 * 2 * 4 * 4);
    CHECK(simulate(q, both, minor, *one).empty());
}

TEST_CASE("redistribution: meshes too large to search all layouts still get exact plans") {
    // Six axes of two devices, three indices: far more layouts than the search visits.
    auto p = problem({2, 2, 2, 2, 2, 2}, {16, 8, 8});
    const std::vector<std::pair<LayoutState, LayoutState>> pairs = {
        {{{{0, 1, 2}, {3, 4, 5}, {}}, {kNo, kNo, kNo, kNo, kNo, kNo}},
         {{{5, 4}, {}, {3, 2, 1, 0}}, {kNo, kNo, kNo, kNo, kNo, kNo}}},
        {{{{0, 1, 2}, {3}, {4}}, {kNo, kNo, kNo, kNo, kNo, kSum}},
         {{{4, 3}, {0, 2}, {5}}, {kNo, kSum, kNo, kNo, kNo, kNo}}},
        {{{{}, {}, {}}, {kSum, kSum, kSum, kSum, kSum, kSum}},
         {{{5, 1}, {3, 0}, {2, 4}}, {kNo, kNo, kNo, kNo, kNo, kNo}}},
    };
    for (const auto& pair : pairs) {
        const auto& from = pair.first;
        const auto& to = pair.second;
        INFO("from ", text(from), " to ", text(to));
        const auto moves = plan_redistribution(p, from, to);
        REQUIRE(moves.has_value());
        const auto err = simulate(p, from, to, *moves);
        CHECK_MESSAGE(err.empty(), err, " for plan ", text(*moves));
    }
}

TEST_CASE("redistribution: the search's fallback plan is exact between every pair of layouts") {
    for (auto sizes : std::vector<std::vector<std::int64_t>>{{4}, {2, 3}, {2, 2, 2}}) {
        const auto p = problem(sizes, {8, 6});
        const auto layouts = all_layouts(static_cast<int>(sizes.size()), 2, true);
        for (const auto& from : layouts)
            for (const auto& to : layouts) {
                bool other_op = false; // P(sum) -> P(max) is refused before any plan
                for (std::size_t k = 0; k < from.partial.size(); ++k)
                    other_op = other_op || (from.partial[k] && to.partial[k] &&
                                            from.partial[k] != to.partial[k]);
                if (other_op) continue;
                INFO("from ", text(from), " to ", text(to));
                const auto moves = gather_then_slice(from, to);
                const auto err = simulate(p, from, to, moves);
                CHECK_MESSAGE(err.empty(), err, " for plan ", text(moves));
            }
    }
}

TEST_CASE("redistribution: collectives over groups of axes, chosen by cost") {
    auto kinds = [](const std::vector<Move>& plan) {
        std::string out;
        for (const auto& m : plan) {
            if (m.local) continue;
            out += (out.empty() ? "" : " ") + std::to_string(static_cast<int>(m.kind)) + "(";
            for (int k : m.axes)
                out += std::to_string(k);
            out += ")";
        }
        return out;
    };
    SUBCASE("P on both axes -> R: a hierarchical all-reduce beats one per axis") {
        auto p = problem({2, 4}, {1024, 1024});
        const LayoutState from{{{}, {}}, {kSum, kSum}}, to{{{}, {}}, {kNo, kNo}};
        const auto plan = plan_redistribution(p, from, to);
        REQUIRE(plan.has_value());
        CHECK(simulate(p, from, to, *plan).empty());
        double bytes = 0;
        for (const auto& m : *plan)
            bytes += m.bytes;
        // One all-reduce over the 8 devices (XLA's plan) sends 2 * 7/8 V; so does the
        // hierarchical one, in fewer ring steps; per axis would send 2.5 V.
        const double v = 1024.0 * 1024 * 4;
        CHECK(bytes == doctest::Approx(1.75 * v));
        CHECK(plan->size() == 3);
    }
    SUBCASE("without latency, one all-reduce over the group") {
        auto p = problem({2, 4}, {1024, 1024});
        p.links.assign(2, Link{450e9, 0, {}});
        const LayoutState from{{{}, {}}, {kSum, kSum}}, to{{{}, {}}, {kNo, kNo}};
        const auto plan = plan_redistribution(p, from, to);
        REQUIRE(plan.has_value());
        REQUIRE(plan->size() == 1);
        CHECK(plan->front().kind == MoveKind::AllReduce);
        CHECK(plan->front().axes == std::vector<int>{0, 1});
        CHECK(plan->front().bytes == doctest::Approx(1.75 * 1024 * 1024 * 4));
        CHECK(simulate(p, from, to, *plan).empty());
    }
    SUBCASE("a_{01} b -> a b_{01}: one all-to-all over the group when bandwidth dominates") {
        auto p = problem({2, 4}, {16384, 8192});
        const LayoutState from{{{0, 1}, {}}, {kNo, kNo}}, to{{{}, {0, 1}}, {kNo, kNo}};
        const auto plan = plan_redistribution(p, from, to);
        REQUIRE(plan.has_value());
        CHECK(kinds(*plan) == std::to_string(static_cast<int>(MoveKind::AllToAll)) + "(01)");
        CHECK(simulate(p, from, to, *plan).empty());
        // Small: per-axis collectives (4 ring steps instead of 7).
        auto small = problem({2, 4}, {64, 64});
        const auto two = plan_redistribution(small, from, to);
        REQUIRE(two.has_value());
        CHECK(kinds(*two).find("(01)") == std::string::npos);
        CHECK(simulate(small, from, to, *two).empty());
    }
    SUBCASE("a group move applies only to the minor-most axes, in order") {
        Move g;
        g.kind = MoveKind::AllGather;
        g.axes = {0, 1};
        g.from = 0;
        CHECK(move_applies(LayoutState{{{0, 1}, {}}, {kNo, kNo}}, g));
        CHECK_FALSE(move_applies(LayoutState{{{1, 0}, {}}, {kNo, kNo}}, g));
        Move r;
        r.kind = MoveKind::AllReduce;
        r.axes = {0, 1};
        CHECK(move_applies(LayoutState{{{}, {}}, {kSum, kSum}}, r));
        CHECK_FALSE(move_applies(LayoutState{{{}, {}}, {kSum, kMax}}, r)); // two reductions
        CHECK_FALSE(move_applies(LayoutState{{{}, {}}, {kSum, kNo}}, r));
    }
}

// The checker's flat containers search up to 8 items from the front by equality and larger
// ones by binary search: both must agree with std::set and std::map (the order is the plans'
// order of indices), at every size across the limit.
TEST_CASE("flat sets and maps agree with std::set and std::map below and above the scan limit") {
    const std::vector<std::string> names = {"b", "d", "dd", "e", "f", "r", "s", "x", "ab", "a"};
    std::mt19937 rng(20);
    for (int trial = 0; trial < 200; ++trial) {
        FlatSet<IndexId> set;
        FlatMap<IndexId, int> map;
        std::set<IndexId> want_set;
        std::map<IndexId, int> want_map;
        const int n = 1 + trial % 24;
        for (int k = 0; k < n; ++k) {
            const IndexId id{names[rng() % names.size()], static_cast<int>(rng() % 3)};
            const bool fresh = want_set.insert(id).second;
            CHECK(set.insert(id).second == fresh);
            map[id] += k;
            want_map[id] += k;
        }
        REQUIRE(set.size() == want_set.size());
        CHECK(std::equal(set.begin(), set.end(), want_set.begin()));
        REQUIRE(map.size() == want_map.size());
        auto w = want_map.begin();
        for (const auto& [id, v] : map) {
            CHECK(id == w->first);
            CHECK(v == w->second);
            ++w;
        }
        for (const auto& name : names)
            for (int primes = 0; primes < 4; ++primes) {
                const IndexId id{name, primes};
                CHECK(set.count(id) == want_set.count(id));
                const auto it = map.find(id);
                REQUIRE((it != map.end()) == (want_map.count(id) == 1));
                if (it != map.end()) CHECK(it->second == want_map.at(id));
            }
    }
}

// The container a value's dimension keeps its indices in (semantics/small_vec.hpp): one index
// inline, a group's parts on the heap from the second, in order, through copies.
TEST_CASE("OneInline keeps one element inline and a group in order") {
    OneInline<IndexId> dim;
    CHECK(dim.empty());
    dim.push_back(IndexId{"r", 0});
    REQUIRE(dim.size() == 1);
    CHECK(dim.front() == IndexId{"r", 0});
    CHECK(dim.begin() + 1 == dim.end());
    OneInline<IndexId> group{IndexId{"r", 0}, IndexId{"c", 1}, IndexId{"a_long_name", 0}};
    REQUIRE(group.size() == 3);
    CHECK(group[0] == IndexId{"r", 0});
    CHECK(group[1] == IndexId{"c", 1});
    CHECK(group.back() == IndexId{"a_long_name", 0});
    CHECK(std::find(group.begin(), group.end(), IndexId{"c", 1}) == group.begin() + 1);
    CHECK(std::find(group.begin(), group.end(), IndexId{"c", 0}) == group.end());
    CHECK_FALSE(dim == group);
    dim.push_back(IndexId{"c", 1}); // spills the inline index to the heap, first
    dim.push_back(IndexId{"a_long_name", 0});
    CHECK(dim == group);
    const auto copy = group;
    CHECK(copy == group);
    OneInline<IndexId> other{IndexId{"c", 1}, IndexId{"r", 0}, IndexId{"a_long_name", 0}};
    CHECK_FALSE(other == group); // order counts
    OneInline<IndexId> reserved;
    reserved.reserve(2);
    reserved.push_back(IndexId{"b", 0});
    CHECK(reserved.size() == 1);
    CHECK(reserved == OneInline<IndexId>{IndexId{"b", 0}});
    // An element pushed again: copied before the inline one moves to the heap.
    OneInline<IndexId> twice{IndexId{"a_long_name_on_the_heap", 2}};
    twice.push_back(twice.front());
    twice.push_back(twice[1]);
    REQUIRE(twice.size() == 3u);
    for (const auto& i : twice)
        CHECK(i == IndexId{"a_long_name_on_the_heap", 2});
}

TEST_CASE("PartialAxes: a value's partial axes, flat by mesh axis") {
    PartialAxes p;
    CHECK(p.empty());
    CHECK(!p.has(0));
    CHECK(!p.has(-1));
    CHECK(!p.has(40));
    CHECK(p.begin() == p.end());
    p.set(2, PartialOp::Max);
    p.set(0, PartialOp::Sum);
    CHECK(!p.empty());
    CHECK(p.has(0));
    CHECK(!p.has(1));
    CHECK(p.has(2));
    CHECK(p.is(0, PartialOp::Sum));
    CHECK(!p.is(0, PartialOp::Max));
    CHECK(p.is(2, PartialOp::Max));
    CHECK(!p.is(1, PartialOp::Sum));
    CHECK(p.at(2) == PartialOp::Max);
    // Iterated in axis order, as (axis, op), skipping axes that are not partial.
    std::vector<std::pair<int, PartialOp>> seen;
    for (const auto& [k, op] : p)
        seen.emplace_back(k, op);
    CHECK(seen == std::vector<std::pair<int, PartialOp>>{{0, PartialOp::Sum}, {2, PartialOp::Max}});
    // One form per value: erasing the last partial axis compares equal to never setting it.
    PartialAxes q;
    q.set(0, PartialOp::Sum);
    CHECK(p != q);
    p.erase(2);
    CHECK(p == q);
    p.erase(7); // beyond the last axis: nothing happens
    CHECK(p == q);
    p.set(0, PartialOp::Max); // a new reduction replaces the old
    CHECK(p.at(0) == PartialOp::Max);
    CHECK(p != q);
    p.erase(0);
    CHECK(p.empty());
    CHECK(p == PartialAxes{});
    // More axes than fit inline (meshes have no limit on their axis count).
    PartialAxes many;
    for (int k = 0; k < 20; k += 3)
        many.set(k, k % 2 ? PartialOp::Max : PartialOp::Sum);
    const PartialAxes copy = many;
    CHECK(copy == many);
    CHECK(copy.has(18));
    CHECK(copy.is(9, PartialOp::Max));
    CHECK(!copy.has(19));
    int count = 0;
    for (const auto& entry : copy) {
        CHECK(entry.first % 3 == 0);
        ++count;
    }
    CHECK(count == 7);
    many.erase(18);
    CHECK(many != copy);
    CHECK(!many.has(18));
}
