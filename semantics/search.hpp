// The strategy search (`shardscope plan`, issue 18): a strategy file names every parallelism
// it may use as a named mesh axis (`mesh dp=2 fsdp=1 tp=4 pp=1`), its tensors sharded over
// those axes as written. The search sizes the axes: every assignment of sizes to the axes
// whose product is the device count is substituted into the parsed program's mesh (the AST,
// parsed once), checked, pruned (errors, uneven shards, memory) and ranked by step time.
// A pure function of the program and the options: no I/O.
#pragma once

#include "checker.hpp"
#include "plan.hpp"
#include "totals.hpp"

#include "parser/ast.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shardscope::semantics {

/// One collective of a candidate, by kind and axes ("all-reduce(tp)"), summed over the step.
struct CollectiveTotal {
    std::string name;                 ///< "all-reduce(tp)"
    std::string kind;                 ///< "all-reduce"
    std::vector<int> axes;            ///< the mesh axes it runs over
    std::int64_t count = 0;           ///< occurrences per step (statement repeats included)
    double bytes_per_device = 0;      ///< per step
    double time_s = 0;                ///< per step
    double link_bytes_per_second = 0; ///< the slowest link of its axes (0: unknown)
    bool operator==(const CollectiveTotal&) const = default;
};

/// What one candidate costs per step, per device.
struct CandidateCost {
    double time_s = 0;    ///< the step time: compute + exposed communication (totals.hpp)
    double compute_s = 0; ///< compute steps
    double comm_s = 0;    ///< collective steps
    double exposed_s = 0; ///< the communication the overlap model cannot hide
    double bubble_s = 0;  ///< a pipelined program's bubble (part of time_s; pipeline.hpp)
    double flops_per_device = 0;
    double comm_bytes_per_device = 0;
    double memory_bytes_per_device = 0;
    std::vector<CollectiveTotal> collectives; ///< sorted by name
    bool operator==(const CandidateCost&) const = default;
};

/// The cost of one checked candidate: the program totals (step time under the overlap model,
/// traffic, FLOPs, peak memory per device with the `param`/`train` lines' weights, gradients
/// and optimizer state, from Plan::training), and its collectives by name and axes.
CandidateCost evaluate(const Plan& plan);

/// Why a candidate is left out.
enum class PruneReason { Uneven, Error, Memory };
std::string_view prune_reason_name(PruneReason r); ///< "uneven", "error", "memory"

/// One mesh the search looked at (or a class of meshes that differ only in the sizes of
/// axes no tensor is sharded over: they cost the same).
struct Candidate {
    std::vector<std::int64_t> sizes; ///< one per declared mesh axis, in declaration order
    /// One per open dimension (SearchResult::open_dimensions): the mesh axis it is sharded
    /// over, -1 replicated (an axis of size 1 counts as replicated). Empty without open markers.
    std::vector<int> open_choice;
    std::string mesh_text;       ///< "dp=8 tp=4" (axes of size 1 left out; "1 device")
    std::size_t equivalents = 1; ///< meshes of the class (this one included)
    CandidateCost cost;
    std::optional<PruneReason> pruned;
    std::string reason; ///< pruned: why, in words; ranked (not the best): why it loses
};

/// What `plan` asks.
struct SearchOptions {
    std::int64_t devices = 0;
    std::optional<double> hbm_bytes; ///< per device; unset: memory is not a constraint
    std::string hardware;            ///< a preset overriding the program's `hw`; empty: keep
    std::vector<std::string> axes;   ///< the axes that may be sized; empty: every mesh axis
    /// Threads that check candidates (0: one per hardware thread; 1: the caller's only).
    std::size_t threads = 0;
    /// Called before each check (with threads: every 20 ms) with the checks done so far and
    /// their total; returning false stops the search (Ctrl-C): the result holds what was
    /// checked so far.
    std::function<bool(std::size_t checked, std::size_t total)> progress;
};

/// The outcome.
struct SearchResult {
    std::vector<std::string> axis_names;    ///< the declared mesh axes
    std::vector<std::string> searched_axes; ///< those the search sized
    std::vector<std::string> unused_axes;   ///< no tensor is sharded over them
    std::int64_t devices = 0;
    std::optional<double> hbm_bytes;
    std::string hardware;
    std::size_t factorizations = 0; ///< meshes enumerated
    /// The open dimensions (`W_{d f_?}`), keys "W f" in order of first occurrence, and the
    /// axes each may choose (empty when none is open).
    std::vector<std::string> open_dimensions;
    std::vector<std::vector<std::string>> open_axes;
    std::size_t open_assignments = 1; ///< choices per mesh (the product over the open dimensions)
    /// mesh × assignment pairs dropped unchecked: a choice put one axis on two dimensions of
    /// one tensor
    std::size_t inconsistent = 0;
    std::size_t checked = 0;       ///< checks run (distinct effective sizes)
    std::vector<Candidate> ranked; ///< kept, best first; ranked[k].reason: why it loses
    std::vector<Candidate> pruned; ///< in enumeration order
    bool interrupted = false;
    /// Problems that stop the search before it starts (parse-free: no mesh, no axes, an
    /// unknown --axes name or preset, a device count out of range): positioned where they
    /// belong to the program (the mesh line), line 0 otherwise. A problem of the file itself
    /// (an open dimension naming an axis the mesh lacks) carries its code (S102).
    std::vector<Diagnostic> problems;
};

/// Runs the search. Expectations (`expect` lines) are ignored: they describe the written
/// sizes, and a candidate with other sizes moves other data. With open dimensions (`f_?`,
/// `f_{tp?}`; docs/reference.md "Open shardings") every mesh is tried with every consistent
/// assignment of them (each one of its axes or replicated): the candidates are (mesh,
/// assignment) pairs, pruned and ranked together.
SearchResult search(const ast::Program& program, const SearchOptions& options);

/// "W f→tp, x s→R": a candidate's choices for the open dimensions (empty without any).
std::string open_choice_text(const SearchResult& result, const Candidate& candidate);

/// What `check` does with open dimensions: every assignment (each open dimension one of its
/// axes or replicated; beyond kMaxResolveAssignments, one dimension at a time from all
/// replicated until nothing improves) is checked on the written mesh, and the cheapest one
/// without errors (step time, then memory per device, then fewest sharded) is kept. `program`
/// is the result with no open index left; `diagnostics` holds the note naming the choice
/// (S402) and errors for axes the mesh lacks (S102).
struct ResolvedOpen {
    ast::Program program;
    std::vector<std::string> keys;              ///< the open dimensions
    std::vector<std::vector<std::string>> axes; ///< the axes each got (empty: replicated)
    std::size_t checked = 0;                    ///< assignments checked
    bool exhaustive = true;
    std::vector<Diagnostic> diagnostics;
};
inline constexpr std::size_t kMaxResolveAssignments = 4096;
ResolvedOpen resolve_open(const ast::Program& program, const CheckOptions& options);

/// Every ordered k-tuple of positive integers whose product is n, lexicographic.
std::vector<std::vector<std::int64_t>> factorizations(std::int64_t n, std::size_t k);
/// Their count by the formula: the product over n's prime powers p^e of C(e + k - 1, k - 1).
std::uint64_t factorization_count(std::int64_t n, std::size_t k);

/// The order of the ranking: the shorter step time first, then the smaller memory per
/// device, then the larger sizes of the earlier axes (deterministic).
bool ranks_before(const Candidate& a, const Candidate& b);

/// A written program as one candidate, for comparing strategies outside the search (`check
/// --compare`, the GUI's Compare panel): its mesh as written ("dp=2 tp=4"), its cost
/// (evaluate) and each collective's link (the preset's, or a `link` line's), which the "why
/// it loses" line cites.
Candidate candidate_of(const ast::Program& program, const Plan& plan);

/// Why `loser` loses to `best`, in one line: "+38% time: all-reduce(tp) ×32 of 37.5 MB each
/// (1.2 GB/device per step) over a 450 GB/s link; #1: none".
std::string explain_loss(const Candidate& loser, const Candidate& best);

/// Why a candidate that needs more than the HBM loses to one that fits, in one line (`check
/// --compare`, the GUI's Compare panel): "does not fit: needs 69.3 GB per device, more than
/// the 80 GB of HBM".
std::string explain_no_fit(double memory_bytes, double hbm_bytes);

/// "80GB", "80 GiB", "1.5e9", "512MB": bytes; nullopt when malformed or not positive.
std::optional<double> parse_byte_size(std::string_view text);

/// The top `top` candidates side by side, each loser's reason, and a summary of the pruned.
std::string format_search(const SearchResult& result, const std::string& path, std::size_t top);
/// The same as JSON (version 1).
nlohmann::json search_to_json(const SearchResult& result, const std::string& path, std::size_t top);

} // namespace shardscope::semantics
