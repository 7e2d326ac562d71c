// The cuda backend's collectives: run_sim's rendezvous with every rank's staging, copies and
// reductions on its GPU (virtual ranks; several ranks may share one GPU).
#include "exec/cuda_kernels.hpp"
#include "exec/cuda_util.hpp"
#include "exec/device.hpp"

namespace shardscope::exec {

namespace {

/// Memory on one GPU: staging by cudaMalloc, copies by cudaMemcpyAsync (either side may be
/// host memory or another GPU's: unified addressing finds it), reductions by our kernel;
/// inputs not on this GPU are first copied here.
class CudaMemory final : public Memory {
public:
    /// `pooled`: staging from the stream-ordered pool. Only with one GPU: another GPU's
    /// copies may read a staging buffer, and pool memory is not visible to other devices
    /// unless granted.
    CudaMemory(int device, bool pooled) : c_(device), pooled_(pooled) {}

    std::shared_ptr<void> alloc(std::size_t bytes) override {
        auto b = std::make_shared<cuda::Buffer>(bytes, pooled_ ? c_.stream() : nullptr);
        return std::shared_ptr<void>(b, b->get()); // owns the buffer, points at its memory
    }
    void copy(void* dst, const void* src, std::size_t bytes) override {
        if (bytes == 0) return;
        cuda::check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, c_.stream()),
                    "a collective's copy");
    }
    void reduce(void* out, const std::vector<const void*>& in, std::size_t count, DType type,
                PartialOp op) override {
        if (count == 0 || in.empty()) return;
        const std::size_t bytes = count * dtype_bytes(type);
        std::vector<std::shared_ptr<void>> staged;
        std::vector<const void*> here;
        for (const void* p : in) {
            if (cuda::on_device(p, c_.device())) {
                here.push_back(p);
                continue;
            }
            staged.push_back(alloc(bytes));
            copy(staged.back().get(), p, bytes);
            here.push_back(staged.back().get());
        }
        // The result goes to device memory first when `out` is not on this GPU.
        std::shared_ptr<void> result;
        void* dst = out;
        if (!cuda::on_device(out, c_.device())) dst = (result = alloc(bytes)).get();
        const auto o = op == PartialOp::Max ? cuda::Op2::Max : cuda::Op2::Add;
        // Eight inputs per launch; later launches fold the running result in first.
        for (std::size_t q = 0; q < here.size();) {
            std::vector<const void*> part;
            if (q > 0) part.push_back(dst);
            while (part.size() < 8 && q < here.size())
                part.push_back(here[q++]);
            launch(dst, part, count, type, o);
        }
        if (result) copy(out, dst, bytes);
        finish(); // the staged inputs are freed on return
    }
    void finish() override { c_.sync(); }

private:
    void launch(void* dst, const std::vector<const void*>& in, std::size_t count, DType type,
                cuda::Op2 op) {
        const auto n = static_cast<std::int64_t>(count);
        if (type == DType::F32)
            cuda::reduce_n(static_cast<float*>(dst),
                           reinterpret_cast<const float* const*>(in.data()),
                           static_cast<int>(in.size()), n, op, c_.stream());
        else
            cuda::reduce_n(static_cast<double*>(dst),
                           reinterpret_cast<const double* const*>(in.data()),
                           static_cast<int>(in.size()), n, op, c_.stream());
        cuda::check(cudaGetLastError(), "launching a collective's reduction");
    }
    cuda::Context c_;
    bool pooled_;
};

} // namespace

void run_cuda(const MeshShape& mesh, const std::function<void(Communicator&, int)>& body) {
    const auto probe = probe_gpus();
    if (probe.devices == 0) throw DeviceError(probe.problem);
    run_sim(
        mesh, [&](Communicator& comm) { body(comm, device_of_rank(comm.rank(), probe.devices)); },
        [&](int rank) -> std::unique_ptr<Memory> {
            return std::make_unique<CudaMemory>(device_of_rank(rank, probe.devices),
                                                probe.devices == 1);
        });
}

} // namespace shardscope::exec
