// Where each rank's shard of a tensor lies in the logical tensor: nested torch.chunk per
// sharded index (as DTensor shards over several mesh axes), partial shares, and the inverse:
// assembling the logical tensor from every rank's local tensor.
#pragma once

#include "exec/comm.hpp"
#include "exec/tensor.hpp"
#include "semantics/chunks.hpp"
#include "semantics/plan.hpp"

#include <map>
#include <span>
#include <string>
#include <vector>

namespace shardscope::exec {

/// Interns index names (IndexId) as the integer labels tensors carry.
class LabelTable {
public:
    int of(const semantics::IndexId& i);
    /// The label of an index already interned (ExecError if not): safe to share between
    /// threads once every index of a plan is interned.
    int at(const semantics::IndexId& i) const;
    std::vector<int> labels_at(const semantics::TensorLayout& t) const;
    /// Interns every index of a plan.
    void add(const semantics::Plan& plan);
    const semantics::IndexId& name(int label) const {
        return names_.at(static_cast<std::size_t>(label));
    }
    /// The labels of a layout's atoms, in storage order.
    std::vector<int> labels(const semantics::TensorLayout& t);

private:
    std::map<semantics::IndexId, int> ids_;
    std::vector<semantics::IndexId> names_;
};

/// torch.chunk ranges (semantics/chunks.hpp, shared with the views).
using semantics::chunk;
using semantics::group_chunk;
using semantics::Range;

/// The range of one atom held by the device at `coords`, given the mesh axes it is sharded
/// over (major to minor: chunk over the first axis, then that chunk over the next).
Range atom_range(std::int64_t extent, std::span<const int> axes, const MeshShape& mesh,
                 const std::vector<int>& coords);

/// The local shape of a layout on the device at `coords`.
std::vector<std::int64_t> local_shape(const semantics::TensorLayout& t, const MeshShape& mesh,
                                      const std::vector<int>& coords);

/// The mesh axes on which a layout is partial, with their reductions.
std::vector<std::pair<int, semantics::PartialOp>> partial_axes(const semantics::TensorLayout& t);

/// The shard of a logical tensor (labelled as the layout's atoms) on the device at `coords`.
template <class T>
Tensor<T> shard_of(const Tensor<T>& global, const semantics::TensorLayout& t, const MeshShape& mesh,
                   const std::vector<int>& coords);

/// The logical tensor from every rank's local tensor (indexed by rank): shards are placed,
/// partial sums reduced, and replicas compared: `replica_error` receives the largest
/// difference between copies that a replicated placement says are equal.
template <class T>
Tensor<T> assemble(const std::vector<Tensor<T>>& locals, const semantics::TensorLayout& t,
                   const std::vector<int>& labels, const MeshShape& mesh, double& replica_error);

/// The mesh as the communicator sees it, from the plan's mesh.
MeshShape mesh_shape(const semantics::Mesh& m);

} // namespace shardscope::exec
