// The nccl backend: one process per GPU under mpirun. MPI (comm_mpi.cpp) starts the ranks,
// finds the node-local rank that picks the GPU, carries NCCL's unique id and gathers results;
// the collectives go through one NCCL communicator per mesh axis, split from a world one.
#include "exec/cuda_util.hpp"
#include "exec/device.hpp"

#include <nccl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace shardscope::exec {

namespace {

void check_nccl(ncclResult_t r, const char* what) {
    if (r == ncclSuccess) return;
    // NCCL's own strings already say to run with NCCL_DEBUG=INFO where that helps.
    throw DeviceError(std::string("NCCL ") + what + ": " + ncclGetErrorString(r));
}

/// ncclGroupStart .. ncclGroupEnd, ended on every path: a group left open by an exception
/// would swallow every later NCCL call of this thread.
class GroupScope {
public:
    GroupScope() { check_nccl(ncclGroupStart(), "group start"); }
    ~GroupScope() {
        if (open_) ncclGroupEnd();
    }
    GroupScope(const GroupScope&) = delete;
    GroupScope& operator=(const GroupScope&) = delete;
    void end(const char* what) {
        open_ = false;
        check_nccl(ncclGroupEnd(), what);
    }

private:
    bool open_ = true;
};

ncclDataType_t nccl_type(DType t) {
    return t == DType::F32 ? ncclFloat32 : ncclFloat64;
}
ncclRedOp_t nccl_op(PartialOp op) {
    return op == PartialOp::Max ? ncclMax : ncclSum;
}

/// Waits until the stream's work is done, asking NCCL meanwhile for an asynchronous error: a
/// broken link or a dead peer leaves the collective's kernel waiting for ever, where a plain
/// stream synchronisation would wait too. NCCL reports it here, and the rank says so and ends
/// the run (MPI_Abort, exit 2) at once: unwinding would not get far, as freeing a cuBLAS
/// handle waits for the whole GPU, the stuck kernel included.
void wait_for_nccl(const cuda::Context& c, ncclComm_t comm) {
    for (int polls = 0;; ++polls) {
        const cudaError_t e = cudaStreamQuery(c.stream());
        if (e == cudaSuccess) return;
        if (e != cudaErrorNotReady) cuda::check(e, "running NCCL on the GPU");
        ncclResult_t async = ncclSuccess;
        check_nccl(ncclCommGetAsyncError(comm, &async), "ncclCommGetAsyncError");
        if (async != ncclSuccess && async != ncclInProgress) {
            const std::string what = std::string("shardscope: error: NCCL: a collective failed "
                                                 "while it ran: ") +
                                     ncclGetErrorString(async) + "\n";
            std::fputs(what.c_str(), stderr);
            abort_mpi(2);
        }
        // Spin briefly (most collectives end within microseconds), then poll gently.
        if (polls < 64)
            std::this_thread::yield();
        else
            std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
}

/// A buffer the NCCL call can use: the caller's when it is on our GPU, else a device copy
/// (copied in when `in`, and back by finish() when `out`).
class Staged {
public:
    Staged(const cuda::Context& c, const void* p, std::size_t bytes, bool in, bool out)
        : c_(c), user_(const_cast<void*>(p)), bytes_(bytes), out_(out) {
        if (bytes == 0 || cuda::on_device(p, c.device())) {
            dev_ = user_;
            out_ = false;
            return;
        }
        buf_ = cuda::Buffer(bytes, c.stream());
        dev_ = buf_.get();
        if (in)
            cuda::check(cudaMemcpyAsync(dev_, p, bytes, cudaMemcpyDefault, c.stream()),
                        "copying to the GPU for NCCL");
    }
    void* get() const { return dev_; }
    /// Waits for the collective on `comm` (and copies the result back first when staged).
    void finish(ncclComm_t comm) {
        if (out_)
            cuda::check(cudaMemcpyAsync(user_, dev_, bytes_, cudaMemcpyDefault, c_.stream()),
                        "copying NCCL's result back");
        wait_for_nccl(c_, comm);
    }

private:
    const cuda::Context& c_;
    void* user_;
    void* dev_ = nullptr;
    std::size_t bytes_;
    bool out_;
    cuda::Buffer buf_;
};

class NcclGroup final : public Group {
public:
    NcclGroup(ncclComm_t comm, const cuda::Context& c)
        : comm_(comm), c_(c), unwinding_(std::uncaught_exceptions()) {
        // A throw here leaves `comm` undestroyed: ncclCommDestroy waits for the other ranks
        // (see the destructor); this rank is failing and its exit releases the communicator.
        check_nccl(ncclCommCount(comm, &size_), "ncclCommCount");
        check_nccl(ncclCommUserRank(comm, &rank_), "ncclCommUserRank");
    }
    ~NcclGroup() override {
        // ncclCommDestroy is collective: it waits for every rank to destroy the communicator.
        // Destroyed while an exception unwinds (this rank failed, and will abort MPI), it would
        // wait for ranks that are still waiting for this one; the exit releases it instead.
        if (std::uncaught_exceptions() > unwinding_) return;
        ncclCommDestroy(comm_);
    }
    NcclGroup(const NcclGroup&) = delete;
    NcclGroup& operator=(const NcclGroup&) = delete;

    ncclComm_t comm() const { return comm_; }
    int size() const override { return size_; }
    int rank() const override { return rank_; }

    void all_reduce(void* buf, std::size_t count, DType type, PartialOp op) override {
        Staged b(c_, buf, count * dtype_bytes(type), true, true);
        check_nccl(ncclAllReduce(b.get(), b.get(), count, nccl_type(type), nccl_op(op), comm_,
                                 c_.stream()),
                   "all-reduce");
        b.finish(comm_);
    }
    void all_gather(const void* send, void* recv, std::size_t count, DType type) override {
        const auto bytes = count * dtype_bytes(type);
        Staged s(c_, send, bytes, true, false);
        Staged r(c_, recv, bytes * static_cast<std::size_t>(size_), false, true);
        check_nccl(ncclAllGather(s.get(), r.get(), count, nccl_type(type), comm_, c_.stream()),
                   "all-gather");
        r.finish(comm_);
    }
    void reduce_scatter(const void* send, void* recv, std::size_t count, DType type,
                        PartialOp op) override {
        const auto bytes = count * dtype_bytes(type);
        Staged s(c_, send, bytes * static_cast<std::size_t>(size_), true, false);
        Staged r(c_, recv, bytes, false, true);
        check_nccl(ncclReduceScatter(s.get(), r.get(), count, nccl_type(type), nccl_op(op), comm_,
                                     c_.stream()),
                   "reduce-scatter");
        r.finish(comm_);
    }
    void all_to_all(const void* send, void* recv, std::size_t count, DType type) override {
        const auto bytes = count * dtype_bytes(type);
        const auto total = bytes * static_cast<std::size_t>(size_);
        Staged s(c_, send, total, true, false);
        Staged r(c_, recv, total, false, true);
        GroupScope group;
        for (int q = 0; q < size_; ++q) {
            const auto off = static_cast<std::size_t>(q) * bytes;
            check_nccl(ncclSend(static_cast<char*>(s.get()) + off, count, nccl_type(type), q, comm_,
                                c_.stream()),
                       "send");
            check_nccl(ncclRecv(static_cast<char*>(r.get()) + off, count, nccl_type(type), q, comm_,
                                c_.stream()),
                       "receive");
        }
        group.end("all-to-all");
        r.finish(comm_);
    }
    void permute(const void* send, void* recv, std::size_t count, DType type, int to,
                 int from) override {
        for (int m : {to, from})
            if (m < 0 || m >= size_)
                throw ExecError("permute: member " + std::to_string(m) + " is outside a group of " +
                                std::to_string(size_));
        const auto bytes = count * dtype_bytes(type);
        Staged s(c_, send, bytes, true, false);
        Staged r(c_, recv, bytes, false, true);
        GroupScope group;
        check_nccl(ncclSend(s.get(), count, nccl_type(type), to, comm_, c_.stream()), "send");
        check_nccl(ncclRecv(r.get(), count, nccl_type(type), from, comm_, c_.stream()), "receive");
        group.end("permute");
        r.finish(comm_);
    }
    void exchange(const std::vector<SendPart>& sends, const std::vector<RecvPart>& recvs,
                  DType type) override {
        // Every peer checked before any message is posted (none is left pending on a throw).
        for (const auto& p : sends)
            exchange_peer(p.peer, size_, rank_, "a send to");
        for (const auto& p : recvs)
            exchange_peer(p.peer, size_, rank_, "a receive from");
        const auto elem = dtype_bytes(type);
        std::deque<Staged> staged; // stable addresses: Staged holds its buffer
        for (const auto& p : sends)
            staged.emplace_back(c_, p.data, p.count * elem, true, false);
        for (const auto& p : recvs)
            staged.emplace_back(c_, p.data, p.count * elem, false, true);
        GroupScope group;
        for (std::size_t i = 0; i < sends.size(); ++i)
            check_nccl(ncclSend(staged[i].get(), sends[i].count, nccl_type(type), sends[i].peer,
                                comm_, c_.stream()),
                       "send");
        const auto first_recv = sends.size();
        for (std::size_t i = 0; i < recvs.size(); ++i)
            check_nccl(ncclRecv(staged[first_recv + i].get(), recvs[i].count, nccl_type(type),
                                recvs[i].peer, comm_, c_.stream()),
                       "receive");
        group.end("exchange");
        for (auto i = first_recv; i < staged.size(); ++i)
            staged[i].finish(comm_);
        wait_for_nccl(c_, comm_); // the sends too, when nothing is received
    }
    void barrier() override {
        float one = 1;
        all_reduce(&one, 1, DType::F32, PartialOp::Sum);
    }

private:
    ncclComm_t comm_;
    const cuda::Context& c_;
    int size_ = 0, rank_ = 0;
    int unwinding_; ///< exceptions in flight when it was made
};

class NcclCommunicator final : public Communicator {
public:
    NcclCommunicator(std::unique_ptr<Communicator> mpi, int device)
        : mpi_(std::move(mpi)), c_(device) {}
    int rank() const override { return mpi_->rank(); }
    int size() const override { return mpi_->size(); }
    Group& axis(int k) override { return axis_at(axes_, k); }
    Group& group(const std::vector<int>& axes) override {
        if (axes.size() == 1) return axis(axes.front());
        auto& g = groups_[axes];
        if (!g) {
            // Collective over the world: every rank reaches the same step in the same order.
            const auto place = mesh_.group_place(rank(), axes);
            ncclComm_t c = nullptr;
            check_nccl(ncclCommSplit(world_comm_, place.colour, place.position, &c, nullptr),
                       "ncclCommSplit (a group of mesh axes)");
            g = std::make_unique<NcclGroup>(c, c_);
        }
        return *g;
    }
    Group& world() override { return *world_; }
    std::vector<std::vector<char>> gather_to_root(const std::vector<char>& mine) override {
        return mpi_->gather_to_root(mine);
    }

    std::unique_ptr<Communicator> mpi_;
    cuda::Context c_;
    MeshShape mesh_;
    ncclComm_t world_comm_ = nullptr;
    std::unique_ptr<NcclGroup> world_;
    std::vector<std::unique_ptr<NcclGroup>> axes_;
    std::map<std::vector<int>, std::unique_ptr<NcclGroup>> groups_;
};

/// Sends rank 0's `bytes` (a multiple of 4) to every rank through the MPI world group.
void broadcast_from_root(Communicator& mpi, void* data, std::size_t bytes) {
    std::vector<char> all(bytes * static_cast<std::size_t>(mpi.size()));
    mpi.world().all_gather(data, all.data(), bytes / 4, DType::F32);
    std::memcpy(data, all.data(), bytes);
}

} // namespace

std::unique_ptr<Communicator> make_nccl(const MeshShape& mesh, int& device) {
    auto mpi = make_mpi(mesh);
    const int rank = mpi->rank(), size = mpi->size();
    // The node-local rank and count: ranks whose host names match.
    char host[64] = {};
    gethostname(host, sizeof host - 1);
    std::vector<char> hosts(sizeof host * static_cast<std::size_t>(size));
    mpi->world().all_gather(host, hosts.data(), sizeof host / 4, DType::F32);
    int local_rank = 0, local_size = 0;
    for (int q = 0; q < size; ++q)
        if (std::strncmp(hosts.data() + static_cast<std::size_t>(q) * sizeof host, host,
                         sizeof host) == 0) {
            if (q < rank) ++local_rank;
            ++local_size;
        }
    const auto probe = probe_gpus();
    if (probe.devices == 0) throw DeviceError(probe.problem);
    // The node-local rank's GPU. A process that sees fewer GPUs than there are ranks on its
    // node may have been given one of its own by the launcher (CUDA_VISIBLE_DEVICES per
    // rank): the ranks compare the PCI bus ids of what they picked, and refuse where two
    // picked the same GPU, which NCCL would refuse.
    device = local_rank % probe.devices;
    char bus[64] = {};
    cuda::check(cudaDeviceGetPCIBusId(bus, sizeof bus - 1, device), "identifying the GPU");
    std::vector<char> buses(sizeof bus * static_cast<std::size_t>(size));
    mpi->world().all_gather(bus, buses.data(), sizeof bus / 4, DType::F32);
    std::vector<std::string> node_gpus; // distinct GPUs of this node's ranks
    for (int q = 0; q < size; ++q) {
        const char* h = hosts.data() + static_cast<std::size_t>(q) * sizeof host;
        const std::string b(buses.data() + static_cast<std::size_t>(q) * sizeof bus);
        if (std::strncmp(h, host, sizeof host) == 0 &&
            std::find(node_gpus.begin(), node_gpus.end(), b) == node_gpus.end())
            node_gpus.push_back(b);
    }
    const auto shortage = gpu_shortage("nccl", local_size, static_cast<int>(node_gpus.size()));
    if (!shortage.empty()) throw DeviceError(shortage);
    auto comm = std::make_unique<NcclCommunicator>(std::move(mpi), device);
    ncclUniqueId id{};
    if (rank == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    static_assert(sizeof id % 4 == 0);
    broadcast_from_root(*comm->mpi_, &id, sizeof id);
    ncclComm_t world = nullptr;
    check_nccl(ncclCommInitRank(&world, size, id, rank), "ncclCommInitRank");
    comm->world_ = std::make_unique<NcclGroup>(world, comm->c_);
    comm->world_comm_ = world;
    comm->mesh_ = mesh;
    // One communicator per mesh axis: the ranks on a line along axis k share the colour (the
    // index of their other coordinates) and are ordered by their coordinate on k.
    for (int k = 0; k < static_cast<int>(mesh.sizes.size()); ++k) {
        const auto place = mesh.group_place(rank, {k});
        ncclComm_t axis = nullptr;
        check_nccl(ncclCommSplit(world, place.colour, place.position, &axis, nullptr),
                   "ncclCommSplit (a mesh axis)");
        comm->axes_.push_back(std::make_unique<NcclGroup>(axis, comm->c_));
    }
    return comm;
}

} // namespace shardscope::exec
