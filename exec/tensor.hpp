// Dense row-major tensors whose dimensions carry integer labels (interned index names), the
// unit of data of the executor: a rank's local shard, a gathered result, a reference value.
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace shardscope::exec {

/// A dense row-major tensor; `labels[d]` names dimension d (distinct labels). Its elements are
/// in `data` on the host, or, when `device` is set, in memory that only the LocalCompute that
/// made it can read (compute.hpp: upload, download); `data` is then empty.
template <class T>
struct Tensor {
    std::vector<std::int64_t> shape;
    std::vector<int> labels;
    std::vector<T> data;
    /// The backend's owning handle of a device-resident tensor's elements (shared by copies:
    /// a backend copies before writing into a shared one).
    std::optional<std::shared_ptr<void>> device{};

    bool on_device() const { return device.has_value(); }

    /// Number of elements: the product of the shape (1 for a scalar).
    std::int64_t size() const {
        std::int64_t n = 1;
        for (auto e : shape)
            n *= e;
        return n;
    }
    /// The position of `label` in `labels`, or -1.
    int dim_of(int label) const {
        for (std::size_t d = 0; d < labels.size(); ++d)
            if (labels[d] == label) return static_cast<int>(d);
        return -1;
    }
    static Tensor zeros(std::vector<std::int64_t> shape, std::vector<int> labels) {
        Tensor t{std::move(shape), std::move(labels), {}};
        t.data.assign(static_cast<std::size_t>(t.size()), T(0));
        return t;
    }
    static Tensor scalar(T value) { return Tensor{{}, {}, {value}}; }
};

/// How far a computed element is from the one it is checked against: 0 where they are equal
/// (equal infinities, NaN against NaN: a reference's log 0 or x / 0 is matched), infinity
/// where the difference is no number (NaN against a number, opposite infinities).
inline double element_difference(double got, double want) {
    if (got == want || (std::isnan(got) && std::isnan(want))) return 0;
    const double d = std::abs(got - want);
    return std::isnan(d) ? INFINITY : d;
}

/// An execution error with a message for the user (bad sizes, unsupported construct).
struct ExecError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

} // namespace shardscope::exec
