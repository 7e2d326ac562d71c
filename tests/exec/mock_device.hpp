// A host "device" for the interpreter's device path without a GPU: a LocalCompute whose
// tensors live in its own blocks (Tensor::device), reachable only through its interface. It
// computes with kernels.hpp, so its results must equal the host path's exactly; it refuses a
// host tensor where it expects its own (a missing upload) and counts every transfer, so tests
// can assert that data moves to the host only where the interpreter says so.
#pragma once

#include "exec/compute.hpp"

#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace shardscope::exec::testing {

/// Transfers and operations of one or more MockDevices (shared by a run's ranks).
struct MockCounts {
    std::atomic<long> uploads{0}, downloads{0}, upload_elements{0}, download_elements{0};
    std::atomic<long> copies_on_write{0}, operations{0};
};

template <class T>
class MockDevice final : public LocalCompute<T> {
public:
    explicit MockDevice(MockCounts& counts) : counts_(counts) {}
    const char* name() const override { return "mock-device"; }

    Tensor<T> upload(Tensor<T> x) override {
        if (x.on_device()) throw ExecError("mock device: uploading a device tensor");
        ++counts_.uploads;
        counts_.upload_elements += static_cast<long>(x.data.size());
        return wrap(std::move(x));
    }
    Tensor<T> download(const Tensor<T>& x) override {
        ++counts_.downloads;
        counts_.download_elements += static_cast<long>(x.size());
        return view(x);
    }
    Tensor<T> zeros(std::vector<std::int64_t> shape, std::vector<int> labels) override {
        return wrap(Tensor<T>::zeros(std::move(shape), std::move(labels)));
    }
    Tensor<T> einsum(const std::vector<const Tensor<T>*>& inputs,
                     const std::vector<int>& out) override {
        std::vector<Tensor<T>> h;
        for (const auto* x : inputs)
            h.push_back(view(*x));
        std::vector<const Tensor<T>*> p;
        for (const auto& x : h)
            p.push_back(&x);
        return wrap(host_.einsum(p, out));
    }
    void function(Tensor<T>& x, Fn f) override {
        in_place(x, [&](Tensor<T>& h) { host_.function(h, f); });
    }
    Tensor<T> reduce(const Tensor<T>& x, const std::vector<int>& out, PartialOp r) override {
        return wrap(host_.reduce(view(x), out, r));
    }
    Tensor<T> binary(const Tensor<T>& a, const Tensor<T>& b, Binary op,
                     const std::vector<int>& out) override {
        return wrap(host_.binary(view(a), view(b), op, out));
    }
    void softmax(Tensor<T>& x, int label) override {
        in_place(x, [&](Tensor<T>& h) { host_.softmax(h, label); });
    }
    void accumulate(Tensor<T>& acc, const Tensor<T>& x) override {
        const auto h = view(x);
        in_place(acc, [&](Tensor<T>& a) { host_.accumulate(a, h); });
    }
    void scale(Tensor<T>& x, T factor) override {
        in_place(x, [&](Tensor<T>& h) { host_.scale(h, factor); });
    }
    Tensor<T> permute(const Tensor<T>& x, const std::vector<int>& labels) override {
        return wrap(host_.permute(view(x), labels));
    }
    Tensor<T> slice(const Tensor<T>& x, int label, std::int64_t begin, std::int64_t end) override {
        return wrap(host_.slice(view(x), label, begin, end));
    }
    void copy_rows(Tensor<T>& dst, std::int64_t dst_at, std::int64_t dst_pitch,
                   const Tensor<T>& src, std::int64_t src_at, std::int64_t src_pitch,
                   std::int64_t width, std::int64_t rows) override {
        const auto s = view(src);
        // Bounds as a device would fault on them, not silently write past a block.
        if (width > 0 && rows > 0 &&
            (src_at + (rows - 1) * src_pitch + width > s.size() ||
             dst_at + (rows - 1) * dst_pitch + width > dst.size() || src_at < 0 || dst_at < 0))
            throw ExecError("mock device: copy_rows outside a tensor");
        in_place(dst, [&](Tensor<T>& d) {
            host_.copy_rows(d, dst_at, dst_pitch, s, src_at, src_pitch, width, rows);
        });
    }
    const T* buffer(const Tensor<T>& x) override { return block(x).data.data(); }
    T* writable(Tensor<T>& x) override { return own(x).data.data(); }

private:
    /// A device block: the elements, and which device made them.
    struct Block {
        const void* owner;
        std::vector<T> data;
    };

    Tensor<T> wrap(Tensor<T> h) {
        ++counts_.operations;
        auto b = std::make_shared<Block>(Block{this, std::move(h.data)});
        Tensor<T> t{std::move(h.shape), std::move(h.labels), {}};
        t.device = std::shared_ptr<void>(std::move(b));
        return t;
    }
    /// x's block; anything else is an error of the interpreter (a host tensor where a device
    /// one belongs, or another rank's tensor).
    Block& block(const Tensor<T>& x) const {
        if (!x.on_device() || !*x.device)
            throw ExecError("mock device: a host tensor where a device tensor belongs");
        if (!x.data.empty()) throw ExecError("mock device: a device tensor with host data");
        auto& b = *static_cast<Block*>(x.device->get());
        if (b.owner != this) throw ExecError("mock device: a tensor of another device");
        if (static_cast<std::int64_t>(b.data.size()) != x.size())
            throw ExecError("mock device: a tensor's shape does not match its block");
        return b;
    }
    /// A host copy of x for kernels.hpp (what a kernel reads on the device).
    Tensor<T> view(const Tensor<T>& x) const { return Tensor<T>{x.shape, x.labels, block(x).data}; }
    /// x's block, copied first when shared (writes never reach another tensor), as cuda does.
    Block& own(Tensor<T>& x) {
        auto& b = block(x);
        if (x.device->use_count() == 1) return b;
        ++counts_.copies_on_write;
        auto c = std::make_shared<Block>(b);
        x.device = std::shared_ptr<void>(c);
        return *c;
    }
    template <class F>
    void in_place(Tensor<T>& x, F&& f) {
        auto& b = own(x);
        Tensor<T> h{x.shape, x.labels, std::move(b.data)};
        f(h);
        b.data = std::move(h.data);
        x.shape = std::move(h.shape);
        x.labels = std::move(h.labels);
        ++counts_.operations;
    }

    MockCounts& counts_;
    HostCompute<T> host_;
};

} // namespace shardscope::exec::testing
