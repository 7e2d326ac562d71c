// The redistribution planner: the cheapest sequence of exact block movements (collectives
// over one mesh axis, local slices, point-to-point permutes) that takes a tensor from one
// layout to another. Every move has one exact meaning on the blocks each device holds
// (NOTATION.md section 5: nested torch.chunk per sharded index), so a sequence whose moves
// each apply is correct by construction. Internal to semantics; pure, so unit-tested alone.
#pragma once

#include "chunks.hpp"
#include "cost.hpp"
#include "plan.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace shardscope::semantics::detail {

/// A layout as the search sees it: per atom (storage index) its mesh axes, major to minor,
/// and per mesh axis its partial reduction (none: not partial).
struct LayoutState {
    std::vector<std::vector<int>> axes;            ///< per atom
    std::vector<std::optional<PartialOp>> partial; ///< per mesh axis
    bool operator==(const LayoutState&) const = default;
    auto operator<=>(const LayoutState&) const = default;
    /// The atom that axis k shards, or -1.
    int atom_of(int k) const;
};

/// One exact block movement. A collective runs over one mesh axis or over a group of them
/// (`axes`, major to minor: one collective among the product of their devices, members
/// numbered row-major over those coordinates), which is exactly the sequence of its
/// single-axis moves at the block level, in one collective.
enum class MoveKind {
    AllReduce,     ///< partial (one reduction) on `axes` -> not partial
    ReduceScatter, ///< partial on `axes` -> `axes` appended (minor) to atom `to`
    AllGather,     ///< `axes`, the minor-most axes of atom `from`, removed from it
    AllToAll,      ///< `axes`, minor-most of atom `from`, moved to the minor end of atom `to`
    Slice,         ///< unused `axes` (one) appended (minor) to atom `to`: local
    KeepOne,       ///< unused `axes` (one) -> partial (`op`): coordinate 0 keeps its copy: local
    Permute,       ///< point-to-point sends (`pairs`): every device receives the parts of its
                   ///< target block that it lacks, each part from one device
};

struct Move {
    MoveKind kind = MoveKind::AllReduce;
    std::vector<int> axes;         ///< one axis, or a group (collectives); empty for a permute
    int from = -1;                 ///< atom
    int to = -1;                   ///< atom
    PartialOp op = PartialOp::Sum; ///< KeepOne: the partial reduction it introduces
    /// Permute: (source device, destination device), only pairs that move data; the source
    /// sends the part of its block that lies in the destination's target block (the whole
    /// target block, for a permute_move).
    std::vector<std::pair<std::int64_t, std::int64_t>> pairs;
    std::vector<int> permute_axes; ///< Permute: the mesh axes whose coordinates differ in a pair
    /// Permute: the layout it produces (the search's target, or a layout on the way whose
    /// blocks have the target's sizes with the mesh axes reassigned, e.g. i_{01} -> i_{10}).
    LayoutState target;
    /// Over an axis of size 1 nothing moves: the step is a local relabelling.
    bool local = false;
    double bytes = 0;  ///< per device (the busiest), as collective_bytes prices it
    double time_s = 0; ///< estimated
    NcclProtocol protocol = NcclProtocol::None; ///< what time_s assumes (cost.hpp)
    bool operator==(const Move&) const = default;
};

/// What the search needs to know of the mesh and the tensor.
struct RedistributionProblem {
    std::vector<std::int64_t> axis_sizes;
    std::vector<std::int64_t>
        devices;             ///< device id per row-major mesh coordinate (empty: identity)
    std::vector<Link> links; ///< per mesh axis
    std::vector<std::int64_t> extents; ///< per atom
    int elem_bytes = 4;
};

/// The state after `m` (which must apply to `s`).
LayoutState apply_move(const LayoutState& s, const Move& m);

/// Whether `m` applies to `s` (its axis where the move needs it, the atoms valid).
bool move_applies(const LayoutState& s, const Move& m);

/// Elements one device holds at most (device 0's, the largest chunks).
double local_elements(const RedistributionProblem& p, const LayoutState& s);

/// The link of a collective over `axes`: the slowest bandwidth and the largest latency (a ring
/// through the group crosses every one of its links).
Link group_link(const std::vector<Link>& links, std::span<const int> axes);
/// The same for a list (braced lists of axes included).
inline Link group_link(const std::vector<Link>& links, const std::vector<int>& axes) {
    return group_link(links, std::span<const int>(axes));
}

/// A collective over `axes` (`n` devices in all) as a plan's step prices it: the bytes each
/// device sends (collective_bytes) and their time on the group's link.
struct PricedCollective {
    double bytes = 0;
    CollectiveTime timing;
};
inline PricedCollective price_collective(const std::vector<Link>& links, StepKind kind,
                                         std::span<const int> axes, std::int64_t n,
                                         double group_bytes, double local_bytes) {
    PricedCollective out;
    out.bytes = collective_bytes(kind, n, group_bytes, local_bytes);
    out.timing = collective_timing(kind, n, out.bytes, group_link(links, axes));
    return out;
}

/// The cheapest sequence of moves from `from` to `to` (by estimated time, then fewer steps,
/// then fewer bytes), each priced. `preferred`, when every move of it applies and it reaches
/// `to`, wins ties (the order the checker always printed). Where the search gives up (more
/// than 4096 layouts on a mesh of many axes), gathers, reductions and slices that always
/// arrive. nullopt: unreachable (P(sum) -> P(max), a partial placement no move produces).
std::optional<std::vector<Move>> plan_redistribution(const RedistributionProblem& p,
                                                     const LayoutState& from, const LayoutState& to,
                                                     const std::vector<Move>& preferred = {});

/// A sequence that always arrives (where P(sum) -> P(max) is not asked), the search's
/// fallback: every index gathered down to the axes it keeps, then what stays partial nowhere
/// all-reduced, then slices, then R -> P. Unpriced.
std::vector<Move> gather_then_slice(const LayoutState& from, const LayoutState& to);

/// A permute from `from` straight to `to`: each device's target block lies inside the block
/// of exactly one sender, senders distinct (a bijection, staying put where possible).
/// nullopt when no such bijection exists, a layout is partial, or the mesh is too large to
/// search (over 1024 devices).
std::optional<Move> permute_move(const RedistributionProblem& p, const LayoutState& from,
                                 const LayoutState& to);

/// A sparse exchange from `from` straight to `to` (a permute whose devices may send to and
/// receive from several): each device assembles its target block from the cells of `from`
/// (its distinct blocks, which partition the tensor) that meet it — its own where it holds
/// one, else the part sent by one holder, the least loaded. Bytes: the most any device sends
/// or receives. nullopt when a layout is partial, nothing moves, the blocks grow and `grow`
/// is false, `to` only gathers (drops minor-most axes: an all-gather says that), or the mesh
/// is too large (over 256 devices; with `grow`, the search's start layout, over 1024).
std::optional<Move> exchange_move(const RedistributionProblem& p, const LayoutState& from,
                                  const LayoutState& to, bool grow = true);

/// The layouts a permute can reach from `s` on the way: the same blocks' sizes, the mesh axes
/// that shard them reassigned (the atoms keep how many axes they have, each atom the product
/// of its axes' sizes). `s` itself is not among them; empty when `s` is partial.
std::vector<LayoutState> relabelled_layouts(const RedistributionProblem& p, const LayoutState& s);

/// Every device's block under `s`: per row-major mesh coordinate, per atom, its range.
std::vector<std::vector<Range>> device_blocks(const RedistributionProblem& p, const LayoutState& s);

} // namespace shardscope::semantics::detail
