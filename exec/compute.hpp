// Where a rank's local compute runs: the interface the interpreter calls for its arithmetic
// and for every access to its tensors' elements (layout changes, packing for collectives,
// transfers), with the host implementation (kernels.hpp: OpenBLAS and loops) here and the
// CUDA one in device.hpp. A backend may keep tensors in its own memory (Tensor::device): the
// interpreter then never touches their elements, and data crosses to the host only through
// upload and download.
#pragma once

#include "exec/functions.hpp"
#include "exec/kernels.hpp"
#include "exec/tensor.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

namespace shardscope::exec {

/// The local work of one rank, with kernels.hpp's contracts. Tensors passed in were made by
/// this compute (or uploaded through it); results are where it keeps tensors.
template <class T>
class LocalCompute {
public:
    virtual ~LocalCompute() = default;
    virtual const char* name() const = 0;

    /// A host tensor (program inputs, constants) where this compute keeps tensors.
    virtual Tensor<T> upload(Tensor<T> x) = 0;
    /// A copy of `x` on the host (results for verification, --show).
    virtual Tensor<T> download(const Tensor<T>& x) = 0;
    /// A tensor of zeros.
    virtual Tensor<T> zeros(std::vector<std::int64_t> shape, std::vector<int> labels) = 0;

    virtual Tensor<T> einsum(const std::vector<const Tensor<T>*>& inputs,
                             const std::vector<int>& out) = 0;
    virtual void function(Tensor<T>& x, Fn f) = 0;
    virtual Tensor<T> reduce(const Tensor<T>& x, const std::vector<int>& out, PartialOp r) = 0;
    virtual Tensor<T> binary(const Tensor<T>& a, const Tensor<T>& b, Binary op,
                             const std::vector<int>& out) = 0;
    virtual void softmax(Tensor<T>& x, int label) = 0;
    /// acc += x (the same labels and shape).
    virtual void accumulate(Tensor<T>& acc, const Tensor<T>& x) = 0;
    virtual void scale(Tensor<T>& x, T factor) = 0;
    virtual Tensor<T> permute(const Tensor<T>& x, const std::vector<int>& labels) = 0;
    virtual Tensor<T> slice(const Tensor<T>& x, int label, std::int64_t begin,
                            std::int64_t end) = 0;
    /// `rows` rows of `width` elements, as flat arrays: dst[dst_at + r*dst_pitch + i] =
    /// src[src_at + r*src_pitch + i] (the packing and unpacking of collectives' blocks).
    virtual void copy_rows(Tensor<T>& dst, std::int64_t dst_at, std::int64_t dst_pitch,
                           const Tensor<T>& src, std::int64_t src_at, std::int64_t src_pitch,
                           std::int64_t width, std::int64_t rows) = 0;
    /// The address of x's elements for a collective to read (host or device memory), once
    /// the work that computes them is complete.
    virtual const T* buffer(const Tensor<T>& x) = 0;
    /// As buffer, for a collective that writes into x: x gets storage of its own first.
    virtual T* writable(Tensor<T>& x) = 0;

    /// Seconds a device has spent on this compute's work so far (kernels and GEMMs, timed
    /// by CUDA events, transfers excluded); 0 on the host.
    virtual double device_seconds() const { return 0; }
    /// Returns once the work queued so far is complete (a device queues it asynchronously;
    /// a timer stopped before this measures only the launches).
    virtual void synchronize() {}
};

/// kernels.hpp on this thread; tensors stay in their `data` (upload moves, nothing copies).
template <class T>
class HostCompute final : public LocalCompute<T> {
public:
    const char* name() const override { return "host"; }
    Tensor<T> upload(Tensor<T> x) override { return host(std::move(x)); }
    Tensor<T> download(const Tensor<T>& x) override { return host(x); }
    Tensor<T> zeros(std::vector<std::int64_t> shape, std::vector<int> labels) override {
        return Tensor<T>::zeros(std::move(shape), std::move(labels));
    }
    Tensor<T> einsum(const std::vector<const Tensor<T>*>& inputs,
                     const std::vector<int>& out) override {
        for (const auto* x : inputs)
            host(*x);
        return exec::einsum(inputs, out);
    }
    void function(Tensor<T>& x, Fn f) override { apply_fn(host(x), f); }
    Tensor<T> reduce(const Tensor<T>& x, const std::vector<int>& out, PartialOp r) override {
        return exec::reduce(host(x), out, r);
    }
    Tensor<T> binary(const Tensor<T>& a, const Tensor<T>& b, Binary op,
                     const std::vector<int>& out) override {
        return exec::binary(host(a), host(b), op, out);
    }
    void softmax(Tensor<T>& x, int label) override { exec::softmax(host(x), label); }
    void accumulate(Tensor<T>& acc, const Tensor<T>& x) override {
        exec::accumulate(host(acc), host(x), PartialOp::Sum);
    }
    void scale(Tensor<T>& x, T factor) override { exec::scale(host(x), factor); }
    Tensor<T> permute(const Tensor<T>& x, const std::vector<int>& labels) override {
        return exec::permute(host(x), labels);
    }
    Tensor<T> slice(const Tensor<T>& x, int label, std::int64_t begin, std::int64_t end) override {
        return exec::slice(host(x), label, begin, end);
    }
    void copy_rows(Tensor<T>& dst, std::int64_t dst_at, std::int64_t dst_pitch,
                   const Tensor<T>& src, std::int64_t src_at, std::int64_t src_pitch,
                   std::int64_t width, std::int64_t rows) override {
        host(dst);
        host(src);
        if (width <= 0) return;
        for (std::int64_t r = 0; r < rows; ++r)
            std::memcpy(dst.data.data() + dst_at + r * dst_pitch,
                        src.data.data() + src_at + r * src_pitch,
                        static_cast<std::size_t>(width) * sizeof(T));
    }
    const T* buffer(const Tensor<T>& x) override { return host(x).data.data(); }
    T* writable(Tensor<T>& x) override { return host(x).data.data(); }

private:
    /// A device tensor here is a bug of the caller (a missing download), not a host value.
    template <class X>
    static X&& host(X&& x) {
        if (x.on_device())
            throw ExecError("internal: a device-resident tensor reached the host compute");
        return std::forward<X>(x);
    }
};

} // namespace shardscope::exec
