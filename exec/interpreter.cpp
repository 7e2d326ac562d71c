#include "exec/interpreter.hpp"

#include "exec/functions.hpp"
#include "semantics/cost.hpp"

#include <cmath>

#include <algorithm>

namespace shardscope::exec {

using semantics::OpKind;
using semantics::Placement;
using semantics::StepKind;
using semantics::TensorLayout;

namespace {

/// The sizes of mesh axes `ks`, in that order.
std::vector<int> sizes_of(const MeshShape& mesh, const std::vector<int>& ks) {
    std::vector<int> out;
    for (int k : ks)
        out.push_back(mesh.sizes.at(static_cast<std::size_t>(k)));
    return out;
}

template <class T>
constexpr DType dtype_of() {
    return sizeof(T) == 4 ? DType::F32 : DType::F64;
}

/// The labels of `out` that `a` or `b` has, in `out`'s order.
std::vector<int> union_in_order(const std::vector<int>& out, const std::vector<int>& a,
                                const std::vector<int>& b) {
    std::vector<int> r;
    for (int l : out)
        if (std::count(a.begin(), a.end(), l) || std::count(b.begin(), b.end(), l)) r.push_back(l);
    return r;
}

/// The elements per entry of the first `lead` dimensions: the product of the others. (Not the
/// size over the leading extents, which is 0 on a rank whose shard of them is empty.)
template <class T>
std::int64_t inner_size(const Tensor<T>& t, std::size_t lead) {
    std::int64_t n = 1;
    for (std::size_t d = lead; d < t.shape.size(); ++d)
        n *= t.shape[d];
    return n;
}

/// `x` with the dimensions `first` moved to the front (in that order), the others after them
/// in their order: each block a collective sends is then contiguous. No permute when in place.
template <class T>
Tensor<T> leading(LocalCompute<T>& ops, const Tensor<T>& x, std::vector<int> first) {
    const auto n = first.size();
    for (int l : x.labels)
        if (std::find(first.begin(), first.begin() + static_cast<std::ptrdiff_t>(n), l) ==
            first.begin() + static_cast<std::ptrdiff_t>(n))
            first.push_back(l);
    return x.labels == first ? x : ops.permute(x, first);
}

/// `x`'s shape with its leading extent replaced by `lead`.
template <class T>
std::vector<std::int64_t> with_lead(const Tensor<T>& x, std::int64_t lead) {
    auto shape = x.shape;
    shape.at(0) = lead;
    return shape;
}

std::int64_t elements(const std::vector<std::int64_t>& shape) {
    std::int64_t n = 1;
    for (auto e : shape)
        n *= e;
    return n;
}

const semantics::AtomLayout* atom_of(const TensorLayout& t, const semantics::IndexId& i) {
    for (const auto& a : t.atoms)
        if (a.index == i) return &a;
    return nullptr;
}

/// The position of index `i` among `t`'s atoms (its stored tensor's dimension); -1: none.
int atom_position(const TensorLayout& t, const semantics::IndexId& i) {
    for (std::size_t k = 0; k < t.atoms.size(); ++k)
        if (t.atoms[k].index == i) return static_cast<int>(k);
    return -1;
}

/// `t` for one of `m` micro-batches: the batch index's extent divided by m.
TensorLayout micro_layout(TensorLayout t, const semantics::IndexId& batch, std::int64_t m) {
    for (auto& a : t.atoms) {
        if (a.index != batch) continue;
        a.extent /= m;
        const auto d = static_cast<std::size_t>(a.dim);
        if (d < t.global_shape.size()) t.global_shape[d] /= m;
        if (d < t.local_shape.size()) t.local_shape[d] /= m;
    }
    return t;
}

/// Micro-batch m of `count` of `x` along its dimension `d` (local rows, evenly cut).
template <class T>
Tensor<T> cut_rows(LocalCompute<T>& ops, const Tensor<T>& x, int d, std::int64_t m,
                   std::int64_t count) {
    const auto rows = x.shape.at(static_cast<std::size_t>(d));
    if (rows % count != 0)
        throw ExecError("internal: a micro-batch cut of " + std::to_string(rows) + " rows in " +
                        std::to_string(count));
    const auto part = rows / count;
    return ops.slice(x, x.labels.at(static_cast<std::size_t>(d)), m * part, (m + 1) * part);
}

} // namespace

template <class T>
RankProgram<T>::RankProgram(const semantics::Plan& plan, const LabelTable& labels,
                            Communicator& comm, const DataOptions& data, LocalCompute<T>* compute)
    : plan_(plan), labels_(labels), comm_(comm), ops_(compute ? *compute : host_), data_(data),
      mesh_(mesh_shape(plan.mesh)), coords_(mesh_.coords(comm.rank())), tape_(plan) {
    plan_micro_batches();
}

template <class T>
const Tensor<T>& RankProgram<T>::stored(const std::string& key) {
    auto it = state_.find(key);
    if (it == state_.end()) throw ExecError("internal: nothing stored as " + key);
    if (!it->second.local.on_device()) return it->second.local;
    downloaded_ = ops_.download(it->second.local);
    return downloaded_;
}

template <class T>
const Tensor<T>& RankProgram<T>::value(int id) const {
    if (id < 0 || static_cast<std::size_t>(id) >= values_.size() ||
        !have_[static_cast<std::size_t>(id)])
        throw ExecError("the plan reads value " + std::to_string(id) +
                        " before any step computes it");
    return values_[static_cast<std::size_t>(id)];
}

template <class T>
Tensor<T> RankProgram<T>::take(const semantics::Step& st, int id) {
    const auto& v = value(id);
    const auto i = static_cast<std::size_t>(id);
    if (last_use_[i] == step_ && std::count(st.inputs.begin(), st.inputs.end(), id) == 1)
        return std::move(values_[i]); // no later step reads it
    return v;
}

template <class T>
Tensor<T> RankProgram<T>::input_for(const std::string& key, const TensorLayout& layout,
                                    const TensorLayout* whole) {
    const std::string name = run_ ? input_key(*run_, key) : key;
    if (micro_run_ && whole && atom_of(layout, micro_run_->batch)) {
        // A micro-batch: the whole batch's shard, as an unpipelined run generates it, cut.
        auto x = input_shard<T>(name, *whole, labels_.labels_at(*whole), mesh_, coords_, data_);
        inputs_.insert_or_assign(key, std::pair{x, *whole});
        return ops_.upload(cut_rows<T>(host_, x, atom_position(*whole, micro_run_->batch),
                                       micro_index_, micro_run_->count));
    }
    // A program input: this rank's shard (or partial share) of its logical value.
    auto x = input_shard<T>(name, layout, labels_.labels_at(layout), mesh_, coords_, data_);
    inputs_.insert_or_assign(key, std::pair{x, layout});
    return ops_.upload(std::move(x));
}

template <class T>
Tensor<T> RankProgram<T>::load(const semantics::ValueInfo& v, const TensorLayout* whole) {
    const auto labels = labels_.labels_at(v.layout);
    const auto shape = local_shape(v.layout, mesh_, coords_);
    auto it = state_.find(v.load);
    if (it == state_.end()) {
        auto pre = preloaded_.find(v.load);
        if (pre != preloaded_.end() && pre->second.second == v.layout &&
            pre->second.first.labels == labels)
            return pre->second.first;
        return input_for(v.load, v.layout, whole);
    }
    // An earlier result, in this use's index names (by position; a regrouping reshapes).
    Tensor<T> x = it->second.local;
    if (x.size() != elements(shape))
        throw ExecError(v.load + " is stored with " + std::to_string(x.size()) +
                        " elements on rank " + std::to_string(comm_.rank()) + " but used with " +
                        std::to_string(elements(shape)) +
                        " (a regrouping of unevenly sharded indices)");
    x.shape = shape;
    x.labels = labels;
    return x;
}

template <class T>
void RankProgram<T>::preload(std::size_t s) {
    // A program input is what no earlier statement defines.
    auto defined = [&](const std::string& key) {
        for (std::size_t e = 0; e < s; ++e)
            if (plan_.statements[e].target == key) return true;
        return state_.count(key) > 0;
    };
    for (const auto& v : plan_.statements.at(s).values)
        if (!v.load.empty() && !defined(v.load) && !preloaded_.count(v.load))
            preloaded_.emplace(
                v.load,
                std::pair{ops_.upload(input_shard<T>(v.load, v.layout, labels_.labels_at(v.layout),
                                                     mesh_, coords_, data_)),
                          v.layout});
}

std::vector<Run> schedule(const semantics::Plan& plan) {
    std::vector<Run> out;
    out.reserve(plan.statements.size());
    std::size_t s = 0;
    auto once = [&](std::size_t e) {
        for (; s < e; ++s)
            out.push_back({s, nullptr, 0, true, true, true});
    };
    for (const auto& b : plan.repeats) {
        once(b.first);
        for (std::int64_t k = 0; k < b.count; ++k) {
            const auto layer = b.reverse ? b.count - 1 - k : k;
            for (std::size_t j = b.first; j < b.last; ++j)
                out.push_back({j, &b, layer, j == b.first, j + 1 == b.last,
                               k + 1 == b.count && j + 1 == b.last});
        }
        s = std::max(s, b.last);
    }
    once(plan.statements.size());
    return out;
}

std::string input_key(const Run& run, const std::string& key) {
    if (!run.block || run.layer == 0 ||
        !std::binary_search(run.block->parameters.begin(), run.block->parameters.end(), key))
        return key;
    return key + "@" + std::to_string(run.layer);
}

template <class T>
void RankProgram<T>::run(const Run& r) {
    // The statement in its layer: the tape around it, `run_` set while it runs.
    auto run_in_layer = [&] {
        tape_.before(r, state_);
        run_ = &r;
        try {
            run(r.statement);
        } catch (...) {
            run_ = nullptr;
            throw;
        }
        run_ = nullptr;
        tape_.after(r, state_);
    };
    if (r.block && r.block->pipelined()) {
        const auto& b = *r.block;
        if (auto mit = micro_.find(&b); mit != micro_.end()) {
            // Micro-batches: the block's first run runs all of it, micro-batch by micro-batch
            // through the stages; each run then puts its result together on the whole batch.
            if (r.first && r.layer == 0 && r.statement == b.first)
                run_micro_batched(b, mit->second);
            if (holds(b, r.layer)) {
                auto it = replay_.find({r.layer, r.statement});
                if (it == replay_.end())
                    throw ExecError("internal: layer " + std::to_string(r.layer) +
                                    " of a micro-batched block did not run on rank " +
                                    std::to_string(comm_.rank()));
                const auto& sp = plan_.statements.at(r.statement);
                tape_.before(r, state_);
                for (const auto& [name, layout] : sp.stores())
                    state_.insert_or_assign(name,
                                            Stored{std::move(it->second.stored.at(name)), *layout});
                executed_ = std::move(it->second.executed);
                inputs_ = std::move(it->second.inputs);
                tape_.after(r, state_);
                replay_.erase(it);
            } else {
                inputs_.clear();
                executed_.clear();
            }
            if (r.final) pipeline_output(b, b.stage_of(r.layer));
            return;
        }
        if (holds(b, r.layer)) {
            run_in_layer();
        } else {
            inputs_.clear(); // another stage's layer: nothing runs here
            executed_.clear();
        }
        // After a stage's last layer (in the block's direction), its sends; after the block,
        // its output to every stage.
        if (!r.last) return;
        const auto stage = b.stage_of(r.layer);
        const bool ends_stage = b.reverse ? r.layer % b.layers_per_stage() == 0
                                          : (r.layer + 1) % b.layers_per_stage() == 0;
        if (r.final)
            pipeline_output(b, stage);
        else if (ends_stage)
            pipeline_send(b, stage);
        return;
    }
    run_in_layer();
}

template <class T>
const semantics::TensorLayout* RankProgram<T>::stored_layout(const semantics::RepeatBlock& b,
                                                             const std::string& key,
                                                             const Micro* mb) const {
    // The last statement of the block that stores `key`: as its target, or as another factor
    // a chain of products moves.
    const semantics::TensorLayout* out = nullptr;
    for (std::size_t j = b.first; j < b.last && j < plan_.statements.size(); ++j) {
        const auto& sp = mb ? mb->statements.at(j - b.first) : plan_.statements[j];
        for (const auto& [name, layout] : sp.stores())
            if (name == key) out = layout;
    }
    return out;
}

template <class T>
typename RankProgram<T>::SendRole
RankProgram<T>::send_role(const semantics::Step& st, std::size_t axis, std::int64_t stage) const {
    const int me = comm_.rank();
    SendRole role{me, false, false};
    for (const auto& [src, dst] : st.pairs) {
        if (mesh_.coords(static_cast<int>(src)).at(axis) != stage) continue;
        if (src == me) {
            role.peer = static_cast<int>(dst);
            role.sender = true;
        }
        if (dst == me) {
            role.peer = static_cast<int>(src);
            role.receiver = true;
        }
    }
    if (role.sender && role.receiver)
        throw ExecError("internal: rank " + std::to_string(me) + " both sends and receives " +
                        st.tensor + " after stage " + std::to_string(stage));
    return role;
}

template <class T>
const Tensor<T>& RankProgram<T>::send_source(const SendRole& role, const std::string& tensor,
                                             std::int64_t stage, const Tensor<T>& nothing) const {
    if (!role.sender) return nothing;
    const auto it = state_.find(tensor);
    if (it == state_.end())
        throw ExecError("internal: stage " + std::to_string(stage) + " sends " + tensor +
                        ", which rank " + std::to_string(comm_.rank()) + " has not computed");
    return it->second.local;
}

template <class T>
void RankProgram<T>::pipeline_send(const semantics::RepeatBlock& b, std::int64_t stage) {
    const int me = comm_.rank();
    const auto axis = static_cast<std::size_t>(b.axis);
    for (const auto& st : b.sends) {
        const auto* layout = stored_layout(b, st.tensor);
        if (!layout)
            throw ExecError("internal: the pipeline sends " + st.tensor +
                            ", which its block does not store");
        const auto [peer, sender, receiver] = send_role(st, axis, stage);
        const int to = peer, from = peer;
        const auto shape = local_shape(*layout, mesh_, coords_);
        const auto labels = labels_.labels_at(*layout);
        const std::int64_t count = elements(shape);
        Tensor<T> recv = ops_.zeros(shape, labels);
        const Tensor<T> nothing = ops_.zeros(shape, labels);
        const Tensor<T>* send = &send_source({peer, sender, receiver}, st.tensor, stage, nothing);
        // M micro-batches, each 1/M of the block (the last one the rest).
        const auto m = std::max<std::int64_t>(b.microbatches, 1);
        const std::int64_t part = (count + m - 1) / m;
        double sent = 0;
        for (std::int64_t k = 0; k < m; ++k) {
            const std::int64_t at = std::min(count, k * part);
            const std::int64_t n = std::min(count, at + part) - at;
            if (n <= 0) continue;
            comm_.world().permute(ops_.buffer(*send) + at, ops_.writable(recv) + at,
                                  static_cast<std::size_t>(n), dtype_of<T>(), to, from);
            if (sender) sent += static_cast<double>(n) * sizeof(T);
        }
        const double planned = static_cast<double>(m) * st.cost.bytes_per_device /
                               std::max(st.cost.elem_bytes, 1) * static_cast<double>(sizeof(T));
        if (sender && std::abs(sent - planned) > 1e-9 * std::max(planned, 1.0))
            throw ExecError("internal: the pipeline's send of " + st.tensor + " moved " +
                            std::to_string(sent) + " bytes on rank " + std::to_string(me) +
                            ", the plan " + std::to_string(planned));
        if (receiver) state_.insert_or_assign(st.tensor, Stored{std::move(recv), *layout});
    }
}

template <class T>
void RankProgram<T>::pipeline_output(const semantics::RepeatBlock& b, std::int64_t stage) {
    broadcast_stage(b, b.defines, stage);
    // After a reverse block the forward block's last layer's values are back: its last
    // stage's ranks saved them.
    if (b.reverse && b.forward >= 0 && static_cast<std::size_t>(b.forward) < plan_.repeats.size()) {
        const auto& f = plan_.repeats[static_cast<std::size_t>(b.forward)];
        tape_.restore_last(b, state_);
        if (f.pipelined()) broadcast_stage(f, f.defines, f.stage_of(f.count - 1));
    }
}

template <class T>
void RankProgram<T>::broadcast_stage(const semantics::RepeatBlock& b,
                                     const std::vector<std::string>& keys, std::int64_t stage) {
    const bool owner = coords_.at(static_cast<std::size_t>(b.axis)) == stage;
    Group& g = comm_.axis(b.axis);
    for (const auto& key : keys) {
        const auto* layout = stored_layout(b, key);
        if (!layout) continue;
        const auto shape = local_shape(*layout, mesh_, coords_);
        Tensor<T> x = ops_.zeros(shape, labels_.labels_at(*layout));
        if (owner) {
            auto it = state_.find(key);
            if (it == state_.end())
                throw ExecError("internal: the pipeline's last stage has not computed " + key);
            x = std::move(it->second.local);
        }
        const auto count = static_cast<std::size_t>(elements(shape));
        if (count > 0) g.all_reduce(ops_.writable(x), count, dtype_of<T>(), PartialOp::Sum);
        state_.insert_or_assign(key, Stored{std::move(x), *layout});
    }
}

template <class T>
void RankProgram<T>::plan_micro_batches() {
    for (const auto& b : plan_.repeats) {
        if (!b.pipelined() || b.reverse || b.microbatches <= 1 || b.sends.empty()) continue;
        const auto* carried = stored_layout(b, b.sends.front().tensor);
        if (!carried || carried->atoms.empty()) continue;
        // The batch: the carried tensor's first dimension (the body's tensors are not on pp),
        // as it is sharded there; every layout of the block must shard it alike.
        Micro mb;
        mb.batch = carried->atoms.front().index;
        const auto axes = carried->atoms.front().axes;
        std::int64_t m = b.microbatches;
        bool ok = true;
        auto fit = [&](const TensorLayout& l) {
            const auto* a = atom_of(l, mb.batch);
            if (!a) return false;
            int in_dim = 0; // a batch inside a group of indices is not cut
            for (const auto& o : l.atoms)
                in_dim += o.dim == a->dim ? 1 : 0;
            if (in_dim != 1 || a->axes != axes) ok = false;
            std::int64_t n = 1;
            for (int k : a->axes)
                n *= mesh_.sizes.at(static_cast<std::size_t>(k));
            while (m > 1 && a->extent % (m * n) != 0)
                --m;
            return true;
        };
        for (std::size_t j = b.first; j < b.last && ok; ++j) {
            const auto& sp = plan_.statements[j];
            bool reads = false;
            for (const auto& v : sp.values)
                reads = (fit(v.layout) && !v.load.empty()) || reads;
            for (const auto& o : sp.operands)
                fit(o);
            // A result without the batch from operands with it reduces over the batch: the
            // micro-batches' results would have to be combined. Such a block runs whole; so
            // does one with any step that reduces over the batch (a softmax along it, a sum
            // or mean over it broadcast back).
            if (!fit(sp.result) && reads) ok = false;
            auto has = [&](int id) {
                return id >= 0 && static_cast<std::size_t>(id) < sp.values.size() &&
                       atom_of(sp.values[static_cast<std::size_t>(id)].layout, mb.batch);
            };
            for (const auto& st : sp.steps) {
                bool in = false;
                for (int i : st.inputs)
                    in = in || has(i);
                if ((in && st.output >= 0 && !has(st.output)) ||
                    (st.op == OpKind::Softmax && st.index == mb.batch))
                    ok = false;
            }
        }
        // A carried tensor without the batch (a weight a chain of products moves, a state
        // updated per layer) is not one micro-batch's: such a block runs whole, its sends in M
        // parts as planned.
        for (const auto& st : b.sends) {
            const auto* l = stored_layout(b, st.tensor);
            if (!l || !atom_of(*l, mb.batch)) ok = false;
        }
        if (!ok || m <= 1) continue;
        mb.count = m;
        for (std::size_t j = b.first; j < b.last; ++j) {
            auto sp = plan_.statements[j];
            std::vector<bool> batched;
            for (auto& v : sp.values) {
                batched.push_back(atom_of(v.layout, mb.batch) != nullptr);
                v.layout = micro_layout(std::move(v.layout), mb.batch, m);
            }
            sp.result = micro_layout(std::move(sp.result), mb.batch, m);
            for (auto& o : sp.operands)
                o = micro_layout(std::move(o), mb.batch, m);
            auto is_batched = [&](int id) {
                return id >= 0 && static_cast<std::size_t>(id) < batched.size() &&
                       batched[static_cast<std::size_t>(id)];
            };
            for (auto& st : sp.steps) {
                bool any = is_batched(st.output);
                for (int in : st.inputs)
                    any = any || is_batched(in);
                if (any) st.cost.bytes_per_device /= static_cast<double>(m);
            }
            mb.statements.push_back(std::move(sp));
        }
        micro_.emplace(&b, std::move(mb));
    }
}

template <class T>
Tensor<T> RankProgram<T>::cut(const Tensor<T>& x, const TensorLayout& layout, const Micro& mb,
                              std::int64_t m) {
    return cut_rows<T>(ops_, x, atom_position(layout, mb.batch), m, mb.count);
}

template <class T>
Tensor<T> RankProgram<T>::join(const std::vector<Tensor<T>>& pieces, const TensorLayout& whole,
                               const Micro& mb) {
    if (pieces.empty()) throw ExecError("internal: a micro-batched run without a result");
    const int d = atom_position(whole, mb.batch);
    if (d < 0) return pieces.front(); // every micro-batch computes the same
    const auto dd = static_cast<std::size_t>(d);
    auto shape = pieces.front().shape;
    std::int64_t rows = 0;
    for (const auto& p : pieces)
        rows += p.shape.at(dd);
    shape.at(dd) = rows;
    std::int64_t outer = 1, inner = 1;
    for (std::size_t k = 0; k < shape.size(); ++k)
        (k < dd ? outer : inner) *= k == dd ? 1 : shape[k];
    Tensor<T> out = ops_.zeros(shape, pieces.front().labels);
    std::int64_t at = 0;
    for (const auto& p : pieces) {
        const auto n = p.shape.at(dd);
        if (n > 0 && outer > 0 && inner > 0)
            ops_.copy_rows(out, at * inner, rows * inner, p, 0, n * inner, n * inner, outer);
        at += n;
    }
    return out;
}

template <class T>
void RankProgram<T>::run_micro_batched(const semantics::RepeatBlock& b, const Micro& mb) {
    replay_.clear();
    // Each micro-batch's state: the tensors stored so far, those with the batch cut to it.
    auto whole = std::move(state_);
    state_.clear();
    std::vector<std::map<std::string, Stored>> states(static_cast<std::size_t>(mb.count));
    for (std::int64_t m = 0; m < mb.count; ++m)
        for (const auto& [key, st] : whole) {
            const auto* a = atom_of(st.layout, mb.batch);
            const int d = atom_position(st.layout, mb.batch);
            if (a && st.local.shape.at(static_cast<std::size_t>(d)) % mb.count == 0)
                states[static_cast<std::size_t>(m)].emplace(
                    key, Stored{cut(st.local, st.layout, mb, m),
                                micro_layout(st.layout, mb.batch, mb.count)});
            else
                states[static_cast<std::size_t>(m)].emplace(key, st);
        }
    std::vector<double> sent(b.sends.size(), 0.0);
    try {
        for (std::int64_t m = 0; m < mb.count; ++m) {
            std::swap(state_, states[static_cast<std::size_t>(m)]);
            micro_run_ = &mb;
            micro_index_ = m;
            for (std::int64_t layer = 0; layer < b.count; ++layer) {
                for (std::size_t j = b.first; j < b.last; ++j) {
                    const Run r{j,
                                &b,
                                layer,
                                j == b.first,
                                j + 1 == b.last,
                                layer + 1 == b.count && j + 1 == b.last};
                    if (holds(b, layer)) {
                        run_ = &r;
                        run_plan(mb.statements.at(j - b.first), &plan_.statements[j]);
                        run_ = nullptr;
                        auto& rep = replay_[{layer, j}];
                        const auto& whole_sp = plan_.statements[j];
                        for (const auto& store : whole_sp.stores())
                            rep.pieces[store.first].push_back(state_.at(store.first).local);
                        if (rep.executed.empty()) {
                            rep.executed = executed_;
                        } else {
                            for (std::size_t e = 0; e < rep.executed.size(); ++e)
                                rep.executed[e].bytes += executed_.at(e).bytes;
                        }
                        if (m + 1 == mb.count) rep.inputs = inputs_;
                    }
                    // After a stage's last layer (not the block's), this micro-batch moves on.
                    if (j + 1 == b.last && layer + 1 < b.count &&
                        (layer + 1) % b.layers_per_stage() == 0)
                        pipeline_send_micro(b, mb, b.stage_of(layer), sent);
                }
            }
            micro_run_ = nullptr;
            std::swap(state_, states[static_cast<std::size_t>(m)]);
        }
    } catch (...) {
        run_ = nullptr;
        micro_run_ = nullptr;
        throw;
    }
    state_ = std::move(whole);
    for (auto& [key, rep] : replay_) {
        const auto& sp = plan_.statements.at(key.second);
        for (const auto& [name, layout] : sp.stores())
            rep.stored[name] = join(rep.pieces.at(name), *layout, mb);
        rep.pieces.clear();
    }
    // Every micro-batch's sends together: the carried tensor's whole block, as planned.
    for (std::size_t i = 0; i < b.sends.size(); ++i) {
        if (sent[i] == 0) continue; // not a sender (the last stage)
        const auto& st = b.sends[i];
        const auto* layout = stored_layout(b, st.tensor);
        const double planned =
            mb.count == b.microbatches
                ? static_cast<double>(b.microbatches) * st.cost.bytes_per_device /
                      std::max(st.cost.elem_bytes, 1) * static_cast<double>(sizeof(T))
                : static_cast<double>(elements(local_shape(*layout, mesh_, coords_))) *
                      static_cast<double>(sizeof(T));
        if (std::abs(sent[i] - planned) > 1e-9 * std::max(planned, 1.0))
            throw ExecError("internal: the pipeline's send of " + st.tensor + " moved " +
                            std::to_string(sent[i]) + " bytes on rank " +
                            std::to_string(comm_.rank()) + ", the plan " + std::to_string(planned));
    }
}

template <class T>
void RankProgram<T>::pipeline_send_micro(const semantics::RepeatBlock& b, const Micro& mb,
                                         std::int64_t stage, std::vector<double>& sent) {
    const auto axis = static_cast<std::size_t>(b.axis);
    for (std::size_t i = 0; i < b.sends.size(); ++i) {
        const auto& st = b.sends[i];
        const auto* layout = stored_layout(b, st.tensor, &mb);
        if (!layout)
            throw ExecError("internal: the pipeline sends " + st.tensor +
                            ", which its block does not store");
        const auto [peer, sender, receiver] = send_role(st, axis, stage);
        const int to = peer, from = peer;
        const auto shape = local_shape(*layout, mesh_, coords_);
        const auto labels = labels_.labels_at(*layout);
        const auto count = static_cast<std::size_t>(elements(shape));
        Tensor<T> recv = ops_.zeros(shape, labels);
        const Tensor<T> nothing = ops_.zeros(shape, labels);
        const Tensor<T>* send = &send_source({peer, sender, receiver}, st.tensor, stage, nothing);
        if (count > 0)
            comm_.world().permute(ops_.buffer(*send), ops_.writable(recv), count, dtype_of<T>(), to,
                                  from);
        if (sender) sent[i] += static_cast<double>(count) * sizeof(T);
        if (receiver) state_.insert_or_assign(st.tensor, Stored{std::move(recv), *layout});
    }
}

template <class T>
void RankProgram<T>::run(std::size_t s) {
    run_plan(plan_.statements.at(s), nullptr);
}

template <class T>
void RankProgram<T>::run_plan(const semantics::StatementPlan& sp,
                              const semantics::StatementPlan* whole) {
    values_.assign(sp.values.size(), Tensor<T>{});
    have_.assign(sp.values.size(), false);
    inputs_.clear();
    executed_.clear();
    for (std::size_t v = 0; v < sp.values.size(); ++v) {
        const auto& info = sp.values[v];
        if (!info.load.empty()) {
            values_[v] =
                load(info, whole && v < whole->values.size() ? &whole->values[v].layout : nullptr);
            have_[v] = true;
        } else if (!info.constant.empty()) {
            values_[v] = ops_.upload(Tensor<T>::scalar(static_cast<T>(std::stod(info.constant))));
            have_[v] = true;
        }
    }
    // The last step that reads each value (the result: after every step), so that a step can
    // take a value no later step needs instead of copying it.
    last_use_.assign(sp.values.size(), 0);
    for (std::size_t i = 0; i < sp.steps.size(); ++i)
        for (int id : sp.steps[i].inputs)
            if (id >= 0 && static_cast<std::size_t>(id) < last_use_.size())
                last_use_[static_cast<std::size_t>(id)] = i;
    if (sp.result_value >= 0 && static_cast<std::size_t>(sp.result_value) < last_use_.size())
        last_use_[static_cast<std::size_t>(sp.result_value)] = sp.steps.size();
    for (step_ = 0; step_ < sp.steps.size(); ++step_) {
        const auto& st = sp.steps[step_];
        if (st.output < 0) continue; // performed inside the next step (softmax statistics)
        if (is_collective(st.kind))
            collective(sp, st);
        else
            local_step(sp, st);
        have_[static_cast<std::size_t>(st.output)] = true;
    }
    check_ran_as_planned(sp);
    store_moved_factors(sp);
    // Store: in the left-hand side's index order and layout.
    value(sp.result_value); // computed?
    Tensor<T> result = std::move(values_[static_cast<std::size_t>(sp.result_value)]);
    values_.clear(); // the statement's values are dead: none shares a buffer with `result`
    have_.clear();
    const auto target = labels_.labels_at(sp.result);
    if (result.labels != target) result = ops_.permute(result, target);
    const auto& produced = sp.values.at(static_cast<std::size_t>(sp.result_value)).layout;
    for (const auto& a : sp.result.atoms) {
        const auto* b = atom_of(produced, a.index);
        if (!b || b->axes != a.axes)
            throw ExecError("internal: the stored value of " + sp.target +
                            " is not laid out as its left-hand side");
    }
    if (result.shape != local_shape(sp.result, mesh_, coords_))
        throw ExecError("internal: " + sp.target + " has the wrong local shape");
    if (sp.assign == semantics::Assign::Accumulate) {
        auto it = state_.find(sp.target);
        Tensor<T> old;
        if (it != state_.end()) {
            old = std::move(it->second.local); // replaced below
        } else {
            old = input_for(sp.target, sp.result, whole ? &whole->result : nullptr);
        }
        // Stored under the names of its definition: this statement's names, by position.
        if (old.labels.size() == target.size()) old.labels = target;
        ops_.accumulate(old, result);
        result = std::move(old);
    }
    state_.insert_or_assign(sp.target, Stored{std::move(result), sp.result});
}

template <class T>
Tensor<T> RankProgram<T>::gather_minor(const Tensor<T>& x, int label, std::int64_t extent,
                                       std::vector<int>& axes, const std::vector<int>& group,
                                       Group& g) {
    axes.resize(axes.size() - group.size());
    const int n = g.size();
    const auto sizes = sizes_of(mesh_, group);
    const auto parent = atom_range(extent, axes, mesh_, coords_).size();
    const auto max_chunk = group_chunk(parent, sizes, 0).size();
    const Tensor<T> xp = leading(ops_, x, {label});
    const std::int64_t rest = inner_size(xp, 1);
    const auto count = max_chunk * rest;
    // The block sent: this rank's shard, padded to the largest chunk when it is smaller.
    Tensor<T> padded;
    const Tensor<T>* send = &xp;
    if (xp.size() != count) {
        padded = ops_.zeros(with_lead(xp, max_chunk), xp.labels);
        ops_.copy_rows(padded, 0, 0, xp, 0, 0, xp.size(), 1);
        send = &padded;
    }
    Tensor<T> recv = ops_.zeros(with_lead(xp, max_chunk * n), xp.labels);
    g.all_gather(ops_.buffer(*send), ops_.writable(recv), static_cast<std::size_t>(count),
                 dtype_of<T>());
    Tensor<T> out;
    if (parent == max_chunk * n) {
        out = std::move(recv); // no padding to remove
    } else {
        out = ops_.zeros(with_lead(xp, parent), xp.labels);
        std::int64_t at = 0;
        for (int q = 0; q < n; ++q) {
            const auto len = group_chunk(parent, sizes, q).size() * rest;
            ops_.copy_rows(out, at, 0, recv, q * count, 0, len, 1);
            at += len;
        }
    }
    return out.labels == x.labels ? out : ops_.permute(out, x.labels);
}

template <class T>
std::string RankProgram<T>::step_text(const semantics::StatementPlan& sp,
                                      const semantics::Step& st) const {
    const bool local = !is_collective(st.kind);
    return "step " + std::to_string(step_ + 1) + " of line " + std::to_string(sp.range.line) +
           " (" +
           (local ? std::string(semantics::step_kind_name(st.kind))
                  : semantics::collective_text(plan_.mesh, st.kind, st.mesh_axes)) +
           " of " + st.tensor + ")";
}

template <class T>
Tensor<T> RankProgram<T>::keep_part(const semantics::StatementPlan& sp, const semantics::Step& st,
                                    Tensor<T> x, const TensorLayout& from, const TensorLayout& to,
                                    const std::vector<int>& owner, const std::vector<int>& holder) {
    if (from.atoms.size() != to.atoms.size())
        throw ExecError("internal: " + step_text(sp, st) + " changes the indices of " + st.tensor);
    for (std::size_t a = 0; a < to.atoms.size(); ++a) {
        if (!(from.atoms[a].index == to.atoms[a].index))
            throw ExecError("internal: " + step_text(sp, st) + " reorders the indices of " +
                            st.tensor);
        const auto have = atom_range(from.atoms[a].extent, from.atoms[a].axes, mesh_, owner);
        const auto want = atom_range(to.atoms[a].extent, to.atoms[a].axes, mesh_, holder);
        if (want.size() == have.size() && (want.size() == 0 || want.begin == have.begin)) continue;
        if (want.size() != 0 && (want.begin < have.begin || want.end > have.end))
            throw ExecError("internal: " + step_text(sp, st) + " cannot run as planned: rank " +
                            std::to_string(comm_.rank()) + "'s block of " +
                            to.atoms[a].index.text() + " is not part of the block it comes from");
        const auto begin = want.size() == 0 ? 0 : want.begin - have.begin;
        x = ops_.slice(x, labels_.at(to.atoms[a].index), begin, begin + want.size());
    }
    return x;
}

namespace {

/// Per atom, the range of `layout`'s block on the device at `coords`.
std::vector<Range> block_of(const TensorLayout& layout, const MeshShape& mesh,
                            const std::vector<int>& coords) {
    std::vector<Range> out;
    for (const auto& a : layout.atoms)
        out.push_back(atom_range(a.extent, a.axes, mesh, coords));
    return out;
}

/// The intersection of two blocks; empty when any range is.
std::vector<Range> meet(const std::vector<Range>& a, const std::vector<Range>& b) {
    std::vector<Range> out;
    for (std::size_t k = 0; k < a.size(); ++k) {
        const auto begin = std::max(a[k].begin, b[k].begin);
        out.push_back({begin, std::max(begin, std::min(a[k].end, b[k].end))});
    }
    return out;
}

std::int64_t volume(const std::vector<Range>& block) {
    std::int64_t n = 1;
    for (const auto& r : block)
        n *= r.size();
    return n;
}

} // namespace

template <class T>
void RankProgram<T>::run_permute(const semantics::StatementPlan& sp, const semantics::Step& st,
                                 Tensor<T> x, const TensorLayout& in, const TensorLayout& out,
                                 Tensor<T>& result) {
    auto refuse = [&](const std::string& why) {
        return ExecError("internal: " + step_text(sp, st) + " cannot run as planned: " + why);
    };
    for (std::size_t a = 0; a < in.atoms.size(); ++a)
        if (!(in.atoms[a].index == out.atoms[a].index))
            throw refuse("it reorders the indices of " + st.tensor);
    const int me = comm_.rank();
    // A ring step (Permute_{i_k}(x)) moves the value forward along one index by `shift`
    // positions, cyclically: a source's block of `in`, so moved, is where it lies in `out`.
    std::size_t rolled = in.atoms.size();
    if (st.shift != 0) {
        rolled = 0;
        while (rolled < in.atoms.size() && !(in.atoms[rolled].index == st.from_index))
            ++rolled;
        if (rolled == in.atoms.size())
            throw refuse("it moves " + st.tensor + " along " + st.from_index.text() +
                         ", which it does not have");
    }
    auto source_block = [&](const std::vector<int>& coords) {
        auto b = block_of(in, mesh_, coords);
        if (rolled < b.size() && b[rolled].size() > 0) {
            const auto extent = in.atoms[rolled].extent, size = b[rolled].size();
            b[rolled].begin = ((b[rolled].begin + st.shift) % extent + extent) % extent;
            b[rolled].end = b[rolled].begin + size;
            if (b[rolled].end > extent)
                throw refuse("a block of " + st.from_index.text() + " would wrap round its end");
        }
        return b;
    };
    // Each pair (s, d): s sends d the part of its block of `in` that lies in d's block of `out`.
    auto part = [&](std::int64_t s, std::int64_t d) {
        return meet(source_block(mesh_.coords(static_cast<int>(s))),
                    block_of(out, mesh_, mesh_.coords(static_cast<int>(d))));
    };
    // The step's figure: the most elements any device sends or receives (every rank works it
    // out alike; it is what the plan's bytes count).
    std::map<std::int64_t, std::int64_t> sent, received;
    std::int64_t busiest = 0;
    std::vector<std::vector<Range>> regions; // per pair, its part
    for (const auto& [s, d] : st.pairs) {
        if (s == d) throw refuse("device " + std::to_string(s) + " sends to itself");
        regions.push_back(part(s, d));
        const auto n = volume(regions.back());
        busiest = std::max({busiest, sent[s] += n, received[d] += n});
    }
    // The labels in x's order (every rank's tensor of this value shares it) and each one's atom.
    std::vector<std::size_t> atom_of_label;
    for (int l : x.labels) {
        std::size_t a = 0;
        while (a < out.atoms.size() && labels_.at(out.atoms[a].index) != l)
            ++a;
        if (a == out.atoms.size()) throw refuse("its tensor has an index the layout lacks");
        atom_of_label.push_back(a);
    }
    const auto mine = source_block(coords_), target = block_of(out, mesh_, coords_);
    // `region` of my block as a tensor of its own (contiguous, in x's label order).
    auto cut = [&](const std::vector<Range>& region) {
        Tensor<T> y = x;
        for (std::size_t i = 0; i < x.labels.size(); ++i) {
            const auto a = atom_of_label[i];
            const auto begin = region[a].begin - mine[a].begin;
            if (region[a].size() != mine[a].size())
                y = ops_.slice(y, x.labels[i], begin, begin + region[a].size());
        }
        return y;
    };
    // My messages, each part once (nothing to send: neither side lists it).
    std::vector<std::pair<int, Tensor<T>>> send_parts; // (receiver, part)
    std::vector<std::pair<std::vector<Range>, Tensor<T>>> recv_parts;
    std::vector<int> senders; // of recv_parts
    for (std::size_t i = 0; i < st.pairs.size(); ++i) {
        const auto [s, d] = st.pairs[i];
        if ((s != me && d != me) || volume(regions[i]) == 0) continue;
        if (s == me) send_parts.emplace_back(static_cast<int>(d), cut(regions[i]));
        if (d == me) {
            std::vector<std::int64_t> shape;
            for (auto a : atom_of_label)
                shape.push_back(regions[i][a].size());
            recv_parts.emplace_back(regions[i], ops_.zeros(std::move(shape), x.labels));
            senders.push_back(static_cast<int>(s));
        }
    }
    std::vector<SendPart> sends;
    for (const auto& [peer, t] : send_parts)
        sends.push_back({peer, ops_.buffer(t), static_cast<std::size_t>(t.size())});
    std::vector<RecvPart> recvs;
    for (std::size_t i = 0; i < recv_parts.size(); ++i) {
        auto& t = recv_parts[i].second;
        recvs.push_back({senders[i], ops_.writable(t), static_cast<std::size_t>(t.size())});
    }
    comm_.world().exchange(sends, recvs, dtype_of<T>());
    executed_.push_back({st.kind, st.mesh_axes.to_vector(), st.tensor,
                         static_cast<double>(busiest) * static_cast<double>(sizeof(T))});
    // My new block: what I hold of it, then each received part, placed at its offset. The
    // parts must be disjoint and fill it.
    std::vector<std::int64_t> shape;
    for (auto a : atom_of_label)
        shape.push_back(target[a].size());
    const auto kept = meet(mine, target);
    if (volume(target) == 0 && recv_parts.empty()) { // an uneven layout's empty block
        result = ops_.zeros(shape, x.labels);
        return;
    }
    if (st.shift == 0 && recv_parts.empty() && volume(kept) == volume(target)) {
        result = keep_part(sp, st, std::move(x), in, out, coords_, coords_);
        return;
    }
    Tensor<T> o = ops_.zeros(shape, x.labels);
    std::vector<std::vector<Range>> placed;
    auto place = [&](const std::vector<Range>& region, const Tensor<T>& src) {
        for (const auto& other : placed)
            if (volume(meet(other, region)) > 0)
                throw refuse("rank " + std::to_string(me) + " receives a part of its block twice");
        placed.push_back(region);
        // Row-major strides of the block and of the part, in label order; the part's last two
        // dimensions are copied as rows with a pitch, the others walked.
        const auto n = atom_of_label.size();
        std::vector<std::int64_t> dst_stride(n, 1), src_stride(n, 1), size(n), offset(n);
        for (std::size_t i = 0; i < n; ++i) {
            const auto a = atom_of_label[i];
            size[i] = region[a].size();
            offset[i] = region[a].begin - target[a].begin;
        }
        for (std::size_t i = n; i-- > 1;) {
            dst_stride[i - 1] = dst_stride[i] * shape[i];
            src_stride[i - 1] = src_stride[i] * size[i];
        }
        const std::int64_t width = n ? size[n - 1] : 1, rows = n > 1 ? size[n - 2] : 1;
        const std::size_t outer = n > 2 ? n - 2 : 0;
        std::vector<std::int64_t> idx(outer, 0);
        for (;;) {
            std::int64_t d_at = 0, s_at = 0;
            for (std::size_t i = 0; i < n; ++i) {
                const auto j = i < outer ? idx[i] : 0;
                d_at += (offset[i] + j) * dst_stride[i];
                s_at += j * src_stride[i];
            }
            ops_.copy_rows(o, d_at, n > 1 ? dst_stride[n - 2] : 0, src, s_at,
                           n > 1 ? src_stride[n - 2] : 0, width, rows);
            std::size_t k = outer;
            while (k > 0 && ++idx[k - 1] == size[k - 1])
                idx[--k] = 0;
            if (k == 0) break;
        }
    };
    std::int64_t filled = 0;
    if (volume(kept) > 0) {
        place(kept, cut(kept));
        filled += volume(kept);
    }
    for (const auto& [region, t] : recv_parts) {
        place(region, t);
        filled += volume(region);
    }
    if (filled != volume(target))
        throw refuse("rank " + std::to_string(me) + " is left with " +
                     std::to_string(volume(target) - filled) + " of its " +
                     std::to_string(volume(target)) + " elements unfilled");
    result = std::move(o);
}

template <class T>
void RankProgram<T>::collective(const semantics::StatementPlan& sp, const semantics::Step& st) {
    const auto& in = sp.values.at(static_cast<std::size_t>(st.inputs.at(0))).layout;
    const auto& out = sp.values.at(static_cast<std::size_t>(st.output)).layout;
    auto refuse = [&](const std::string& why) {
        return ExecError("internal: " + step_text(sp, st) + " cannot run as planned: " + why);
    };
    if (in.atoms.size() != out.atoms.size()) throw refuse("it changes the tensor's indices");
    Tensor<T> x = take(st, st.inputs.at(0));
    auto& result = values_[static_cast<std::size_t>(st.output)];
    const double size = static_cast<double>(sizeof(T));
    if (st.kind == StepKind::Permute) {
        if (!partial_axes(in).empty() || !partial_axes(out).empty())
            throw refuse("a permute moves whole values, not partial ones");
        run_permute(sp, st, std::move(x), in, out, result);
        return;
    }
    // One mesh axis, or a group of them (one collective among the product of their devices).
    const std::vector<int> ks = st.mesh_axes.to_vector(); // what groups are keyed by
    if (ks.empty()) throw refuse("it names no mesh axis");
    std::string axis_name;
    for (std::size_t i = 0; i < ks.size(); ++i) {
        if (ks[i] < 0 || static_cast<std::size_t>(ks[i]) >= in.placements.size())
            throw refuse("no such axis");
        if (std::find(ks.begin(), ks.begin() + static_cast<std::ptrdiff_t>(i), ks[i]) !=
            ks.begin() + static_cast<std::ptrdiff_t>(i))
            throw refuse("it names a mesh axis twice");
        axis_name +=
            (axis_name.empty() ? "" : ",") + plan_.mesh.axes[static_cast<std::size_t>(ks[i])].name;
    }
    Group& g = comm_.group(ks);
    const int n = g.size();
    const auto sizes = sizes_of(mesh_, ks);
    const auto& p_in = in.placements.at(static_cast<std::size_t>(ks.front()));
    const auto op = p_in.kind == Placement::Kind::Partial ? p_in.reduce : PartialOp::Sum;
    // The atom `index` names; every atom but `moved` keeps its axes.
    auto atom_at = [&](const semantics::IndexId& index, const char* role) {
        for (std::size_t a = 0; a < in.atoms.size(); ++a)
            if (in.atoms[a].index == index) return a;
        throw refuse(std::string("its ") + role + " index '" + index.text() + "' is not one of " +
                     st.tensor + "'s");
    };
    auto others_unchanged = [&](const std::vector<std::size_t>& moved) {
        for (std::size_t a = 0; a < in.atoms.size(); ++a)
            if (std::find(moved.begin(), moved.end(), a) == moved.end() &&
                in.atoms[a].axes != out.atoms[a].axes)
                throw refuse("it changes the placement of " + in.atoms[a].index.text() +
                             ", which the step does not move");
    };
    auto loses_minor = [&](std::size_t a) {
        const auto& h = in.atoms[a].axes;
        if (h.size() < ks.size() || !std::equal(ks.rbegin(), ks.rend(), h.rbegin()) ||
            std::vector(h.begin(), h.end() - static_cast<std::ptrdiff_t>(ks.size())) !=
                out.atoms[a].axes)
            throw refuse("it may take only the minor-most mesh axes of " +
                         in.atoms[a].index.text() + ", and those are not " + axis_name);
    };
    auto gains_minor = [&](std::size_t a) {
        auto w = in.atoms[a].axes;
        w.insert(w.end(), ks.begin(), ks.end());
        if (w != out.atoms[a].axes)
            throw refuse(in.atoms[a].index.text() + " does not gain " + axis_name +
                         " as its minor-most mesh axes");
    };
    auto partial_ends = [&](bool ends) {
        for (int k : ks) {
            const auto& pi = in.placements.at(static_cast<std::size_t>(k));
            const bool was = pi.kind == Placement::Kind::Partial;
            if (was != ends ||
                out.placements.at(static_cast<std::size_t>(k)).kind == Placement::Kind::Partial)
                throw refuse(
                    (ends ? "the value is not partial over " : "the value is partial over ") +
                    plan_.mesh.axes[static_cast<std::size_t>(k)].name);
            if (was && pi.reduce != p_in.reduce)
                throw refuse("its axes hold two different partial reductions");
        }
        auto pin = partial_axes(in);
        pin.erase(std::remove_if(pin.begin(), pin.end(),
                                 [&](const auto& q) {
                                     return std::find(ks.begin(), ks.end(), q.first) != ks.end();
                                 }),
                  pin.end());
        if (pin != partial_axes(out)) throw refuse("it changes the partial placement elsewhere");
    };
    const double local = static_cast<double>(x.size()) * size;
    switch (st.kind) {
    case StepKind::AllReduce: {
        others_unchanged({});
        partial_ends(true);
        g.all_reduce(ops_.writable(x), static_cast<std::size_t>(x.size()), dtype_of<T>(), op);
        executed_.push_back(
            {st.kind, ks, st.tensor, semantics::collective_bytes(st.kind, n, local, local)});
        result = std::move(x);
        return;
    }
    case StepKind::AllGather: {
        const auto a = atom_at(st.from_index, "gathered");
        others_unchanged({a});
        partial_ends(false);
        loses_minor(a);
        std::vector<int> axes(in.atoms[a].axes.begin(), in.atoms[a].axes.end());
        result = gather_minor(x, labels_.at(in.atoms[a].index), in.atoms[a].extent, axes, ks, g);
        executed_.push_back(
            {st.kind, ks, st.tensor, semantics::collective_bytes(st.kind, n, local * n, local)});
        return;
    }
    case StepKind::ReduceScatter: {
        const auto a = atom_at(st.to_index, "scattered");
        others_unchanged({a});
        partial_ends(true);
        gains_minor(a);
        const int label = labels_.at(out.atoms[a].index);
        const Tensor<T> xp = leading(ops_, x, {label});
        const auto whole = xp.shape.at(0);
        const std::int64_t rest = inner_size(xp, 1);
        const auto max_chunk = group_chunk(whole, sizes, 0).size();
        const auto count = max_chunk * rest;
        // Block q holds chunk q, padded to the largest chunk (xp itself when all are equal).
        Tensor<T> padded;
        const Tensor<T>* send = &xp;
        if (whole != max_chunk * n) {
            padded = ops_.zeros(with_lead(xp, max_chunk * n), xp.labels);
            for (int q = 0; q < n; ++q) {
                const auto r = group_chunk(whole, sizes, q);
                ops_.copy_rows(padded, q * count, 0, xp, r.begin * rest, 0, r.size() * rest, 1);
            }
            send = &padded;
        }
        Tensor<T> recv = ops_.zeros(with_lead(xp, max_chunk), xp.labels);
        g.reduce_scatter(ops_.buffer(*send), ops_.writable(recv), static_cast<std::size_t>(count),
                         dtype_of<T>(), op);
        executed_.push_back(
            {st.kind, ks, st.tensor, semantics::collective_bytes(st.kind, n, local, local)});
        const auto mine = group_chunk(whole, sizes, g.rank()).size();
        Tensor<T> o = mine == max_chunk ? std::move(recv) : ops_.slice(recv, label, 0, mine);
        result = o.labels == x.labels ? std::move(o) : ops_.permute(o, x.labels);
        return;
    }
    case StepKind::AllToAll: {
        const auto from = atom_at(st.from_index, "source");
        const auto to = atom_at(st.to_index, "destination");
        if (from == to) throw refuse("it moves an axis onto the index it leaves");
        others_unchanged({from, to});
        partial_ends(false);
        loses_minor(from);
        gains_minor(to);
        const int li = labels_.at(in.atoms[from].index);
        const int lj = labels_.at(in.atoms[to].index);
        const Tensor<T> xp = leading(ops_, x, {li, lj});
        auto parent_axes = in.atoms[from].axes;
        parent_axes.resize(parent_axes.size() - ks.size());
        const auto pi = atom_range(in.atoms[from].extent, parent_axes, mesh_, coords_).size();
        const auto nj = xp.shape[1];
        const std::int64_t rest = inner_size(xp, 2);
        const auto mi = group_chunk(pi, sizes, 0).size(), mj = group_chunk(nj, sizes, 0).size();
        const auto count = mi * mj * rest;
        // Block q: this rank's rows of i, each with chunk q of j, padded to mi x mj.
        auto block_shape = xp.shape;
        block_shape[0] = mi * n;
        block_shape[1] = mj;
        Tensor<T> send = ops_.zeros(block_shape, xp.labels);
        Tensor<T> recv = ops_.zeros(block_shape, xp.labels);
        const auto my_i = xp.shape[0];
        for (int q = 0; q < n; ++q) {
            const auto rj = group_chunk(nj, sizes, q);
            ops_.copy_rows(send, q * count, mj * rest, xp, rj.begin * rest, nj * rest,
                           rj.size() * rest, my_i);
        }
        g.all_to_all(ops_.buffer(send), ops_.writable(recv), static_cast<std::size_t>(count),
                     dtype_of<T>());
        executed_.push_back(
            {st.kind, ks, st.tensor, semantics::collective_bytes(st.kind, n, 0, local)});
        // Block q from member q: its rows of i (chunk q of pi), each with my chunk of j.
        const auto my_j = group_chunk(nj, sizes, g.rank()).size();
        auto o_shape = xp.shape;
        o_shape[0] = pi;
        o_shape[1] = my_j;
        Tensor<T> o = ops_.zeros(o_shape, xp.labels);
        std::int64_t at = 0;
        for (int q = 0; q < n; ++q) {
            const auto len_i = group_chunk(pi, sizes, q).size();
            ops_.copy_rows(o, at, my_j * rest, recv, q * count, mj * rest, my_j * rest, len_i);
            at += len_i * my_j * rest;
        }
        result = o.labels == x.labels ? std::move(o) : ops_.permute(o, x.labels);
        return;
    }
    default:
        break;
    }
    throw refuse("the executor has no such collective");
}

template <class T>
void RankProgram<T>::store_moved_factors(const semantics::StatementPlan& sp) {
    // A chain of products moves every factor whose layout changes (issue 19); the first is the
    // statement's result, stored below. Each other moved factor ends in a value the plan
    // lists (StatementPlan::also_stored): it is stored too, in the layout the chain gives it
    // (the checker defines it so). A chain computes nothing, so for a program input (whose
    // logical value every rank knows) the block must be exactly the input's block in that
    // layout: compared, except partial layouts (their shares are the plan's) and under a
    // micro-batch (its block is a cut of the input's; the factor is put together on the whole
    // batch after the micro-batches, and the statements reading it are verified).
    std::vector<std::pair<std::string, Stored>> moved;
    for (int id : sp.also_stored) {
        const auto v = static_cast<std::size_t>(id);
        if (id < 0 || v >= sp.values.size() || !have_[v])
            throw ExecError("line " + std::to_string(sp.range.line) +
                            ": the plan stores a value no step computes (value " +
                            std::to_string(id) + ")");
        const auto& info = sp.values[v];
        const auto& key = info.layout.tensor;
        const bool partial =
            std::any_of(info.layout.placements.begin(), info.layout.placements.end(),
                        [](const Placement& p) { return p.kind == Placement::Kind::Partial; });
        const auto labels = labels_.labels_at(info.layout);
        Tensor<T> x = values_[v];
        if (x.labels != labels) x = ops_.permute(x, labels);
        if (!partial && !micro_run_ && !state_.count(key)) {
            const Tensor<T> got = ops_.download(x);
            const std::string name = run_ ? input_key(*run_, key) : key;
            const auto want = input_shard<T>(name, info.layout, labels, mesh_, coords_, data_);
            double worst = got.data.size() == want.data.size() ? 0.0 : INFINITY;
            for (std::size_t e = 0; e < got.data.size() && e < want.data.size(); ++e)
                worst = std::max(worst, element_difference(static_cast<double>(got.data[e]),
                                                           static_cast<double>(want.data[e])));
            if (worst > 0)
                throw ExecError("line " + std::to_string(sp.range.line) + ": " + key +
                                ", moved by the chain, differs on rank " +
                                std::to_string(comm_.rank()) +
                                " from its block in the layout the chain gives it (max "
                                "|difference| " +
                                std::to_string(worst) + "): a step moved the wrong blocks");
        }
        moved.emplace_back(key, Stored{std::move(x), info.layout});
    }
    for (auto& [key, stored] : moved)
        state_.insert_or_assign(key, std::move(stored));
}

template <class T>
void RankProgram<T>::check_ran_as_planned(const semantics::StatementPlan& sp) const {
    // The collectives that ran, in order, against the plan's (softmax statistics included).
    bool origin = true; // device 0's chunks are the largest: the plan's bytes are its own
    for (int c : coords_)
        origin = origin && c == 0;
    std::size_t e = 0;
    for (std::size_t i = 0; i < sp.steps.size(); ++i) {
        const auto& st = sp.steps[i];
        if (!is_collective(st.kind)) continue;
        const std::string what = "step " + std::to_string(i + 1) + " of line " +
                                 std::to_string(sp.range.line) + " (" +
                                 semantics::collective_text(plan_.mesh, st.kind, st.mesh_axes) +
                                 " of " + st.tensor + ")";
        if (e >= executed_.size()) throw ExecError("internal: " + what + " did not run");
        const auto& ran = executed_[e++];
        if (ran.kind != st.kind || ran.axes != st.mesh_axes)
            throw ExecError("internal: " + what + " ran as " +
                            semantics::collective_text(plan_.mesh, ran.kind, ran.axes));
        // Every device of a collective over one axis sends alike (the largest chunks on
        // device 0, whose figures the plan states); a permute counts the most one device
        // sends or receives (every rank works it out from the pairs alike). The
        // plan counts the program's element types, this run its own.
        const double planned = st.cost.bytes_per_device / std::max(st.cost.elem_bytes, 1) *
                               static_cast<double>(sizeof(T));
        const double tol = 1e-9 * std::max(planned, 1.0);
        if (((origin || st.kind == StepKind::Permute) && std::abs(ran.bytes - planned) > tol) ||
            ran.bytes > planned + tol)
            throw ExecError("internal: " + what + " sent " + std::to_string(ran.bytes) +
                            " bytes on rank " + std::to_string(comm_.rank()) + ", the plan " +
                            std::to_string(planned));
    }
    if (e != executed_.size())
        throw ExecError(
            "internal: line " + std::to_string(sp.range.line) + " ran " +
            semantics::collective_text(plan_.mesh, executed_[e].kind, executed_[e].axes) +
            ", which its plan does not have");
}

template <class T>
void RankProgram<T>::local_step(const semantics::StatementPlan& sp, const semantics::Step& st) {
    const auto& out_layout = sp.values.at(static_cast<std::size_t>(st.output)).layout;
    auto& result = values_[static_cast<std::size_t>(st.output)];
    const auto out = labels_.labels_at(out_layout);
    auto in_layout = [&](std::size_t i) -> const TensorLayout& {
        return sp.values.at(static_cast<std::size_t>(st.inputs.at(i))).layout;
    };
    if (st.kind == StepKind::Slice) {
        // Local: each rank keeps the part of its block that is its new block; a partial
        // placement may end only where its axis has one device (nothing to reduce).
        const auto& in = in_layout(0);
        for (const auto& [k, op] : partial_axes(in))
            if (out_layout.placements.at(static_cast<std::size_t>(k)).kind !=
                    Placement::Kind::Partial &&
                mesh_.sizes.at(static_cast<std::size_t>(k)) != 1)
                throw ExecError("internal: " + step_text(sp, st) +
                                " cannot run as planned: a partial value needs a reduction");
        for (const auto& [k, op] : partial_axes(out_layout))
            if (in.placements.at(static_cast<std::size_t>(k)).kind != Placement::Kind::Partial)
                throw ExecError("internal: " + step_text(sp, st) +
                                " cannot run as planned: a local step makes nothing partial");
        result = keep_part(sp, st, take(st, st.inputs.at(0)), in, out_layout, coords_, coords_);
        return;
    }
    if (st.kind == StepKind::Split) {
        Tensor<T> x = take(st, st.inputs.at(0));
        const auto before = x.size();
        x.shape = local_shape(out_layout, mesh_, coords_);
        x.labels = out;
        if (x.size() != before)
            throw ExecError("reshaping " + st.tensor + " on rank " + std::to_string(comm_.rank()) +
                            " needs evenly sharded indices");
        result = std::move(x);
        return;
    }
    switch (st.op) {
    case OpKind::Einsum: {
        std::vector<const Tensor<T>*> ins;
        for (int id : st.inputs)
            ins.push_back(&value(id));
        result = ops_.einsum(ins, out);
        return;
    }
    case OpKind::Function:
    case OpKind::Linear:
        result = take(st, st.inputs.at(0));
        ops_.function(result, fn_of(st.function, st.op == OpKind::Linear));
        return;
    case OpKind::Softmax: {
        Tensor<T> x = take(st, st.inputs.at(0));
        const int along = labels_.at(st.index);
        const auto* atom = atom_of(in_layout(0), st.index);
        if (!atom || atom->axes.empty()) {
            ops_.softmax(x, along);
            result = std::move(x);
            return;
        }
        // Sharded along the normalised index: the row statistics are all-reduced.
        std::vector<int> rows;
        for (int l : x.labels)
            if (l != along) rows.push_back(l);
        // Over each axis of the index (one with a single device has nothing to combine).
        auto combine = [&](Tensor<T>& stat, PartialOp op, const char* name) {
            for (int k : atom->axes) {
                Group& g = comm_.axis(k);
                if (g.size() == 1) continue;
                g.all_reduce(ops_.writable(stat), static_cast<std::size_t>(stat.size()),
                             dtype_of<T>(), op);
                const double bytes = static_cast<double>(stat.size()) * sizeof(T);
                executed_.push_back(
                    {StepKind::AllReduce,
                     {k},
                     st.tensor + name,
                     semantics::collective_bytes(StepKind::AllReduce, g.size(), bytes, bytes)});
            }
        };
        auto m = ops_.reduce(x, rows, PartialOp::Max);
        combine(m, PartialOp::Max, ".max");
        auto e = ops_.binary(x, m, Binary::Sub, x.labels);
        ops_.function(e, Fn::Exp);
        auto s = ops_.reduce(e, rows, PartialOp::Sum);
        combine(s, PartialOp::Sum, ".sum");
        result = ops_.binary(e, s, Binary::Div, x.labels);
        return;
    }
    case OpKind::Reduce: {
        const auto& x = value(st.inputs.at(0));
        result = ops_.reduce(x, out,
                             semantics::combine_of(st.reduce.value_or(semantics::ReduceFn::Sum)));
        if (st.reduce == semantics::ReduceFn::Mean) {
            double n = 1;
            for (const auto& a : in_layout(0).atoms)
                if (!atom_of(out_layout, a.index)) n *= static_cast<double>(a.extent);
            ops_.scale(result, static_cast<T>(1.0 / n));
        }
        return;
    }
    case OpKind::Add: {
        Tensor<T> acc = take(st, st.inputs.at(0));
        if (!st.negated.empty() && st.negated[0]) ops_.function(acc, Fn::Neg);
        for (std::size_t i = 1; i < st.inputs.size(); ++i) {
            const auto& b = value(st.inputs[i]);
            const bool minus = i < st.negated.size() && st.negated[i];
            acc = ops_.binary(acc, b, minus ? Binary::Sub : Binary::Add,
                              union_in_order(out, acc.labels, b.labels));
        }
        result = acc.labels == out ? std::move(acc) : ops_.permute(acc, out);
        return;
    }
    case OpKind::Divide:
        result = ops_.binary(value(st.inputs.at(0)), value(st.inputs.at(1)), Binary::Div, out);
        return;
    case OpKind::KeepOne: {
        bool keep = true;
        for (int k : st.mesh_axes)
            keep = keep && coords_[static_cast<std::size_t>(k)] == 0;
        if (keep) {
            result = take(st, st.inputs.at(0));
        } else {
            const auto& x = value(st.inputs.at(0));
            result = ops_.zeros(x.shape, x.labels);
        }
        return;
    }
    case OpKind::None:
        break;
    }
    throw ExecError("internal: step '" + st.text.reason + "' has no operation to run");
}

template class RankProgram<float>;
template class RankProgram<double>;

} // namespace shardscope::exec
