#include "exec/interpreter.hpp"

#include "exec/functions.hpp"
#include "exec/kernels.hpp"

#include <algorithm>
#include <cstring>

namespace shardscope::exec {

using semantics::OpKind;
using semantics::Placement;
using semantics::StepKind;
using semantics::TensorLayout;

namespace {

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
/// in their order: each block a collective sends is then contiguous. No copy when in place.
template <class T>
Tensor<T> leading(const Tensor<T>& x, std::vector<int> first) {
    const auto n = first.size();
    for (int l : x.labels)
        if (std::find(first.begin(), first.begin() + static_cast<std::ptrdiff_t>(n), l) ==
            first.begin() + static_cast<std::ptrdiff_t>(n))
            first.push_back(l);
    return x.labels == first ? x : permute(x, first);
}

const semantics::AtomLayout* atom_of(const TensorLayout& t, const semantics::IndexId& i) {
    for (const auto& a : t.atoms)
        if (a.index == i) return &a;
    return nullptr;
}

} // namespace

template <class T>
RankProgram<T>::RankProgram(const semantics::Plan& plan, const LabelTable& labels,
                            Communicator& comm, const DataOptions& data, LocalCompute<T>* compute)
    : plan_(plan), labels_(labels), comm_(comm), ops_(compute ? *compute : host_), data_(data),
      mesh_(mesh_shape(plan.mesh)), coords_(mesh_.coords(comm.rank())) {}

template <class T>
const Tensor<T>& RankProgram<T>::stored(const std::string& key) const {
    auto it = state_.find(key);
    if (it == state_.end()) throw ExecError("internal: nothing stored as " + key);
    return it->second.local;
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
Tensor<T> RankProgram<T>::load(const semantics::ValueInfo& v) {
    const auto labels = labels_.labels_at(v.layout);
    const auto shape = local_shape(v.layout, mesh_, coords_);
    auto it = state_.find(v.load);
    if (it == state_.end()) {
        // A program input: this rank's shard (or partial share) of its logical value.
        auto x = input_shard<T>(v.load, v.layout, labels, mesh_, coords_, data_);
        inputs_.insert_or_assign(v.load, std::pair{x, v.layout});
        return x;
    }
    // An earlier result, in this use's index names (by position; a regrouping reshapes).
    Tensor<T> x = it->second.local;
    if (x.size() != Tensor<T>::zeros(shape, labels).size())
        throw ExecError(v.load + " is stored with " + std::to_string(x.size()) +
                        " elements on rank " + std::to_string(comm_.rank()) + " but used with " +
                        std::to_string(Tensor<T>::zeros(shape, labels).size()) +
                        " (a regrouping of unevenly sharded indices)");
    x.shape = shape;
    x.labels = labels;
    return x;
}

template <class T>
void RankProgram<T>::run(std::size_t s) {
    const auto& sp = plan_.statements.at(s);
    values_.assign(sp.values.size(), Tensor<T>{});
    have_.assign(sp.values.size(), false);
    inputs_.clear();
    executed_.clear();
    for (std::size_t v = 0; v < sp.values.size(); ++v) {
        const auto& info = sp.values[v];
        if (!info.load.empty()) {
            values_[v] = load(info);
            have_[v] = true;
        } else if (!info.constant.empty()) {
            values_[v] = Tensor<T>::scalar(static_cast<T>(std::stod(info.constant)));
            have_[v] = true;
        }
    }
    for (const auto& st : sp.steps) {
        if (st.output < 0) continue; // performed inside the next step (softmax statistics)
        if (is_collective(st.kind))
            collective(sp, st);
        else
            local_step(sp, st);
        have_[static_cast<std::size_t>(st.output)] = true;
    }
    // Store: in the left-hand side's index order and layout.
    Tensor<T> result = value(sp.result_value);
    const auto target = labels_.labels_at(sp.result);
    if (result.labels != target) result = permute(result, target);
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
        Tensor<T> old = it != state_.end()
                            ? it->second.local
                            : input_shard<T>(sp.target, sp.result, target, mesh_, coords_, data_);
        // Stored under the names of its definition: this statement's names, by position.
        if (old.labels.size() == target.size()) old.labels = target;
        if (it == state_.end()) inputs_.insert_or_assign(sp.target, std::pair{old, sp.result});
        accumulate(old, result, Reduce::Sum);
        result = std::move(old);
    }
    state_.insert_or_assign(sp.target, Stored{std::move(result), sp.result});
}

template <class T>
Tensor<T> RankProgram<T>::gather_last(const Tensor<T>& x, int label, std::int64_t extent,
                                      std::vector<int>& axes, const std::string& name) {
    const int k = axes.back();
    axes.pop_back();
    Group& g = comm_.axis(k);
    const int n = g.size();
    const auto parent = atom_range(extent, axes, mesh_, coords_).size();
    const auto max_chunk = chunk(parent, n, 0).size();
    const Tensor<T> xp = leading(x, {label});
    const std::int64_t rest = inner_size(xp, 1);
    const auto count = static_cast<std::size_t>(max_chunk * rest);
    std::vector<T> send(count, T(0)), recv(count * static_cast<std::size_t>(n));
    std::copy(xp.data.begin(), xp.data.end(), send.begin());
    g.all_gather(send.data(), recv.data(), count, dtype_of<T>());
    executed_.push_back({StepKind::AllGather, {k}, name, static_cast<double>(count * sizeof(T))});
    Tensor<T> out;
    out.labels = xp.labels;
    out.shape = xp.shape;
    out.shape[0] = parent;
    out.data.reserve(static_cast<std::size_t>(parent * rest));
    for (int q = 0; q < n; ++q) {
        const auto len = static_cast<std::size_t>(chunk(parent, n, q).size() * rest);
        const auto* block = recv.data() + static_cast<std::size_t>(q) * count;
        out.data.insert(out.data.end(), block, block + len);
    }
    return out.labels == x.labels ? out : permute(out, x.labels);
}

template <class T>
Tensor<T> RankProgram<T>::slice_onto(const Tensor<T>& x, int label, int k) {
    const int d = x.dim_of(label);
    const auto r =
        chunk(x.shape[static_cast<std::size_t>(d)], mesh_.sizes[static_cast<std::size_t>(k)],
              coords_[static_cast<std::size_t>(k)]);
    return slice(x, label, r.begin, r.end);
}

template <class T>
Tensor<T> RankProgram<T>::redistribute(Tensor<T> x, const TensorLayout& from,
                                       const TensorLayout& to, const std::string& name) {
    if (from.atoms.size() != to.atoms.size())
        throw ExecError("internal: a redistribution of " + name + " changes its indices");
    // Gathers first (minor axes first), then slices: an axis may move between indices.
    std::vector<std::vector<int>> axes;
    std::vector<std::size_t> common;
    for (std::size_t a = 0; a < from.atoms.size(); ++a) {
        const auto& have = from.atoms[a].axes;
        const auto& want = to.atoms[a].axes;
        std::size_t p = 0;
        while (p < have.size() && p < want.size() && have[p] == want[p])
            ++p;
        common.push_back(p);
        axes.push_back(have);
        while (axes.back().size() > p)
            x = gather_last(x, labels_.at(from.atoms[a].index), from.atoms[a].extent, axes.back(),
                            name);
    }
    for (std::size_t a = 0; a < to.atoms.size(); ++a)
        for (std::size_t p = common[a]; p < to.atoms[a].axes.size(); ++p)
            x = slice_onto(x, labels_.at(to.atoms[a].index), to.atoms[a].axes[p]);
    return x;
}

template <class T>
void RankProgram<T>::collective(const semantics::StatementPlan& sp, const semantics::Step& st) {
    const auto& in = sp.values.at(static_cast<std::size_t>(st.inputs.at(0))).layout;
    const auto& out = sp.values.at(static_cast<std::size_t>(st.output)).layout;
    Tensor<T> x = value(st.inputs[0]);
    auto& result = values_[static_cast<std::size_t>(st.output)];
    const int k = st.mesh_axes.empty() ? 0 : st.mesh_axes.front();
    const auto op = [&] {
        const auto& p = in.placements.at(static_cast<std::size_t>(k));
        return p.kind == Placement::Kind::Partial && p.reduce == "max" ? ReduceOp::Max
                                                                       : ReduceOp::Sum;
    }();
    switch (st.kind) {
    case StepKind::AllReduce:
        comm_.axis(k).all_reduce(x.data.data(), x.data.size(), dtype_of<T>(), op);
        executed_.push_back(
            {st.kind, {k}, st.tensor, static_cast<double>(x.data.size() * sizeof(T))});
        result = std::move(x);
        return;
    case StepKind::ReduceScatter: {
        // The index that takes axis k: the atom whose axis list grows by k.
        std::size_t a = 0;
        while (a < out.atoms.size() && out.atoms[a].axes == in.atoms[a].axes)
            ++a;
        if (a == out.atoms.size())
            throw ExecError("internal: reduce-scatter of " + st.tensor + " shards nothing");
        const int label = labels_.at(out.atoms[a].index);
        Group& g = comm_.axis(k);
        const int n = g.size();
        const Tensor<T> xp = leading(x, {label});
        const auto whole = xp.shape.at(0);
        const std::int64_t rest = inner_size(xp, 1);
        const auto max_chunk = chunk(whole, n, 0).size();
        const auto count = static_cast<std::size_t>(max_chunk * rest);
        std::vector<T> send(count * static_cast<std::size_t>(n), T(0)), recv(count);
        for (int q = 0; q < n; ++q) {
            const auto r = chunk(whole, n, q);
            std::copy(xp.data.begin() + r.begin * rest, xp.data.begin() + r.end * rest,
                      send.begin() + static_cast<std::ptrdiff_t>(q * count));
        }
        g.reduce_scatter(send.data(), recv.data(), count, dtype_of<T>(), op);
        executed_.push_back(
            {st.kind, {k}, st.tensor, static_cast<double>(send.size() * sizeof(T))});
        Tensor<T> o;
        o.labels = xp.labels;
        o.shape = xp.shape;
        o.shape[0] = chunk(whole, n, g.rank()).size();
        o.data.assign(recv.begin(), recv.begin() + o.shape[0] * rest);
        result = o.labels == x.labels ? std::move(o) : permute(o, x.labels);
        return;
    }
    case StepKind::AllToAll: {
        // Fast path: one index gives up axis k (its minor-most) and another takes it.
        int from = -1, to = -1;
        bool simple = st.mesh_axes.size() == 1;
        for (std::size_t a = 0; a < in.atoms.size() && simple; ++a) {
            const auto& h = in.atoms[a].axes;
            const auto& w = out.atoms[a].axes;
            if (h == w) continue;
            if (!h.empty() && h.back() == k && std::vector(h.begin(), h.end() - 1) == w && from < 0)
                from = static_cast<int>(a);
            else if (!w.empty() && w.back() == k && std::vector(w.begin(), w.end() - 1) == h &&
                     to < 0)
                to = static_cast<int>(a);
            else
                simple = false;
        }
        if (!simple || from < 0 || to < 0) break;
        const int li = labels_.at(in.atoms[static_cast<std::size_t>(from)].index);
        const int lj = labels_.at(in.atoms[static_cast<std::size_t>(to)].index);
        Group& g = comm_.axis(k);
        const int n = g.size();
        const Tensor<T> xp = leading(x, {li, lj});
        auto parent_axes = in.atoms[static_cast<std::size_t>(from)].axes;
        parent_axes.pop_back();
        const auto pi =
            atom_range(in.atoms[static_cast<std::size_t>(from)].extent, parent_axes, mesh_, coords_)
                .size();
        const auto nj = xp.shape[1];
        const std::int64_t rest = inner_size(xp, 2);
        const auto mi = chunk(pi, n, 0).size(), mj = chunk(nj, n, 0).size();
        const auto count = static_cast<std::size_t>(mi * mj * rest);
        std::vector<T> send(count * static_cast<std::size_t>(n), T(0)), recv(send.size());
        const auto my_i = xp.shape[0];
        for (int q = 0; q < n; ++q) {
            const auto rj = chunk(nj, n, q);
            for (std::int64_t i = 0; i < my_i; ++i)
                std::copy(xp.data.begin() + (i * nj + rj.begin) * rest,
                          xp.data.begin() + (i * nj + rj.end) * rest,
                          send.begin() + static_cast<std::ptrdiff_t>(q * count + i * mj * rest));
        }
        g.all_to_all(send.data(), recv.data(), count, dtype_of<T>());
        executed_.push_back(
            {st.kind, {k}, st.tensor, static_cast<double>(send.size() * sizeof(T))});
        const auto my_j = chunk(nj, n, g.rank()).size();
        Tensor<T> o;
        o.labels = xp.labels;
        o.shape = xp.shape;
        o.shape[0] = pi;
        o.shape[1] = my_j;
        o.data.reserve(static_cast<std::size_t>(pi * my_j * rest));
        for (int q = 0; q < n; ++q) {
            const auto len_i = chunk(pi, n, q).size();
            for (std::int64_t i = 0; i < len_i; ++i) {
                const auto* b = recv.data() + static_cast<std::size_t>(q) * count +
                                static_cast<std::size_t>(i * mj * rest);
                o.data.insert(o.data.end(), b, b + my_j * rest);
            }
        }
        result = o.labels == x.labels ? std::move(o) : permute(o, x.labels);
        return;
    }
    default:
        break;
    }
    // All-gathers, and all-to-alls that are not a single move: gather, then slice.
    result = redistribute(std::move(x), in, out, st.tensor);
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
        result = redistribute(value(st.inputs.at(0)), in_layout(0), out_layout, st.tensor);
        return;
    }
    if (st.kind == StepKind::Split) {
        Tensor<T> x = value(st.inputs.at(0));
        x.shape = local_shape(out_layout, mesh_, coords_);
        x.labels = out;
        if (static_cast<std::size_t>(x.size()) != x.data.size())
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
        result = value(st.inputs.at(0));
        ops_.function(result, fn_of(st.function, st.op == OpKind::Linear));
        return;
    case OpKind::Softmax: {
        Tensor<T> x = value(st.inputs.at(0));
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
        auto m = ops_.reduce(x, rows, Reduce::Max);
        for (int k : atom->axes) {
            comm_.axis(k).all_reduce(m.data.data(), m.data.size(), dtype_of<T>(), ReduceOp::Max);
            executed_.push_back({StepKind::AllReduce,
                                 {k},
                                 st.tensor + ".max",
                                 static_cast<double>(m.data.size() * sizeof(T))});
        }
        auto e = ops_.binary(x, m, Binary::Sub, x.labels);
        ops_.function(e, Fn::Exp);
        auto s = ops_.reduce(e, rows, Reduce::Sum);
        for (int k : atom->axes) {
            comm_.axis(k).all_reduce(s.data.data(), s.data.size(), dtype_of<T>(), ReduceOp::Sum);
            executed_.push_back({StepKind::AllReduce,
                                 {k},
                                 st.tensor + ".sum",
                                 static_cast<double>(s.data.size() * sizeof(T))});
        }
        result = ops_.binary(e, s, Binary::Div, x.labels);
        return;
    }
    case OpKind::Reduce: {
        const auto& x = value(st.inputs.at(0));
        result = ops_.reduce(x, out, st.function == "max" ? Reduce::Max : Reduce::Sum);
        if (st.function == "mean") {
            double n = 1;
            for (const auto& a : in_layout(0).atoms)
                if (!atom_of(out_layout, a.index)) n *= static_cast<double>(a.extent);
            scale(result, static_cast<T>(1.0 / n));
        }
        return;
    }
    case OpKind::Add: {
        Tensor<T> acc = value(st.inputs.at(0));
        if (!st.negated.empty() && st.negated[0]) ops_.function(acc, Fn::Neg);
        for (std::size_t i = 1; i < st.inputs.size(); ++i) {
            const auto& b = value(st.inputs[i]);
            const bool minus = i < st.negated.size() && st.negated[i];
            acc = ops_.binary(acc, b, minus ? Binary::Sub : Binary::Add,
                              union_in_order(out, acc.labels, b.labels));
        }
        result = acc.labels == out ? std::move(acc) : permute(acc, out);
        return;
    }
    case OpKind::Divide:
        result = ops_.binary(value(st.inputs.at(0)), value(st.inputs.at(1)), Binary::Div, out);
        return;
    case OpKind::KeepOne: {
        Tensor<T> x = value(st.inputs.at(0));
        for (int k : st.mesh_axes)
            if (coords_[static_cast<std::size_t>(k)] != 0)
                std::fill(x.data.begin(), x.data.end(), T(0));
        result = std::move(x);
        return;
    }
    case OpKind::None:
        break;
    }
    throw ExecError("internal: step '" + st.reason + "' has no operation to run");
}

template class RankProgram<float>;
template class RankProgram<double>;

} // namespace shardscope::exec
