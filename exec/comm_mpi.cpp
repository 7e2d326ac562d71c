// The MPI communicator: one process per device (world rank = device id), one communicator
// per mesh axis line through MPI_Comm_split, collectives mapped one to one onto MPI's.
// Without MPI (SHARDSCOPE_HAVE_MPI unset) this file still builds: mpi_available() is false
// and make_mpi throws.
#include "exec/comm.hpp"
#include "exec/tensor.hpp"

#include <climits>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#ifdef SHARDSCOPE_HAVE_MPI
// The C API only: OpenMPI's mpi.h would otherwise pull in its C++ bindings, which live in
// libmpi_cxx (not linked through MPI::MPI_C).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace shardscope::exec {

bool launched_by_mpirun() {
    return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMI_SIZE") != nullptr;
}

#ifndef SHARDSCOPE_HAVE_MPI

bool mpi_available() {
    return false;
}

std::unique_ptr<Communicator> make_mpi(const MeshShape&) {
    throw ExecError("this shardscope was built without MPI");
}

void abort_mpi(int code) {
    std::exit(code);
}

void finalize_mpi() {}

#else

namespace detail {
void check_mesh(const MeshShape& mesh); // comm_sim.cpp
}

namespace {

void check(int rc, const char* what) {
    if (rc == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) len = 0;
    throw ExecError(std::string(what) +
                    " failed: " + std::string(text, static_cast<std::size_t>(len)));
}

/// An element count as MPI's int, or ExecError (never truncated).
int as_int(std::size_t n, const char* what) {
    if (n > static_cast<std::size_t>(INT_MAX))
        throw ExecError(std::string(what) + ": " + std::to_string(n) +
                        " elements exceed MPI's limit of " + std::to_string(INT_MAX) + " per call");
    return static_cast<int>(n);
}

MPI_Datatype mpi_type(DType t) {
    return t == DType::F32 ? MPI_FLOAT : MPI_DOUBLE;
}
MPI_Op mpi_op(PartialOp op) {
    return op == PartialOp::Sum ? MPI_SUM : MPI_MAX;
}

/// MPI accepts a null buffer only with count 0, and some builds reject even that, so empty
/// collectives get a valid dummy address.
void* nonnull(void* p) {
    static char dummy[16];
    return p != nullptr ? p : dummy;
}
const void* nonnull(const void* p) {
    static const char dummy[16] = {};
    return p != nullptr ? p : dummy;
}

bool finalized() {
    int done = 0;
    MPI_Finalized(&done);
    return done != 0;
}

class MpiGroup final : public Group {
public:
    /// Takes ownership of `comm` (freed on destruction unless MPI is finalised by then).
    explicit MpiGroup(MPI_Comm comm) : comm_(comm) {
        check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
        check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
        check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
    }
    ~MpiGroup() override {
        if (!finalized()) MPI_Comm_free(&comm_);
    }
    MpiGroup(const MpiGroup&) = delete;
    MpiGroup& operator=(const MpiGroup&) = delete;

    int size() const override { return size_; }
    int rank() const override { return rank_; }

    void all_reduce(void* buf, std::size_t count, DType type, PartialOp op) override {
        int n = as_int(count, "all_reduce");
        check(MPI_Allreduce(MPI_IN_PLACE, nonnull(buf), n, mpi_type(type), mpi_op(op), comm_),
              "MPI_Allreduce");
    }
    void all_gather(const void* send, void* recv, std::size_t count, DType type) override {
        int n = as_int(count, "all_gather");
        check(MPI_Allgather(nonnull(send), n, mpi_type(type), nonnull(recv), n, mpi_type(type),
                            comm_),
              "MPI_Allgather");
    }
    void reduce_scatter(const void* send, void* recv, std::size_t count, DType type,
                        PartialOp op) override {
        int n = as_int(count, "reduce_scatter");
        check(MPI_Reduce_scatter_block(nonnull(send), nonnull(recv), n, mpi_type(type), mpi_op(op),
                                       comm_),
              "MPI_Reduce_scatter_block");
    }
    void all_to_all(const void* send, void* recv, std::size_t count, DType type) override {
        int n = as_int(count, "all_to_all");
        check(
            MPI_Alltoall(nonnull(send), n, mpi_type(type), nonnull(recv), n, mpi_type(type), comm_),
            "MPI_Alltoall");
    }
    void permute(const void* send, void* recv, std::size_t count, DType type, int to,
                 int from) override {
        for (int m : {to, from})
            if (m < 0 || m >= size_)
                throw ExecError("permute: member " + std::to_string(m) + " is outside a group of " +
                                std::to_string(size_));
        int n = as_int(count, "permute");
        check(MPI_Sendrecv(nonnull(send), n, mpi_type(type), to, kTag, nonnull(recv), n,
                           mpi_type(type), from, kTag, comm_, MPI_STATUS_IGNORE),
              "MPI_Sendrecv");
    }
    void exchange(const std::vector<SendPart>& sends, const std::vector<RecvPart>& recvs,
                  DType type) override {
        // Every peer checked before any message is posted (none is left pending on a throw).
        for (const auto& p : sends)
            exchange_peer(p.peer, size_, rank_, "a send to"), as_int(p.count, "exchange");
        for (const auto& p : recvs)
            exchange_peer(p.peer, size_, rank_, "a receive from"), as_int(p.count, "exchange");
        std::vector<MPI_Request> requests(sends.size() + recvs.size(), MPI_REQUEST_NULL);
        std::size_t at = 0;
        for (const auto& r : recvs)
            check(MPI_Irecv(nonnull(r.data), as_int(r.count, "exchange"), mpi_type(type), r.peer,
                            kTag, comm_, &requests[at++]),
                  "MPI_Irecv");
        for (const auto& s : sends)
            check(MPI_Isend(nonnull(s.data), as_int(s.count, "exchange"), mpi_type(type), s.peer,
                            kTag, comm_, &requests[at++]),
                  "MPI_Isend");
        check(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE),
              "MPI_Waitall");
    }
    void barrier() override { check(MPI_Barrier(comm_), "MPI_Barrier"); }

    /// Rank 0 receives every member's bytes; elsewhere the result is empty.
    std::vector<std::vector<char>> gather(const std::vector<char>& mine) {
        int n = as_int(mine.size(), "gather_to_root");
        std::vector<int> sizes(rank_ == 0 ? static_cast<std::size_t>(size_) : 0);
        check(MPI_Gather(&n, 1, MPI_INT, rank_ == 0 ? sizes.data() : nullptr, 1, MPI_INT, 0, comm_),
              "MPI_Gather");
        std::vector<int> displs;
        std::vector<char> all;
        bool too_large = false;
        if (rank_ == 0) {
            long long total = 0;
            for (int s : sizes) {
                displs.push_back(static_cast<int>(total));
                total += s;
                if (total > INT_MAX) too_large = true;
            }
            if (!too_large) all.resize(static_cast<std::size_t>(total));
        }
        // Every rank must know whether the Gatherv happens, or the others would hang in it.
        int flag = too_large ? 1 : 0;
        check(MPI_Bcast(&flag, 1, MPI_INT, 0, comm_), "MPI_Bcast");
        if (flag != 0)
            throw ExecError("gather_to_root: the ranks' bytes together exceed MPI's limit of " +
                            std::to_string(INT_MAX));
        check(MPI_Gatherv(nonnull(static_cast<const void*>(mine.data())), n, MPI_CHAR,
                          rank_ == 0 ? nonnull(static_cast<void*>(all.data())) : nullptr,
                          rank_ == 0 ? sizes.data() : nullptr, rank_ == 0 ? displs.data() : nullptr,
                          MPI_CHAR, 0, comm_),
              "MPI_Gatherv");
        std::vector<std::vector<char>> result;
        if (rank_ == 0)
            for (std::size_t q = 0; q < sizes.size(); ++q)
                result.emplace_back(all.begin() + displs[q], all.begin() + displs[q] + sizes[q]);
        return result;
    }

private:
    static constexpr int kTag = 7301;
    MPI_Comm comm_;
    int size_ = 0;
    int rank_ = 0;
};

class MpiCommunicator final : public Communicator {
public:
    int rank() const override { return world_->rank(); }
    int size() const override { return world_->size(); }
    Group& axis(int k) override { return axis_at(axes_, k); }
    Group& group(const std::vector<int>& axes) override {
        if (axes.size() == 1) return axis(axes.front());
        auto& g = groups_[axes];
        if (!g) {
            // Collective over the world: every rank reaches the same step in the same order.
            const auto place = mesh_.group_place(world_->rank(), axes);
            MPI_Comm c = MPI_COMM_NULL;
            check(MPI_Comm_split(world_comm_, place.colour, place.position, &c),
                  "MPI_Comm_split (a group of mesh axes)");
            g = std::make_unique<MpiGroup>(c);
        }
        return *g;
    }
    Group& world() override { return *world_; }
    std::vector<std::vector<char>> gather_to_root(const std::vector<char>& mine) override {
        return world_->gather(mine);
    }

    MeshShape mesh_;
    MPI_Comm world_comm_ = MPI_COMM_NULL;
    std::unique_ptr<MpiGroup> world_;
    std::vector<std::unique_ptr<MpiGroup>> axes_;
    std::map<std::vector<int>, std::unique_ptr<MpiGroup>> groups_;
};

} // namespace

bool mpi_available() {
    return true;
}

std::unique_ptr<Communicator> make_mpi(const MeshShape& mesh) {
    detail::check_mesh(mesh);
    int initialized = 0;
    check(MPI_Initialized(&initialized), "MPI_Initialized");
    if (initialized == 0) {
        if (finalized()) throw ExecError("MPI was already finalised");
        int provided = 0;
        check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    }
    int world_size = 0;
    check(MPI_Comm_size(MPI_COMM_WORLD, &world_size), "MPI_Comm_size");
    const int devices = mesh.device_count();
    if (world_size != devices)
        throw ExecError("this mesh has " + std::to_string(devices) +
                        " devices but mpirun started " + std::to_string(world_size) +
                        (world_size == 1 ? " rank" : " ranks") + ": run mpirun -np " +
                        std::to_string(devices) + " ...");

    auto comm = std::make_unique<MpiCommunicator>();
    MPI_Comm world = MPI_COMM_NULL;
    check(MPI_Comm_dup(MPI_COMM_WORLD, &world), "MPI_Comm_dup");
    comm->world_ = std::make_unique<MpiGroup>(world);
    comm->world_comm_ = world;
    comm->mesh_ = mesh;

    for (int k = 0; k < static_cast<int>(mesh.sizes.size()); ++k) {
        // colour: this device's coordinates on every other axis, row-major; key: along k.
        const auto place = mesh.group_place(comm->world_->rank(), {k});
        MPI_Comm line = MPI_COMM_NULL;
        check(MPI_Comm_split(world, place.colour, place.position, &line), "MPI_Comm_split");
        comm->axes_.push_back(std::make_unique<MpiGroup>(line));
    }
    return comm;
}

void abort_mpi(int code) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized != 0 && !finalized()) MPI_Abort(MPI_COMM_WORLD, code);
    std::exit(code);
}

void finalize_mpi() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized != 0 && !finalized()) MPI_Finalize();
}

#endif

} // namespace shardscope::exec
