// The cuda backend's local compute: device tensors, the einsum as permute + strided batched
// GEMM (cuBLAS), reductions, broadcasting ops, functions and softmax through our kernels,
// and the LocalCompute that the interpreter calls.
#include "exec/cuda_kernels.hpp"
#include "exec/cuda_util.hpp"
#include "exec/device.hpp"
#include "exec/einsum_plan.hpp"

#include <cuda_bf16.h>

#include <algorithm>
#include <array>
#include <climits>
#include <type_traits>

namespace shardscope::exec {

namespace cuda {

void check(cudaError_t e, const char* what) {
    if (e == cudaSuccess) return;
    cudaGetLastError(); // clear a sticky-free error so that the next call does not repeat it
    std::string msg = std::string(what) + ": " + cudaGetErrorString(e);
    if (e == cudaErrorMemoryAllocation) msg += " (out of device memory: declare smaller ranges)";
    if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver)
        msg += " (no usable NVIDIA GPU or driver)";
    throw DeviceError(msg);
}

void check(cublasStatus_t s, const char* what) {
    if (s == CUBLAS_STATUS_SUCCESS) return;
    std::string msg = std::string(what) + ": cuBLAS " + cublasGetStatusString(s);
    if (s == CUBLAS_STATUS_ALLOC_FAILED) msg += " (out of device memory)";
    throw DeviceError(msg);
}

bool on_device(const void* p, int device) {
    cudaPointerAttributes a{};
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        cudaGetLastError();
        return false;
    }
    return (a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged) &&
           a.device == device;
}

Buffer::Buffer(std::size_t bytes, cudaStream_t stream) : bytes_(bytes) {
    void* p = nullptr;
    if (bytes > 0) {
        const auto e = stream ? cudaMallocAsync(&p, bytes, stream) : cudaMalloc(&p, bytes);
        if (e != cudaSuccess)
            check(e, ("allocating " + std::to_string(bytes) + " bytes on the GPU").c_str());
    }
    if (stream)
        p_ = std::shared_ptr<void>(p, [stream](void* q) {
            if (q) cudaFreeAsync(q, stream);
        });
    else
        p_ = std::shared_ptr<void>(p, [](void* q) {
            if (q) cudaFree(q);
        });
}

Context::Context(int device, bool pooled) : device_(device), pooled_(pooled) {
    check(cudaSetDevice(device), "selecting the GPU");
    // Keep freed pool memory for the next allocation instead of returning it at every sync.
    cudaMemPool_t pool = nullptr;
    check(cudaDeviceGetDefaultMemPool(&pool, device), "the GPU's memory pool");
    std::uint64_t keep = UINT64_MAX;
    check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep),
          "the GPU's memory pool");
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "creating a CUDA stream");
}

cublasHandle_t Context::blas() const {
    if (!blas_) {
        check(cublasCreate(&blas_), "creating a cuBLAS handle");
        check(cublasSetStream(blas_, stream_), "cublasSetStream");
    }
    return blas_;
}

Context::~Context() {
    if (blas_) cublasDestroy(blas_);
    if (stream_) cudaStreamDestroy(stream_);
}

void Context::sync() const {
    check(cudaStreamSynchronize(stream_), "running on the GPU");
}

template <class T>
DeviceTensor<T> upload(const Tensor<T>& x, const Context& c) {
    DeviceTensor<T> d{x.shape, x.labels, Buffer(x.data.size() * sizeof(T), c.alloc_stream())};
    if (!x.data.empty())
        check(cudaMemcpyAsync(d.ptr(), x.data.data(), x.data.size() * sizeof(T),
                              cudaMemcpyHostToDevice, c.stream()),
              "copying to the GPU");
    return d;
}

template <class T>
Tensor<T> download(const DeviceTensor<T>& x, const Context& c) {
    Tensor<T> h{x.shape, x.labels, std::vector<T>(static_cast<std::size_t>(x.size()))};
    if (!h.data.empty())
        check(cudaMemcpyAsync(h.data.data(), x.ptr(), h.data.size() * sizeof(T),
                              cudaMemcpyDeviceToHost, c.stream()),
              "copying from the GPU");
    c.sync();
    return h;
}

namespace {

void fill_walk(Walk& w, const std::vector<std::int64_t>& shape) {
    if (shape.size() > static_cast<std::size_t>(kMaxDims))
        throw ExecError("the cuda backend handles tensors of at most " + std::to_string(kMaxDims) +
                        " dimensions, not " + std::to_string(shape.size()));
    w.dims = static_cast<int>(shape.size());
    w.count = 1;
    for (std::size_t d = 0; d < shape.size(); ++d) {
        w.shape[d] = shape[d];
        w.count *= shape[d];
    }
}

void set_strides(Walk& w, int j, const std::vector<std::int64_t>& s) {
    for (std::size_t d = 0; d < s.size(); ++d)
        w.strides[j][d] = s[d];
}

std::vector<std::int64_t> shape_in(const std::vector<std::int64_t>& shape,
                                   const std::vector<int>& labels, const std::vector<int>& order) {
    std::vector<std::int64_t> r;
    for (int l : order)
        for (std::size_t d = 0; d < labels.size(); ++d)
            if (labels[d] == l) r.push_back(shape[d]);
    if (r.size() != order.size())
        throw ExecError("cuda: a label of the requested order is not in the tensor");
    return r;
}

template <class T>
DeviceTensor<T> reduce_dev(const DeviceTensor<T>& x, const std::vector<int>& out, Op2 op,
                           const Context& c) {
    const auto p = plan_reduce(x.shape, x.labels, out);
    ReduceWalk w;
    fill_walk(w.out, p.out_shape);
    set_strides(w.out, 0, p.out_strides);
    if (p.red_shape.size() > static_cast<std::size_t>(kMaxDims))
        throw ExecError("cuda: too many reduced dimensions");
    w.red_dims = static_cast<int>(p.red_shape.size());
    w.red_count = p.red_count;
    for (std::size_t d = 0; d < p.red_shape.size(); ++d) {
        w.red_shape[d] = p.red_shape[d];
        w.red_strides[d] = p.red_strides[d];
    }
    DeviceTensor<T> r{p.out_shape, out,
                      Buffer(static_cast<std::size_t>(p.out_count) * sizeof(T), c.alloc_stream())};
    cuda::reduce(x.ptr(), r.ptr(), w, op, c.stream());
    check(cudaGetLastError(), "launching a reduction");
    return r;
}

template <class T>
DeviceTensor<T> binary_dev(const DeviceTensor<T>& a, const DeviceTensor<T>& b, Op2 op,
                           const std::vector<int>& out, const Context& c) {
    std::vector<std::int64_t> shape;
    for (int l : out) {
        const int da =
            static_cast<int>(std::find(a.labels.begin(), a.labels.end(), l) - a.labels.begin());
        const int db =
            static_cast<int>(std::find(b.labels.begin(), b.labels.end(), l) - b.labels.begin());
        const bool ina = da < static_cast<int>(a.labels.size());
        const bool inb = db < static_cast<int>(b.labels.size());
        if (!ina && !inb) throw ExecError("cuda binary: output label in neither operand");
        if (ina && inb &&
            a.shape[static_cast<std::size_t>(da)] != b.shape[static_cast<std::size_t>(db)])
            throw ExecError("cuda binary: a shared label has different extents");
        shape.push_back(ina ? a.shape[static_cast<std::size_t>(da)]
                            : b.shape[static_cast<std::size_t>(db)]);
    }
    Walk w;
    fill_walk(w, shape);
    set_strides(w, 0, strides_for(a.shape, a.labels, out));
    set_strides(w, 1, strides_for(b.shape, b.labels, out));
    DeviceTensor<T> r{shape, out,
                      Buffer(static_cast<std::size_t>(w.count) * sizeof(T), c.alloc_stream())};
    cuda::binary(a.ptr(), b.ptr(), r.ptr(), w, op, c.stream());
    check(cudaGetLastError(), "launching an elementwise operation");
    return r;
}

template <class T>
struct BlasType;
template <>
struct BlasType<float> {
    static constexpr cudaDataType_t data = CUDA_R_32F;
    static constexpr cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
    using Scalar = float;
};
template <>
struct BlasType<double> {
    static constexpr cudaDataType_t data = CUDA_R_64F;
    static constexpr cublasComputeType_t compute = CUBLAS_COMPUTE_64F;
    using Scalar = double;
};
template <>
struct BlasType<__nv_bfloat16> {
    static constexpr cudaDataType_t data = CUDA_R_16BF;
    static constexpr cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
    using Scalar = float;
};

int blas_int(std::int64_t v) {
    if (v > INT_MAX)
        throw DeviceError("cuda einsum: an extent of " + std::to_string(v) +
                          " is too large for cuBLAS");
    return static_cast<int>(std::max<std::int64_t>(v, 1));
}

template <class T>
DeviceTensor<T> contract2(const DeviceTensor<T>& a0, const DeviceTensor<T>& b0,
                          const std::vector<int>& out, const Context& c) {
    const GemmPlan p = plan_gemm(a0.shape, a0.labels, b0.shape, b0.labels, out);
    DeviceTensor<T> as, bs;
    const DeviceTensor<T>* a = &a0;
    const DeviceTensor<T>* b = &b0;
    if (p.a_keep != a->labels) a = &(as = reduce_dev(*a, p.a_keep, Op2::Add, c));
    if (p.b_keep != b->labels) b = &(bs = reduce_dev(*b, p.b_keep, Op2::Add, c));
    const DeviceTensor<T> ap = permute(*a, p.a_order, c);
    const DeviceTensor<T> bp = permute(*b, p.b_order, c);
    DeviceTensor<T> r{
        p.c_shape, p.c_labels,
        Buffer(static_cast<std::size_t>(p.batch * p.m * p.n) * sizeof(T), c.alloc_stream())};
    if (p.batch * p.m * p.n > 0) {
        if (p.k == 0) {
            check(cudaMemsetAsync(r.ptr(), 0, r.data.bytes(), c.stream()), "zeroing a result");
        } else {
            using B = BlasType<T>;
            const typename B::Scalar one = 1, zero = 0;
            const GemmCall g = p.call();
            auto op = [](bool t) { return t ? CUBLAS_OP_T : CUBLAS_OP_N; };
            check(cublasGemmStridedBatchedEx(
                      c.blas(), op(g.trans_first), op(g.trans_second), blas_int(g.M), blas_int(g.N),
                      blas_int(g.K), &one, bp.ptr(), B::data, blas_int(g.ld_first), g.stride_first,
                      ap.ptr(), B::data, blas_int(g.ld_second), g.stride_second, &zero, r.ptr(),
                      B::data, blas_int(g.ldc), g.stride_c, blas_int(g.batch), B::compute,
                      CUBLAS_GEMM_DEFAULT),
                  "the einsum's GEMM");
        }
    }
    return permute(r, out, c);
}

} // namespace

template <class T>
DeviceTensor<T> permute(const DeviceTensor<T>& x, const std::vector<int>& labels,
                        const Context& c) {
    if (x.labels == labels) return x; // shares the buffer: tensors are not modified in place
    const auto shape = shape_in(x.shape, x.labels, labels);
    if (labels.size() != x.labels.size())
        throw ExecError("cuda permute: the new order has another number of labels");
    Walk w;
    fill_walk(w, shape);
    set_strides(w, 0, strides_for(x.shape, x.labels, labels));
    DeviceTensor<T> r{shape, labels,
                      Buffer(static_cast<std::size_t>(w.count) * sizeof(T), c.alloc_stream())};
    gather(x.ptr(), r.ptr(), w, c.stream());
    check(cudaGetLastError(), "launching a permute");
    return r;
}

template <class T>
DeviceTensor<T> einsum(const std::vector<const DeviceTensor<T>*>& inputs,
                       const std::vector<int>& out, const Context& c) {
    if (inputs.empty()) throw ExecError("cuda einsum: no inputs");
    if (inputs.size() == 1) return reduce_dev(*inputs[0], out, Op2::Add, c);
    DeviceTensor<T> acc = *inputs[0];
    for (std::size_t i = 1; i < inputs.size(); ++i) {
        std::vector<int> keep = out;
        if (i + 1 < inputs.size()) {
            // Keep what `out` or a later operand needs.
            keep.clear();
            auto needed = [&](int l) {
                if (std::count(out.begin(), out.end(), l)) return true;
                for (std::size_t j = i + 1; j < inputs.size(); ++j)
                    if (std::count(inputs[j]->labels.begin(), inputs[j]->labels.end(), l))
                        return true;
                return false;
            };
            for (int l : acc.labels)
                if (needed(l)) keep.push_back(l);
            for (int l : inputs[i]->labels)
                if (needed(l) && !std::count(keep.begin(), keep.end(), l)) keep.push_back(l);
        }
        acc = contract2(acc, *inputs[i], keep, c);
    }
    return acc;
}

template DeviceTensor<float> upload(const Tensor<float>&, const Context&);
template DeviceTensor<double> upload(const Tensor<double>&, const Context&);
template Tensor<float> download(const DeviceTensor<float>&, const Context&);
template Tensor<double> download(const DeviceTensor<double>&, const Context&);
template DeviceTensor<float> einsum(const std::vector<const DeviceTensor<float>*>&,
                                    const std::vector<int>&, const Context&);
template DeviceTensor<double> einsum(const std::vector<const DeviceTensor<double>*>&,
                                     const std::vector<int>&, const Context&);
template DeviceTensor<__nv_bfloat16> einsum(const std::vector<const DeviceTensor<__nv_bfloat16>*>&,
                                            const std::vector<int>&, const Context&);

} // namespace cuda

namespace {

using cuda::Buffer;
using cuda::Context;
using cuda::DeviceTensor;
using cuda::Walk;

/// A rank's local compute on one GPU, holding its tensors there: Tensor::device is the
/// handle of a stream-ordered device buffer, uploaded once from the host (inputs, constants)
/// and downloaded only for `download` (results for verification). Buffers are never written
/// while shared: an in-place operation on a shared tensor writes a copy.
template <class T>
class CudaCompute final : public LocalCompute<T> {
public:
    /// `pooled`: tensors from the stream-ordered pool (one GPU); with several GPUs, other
    /// GPUs' collective copies read them, which pool memory does not allow unless granted.
    CudaCompute(int device, bool pooled) : c_(device, pooled) {
        c_.blas(); // now, so that its creation does not fall inside the first timed GEMM
        for (auto& [start, stop] : events_) {
            cuda::check(cudaEventCreate(&start), "creating a CUDA event");
            cuda::check(cudaEventCreate(&stop), "creating a CUDA event");
        }
    }
    ~CudaCompute() override {
        for (auto& [start, stop] : events_) {
            if (start) cudaEventDestroy(start);
            if (stop) cudaEventDestroy(stop);
        }
    }
    CudaCompute(const CudaCompute&) = delete;
    CudaCompute& operator=(const CudaCompute&) = delete;
    const char* name() const override { return "cuda"; }
    double device_seconds() const override {
        collect();
        return seconds_;
    }
    void synchronize() override { c_.sync(); }

    Tensor<T> upload(Tensor<T> x) override {
        if (x.on_device()) throw ExecError("internal: uploading a tensor already on the GPU");
        return wrap(cuda::upload(x, c_));
    }
    Tensor<T> download(const Tensor<T>& x) override { return cuda::download(dev(x), c_); }
    Tensor<T> zeros(std::vector<std::int64_t> shape, std::vector<int> labels) override {
        DeviceTensor<T> d{std::move(shape), std::move(labels), {}};
        d.data = Buffer(static_cast<std::size_t>(d.size()) * sizeof(T), c_.alloc_stream());
        if (d.data.bytes() > 0)
            cuda::check(cudaMemsetAsync(d.ptr(), 0, d.data.bytes(), c_.stream()),
                        "zeroing a tensor");
        return wrap(std::move(d));
    }

    Tensor<T> einsum(const std::vector<const Tensor<T>*>& inputs,
                     const std::vector<int>& out) override {
        std::vector<DeviceTensor<T>> d;
        for (const auto* x : inputs)
            d.push_back(dev(*x));
        std::vector<const DeviceTensor<T>*> p;
        for (const auto& x : d)
            p.push_back(&x);
        return timed([&] { return cuda::einsum(p, out, c_); });
    }
    void function(Tensor<T>& x, Fn f) override {
        auto d = own(x);
        x = timed([&] {
            cuda::function(d.ptr(), d.size(), f, c_.stream());
            cuda::check(cudaGetLastError(), "launching a function");
            return d;
        });
    }
    Tensor<T> reduce(const Tensor<T>& x, const std::vector<int>& out, PartialOp r) override {
        const auto d = dev(x);
        return timed([&] {
            return cuda::reduce_dev(d, out, r == PartialOp::Max ? cuda::Op2::Max : cuda::Op2::Add,
                                    c_);
        });
    }
    Tensor<T> binary(const Tensor<T>& a, const Tensor<T>& b, Binary op,
                     const std::vector<int>& out) override {
        const auto da = dev(a), db = dev(b);
        return timed([&] { return cuda::binary_dev(da, db, op2(op), out, c_); });
    }
    void softmax(Tensor<T>& x, int label) override {
        // exp(x - max) / sum, along `label`, from the reduction and broadcasting kernels.
        std::vector<int> rows;
        for (int l : x.labels)
            if (l != label) rows.push_back(l);
        if (rows.size() == x.labels.size())
            throw ExecError("cuda softmax: label not in the tensor");
        const auto d = dev(x);
        x = timed([&] {
            const auto m = cuda::reduce_dev(d, rows, cuda::Op2::Max, c_);
            auto e = cuda::binary_dev(d, m, cuda::Op2::Sub, d.labels, c_);
            cuda::function(e.ptr(), e.size(), Fn::Exp, c_.stream());
            const auto s = cuda::reduce_dev(e, rows, cuda::Op2::Add, c_);
            return cuda::binary_dev(e, s, cuda::Op2::Div, d.labels, c_);
        });
    }
    void accumulate(Tensor<T>& acc, const Tensor<T>& x) override {
        const auto da = dev(acc), dx = dev(x);
        acc = timed([&] { return cuda::binary_dev(da, dx, cuda::Op2::Add, da.labels, c_); });
    }
    void scale(Tensor<T>& x, T factor) override {
        auto d = own(x);
        x = timed([&] {
            cuda::scale(d.ptr(), d.size(), factor, c_.stream());
            cuda::check(cudaGetLastError(), "launching a scale");
            return d;
        });
    }
    Tensor<T> permute(const Tensor<T>& x, const std::vector<int>& labels) override {
        return wrap(cuda::permute(dev(x), labels, c_));
    }
    Tensor<T> slice(const Tensor<T>& x, int label, std::int64_t begin, std::int64_t end) override {
        // A gather from x's row-major strides, starting at `begin` along `label`.
        const auto d = dev(x);
        const int k = x.dim_of(label);
        if (k < 0 || begin < 0 || end < begin || end > x.shape[static_cast<std::size_t>(k)])
            throw ExecError("cuda slice: a range outside the tensor");
        auto shape = x.shape;
        shape[static_cast<std::size_t>(k)] = end - begin;
        std::vector<std::int64_t> strides(shape.size());
        std::int64_t step = 1;
        for (std::size_t i = shape.size(); i-- > 0;) {
            strides[i] = step;
            step *= x.shape[i];
        }
        Walk w;
        cuda::fill_walk(w, shape);
        cuda::set_strides(w, 0, strides);
        DeviceTensor<T> r{shape, x.labels,
                          Buffer(static_cast<std::size_t>(w.count) * sizeof(T), c_.alloc_stream())};
        if (w.count > 0) {
            cuda::gather(d.ptr() + begin * strides[static_cast<std::size_t>(k)], r.ptr(), w,
                         c_.stream());
            cuda::check(cudaGetLastError(), "launching a slice");
        }
        return wrap(std::move(r));
    }
    void copy_rows(Tensor<T>& dst, std::int64_t dst_at, std::int64_t dst_pitch,
                   const Tensor<T>& src, std::int64_t src_at, std::int64_t src_pitch,
                   std::int64_t width, std::int64_t rows) override {
        if (width <= 0 || rows <= 0) return;
        const auto s = dev(src);
        const auto d = own(dst);
        const auto e = sizeof(T);
        if (rows == 1)
            cuda::check(cudaMemcpyAsync(d.ptr() + dst_at, s.ptr() + src_at,
                                        static_cast<std::size_t>(width) * e,
                                        cudaMemcpyDeviceToDevice, c_.stream()),
                        "copying blocks on the GPU");
        else
            cuda::check(cudaMemcpy2DAsync(d.ptr() + dst_at, static_cast<std::size_t>(dst_pitch) * e,
                                          s.ptr() + src_at, static_cast<std::size_t>(src_pitch) * e,
                                          static_cast<std::size_t>(width) * e,
                                          static_cast<std::size_t>(rows), cudaMemcpyDeviceToDevice,
                                          c_.stream()),
                        "copying blocks on the GPU");
        dst = wrap(DeviceTensor<T>(d));
    }
    const T* buffer(const Tensor<T>& x) override {
        const T* p = dev(x).ptr();
        c_.sync(); // the collective reads it on another stream (or another rank's)
        return p;
    }
    T* writable(Tensor<T>& x) override {
        const auto d = own(x);
        x = wrap(DeviceTensor<T>(d));
        c_.sync();
        return d.ptr();
    }

private:
    /// x as a device tensor of this GPU; a host tensor here is a missing upload.
    static DeviceTensor<T> dev(const Tensor<T>& x) {
        if (!x.on_device())
            throw ExecError("internal: a host tensor reached the cuda compute (not uploaded)");
        return DeviceTensor<T>{x.shape, x.labels,
                               Buffer(*x.device, static_cast<std::size_t>(x.size()) * sizeof(T))};
    }
    /// x's buffer, copied first when another tensor shares it (before an in-place write).
    DeviceTensor<T> own(const Tensor<T>& x) {
        auto d = dev(x);
        if (x.device->use_count() <= 2) return d; // x's handle and d's
        DeviceTensor<T> c{d.shape, d.labels, Buffer(d.data.bytes(), c_.alloc_stream())};
        if (c.data.bytes() > 0)
            cuda::check(cudaMemcpyAsync(c.ptr(), d.ptr(), c.data.bytes(), cudaMemcpyDeviceToDevice,
                                        c_.stream()),
                        "copying a shared tensor on the GPU");
        return c;
    }
    static Tensor<T> wrap(DeviceTensor<T> d) {
        Tensor<T> t{std::move(d.shape), std::move(d.labels), {}};
        t.device = d.data.handle();
        return t;
    }

    /// Runs `work` (device work on the stream, returning a device tensor) between two events.
    /// Their time is read later, by `collect`, so that the host goes on queueing work instead
    /// of waiting for each operation.
    template <class Work>
    Tensor<T> timed(Work&& work) {
        if (pending_ == events_.size()) collect();
        const auto [start, stop] = events_[pending_];
        cuda::check(cudaEventRecord(start, c_.stream()), "recording a CUDA event");
        DeviceTensor<T> r = work();
        cuda::check(cudaEventRecord(stop, c_.stream()), "recording a CUDA event");
        ++pending_;
        return wrap(std::move(r));
    }
    /// Waits for the last timed operation and adds the time of every pending one to seconds_.
    void collect() const {
        if (pending_ == 0) return;
        cuda::check(cudaEventSynchronize(events_[pending_ - 1].second), "running on the GPU");
        for (std::size_t i = 0; i < pending_; ++i) {
            float ms = 0;
            cuda::check(cudaEventElapsedTime(&ms, events_[i].first, events_[i].second),
                        "timing by CUDA events");
            seconds_ += ms / 1e3;
        }
        pending_ = 0;
    }

    static cuda::Op2 op2(Binary b) {
        switch (b) {
        case Binary::Add:
            return cuda::Op2::Add;
        case Binary::Sub:
            return cuda::Op2::Sub;
        case Binary::Mul:
            return cuda::Op2::Mul;
        case Binary::Div:
            return cuda::Op2::Div;
        }
        return cuda::Op2::Add;
    }
    Context c_;
    /// Start and stop events of timed operations, in order; the first pending_ are recorded
    /// and not yet read.
    std::array<std::pair<cudaEvent_t, cudaEvent_t>, 32> events_{};
    mutable std::size_t pending_ = 0;
    mutable double seconds_ = 0;
};

} // namespace

bool cuda_built() {
    return true;
}

bool cuda_emulated() {
#ifdef SHARDSCOPE_CUDA_EMULATED
    return true;
#else
    return false;
#endif
}

bool nccl_built() {
#ifdef SHARDSCOPE_HAVE_NCCL
    return true;
#else
    return false;
#endif
}

GpuProbe probe_gpus() {
    int n = 0;
    const auto e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return {0, std::string("no usable NVIDIA GPU: ") + cudaGetErrorString(e)};
    }
    if (n <= 0) return {0, "no NVIDIA GPU is visible to this process"};
    return {n, ""};
}

template <class T>
std::unique_ptr<LocalCompute<T>> make_cuda_compute(int device, bool own_gpu) {
    int devices = 0;
    cuda::check(cudaGetDeviceCount(&devices), "counting the GPUs");
    // Pool memory with one GPU, or where NCCL alone, on this GPU, reads the tensors: cudaFree
    // would wait for the whole device at every temporary.
    return std::make_unique<CudaCompute<T>>(device, own_gpu || devices == 1);
}
template std::unique_ptr<LocalCompute<float>> make_cuda_compute(int, bool);
template std::unique_ptr<LocalCompute<double>> make_cuda_compute(int, bool);

} // namespace shardscope::exec
