// The host CUDA emulator's NCCL (README-nccl.md): the part of NCCL's API that
// exec/comm_nccl.cpp calls, on top of MPI. A communicator is a pair of MPI communicators:
// `ctrl` for the host-side calls (init, split), `data` for the operations, which are
// stream-ordered: they are checked at call time and run, as non-blocking MPI completed before
// the queued op returns, only when their stream is synchronised (emu.hpp).
#include "tests/cuda_emu/emu.hpp"

#include <nccl.h>

#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace emu = shardscope::cuda_emu;

namespace {

/// The data communicator, shared by the communicator and every queued operation on it, so
/// that ncclCommDestroy before the stream runs them leaves them something to run on.
struct Channel {
    MPI_Comm comm = MPI_COMM_NULL;
    explicit Channel(MPI_Comm c) : comm(c) {}
    ~Channel();
    Channel(const Channel&) = delete;
    Channel& operator=(const Channel&) = delete;
};

bool mpi_finalized() {
    int done = 0;
    MPI_Finalized(&done);
    return done != 0;
}

Channel::~Channel() {
    if (comm != MPI_COMM_NULL && !mpi_finalized()) MPI_Comm_free(&comm);
}

} // namespace

struct ncclComm {
    MPI_Comm ctrl = MPI_COMM_NULL;
    std::shared_ptr<Channel> data;
    int rank = 0, size = 0, device = 0;
};

namespace {

constexpr char id_magic[] = "nccl-emu id";

void warn(const std::string& what) {
    std::fprintf(stderr, "nccl-emu: %s\n", what.c_str());
}

std::string mpi_error(int rc) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(rc);
    return std::string(text, static_cast<std::size_t>(len));
}

/// Reports a failed MPI call made at call time as NCCL would report a failed socket call.
ncclResult_t system_error(const char* fn, const char* call, int rc) {
    warn(std::string(fn) + ": " + call + " failed: " + mpi_error(rc));
    return ncclSystemError;
}

/// A new communicator owning `ctrl` (with MPI_ERRORS_RETURN) and a duplicate for the data.
ncclResult_t make_comm(const char* fn, MPI_Comm ctrl, int device, ncclComm_t* out) {
    int rc = MPI_Comm_set_errhandler(ctrl, MPI_ERRORS_RETURN);
    auto comm = std::make_unique<ncclComm>();
    comm->ctrl = ctrl;
    comm->device = device;
    MPI_Comm data = MPI_COMM_NULL;
    if (rc == MPI_SUCCESS) rc = MPI_Comm_rank(ctrl, &comm->rank);
    if (rc == MPI_SUCCESS) rc = MPI_Comm_size(ctrl, &comm->size);
    if (rc == MPI_SUCCESS) rc = MPI_Comm_dup(ctrl, &data);
    if (rc != MPI_SUCCESS) {
        MPI_Comm_free(&comm->ctrl);
        return system_error(fn, "creating its MPI communicators", rc);
    }
    comm->data = std::make_shared<Channel>(data);
    *out = comm.release();
    return ncclSuccess;
}

std::size_t type_bytes(ncclDataType_t t) {
    switch (t) {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
        return 1;
    case ncclFloat16:
    case ncclBfloat16:
        return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
        return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64:
        return 8;
    default:
        return 0;
    }
}

/// MPI's type for `t`, or MPI_DATATYPE_NULL for the types MPI cannot reduce (half, bfloat16,
/// fp8: valid NCCL types this emulation does not carry).
MPI_Datatype mpi_type(ncclDataType_t t) {
    switch (t) {
    case ncclInt8:
        return MPI_INT8_T;
    case ncclUint8:
        return MPI_UINT8_T;
    case ncclInt32:
        return MPI_INT32_T;
    case ncclUint32:
        return MPI_UINT32_T;
    case ncclInt64:
        return MPI_INT64_T;
    case ncclUint64:
        return MPI_UINT64_T;
    case ncclFloat32:
        return MPI_FLOAT;
    case ncclFloat64:
        return MPI_DOUBLE;
    default:
        return MPI_DATATYPE_NULL;
    }
}

MPI_Op mpi_op(ncclRedOp_t op) {
    switch (op) {
    case ncclSum:
        return MPI_SUM;
    case ncclProd:
        return MPI_PROD;
    case ncclMax:
        return MPI_MAX;
    case ncclMin:
        return MPI_MIN;
    default:
        return MPI_OP_NULL;
    }
}

enum class Kind { AllReduce, AllGather, ReduceScatter, Send, Recv };

const char* kind_name(Kind k) {
    switch (k) {
    case Kind::AllReduce:
        return "ncclAllReduce";
    case Kind::AllGather:
        return "ncclAllGather";
    case Kind::ReduceScatter:
        return "ncclReduceScatter";
    case Kind::Send:
        return "ncclSend";
    case Kind::Recv:
        return "ncclRecv";
    }
    return "?";
}

/// One checked operation, waiting for its group's end (or run at once outside a group).
struct Op {
    Kind kind;
    std::shared_ptr<Channel> channel;
    int rank, size;
    const void* send;
    void* recv;
    std::size_t count; // per rank: NCCL's count, sendcount or recvcount
    ncclDataType_t type;
    ncclRedOp_t red;
    int peer;
};

/// NCCL's group state is per thread.
struct GroupState {
    int depth = 0;
    std::vector<Op> ops;
    cudaStream_t stream = nullptr;
    ncclResult_t error = ncclSuccess;
};
thread_local GroupState group;

std::string ptr_text(const void* p) {
    std::ostringstream s;
    s << p;
    return s.str();
}

/// Faults unless [p, p + bytes) is device memory of the communicator's device.
void check_buffer(const char* fn, const char* name, const void* p, std::size_t bytes, int device) {
    if (bytes == 0 || emu::is_device_range(p, bytes, device)) return;
    std::string what = std::string(fn) + ": " + name + " " + ptr_text(p) + " (" +
                       std::to_string(bytes) + " bytes) ";
    if (emu::is_device_range(p, bytes, -1))
        what +=
            "is memory of another device than the communicator's device " + std::to_string(device);
    else if (emu::is_device_range(p, 1, -1))
        what += "runs past the end of its device allocation";
    else
        what += "is not device memory (NCCL needs buffers on the communicator's GPU, device " +
                std::to_string(device) + ")";
    emu::fault(what);
}

bool overlap(const void* a, std::size_t an, const void* b, std::size_t bn) {
    const auto x = reinterpret_cast<std::uintptr_t>(a), y = reinterpret_cast<std::uintptr_t>(b);
    return an != 0 && bn != 0 && x < y + bn && y < x + an;
}

ncclResult_t fail(ncclResult_t r, const std::string& what) {
    warn(what);
    if (group.depth > 0 && group.error == ncclSuccess) group.error = r;
    return r;
}

/// A failure the tests inject: SHARDSCOPE_CUDA_EMU_NCCL_FAIL=CALL:RANK makes CALL (init or
/// allreduce) return ncclSystemError on world rank RANK alone, as a broken link would; with
/// CALL stall, RANK's all-reduces are accepted but never complete, and once its stream reaches
/// one, ncclCommGetAsyncError reports ncclSystemError (a link that broke during the
/// collective).
/// The asynchronous error ncclCommGetAsyncError reports (one for the process: injected).
std::atomic<ncclResult_t> async_error{ncclSuccess};

bool injected(const char* call) {
    const char* v = std::getenv("SHARDSCOPE_CUDA_EMU_NCCL_FAIL");
    if (v == nullptr) return false;
    const std::string spec = v;
    const auto colon = spec.find(':');
    if (colon == std::string::npos || spec.substr(0, colon) != call) return false;
    int rank = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return std::atoi(spec.c_str() + colon + 1) == rank;
}

ncclResult_t check_args(const char* fn, ncclComm_t comm, std::size_t count, ncclDataType_t type) {
    if (comm == nullptr) return fail(ncclInvalidArgument, std::string(fn) + ": comm is NULL");
    if (static_cast<int>(type) < 0 || type >= ncclNumTypes)
        return fail(ncclInvalidArgument,
                    std::string(fn) + ": invalid datatype " + std::to_string(type));
    if (mpi_type(type) == MPI_DATATYPE_NULL)
        return fail(ncclInvalidArgument, std::string(fn) + ": datatype " + std::to_string(type) +
                                             " is not emulated (MPI has no type for it)");
    if (count > static_cast<std::size_t>(INT_MAX))
        return fail(ncclInvalidArgument, std::string(fn) + ": count " + std::to_string(count) +
                                             " exceeds MPI's int (an emulation limit)");
    return ncclSuccess;
}

void check_stream(const char* fn, ncclComm_t comm, cudaStream_t stream) {
    const int d = emu::stream_device(stream);
    if (d != comm->device)
        emu::fault(std::string(fn) + ": the stream belongs to device " + std::to_string(d) +
                   " but the communicator's device is " + std::to_string(comm->device));
}

void run_group(const std::vector<Op>& ops);

/// Queues the group's operations on its stream, as one op.
ncclResult_t launch() {
    auto ops = std::make_shared<std::vector<Op>>(std::move(group.ops));
    const auto stream = group.stream;
    const auto error = group.error;
    group = GroupState{};
    if (error != ncclSuccess) return error; // NCCL drops a group with a failed call
    if (ops->empty()) return ncclSuccess;
    emu::enqueue(stream, [ops] { run_group(*ops); });
    return ncclSuccess;
}

/// Checks the stream and adds `op` to the group (queued at once outside one).
ncclResult_t submit(Op op, ncclComm_t comm, cudaStream_t stream) {
    const char* fn = kind_name(op.kind);
    check_stream(fn, comm, stream);
    if (group.depth > 0 && !group.ops.empty() && stream != group.stream)
        return fail(ncclInvalidUsage,
                    std::string(fn) + ": a group on more than one stream is not emulated");
    if (group.depth == 0) group = GroupState{};
    group.stream = stream;
    group.ops.push_back(std::move(op));
    return group.depth == 0 ? launch() : ncclSuccess;
}

Op make_op(Kind kind, ncclComm_t comm, const void* send, void* recv, std::size_t count,
           ncclDataType_t type, ncclRedOp_t red, int peer) {
    return Op{kind, comm->data, comm->rank, comm->size, send, recv, count, type, red, peer};
}

// ---- running a group (at the stream's synchronisation) ----

void check_mpi(int rc, const std::string& what) {
    if (rc != MPI_SUCCESS) emu::fault(what + " failed: " + mpi_error(rc));
}

/// A stable signature of the collectives a group runs on one communicator.
void mix(std::uint64_t& h, std::uint64_t v) {
    for (int i = 0; i < 8; ++i) {
        h ^= (v >> (8 * i)) & 0xff;
        h *= 0x100000001b3ULL;
    }
}

const void* nonnull(const void* p) {
    static const char dummy[16] = {};
    return p != nullptr ? p : dummy;
}
void* nonnull(void* p) {
    static char dummy[16];
    return p != nullptr ? p : dummy;
}

void run_group(const std::vector<Op>& ops) {
    if (mpi_finalized())
        emu::fault("an NCCL operation ran after MPI_Finalize (its stream was synchronised late)");
    // 1. Every rank must run the same collectives on a communicator: compare signatures (min
    // and max over the ranks) so that a mismatch faults instead of hanging or mixing data.
    std::vector<std::pair<Channel*, std::uint64_t>> sigs;
    for (const auto& op : ops) {
        if (op.kind == Kind::Send || op.kind == Kind::Recv) continue;
        auto it = std::find_if(sigs.begin(), sigs.end(),
                               [&](const auto& s) { return s.first == op.channel.get(); });
        if (it == sigs.end()) {
            sigs.emplace_back(op.channel.get(), 0xcbf29ce484222325ULL);
            it = sigs.end() - 1;
        }
        mix(it->second, static_cast<std::uint64_t>(op.kind));
        mix(it->second, op.count);
        mix(it->second, static_cast<std::uint64_t>(op.type));
        mix(it->second, op.kind == Kind::AllGather ? 0 : static_cast<std::uint64_t>(op.red));
    }
    std::vector<std::uint64_t> mine(2 * sigs.size()), maxed(2 * sigs.size());
    std::vector<MPI_Request> reqs;
    for (std::size_t i = 0; i < sigs.size(); ++i) {
        mine[2 * i] = sigs[i].second;
        mine[2 * i + 1] = ~sigs[i].second;
        reqs.push_back(MPI_REQUEST_NULL);
        check_mpi(MPI_Iallreduce(&mine[2 * i], &maxed[2 * i], 2, MPI_UINT64_T, MPI_MAX,
                                 sigs[i].first->comm, &reqs.back()),
                  "the emulation's collective check (MPI_Iallreduce)");
    }
    if (!reqs.empty())
        check_mpi(MPI_Waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE),
                  "the emulation's collective check (MPI_Waitall)");
    for (std::size_t i = 0; i < sigs.size(); ++i)
        if (maxed[2 * i] != ~maxed[2 * i + 1])
            emu::fault("the ranks of a communicator ran different collectives (kind, count, "
                       "datatype or operation) at the same point: real NCCL would hang or mix "
                       "them up");

    // 2. Post everything, then wait for all of it: the group's operations progress together.
    reqs.clear();
    std::vector<std::vector<char>> temps;
    std::vector<std::size_t> req_op;
    for (std::size_t i = 0; i < ops.size(); ++i) {
        const Op& op = ops[i];
        const MPI_Datatype t = mpi_type(op.type);
        const int n = static_cast<int>(op.count);
        const std::size_t bytes = op.count * type_bytes(op.type);
        MPI_Comm c = op.channel->comm;
        MPI_Request r = MPI_REQUEST_NULL;
        int rc = MPI_SUCCESS;
        switch (op.kind) {
        case Kind::AllReduce:
            rc = op.send == op.recv
                     ? MPI_Iallreduce(MPI_IN_PLACE, nonnull(op.recv), n, t, mpi_op(op.red), c, &r)
                     : MPI_Iallreduce(nonnull(op.send), nonnull(op.recv), n, t, mpi_op(op.red), c,
                                      &r);
            break;
        case Kind::AllGather: {
            const bool in_place = op.send == static_cast<const char*>(op.recv) +
                                                 static_cast<std::size_t>(op.rank) * bytes;
            rc = in_place ? MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, nonnull(op.recv), n,
                                           t, c, &r)
                          : MPI_Iallgather(nonnull(op.send), n, t, nonnull(op.recv), n, t, c, &r);
            break;
        }
        case Kind::ReduceScatter: {
            // In place (recvbuff inside sendbuff) MPI would take the input from recvbuff's
            // start; a copy of the input keeps NCCL's layout.
            const void* send = op.send;
            const std::size_t total = bytes * static_cast<std::size_t>(op.size);
            if (overlap(op.send, total, op.recv, bytes)) {
                const auto* s = static_cast<const char*>(op.send);
                temps.emplace_back(s, s + total);
                send = temps.back().data();
            }
            rc = MPI_Ireduce_scatter_block(nonnull(send), nonnull(op.recv), n, t, mpi_op(op.red), c,
                                           &r);
            break;
        }
        case Kind::Send:
            rc = MPI_Isend(nonnull(op.send), n, t, op.peer, 0, c, &r);
            break;
        case Kind::Recv:
            rc = MPI_Irecv(nonnull(op.recv), n, t, op.peer, 0, c, &r);
            break;
        }
        check_mpi(rc, std::string(kind_name(op.kind)) + " (posting it)");
        reqs.push_back(r);
        req_op.push_back(i);
    }
    std::vector<MPI_Status> statuses(reqs.size());
    const int rc = MPI_Waitall(static_cast<int>(reqs.size()), reqs.data(), statuses.data());
    auto what = [&](const Op& op) {
        return std::string(kind_name(op.kind)) + (op.kind == Kind::Recv || op.kind == Kind::Send
                                                      ? " (peer " + std::to_string(op.peer) + ")"
                                                      : "");
    };
    if (rc == MPI_ERR_IN_STATUS) {
        for (std::size_t k = 0; k < reqs.size(); ++k)
            if (statuses[k].MPI_ERROR != MPI_SUCCESS && statuses[k].MPI_ERROR != MPI_ERR_PENDING)
                emu::fault(what(ops[req_op[k]]) +
                           " failed in MPI (a longer ncclSend than its ncclRecv?): " +
                           mpi_error(statuses[k].MPI_ERROR));
    }
    check_mpi(rc, "MPI_Waitall for a group of NCCL operations");
    for (std::size_t k = 0; k < reqs.size(); ++k) {
        const Op& op = ops[req_op[k]];
        if (op.kind != Kind::Recv) continue;
        int got = 0;
        MPI_Get_count(&statuses[k], mpi_type(op.type), &got);
        if (static_cast<std::size_t>(got) != op.count)
            emu::fault(what(op) + " expected " + std::to_string(op.count) +
                       " elements but the matching ncclSend sent " + std::to_string(got));
    }
}

// ---- ids ----

std::uint32_t id_hash(const ncclUniqueId& id) {
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (char c : id.internal) {
        h ^= static_cast<unsigned char>(c);
        h *= 0x100000001b3ULL;
    }
    return static_cast<std::uint32_t>(h ^ (h >> 32)) & 0x7fffffffU;
}

bool id_is_ours(const ncclUniqueId& id) {
    return std::memcmp(id.internal, id_magic, sizeof id_magic) == 0;
}

} // namespace

extern "C" {

const char* ncclGetErrorString(ncclResult_t result) {
    switch (result) {
    case ncclSuccess:
        return "no error";
    case ncclUnhandledCudaError:
        return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError:
        return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError:
        return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument:
        return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage:
        return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError:
        return "remote process exited or there was a network error";
    case ncclInProgress:
        return "NCCL operation in progress";
    default:
        return "unknown result code";
    }
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId) {
    if (uniqueId == nullptr) return fail(ncclInvalidArgument, "ncclGetUniqueId: uniqueId is NULL");
    std::memset(uniqueId->internal, 0, sizeof uniqueId->internal);
    std::memcpy(uniqueId->internal, id_magic, sizeof id_magic);
    // Random bytes, the process id and the time: distinct ids from distinct calls.
    std::random_device rd;
    std::uint64_t words[4] = {
        (static_cast<std::uint64_t>(rd()) << 32) ^ rd(), static_cast<std::uint64_t>(getpid()),
        static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()), 0};
    static std::atomic<std::uint64_t> calls{0};
    words[3] = ++calls;
    std::memcpy(uniqueId->internal + sizeof id_magic, words, sizeof words);
    return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
    const char* fn = "ncclCommInitRank";
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized == 0 || mpi_finalized())
        return fail(ncclInvalidUsage, "ncclCommInitRank: the emulation needs MPI initialised "
                                      "(and not finalised) first");
    if (injected("init")) return fail(ncclSystemError, "ncclCommInitRank: injected failure");
    // Every check below is agreed on by all the callers with this id, so that a bad argument on
    // one rank makes all of them fail instead of leaving the others waiting for it.
    std::string local_problem;
    if (comm == nullptr)
        local_problem = "comm is NULL";
    else if (nranks < 1)
        local_problem = "nranks " + std::to_string(nranks) + " is below 1";
    else if (rank < 0 || rank >= nranks)
        local_problem =
            "rank " + std::to_string(rank) + " is outside [0, " + std::to_string(nranks) + ")";
    else if (!id_is_ours(commId))
        local_problem = "the unique id is not one that ncclGetUniqueId made (was it broadcast "
                        "to this rank?)";

    // The group: every process that calls with this id. MPI_Comm_split over MPI_COMM_WORLD,
    // by a hash of the id, then by the id itself should two ids share a hash.
    MPI_Comm first = MPI_COMM_NULL;
    int rc = MPI_Comm_split(MPI_COMM_WORLD, static_cast<int>(id_hash(commId)), rank, &first);
    if (rc != MPI_SUCCESS) return system_error(fn, "MPI_Comm_split", rc);
    MPI_Comm_set_errhandler(first, MPI_ERRORS_RETURN);
    int n = 0;
    MPI_Comm_size(first, &n);
    std::vector<ncclUniqueId> ids(static_cast<std::size_t>(n));
    rc =
        MPI_Allgather(&commId, sizeof commId, MPI_BYTE, ids.data(), sizeof commId, MPI_BYTE, first);
    if (rc != MPI_SUCCESS) {
        MPI_Comm_free(&first);
        return system_error(fn, "MPI_Allgather", rc);
    }
    int same = 0;
    while (std::memcmp(&ids[static_cast<std::size_t>(same)], &commId, sizeof commId) != 0)
        ++same;
    MPI_Comm group_comm = first;
    const bool collision = std::any_of(ids.begin(), ids.end(), [&](const ncclUniqueId& o) {
        return std::memcmp(&o, &commId, sizeof commId) != 0;
    });
    if (collision) {
        rc = MPI_Comm_split(first, same, rank, &group_comm);
        MPI_Comm_free(&first);
        if (rc != MPI_SUCCESS) return system_error(fn, "MPI_Comm_split", rc);
        MPI_Comm_set_errhandler(group_comm, MPI_ERRORS_RETURN);
        MPI_Comm_size(group_comm, &n);
    }
    // Agree: the same nranks everywhere, equal to the number of callers; ranks 0..n-1 once each.
    int mine[3] = {nranks, rank, local_problem.empty() ? 1 : 0};
    std::vector<int> all(3 * static_cast<std::size_t>(n));
    rc = MPI_Allgather(mine, 3, MPI_INT, all.data(), 3, MPI_INT, group_comm);
    if (rc != MPI_SUCCESS) {
        MPI_Comm_free(&group_comm);
        return system_error(fn, "MPI_Allgather", rc);
    }
    std::string problem = local_problem;
    std::vector<int> seen(static_cast<std::size_t>(n), 0);
    for (int q = 0; q < n && problem.empty(); ++q) {
        const int their_n = all[3 * q], their_rank = all[3 * q + 1], ok = all[3 * q + 2];
        if (ok == 0)
            problem = "another caller with this id passed a bad argument";
        else if (their_n != n)
            problem = std::to_string(n) + (n == 1 ? " process" : " processes") +
                      " called it with this id, but one says nranks " + std::to_string(their_n);
        else if (seen[static_cast<std::size_t>(their_rank)]++ != 0)
            problem = "two callers with this id both asked for rank " + std::to_string(their_rank);
    }
    if (!problem.empty()) {
        MPI_Comm_free(&group_comm);
        return fail(ncclInvalidArgument, std::string(fn) + ": " + problem);
    }
    // As NCCL does: two ranks of one communicator on one GPU (the same host and PCI bus id,
    // whatever each process's device numbering) fail every rank.
    struct Where {
        char host[64];
        char bus[32];
    } here{};
    gethostname(here.host, sizeof here.host - 1);
    cudaDeviceGetPCIBusId(here.bus, sizeof here.bus, emu::current_device());
    std::vector<Where> where(static_cast<std::size_t>(n));
    rc = MPI_Allgather(&here, sizeof here, MPI_BYTE, where.data(), sizeof here, MPI_BYTE,
                       group_comm);
    if (rc != MPI_SUCCESS) {
        MPI_Comm_free(&group_comm);
        return system_error(fn, "MPI_Allgather", rc);
    }
    for (int a = 0; a < n; ++a)
        for (int b = a + 1; b < n; ++b) {
            const auto& x = where[static_cast<std::size_t>(a)];
            const auto& y = where[static_cast<std::size_t>(b)];
            if (std::strcmp(x.host, y.host) == 0 && std::strcmp(x.bus, y.bus) == 0) {
                MPI_Comm_free(&group_comm);
                return fail(ncclInvalidUsage, std::string(fn) + ": Duplicate GPU detected: rank " +
                                                  std::to_string(a) + " and rank " +
                                                  std::to_string(b) + " both on the GPU at " +
                                                  x.bus);
            }
        }
    // Split with key = rank: the MPI ranks are the NCCL ranks.
    return make_comm(fn, group_comm, emu::current_device(), comm);
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                           ncclConfig_t* config) {
    const char* fn = "ncclCommSplit";
    (void)config; // NULL: inherit the parent's; blocking or not, the emulation completes now
    if (comm == nullptr) return fail(ncclInvalidArgument, "ncclCommSplit: comm is NULL");
    std::string local_problem;
    if (newcomm == nullptr)
        local_problem = "newcomm is NULL";
    else if (color < 0 && color != NCCL_SPLIT_NOCOLOR)
        local_problem =
            "color " + std::to_string(color) + " is neither non-negative nor NCCL_SPLIT_NOCOLOR";
    MPI_Comm child = MPI_COMM_NULL;
    int rc = MPI_Comm_split(comm->ctrl, local_problem.empty() && color >= 0 ? color : MPI_UNDEFINED,
                            key, &child);
    if (rc != MPI_SUCCESS) return system_error(fn, "MPI_Comm_split", rc);
    // Collective agreement on the arguments, so that a bad one fails every rank, hangs none.
    int ok = local_problem.empty() ? 1 : 0, all_ok = 0;
    rc = MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm->ctrl);
    if (rc != MPI_SUCCESS || all_ok == 0) {
        if (child != MPI_COMM_NULL) MPI_Comm_free(&child);
        if (rc != MPI_SUCCESS) return system_error(fn, "MPI_Allreduce", rc);
        return fail(
            ncclInvalidArgument,
            std::string(fn) + ": " +
                (local_problem.empty() ? "another rank passed a bad argument" : local_problem));
    }
    if (child == MPI_COMM_NULL) {
        *newcomm = nullptr;
        return ncclSuccess;
    }
    // The child uses the parent's device.
    return make_comm(fn, child, comm->device, newcomm);
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
    if (comm == nullptr) return ncclSuccess;
    // Collective, as NCCL's implicit finalize is: it waits for every rank of the communicator
    // to destroy it too, so a rank that destroys while the others do not hangs.
    if (comm->ctrl != MPI_COMM_NULL && !mpi_finalized()) {
        MPI_Barrier(comm->ctrl);
        MPI_Comm_free(&comm->ctrl);
    }
    delete comm; // queued operations keep the data channel alive until they have run
    return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
    if (comm == nullptr || asyncError == nullptr)
        return fail(ncclInvalidArgument, "ncclCommGetAsyncError: comm or asyncError is NULL");
    *asyncError = async_error.load();
    return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
    if (comm == nullptr || count == nullptr)
        return fail(ncclInvalidArgument, "ncclCommCount: comm or count is NULL");
    *count = comm->size;
    return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
    if (comm == nullptr || rank == nullptr)
        return fail(ncclInvalidArgument, "ncclCommUserRank: comm or rank is NULL");
    *rank = comm->rank;
    return ncclSuccess;
}

ncclResult_t ncclGroupStart() {
    if (group.depth == 0) group = GroupState{};
    ++group.depth;
    return ncclSuccess;
}

ncclResult_t ncclGroupEnd() {
    if (group.depth == 0) return fail(ncclInvalidUsage, "ncclGroupEnd: no ncclGroupStart to end");
    if (--group.depth > 0) return ncclSuccess;
    return launch();
}

ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream) {
    const char* fn = "ncclAllReduce";
    if (auto r = check_args(fn, comm, count, datatype); r != ncclSuccess) return r;
    if (injected("allreduce")) return fail(ncclSystemError, "ncclAllReduce: injected failure");
    if (injected("stall")) {
        emu::enqueue_stall(stream, [] { async_error = ncclSystemError; });
        return ncclSuccess;
    }
    if (mpi_op(op) == MPI_OP_NULL)
        return fail(ncclInvalidArgument, std::string(fn) + ": reduction " + std::to_string(op) +
                                             " is not emulated (sum, prod, max, min are)");
    const std::size_t bytes = count * type_bytes(datatype);
    check_buffer(fn, "sendbuff", sendbuff, bytes, comm->device);
    check_buffer(fn, "recvbuff", recvbuff, bytes, comm->device);
    if (sendbuff != recvbuff && overlap(sendbuff, bytes, recvbuff, bytes))
        emu::fault(std::string(fn) + ": sendbuff and recvbuff overlap without being equal (the "
                                     "in-place form)");
    return submit(make_op(Kind::AllReduce, comm, sendbuff, recvbuff, count, datatype, op, -1), comm,
                  stream);
}

ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
    const char* fn = "ncclAllGather";
    if (auto r = check_args(fn, comm, sendcount, datatype); r != ncclSuccess) return r;
    const std::size_t bytes = sendcount * type_bytes(datatype);
    const std::size_t total = bytes * static_cast<std::size_t>(comm->size);
    check_buffer(fn, "sendbuff", sendbuff, bytes, comm->device);
    check_buffer(fn, "recvbuff", recvbuff, total, comm->device);
    const bool in_place = sendbuff == static_cast<const char*>(recvbuff) +
                                          static_cast<std::size_t>(comm->rank) * bytes;
    if (!in_place && overlap(sendbuff, bytes, recvbuff, total))
        emu::fault(std::string(fn) + ": sendbuff overlaps recvbuff without being in place "
                                     "(sendbuff == recvbuff + rank * sendcount)");
    return submit(
        make_op(Kind::AllGather, comm, sendbuff, recvbuff, sendcount, datatype, ncclSum, -1), comm,
        stream);
}

ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream) {
    const char* fn = "ncclReduceScatter";
    if (auto r = check_args(fn, comm, recvcount, datatype); r != ncclSuccess) return r;
    if (mpi_op(op) == MPI_OP_NULL)
        return fail(ncclInvalidArgument, std::string(fn) + ": reduction " + std::to_string(op) +
                                             " is not emulated (sum, prod, max, min are)");
    const std::size_t bytes = recvcount * type_bytes(datatype);
    const std::size_t total = bytes * static_cast<std::size_t>(comm->size);
    check_buffer(fn, "sendbuff", sendbuff, total, comm->device);
    check_buffer(fn, "recvbuff", recvbuff, bytes, comm->device);
    const bool in_place = recvbuff == static_cast<const char*>(sendbuff) +
                                          static_cast<std::size_t>(comm->rank) * bytes;
    if (!in_place && overlap(sendbuff, total, recvbuff, bytes))
        emu::fault(std::string(fn) + ": recvbuff overlaps sendbuff without being in place "
                                     "(recvbuff == sendbuff + rank * recvcount)");
    return submit(
        make_op(Kind::ReduceScatter, comm, sendbuff, recvbuff, recvcount, datatype, op, -1), comm,
        stream);
}

ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
    const char* fn = "ncclSend";
    if (auto r = check_args(fn, comm, count, datatype); r != ncclSuccess) return r;
    if (peer < 0 || peer >= comm->size)
        return fail(ncclInvalidArgument, std::string(fn) + ": peer " + std::to_string(peer) +
                                             " is outside a communicator of " +
                                             std::to_string(comm->size));
    check_buffer(fn, "sendbuff", sendbuff, count * type_bytes(datatype), comm->device);
    return submit(make_op(Kind::Send, comm, sendbuff, nullptr, count, datatype, ncclSum, peer),
                  comm, stream);
}

ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
    const char* fn = "ncclRecv";
    if (auto r = check_args(fn, comm, count, datatype); r != ncclSuccess) return r;
    if (peer < 0 || peer >= comm->size)
        return fail(ncclInvalidArgument, std::string(fn) + ": peer " + std::to_string(peer) +
                                             " is outside a communicator of " +
                                             std::to_string(comm->size));
    check_buffer(fn, "recvbuff", recvbuff, count * type_bytes(datatype), comm->device);
    return submit(make_op(Kind::Recv, comm, nullptr, recvbuff, count, datatype, ncclSum, peer),
                  comm, stream);
}

} // extern "C"
