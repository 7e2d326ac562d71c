// One rank's execution of a Plan: each statement's steps in order over this rank's local
// shards, every collective through the communicator. Nothing is recomputed: placements, local
// shapes and the operations all come from the plan's data flow.
#pragma once

#include "exec/comm.hpp"
#include "exec/compute.hpp"
#include "exec/data.hpp"
#include "exec/layout.hpp"
#include "exec/tensor.hpp"
#include "semantics/plan.hpp"

#include <map>
#include <string>
#include <vector>

namespace shardscope::exec {

/// A collective as it ran on this rank: what, over which axes, and the bytes this rank sent.
struct Executed {
    semantics::StepKind kind = semantics::StepKind::AllReduce;
    std::vector<int> axes;
    std::string tensor;
    double bytes = 0;
};

/// One run of a plan statement: outside repeats once, inside a repeat block once per layer.
struct Run {
    std::size_t statement = 0;
    const semantics::RepeatBlock* block = nullptr; ///< null: not in a repeat
    std::int64_t layer = 0;
    bool first = false; ///< the first statement of its layer
    bool last = false;  ///< the last statement of its layer
    bool final = false; ///< the last run of its block
};

/// The order the plan's statements run in: a repeat's body once per layer, layers 0 to
/// count-1, a reverse repeat's from count-1 down to 0.
std::vector<Run> schedule(const semantics::Plan& plan);

/// The key a program input is generated under in `run`: a per-layer parameter of its repeat
/// has a copy per layer, `W` in layer 0 (so one layer reads what an unrepeated program reads)
/// and `W@l` in layer l.
std::string input_key(const Run& run, const std::string& key);

/// A repeat's layers share names, so the values a layer stores are saved at its end, per
/// layer, and the reverse repeat that reads that block (RepeatBlock::forward) puts layer l's
/// back before running layer l (its backward reads what that layer computed); after it, the
/// last layer's are back.
/// `State` maps tensor keys to stored values (the executor's ranks and the reference).
template <class State>
class Tape {
public:
    explicit Tape(const semantics::Plan& plan) : plan_(plan) {}
    void before(const Run& r, State& state) const {
        if (r.block && r.block->reverse && r.first) restore(*r.block, r.layer, state);
    }
    void after(const Run& r, State& state) {
        if (!r.block || !r.last) return;
        if (!r.block->reverse) {
            auto& layers = saved_[r.block->first];
            layers.resize(static_cast<std::size_t>(r.block->count));
            auto& keep = layers[static_cast<std::size_t>(r.layer)];
            keep.clear();
            for (const auto& k : r.block->defines)
                if (auto it = state.find(k); it != state.end()) keep.insert(*it);
        } else if (r.final) {
            restore(*r.block, r.block->count - 1, state);
        }
    }

    /// After reverse block `b`: the forward block's last layer's values, where this rank
    /// saved them (a pipelined forward block: the ranks of its last stage).
    void restore_last(const semantics::RepeatBlock& b, State& state) const {
        restore(b, b.count - 1, state);
    }

private:
    /// Puts back layer `layer` of the forward block that reverse block `b` reads.
    void restore(const semantics::RepeatBlock& b, std::int64_t layer, State& state) const {
        if (b.forward < 0 || static_cast<std::size_t>(b.forward) >= plan_.repeats.size()) return;
        auto it = saved_.find(plan_.repeats[static_cast<std::size_t>(b.forward)].first);
        if (it == saved_.end() || static_cast<std::size_t>(layer) >= it->second.size()) return;
        for (const auto& [k, v] : it->second[static_cast<std::size_t>(layer)])
            state.insert_or_assign(k, v);
    }
    const semantics::Plan& plan_;
    std::map<std::size_t, std::vector<State>> saved_; ///< by the forward block's first statement
};

template <class T>
class RankProgram {
public:
    /// `compute` runs the local arithmetic and holds the tensors (null: on the host,
    /// kernels.hpp); it must outlive the program. A device compute keeps every value and
    /// stored result in device memory: inputs are uploaded when loaded, and nothing returns to
    /// the host but what `stored` downloads.
    RankProgram(const semantics::Plan& plan, const LabelTable& labels, Communicator& comm,
                const DataOptions& data, LocalCompute<T>* compute = nullptr);

    /// Runs statement `s` of the plan on this rank and stores its result.
    void run(std::size_t s);
    /// One run of the schedule: its statement, in its layer (per-layer inputs, the tape). In a
    /// pipelined block only the ranks of the layer's stage run it; after a stage's last layer
    /// its carried tensors move to the next stage (RepeatBlock::sends), and after the block
    /// every tensor it stores goes from the final stage to every stage (the block's output).
    void run(const Run& r);
    /// Whether this rank runs layer `layer` of block `b` (pipelined: its stage along b.axis).
    bool holds(const semantics::RepeatBlock& b, std::int64_t layer) const {
        return !b.pipelined() || coords_.at(static_cast<std::size_t>(b.axis)) == b.stage_of(layer);
    }
    /// The micro-batches a pipelined block runs in here (1: the whole batch at once; see
    /// `Micro` below).
    std::int64_t microbatches(const semantics::RepeatBlock& b) const {
        auto it = micro_.find(&b);
        return it == micro_.end() ? 1 : it->second.count;
    }
    /// Whether this rank holds a stored value of `key`.
    bool has(const std::string& key) const { return state_.count(key) > 0; }
    /// Generates and uploads statement `s`'s program inputs now, for its later run: a timed
    /// run then measures the plan alone (benchmarks). Preloaded inputs are not in inputs().
    void preload(std::size_t s);

    /// This rank's local tensor of a stored result on the host, labelled as its layout's
    /// atoms: the stored tensor itself, or when the compute keeps it on a device a downloaded
    /// copy (valid until the next call).
    const Tensor<T>& stored(const std::string& key);
    /// The program inputs the last statement loaded, as this rank holds them (on the host,
    /// as generated).
    const std::map<std::string, std::pair<Tensor<T>, semantics::TensorLayout>>& inputs() const {
        return inputs_;
    }
    /// The collectives the last statement ran.
    const std::vector<Executed>& executed() const { return executed_; }

private:
    struct Stored {
        Tensor<T> local;
        semantics::TensorLayout layout;
    };
    /// A pipelined forward block run in micro-batches: the batch is the first dimension of
    /// the carried tensor (its first send's), and every layout of the block with that index
    /// has 1/count of its extent in `statements` (the block's statements for one
    /// micro-batch, collectives' bytes scaled alike). `count` is the block's M, or the
    /// largest smaller count that cuts every shard of the batch evenly; blocks that reduce
    /// over the batch (a result without it from operands with it), reverse blocks and those
    /// where no count above 1 cuts evenly run on the whole batch.
    struct Micro {
        std::int64_t count = 1;
        semantics::IndexId batch;
        std::vector<semantics::StatementPlan> statements; ///< by statement - block.first
    };
    /// What one run of a micro-batched block did on this rank, every micro-batch put
    /// together: its result on the whole batch, its collectives (bytes summed), its inputs.
    struct Replay {
        /// Each tensor the statement stores (StatementPlan::stores(): its target, and the
        /// other factors a chain of products moves): each micro-batch's piece, in order
        std::map<std::string, std::vector<Tensor<T>>> pieces;
        std::map<std::string, Tensor<T>> stored; ///< the pieces put together
        std::vector<Executed> executed;
        std::map<std::string, std::pair<Tensor<T>, semantics::TensorLayout>> inputs;
    };

    /// Runs statement plan `sp`; `whole` is its whole-batch plan when `sp` is one
    /// micro-batch's (program inputs are generated whole, then cut).
    void run_plan(const semantics::StatementPlan& sp, const semantics::StatementPlan* whole);
    /// Program input `key` as this rank holds it under `layout`; under a micro-batch, the
    /// whole batch's shard (`whole`) generated and cut to the micro-batch.
    Tensor<T> input_for(const std::string& key, const semantics::TensorLayout& layout,
                        const semantics::TensorLayout* whole);
    /// The micro-batch plans of the pipelined blocks that run in micro-batches.
    void plan_micro_batches();
    /// Runs block `b` micro-batch by micro-batch (micro-batch m through every stage in turn,
    /// its carried tensors sent on after each stage), recording each run for `replay_`.
    void run_micro_batched(const semantics::RepeatBlock& b, const Micro& mb);
    /// Micro-batch m of `x` (stored under whole-batch `layout`) along the batch.
    Tensor<T> cut(const Tensor<T>& x, const semantics::TensorLayout& layout, const Micro& mb,
                  std::int64_t m);
    /// The micro-batches' results put back together along the batch (a result without the
    /// batch: the first's, every micro-batch computes the same).
    Tensor<T> join(const std::vector<Tensor<T>>& pieces, const semantics::TensorLayout& whole,
                   const Micro& mb);
    /// A micro-batch's send after stage `stage`: the carried tensors' micro-batch blocks
    /// (`sent`: bytes this rank sent, added up).
    void pipeline_send_micro(const semantics::RepeatBlock& b, const Micro& mb, std::int64_t stage,
                             std::vector<double>& sent);

    /// Value `v` as this rank holds it (`whole`: its whole-batch layout under a micro-batch).
    Tensor<T> load(const semantics::ValueInfo& v, const semantics::TensorLayout* whole = nullptr);
    void collective(const semantics::StatementPlan& sp, const semantics::Step& st);
    /// A permute step: each pair's part sent in one exchange, and this rank's new block
    /// assembled from what it keeps and what it receives (into `result`).
    void run_permute(const semantics::StatementPlan& sp, const semantics::Step& st, Tensor<T> x,
                     const semantics::TensorLayout& in, const semantics::TensorLayout& out,
                     Tensor<T>& result);
    void local_step(const semantics::StatementPlan& sp, const semantics::Step& st);
    /// All-gathers `x` over group `g`, the mesh axes `group` that are the minor-most of `axes`
    /// (those of the atom `label`, of `extent`), and removes them from `axes`.
    Tensor<T> gather_minor(const Tensor<T>& x, int label, std::int64_t extent,
                           std::vector<int>& axes, const std::vector<int>& group, Group& g);
    /// `x`, the block of layout `from` on the rank at coordinates `owner`, cut to the block of
    /// layout `to` on the rank at `holder` (which must lie inside it): a permute's send, or a
    /// local step.
    Tensor<T> keep_part(const semantics::StatementPlan& sp, const semantics::Step& st, Tensor<T> x,
                        const semantics::TensorLayout& from, const semantics::TensorLayout& to,
                        const std::vector<int>& owner, const std::vector<int>& holder);
    /// This rank's part in send `st` after stage `stage` along mesh axis `axis`: the rank it
    /// exchanges with (itself when it takes no part) and whether it sends or receives. The
    /// communicators' permute is a permutation of the ranks, so each pair is a swap: a
    /// receiver sends its (unused) buffer back.
    struct SendRole {
        int peer = 0;
        bool sender = false, receiver = false;
    };
    SendRole send_role(const semantics::Step& st, std::size_t axis, std::int64_t stage) const;
    /// What a rank of `role` sends of `tensor`: its stored block, or `nothing` (a receiver).
    const Tensor<T>& send_source(const SendRole& role, const std::string& tensor,
                                 std::int64_t stage, const Tensor<T>& nothing) const;
    /// A pipelined block's sends after stage `stage` (each send's pairs from that stage), in
    /// the block's micro-batches: each moves 1/M of the carried tensor's block.
    void pipeline_send(const semantics::RepeatBlock& b, std::int64_t stage);
    /// A pipelined block's output: every tensor it stores, from the ranks of stage `stage`
    /// to the others along the block's axis (an all-reduce of the owner's block and zeros).
    void pipeline_output(const semantics::RepeatBlock& b, std::int64_t stage);
    /// Stored tensors `keys` of block `b`, from the ranks of stage `stage` to the others
    /// along b.axis.
    void broadcast_stage(const semantics::RepeatBlock& b, const std::vector<std::string>& keys,
                         std::int64_t stage);
    /// The layout block `b` stores `key` in (its last store of it; `mb`: in a micro-batch).
    const semantics::TensorLayout* stored_layout(const semantics::RepeatBlock& b,
                                                 const std::string& key,
                                                 const Micro* mb = nullptr) const;
    /// "step 3 of line 5 (all-gather(0) of x)": how internal errors name a step.
    std::string step_text(const semantics::StatementPlan& sp, const semantics::Step& st) const;
    /// Internal error unless the collectives that ran are the plan's, in order (kind, axes),
    /// with the bytes it states for this rank.
    /// The factors a chain of products moves besides its result: each one's last value is
    /// stored, and for a program input must equal its block in that layout (ExecError).
    void store_moved_factors(const semantics::StatementPlan& sp);
    void check_ran_as_planned(const semantics::StatementPlan& sp) const;
    const Tensor<T>& value(int id) const;
    /// Value `id` as step `st` (the current one) uses it: moved out when no later step reads
    /// it, else a copy (on a device, a copy shares the buffer).
    Tensor<T> take(const semantics::Step& st, int id);

    const semantics::Plan& plan_;
    const LabelTable& labels_;
    Communicator& comm_;
    HostCompute<T> host_;
    LocalCompute<T>& ops_;
    DataOptions data_;
    MeshShape mesh_;
    std::vector<int> coords_;
    std::map<std::string, Stored> state_;
    Tape<std::map<std::string, Stored>> tape_;
    const Run* run_ = nullptr; // the run in progress (run(const Run&)), for per-layer inputs
    std::vector<Tensor<T>> values_;
    std::vector<bool> have_;
    std::vector<std::size_t> last_use_; // by value: the last step that reads it
    std::size_t step_ = 0;              // the step running
    std::map<std::string, std::pair<Tensor<T>, semantics::TensorLayout>> inputs_;
    std::vector<Executed> executed_;
    Tensor<T> downloaded_; // stored()'s host copy of a device-resident result
    std::map<const semantics::RepeatBlock*, Micro> micro_;
    /// The runs of the micro-batched block in progress, by (layer, statement).
    std::map<std::pair<std::int64_t, std::size_t>, Replay> replay_;
    const Micro* micro_run_ = nullptr; // set while a micro-batch's statement runs
    std::int64_t micro_index_ = 0;     // which micro-batch
    /// preload()'s inputs, by key: as loaded by their first use (used only with that layout).
    std::map<std::string, std::pair<Tensor<T>, semantics::TensorLayout>> preloaded_;
};

extern template class RankProgram<float>;
extern template class RankProgram<double>;

} // namespace shardscope::exec
