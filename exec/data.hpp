// Program inputs: their logical values (seeded random, arange, small integers), identical on
// every rank and in the reference, and each rank's shard or partial share of them.
#pragma once

#include "exec/layout.hpp"
#include "exec/tensor.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace shardscope::exec {

enum class DataMode {
    Random, ///< uniform in [-1, 1), seeded
    Arange, ///< 1, 2, 3, ... row-major (the DTensor walkthrough)
    Ints,   ///< small integers in [-4, 4], seeded: linear programs compare exactly
};

struct DataOptions {
    DataMode mode = DataMode::Random;
    std::uint64_t seed = 0;
    /// Values given for some inputs (a finite-difference test perturbs one element): used
    /// where the count matches, instead of the mode's values.
    std::map<std::string, std::vector<double>> given = {};
};

/// The logical value of input `key` with `count` elements, row-major. Depends only on the key,
/// the count and the options, so every rank and the reference agree.
std::vector<double> input_values(const std::string& key, std::int64_t count,
                                 const DataOptions& options);

/// The input as the device at `coords` holds it under layout `t`: its shard, and where `t` is
/// partial (P(sum)) a share: seeded integer noise off coordinate 0 of the partial axes, and
/// the logical value minus the others' noise at coordinate 0, so the shares sum to the value.
template <class T>
Tensor<T> input_shard(const std::string& key, const semantics::TensorLayout& t,
                      const std::vector<int>& labels, const MeshShape& mesh,
                      const std::vector<int>& coords, const DataOptions& options);

} // namespace shardscope::exec
