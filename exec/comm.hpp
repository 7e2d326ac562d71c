// The executor's communicator: collectives among the ranks of one mesh axis (the sub-groups
// of a DeviceMesh), behind one interface so that sim (threads), MPI and later NCCL backends
// are interchangeable.
#pragma once

#include "semantics/partial_op.hpp"

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace shardscope::exec {

enum class DType { F32, F64 };
std::size_t dtype_bytes(DType t);

/// What a reducing collective computes: the Plan's own operator.
using semantics::PartialOp;

/// The ranks that share every mesh coordinate but one (a mesh axis through this rank), or the
/// whole world. Members are numbered 0..size()-1 by their coordinate along the axis. Every
/// member must make the same calls in the same order (as with MPI and NCCL).
/// Throws the ExecError for a mesh axis `k` outside a mesh of `axes` axes.
[[noreturn]] void throw_axis_error(int k, std::size_t axes);
/// `peer` when it is another member of a group of `size` in which this member is `self`;
/// else the ExecError of an exchange (`what`: "a send to", "a receive from").
int exchange_peer(int peer, int size, int self, const char* what);

/// One message of an exchange: `count` elements sent to member `peer`.
struct SendPart {
    int peer = 0;
    const void* data = nullptr;
    std::size_t count = 0;
};
/// One message of an exchange: `count` elements received from member `peer`.
struct RecvPart {
    int peer = 0;
    void* data = nullptr;
    std::size_t count = 0;
};

class Group {
public:
    virtual ~Group() = default;
    virtual int size() const = 0;
    virtual int rank() const = 0; ///< this rank's position in the group
    /// In place: every member ends with the elementwise reduction of all members' buffers.
    virtual void all_reduce(void* buf, std::size_t count, DType type, PartialOp op) = 0;
    /// `recv` holds size()*count elements: member q's `send` lands at offset q*count.
    virtual void all_gather(const void* send, void* recv, std::size_t count, DType type) = 0;
    /// `send` holds size()*count elements; member q receives in `recv` (count elements) the
    /// reduction over all members of their block q.
    virtual void reduce_scatter(const void* send, void* recv, std::size_t count, DType type,
                                PartialOp op) = 0;
    /// `send` and `recv` hold size()*count elements: block q of `send` goes to member q, block
    /// q of `recv` comes from member q.
    virtual void all_to_all(const void* send, void* recv, std::size_t count, DType type) = 0;
    /// Sends `send` to member `to` and receives `recv` from member `from` (count elements).
    virtual void permute(const void* send, void* recv, std::size_t count, DType type, int to,
                         int from) = 0;
    /// Point-to-point messages, all at once (MPI_Isend/Irecv, grouped ncclSend/ncclRecv):
    /// every member calls it, each with its own lists (either may be empty). The lists agree:
    /// member p's send to q is q's receive from p, of the same count; at most one message per
    /// ordered pair, none to itself.
    virtual void exchange(const std::vector<SendPart>& sends, const std::vector<RecvPart>& recvs,
                          DType type) = 0;
    virtual void barrier() = 0;
};

/// One rank's view of the world: its rank, and a Group per mesh axis.
class Communicator {
public:
    virtual ~Communicator() = default;
    virtual int rank() const = 0; ///< the device id (see MeshShape::devices)
    virtual int size() const = 0;
    /// The group along mesh axis k through this rank.
    virtual Group& axis(int k) = 0;
    /// The group over the mesh axes `axes` (distinct, major to minor) through this rank: the
    /// ranks that share every other coordinate, numbered row-major over the coordinates of
    /// `axes` in that order. One axis is axis(k). Made on first use, collectively (MPI,
    /// NCCL): every rank asks for the same groups in the same order, as for collectives.
    virtual Group& group(const std::vector<int>& axes) = 0;
    /// Every rank; member numbering is the rank.
    virtual Group& world() = 0;
    /// Gathers each rank's bytes on rank 0: there, element r is rank r's `mine`; elsewhere
    /// the result is empty. Sizes may differ between ranks.
    virtual std::vector<std::vector<char>> gather_to_root(const std::vector<char>& mine) = 0;
};

/// axes[k], or an ExecError naming k and the number of axes (shared by the backends).
template <class G>
G& axis_at(const std::vector<std::unique_ptr<G>>& axes, int k) {
    if (k < 0 || k >= static_cast<int>(axes.size())) throw_axis_error(k, axes.size());
    return *axes[static_cast<std::size_t>(k)];
}

/// The mesh as the communicator needs it: axis sizes (major to minor) and the device id at
/// each coordinate, row-major (empty = identity: the device at coordinate c is rank c).
struct MeshShape {
    std::vector<int> sizes;
    std::vector<int> devices;
    int device_count() const;
    /// The coordinates of device `rank` (inverse of `devices`).
    std::vector<int> coords(int rank) const;
    /// The device at coordinates `c`.
    int device_at(const std::vector<int>& c) const;
    /// Device `rank`'s place in the group over `axes` (see Communicator::group): `colour`,
    /// its coordinates on every other axis row-major (the same for the whole group), and
    /// `position`, row-major over the coordinates of `axes` in their order. Throws the
    /// ExecError for axes outside the mesh or repeated.
    struct GroupPlace {
        int colour = 0;
        int position = 0;
        int size = 1;
    };
    GroupPlace group_place(int rank, const std::vector<int>& axes) const;
    /// Every member of the group over `axes` through device `rank`, by position.
    std::vector<int> group_members(int rank, const std::vector<int>& axes) const;
};

/// Where the buffers of run_sim's collectives live and how they are copied and reduced: host
/// memory by default; device memory for the cuda backend (device.hpp). One per rank, used
/// only from that rank's thread.
class Memory {
public:
    virtual ~Memory() = default;
    /// A staging buffer of `bytes`.
    virtual std::shared_ptr<void> alloc(std::size_t bytes) = 0;
    virtual void copy(void* dst, const void* src, std::size_t bytes) = 0;
    /// out[i] = op over q of in[q][i], i < count.
    virtual void reduce(void* out, const std::vector<const void*>& in, std::size_t count,
                        DType type, PartialOp op) = 0;
    /// Waits until this rank's copies and reductions so far are complete.
    virtual void finish() {}
};

/// Makes rank r's Memory, on r's thread before its body runs.
using MemoryFactory = std::function<std::unique_ptr<Memory>(int rank)>;

/// Runs `body` once per rank of `mesh`, each on its own thread with a sim communicator
/// (collectives through shared memory, or through `memory`'s buffers when given). Rethrows
/// the first exception of any rank after all threads have stopped; a rank that throws makes
/// every other rank's pending or next collective throw too, so nothing hangs.
void run_sim(const MeshShape& mesh, const std::function<void(Communicator&)>& body,
             const MemoryFactory& memory = {});

/// True when this binary was built with MPI support.
bool mpi_available();
/// True when the process was started by mpirun (OMPI_COMM_WORLD_SIZE or PMI_SIZE is set).
bool launched_by_mpirun();
/// Initialises MPI (once) and returns this process's communicator over `mesh`. Throws
/// ExecError when the world size differs from mesh.device_count(), saying both numbers
/// and the mpirun command line to use.
std::unique_ptr<Communicator> make_mpi(const MeshShape& mesh);
/// Aborts every MPI rank with `code` (after an error on this one, so that no rank hangs).
[[noreturn]] void abort_mpi(int code);
/// Finalises MPI if it was initialised (call once, at exit).
void finalize_mpi();

} // namespace shardscope::exec
