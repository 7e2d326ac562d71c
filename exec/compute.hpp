// Where a rank's local compute runs: the interface the interpreter calls for its arithmetic
// (einsum, functions, reductions, broadcasting ops, softmax), with the host implementation
// (kernels.hpp: OpenBLAS and loops) here and the CUDA one in device.hpp.
#pragma once

#include "exec/functions.hpp"
#include "exec/kernels.hpp"
#include "exec/tensor.hpp"

#include <memory>
#include <vector>

namespace shardscope::exec {

/// The arithmetic of one rank, with kernels.hpp's contracts. Layout changes that only move
/// data for a collective (slices, packing) stay with the interpreter.
template <class T>
class LocalCompute {
public:
    virtual ~LocalCompute() = default;
    virtual const char* name() const = 0;
    virtual Tensor<T> einsum(const std::vector<const Tensor<T>*>& inputs,
                             const std::vector<int>& out) = 0;
    virtual void function(Tensor<T>& x, Fn f) = 0;
    virtual Tensor<T> reduce(const Tensor<T>& x, const std::vector<int>& out, Reduce r) = 0;
    virtual Tensor<T> binary(const Tensor<T>& a, const Tensor<T>& b, Binary op,
                             const std::vector<int>& out) = 0;
    virtual void softmax(Tensor<T>& x, int label) = 0;
    /// Seconds a device has spent on this compute's work so far (kernels and GEMMs, timed
    /// by CUDA events, transfers excluded); 0 on the host.
    virtual double device_seconds() const { return 0; }
};

/// kernels.hpp on this thread.
template <class T>
class HostCompute final : public LocalCompute<T> {
public:
    const char* name() const override { return "host"; }
    Tensor<T> einsum(const std::vector<const Tensor<T>*>& inputs,
                     const std::vector<int>& out) override {
        return exec::einsum(inputs, out);
    }
    void function(Tensor<T>& x, Fn f) override { apply_fn(x, f); }
    Tensor<T> reduce(const Tensor<T>& x, const std::vector<int>& out, Reduce r) override {
        return exec::reduce(x, out, r);
    }
    Tensor<T> binary(const Tensor<T>& a, const Tensor<T>& b, Binary op,
                     const std::vector<int>& out) override {
        return exec::binary(a, b, op, out);
    }
    void softmax(Tensor<T>& x, int label) override { exec::softmax(x, label); }
};

} // namespace shardscope::exec
