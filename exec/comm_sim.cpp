// The sim communicator: one thread per rank, collectives through shared memory.
//
// Every group (a mesh axis line, or the world) has one rendezvous. A collective publishes the
// member's buffers in its slot and waits at a first barrier; then every member reads what it
// needs straight from the other members' buffers into its receive buffer, or, when that
// overlaps a published buffer (in-place use), into a private staging buffer written to it
// after a second barrier; that barrier keeps all buffers alive until every member has read
// them. Copies, reductions and staging go through the rank's Memory: host memory here, a GPU
// for the cuda backend (comm_cuda.cpp).
//
// Failure: the first exception of any rank's body is recorded and sets the abort flag; every
// rank waiting at a first barrier (or arriving at one later) throws "stopped". The second
// barrier of a collective is never abandoned: every member that passed the first barrier
// reaches it without blocking, and leaving early would free buffers another member may still
// be reading. A rank whose body returns while its group waits for it in a collective makes
// the waiters throw (the calls did not match), so nothing hangs.
#include "exec/comm.hpp"
#include "exec/tensor.hpp"
#include "semantics/mesh_coords.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <exception>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace shardscope::exec {

std::size_t dtype_bytes(DType t) {
    switch (t) {
    case DType::F32:
        return sizeof(float);
    case DType::F64:
        return sizeof(double);
    }
    throw ExecError("unknown element type");
}

int MeshShape::device_count() const {
    long long n = 1;
    for (int s : sizes) {
        if (s < 1) throw ExecError("mesh axis size " + std::to_string(s) + " is not positive");
        n *= s;
        if (n > std::numeric_limits<int>::max()) throw ExecError("mesh has too many devices");
    }
    return static_cast<int>(n);
}

std::vector<int> MeshShape::coords(int rank) const {
    int n = device_count();
    if (rank < 0 || rank >= n)
        throw ExecError("device " + std::to_string(rank) + " is not in a mesh of " +
                        std::to_string(n) + " devices");
    int index = rank;
    if (!devices.empty()) {
        index = -1;
        for (std::size_t i = 0; i < devices.size(); ++i)
            if (devices[i] == rank) {
                index = static_cast<int>(i);
                break;
            }
        if (index < 0 || index >= n)
            throw ExecError("device " + std::to_string(rank) + " has no place in the mesh");
    }
    std::vector<int> c(sizes.size());
    semantics::row_major_coords(sizes, index, c);
    return c;
}

MeshShape::GroupPlace MeshShape::group_place(int rank, const std::vector<int>& axes) const {
    const auto c = coords(rank);
    std::vector<char> in(sizes.size(), 0);
    GroupPlace g;
    for (int k : axes) {
        if (k < 0 || static_cast<std::size_t>(k) >= sizes.size()) throw_axis_error(k, sizes.size());
        if (in[static_cast<std::size_t>(k)])
            throw ExecError("mesh axis " + std::to_string(k) + " appears twice in one group");
        in[static_cast<std::size_t>(k)] = 1;
        g.position =
            g.position * sizes[static_cast<std::size_t>(k)] + c[static_cast<std::size_t>(k)];
        g.size *= sizes[static_cast<std::size_t>(k)];
    }
    for (std::size_t k = 0; k < sizes.size(); ++k)
        if (!in[k]) g.colour = g.colour * sizes[k] + c[k];
    return g;
}

std::vector<int> MeshShape::group_members(int rank, const std::vector<int>& axes) const {
    const auto place = group_place(rank, axes);
    std::vector<int> out(static_cast<std::size_t>(place.size), -1);
    auto c = coords(rank);
    for (int q = 0; q < place.size; ++q) {
        int rest = q;
        for (auto k = axes.rbegin(); k != axes.rend(); ++k) {
            c[static_cast<std::size_t>(*k)] = rest % sizes[static_cast<std::size_t>(*k)];
            rest /= sizes[static_cast<std::size_t>(*k)];
        }
        out[static_cast<std::size_t>(q)] = device_at(c);
    }
    return out;
}

int MeshShape::device_at(const std::vector<int>& c) const {
    if (c.size() != sizes.size())
        throw ExecError("mesh coordinates have " + std::to_string(c.size()) +
                        " entries for a mesh of " + std::to_string(sizes.size()) + " axes");
    long long index = 0;
    for (std::size_t k = 0; k < sizes.size(); ++k) {
        if (c[k] < 0 || c[k] >= sizes[k])
            throw ExecError("mesh coordinate " + std::to_string(c[k]) + " is outside axis " +
                            std::to_string(k) + " of size " + std::to_string(sizes[k]));
        index = index * sizes[k] + c[k];
    }
    if (devices.empty()) return static_cast<int>(index);
    if (index >= static_cast<long long>(devices.size()))
        throw ExecError("the mesh's device list is shorter than the mesh");
    return devices[static_cast<std::size_t>(index)];
}

namespace detail {

// Shared with comm_mpi.cpp: throws ExecError unless the mesh is well formed (positive sizes,
// `devices` empty or a permutation of 0..n-1).
void check_mesh(const MeshShape& mesh) {
    int n = mesh.device_count();
    if (mesh.devices.empty()) return;
    if (mesh.devices.size() != static_cast<std::size_t>(n))
        throw ExecError("the mesh has " + std::to_string(n) + " coordinates but " +
                        std::to_string(mesh.devices.size()) + " device ids");
    std::vector<char> seen(static_cast<std::size_t>(n), 0);
    for (int d : mesh.devices) {
        if (d < 0 || d >= n)
            throw ExecError("device id " + std::to_string(d) + " is outside 0.." +
                            std::to_string(n - 1));
        if (seen[static_cast<std::size_t>(d)])
            throw ExecError("device id " + std::to_string(d) + " appears twice in the mesh");
        seen[static_cast<std::size_t>(d)] = 1;
    }
}

} // namespace detail

namespace {

struct Stopped : ExecError {
    Stopped() : ExecError("stopped: another rank failed") {}
};

enum class Kind {
    Barrier,
    AllReduce,
    AllGather,
    ReduceScatter,
    AllToAll,
    Permute,
    Exchange,
    Gather
};

const char* kind_name(Kind k) {
    switch (k) {
    case Kind::Barrier:
        return "barrier";
    case Kind::AllReduce:
        return "all_reduce";
    case Kind::AllGather:
        return "all_gather";
    case Kind::ReduceScatter:
        return "reduce_scatter";
    case Kind::AllToAll:
        return "all_to_all";
    case Kind::Permute:
        return "permute";
    case Kind::Exchange:
        return "exchange";
    case Kind::Gather:
        return "gather_to_root";
    }
    return "?";
}

/// What a member publishes for one collective.
struct Slot {
    Kind kind = Kind::Barrier;
    const void* send = nullptr;
    std::size_t count = 0;
    DType type = DType::F32;
    PartialOp op = PartialOp::Sum;
    int to = 0;
    const std::vector<char>* bytes = nullptr;     // gather_to_root
    std::size_t send_bytes = 0;                   // the extent of `send`
    const std::vector<SendPart>* parts = nullptr; // exchange: the member's sends
};

/// The state shared by all ranks of one run_sim.
struct World {
    std::mutex m;
    std::condition_variable cv;
    bool aborted = false;
    std::exception_ptr first;
    std::vector<char> finished; // by rank: its body returned normally
};

/// One group's rendezvous (guarded by World::m, except the slots during a collective's work
/// phase, when they are read-only).
struct GroupState {
    std::string name;         // "axis 1", "world"
    std::vector<int> members; // rank of each member position
    std::vector<Slot> slots;
    int arrived = 0;
    std::uint64_t generation = 0;
};

/// The groups over several mesh axes, made on first use by whichever member asks first (all
/// members get the same state): by (axes, colour). Guarded by World::m.
struct GroupRegistry {
    const MeshShape* mesh = nullptr;
    std::map<std::pair<std::vector<int>, int>, std::unique_ptr<GroupState>> groups;
};

template <class T>
void reduce_rows(T* out, const std::vector<const T*>& in, std::size_t count, PartialOp op) {
    for (std::size_t i = 0; i < count; ++i)
        out[i] = in[0][i];
    for (std::size_t q = 1; q < in.size(); ++q) {
        const T* src = in[q];
        if (op == PartialOp::Sum) {
            for (std::size_t i = 0; i < count; ++i)
                out[i] += src[i];
        } else {
            for (std::size_t i = 0; i < count; ++i)
                if (src[i] > out[i]) out[i] = src[i];
        }
    }
}

void copy_bytes(void* dst, const void* src, std::size_t n) {
    if (n > 0) std::memcpy(dst, src, n);
}

/// Host memory: staging in the heap, memcpy, reductions in member order.
class HostMemory final : public Memory {
public:
    std::shared_ptr<void> alloc(std::size_t bytes) override {
        return std::shared_ptr<void>(new char[std::max<std::size_t>(bytes, 1)](),
                                     [](void* p) { delete[] static_cast<char*>(p); });
    }
    void copy(void* dst, const void* src, std::size_t bytes) override {
        copy_bytes(dst, src, bytes);
    }
    void reduce(void* out, const std::vector<const void*>& in, std::size_t count, DType type,
                PartialOp op) override {
        if (type == DType::F32) {
            std::vector<const float*> p;
            for (const void* s : in)
                p.push_back(static_cast<const float*>(s));
            reduce_rows(static_cast<float*>(out), p, count, op);
        } else {
            std::vector<const double*> p;
            for (const void* s : in)
                p.push_back(static_cast<const double*>(s));
            reduce_rows(static_cast<double*>(out), p, count, op);
        }
    }
};

/// out[i] = op over members q of (block `block` of member q's send buffer)[i].
void reduce_block(Memory& memory, void* out, const std::vector<Slot>& slots, std::size_t block,
                  std::size_t count, DType type, PartialOp op) {
    const std::size_t offset = block * count * dtype_bytes(type);
    std::vector<const void*> in;
    for (const Slot& s : slots)
        in.push_back(static_cast<const char*>(s.send) + offset);
    memory.reduce(out, in, count, type, op);
}

class SimGroup final : public Group {
public:
    SimGroup(World& world, GroupState& state, int position, std::unique_ptr<Memory>& memory)
        : world_(world), state_(state), position_(position), memory_(memory) {}

    int size() const override { return static_cast<int>(state_.members.size()); }
    int rank() const override { return position_; }

    void all_reduce(void* buf, std::size_t count, DType type, PartialOp op) override {
        std::size_t bytes = checked_bytes(count, type);
        need(buf, bytes, "all_reduce");
        const auto n = static_cast<std::size_t>(size());
        if (n > 1 && count >= 4096 * n) {
            // Large buffers: reduce-scatter then all-gather, so each member reduces only its
            // 1/n of the data (every member still gets the same bits: one member reduces each
            // block, in member order).
            const std::size_t block = (count + n - 1) / n, elem = bytes / count;
            auto padded = memory_->alloc(block * n * elem), mine = memory_->alloc(block * elem);
            memory_->copy(padded.get(), buf, bytes);
            reduce_scatter(padded.get(), mine.get(), block, type, op);
            all_gather(mine.get(), padded.get(), block, type);
            memory_->copy(buf, padded.get(), bytes);
            memory_->finish();
            return;
        }
        Slot s{Kind::AllReduce, buf, count, type, op, 0, nullptr, bytes};
        collective(s, bytes, buf, [&](const std::vector<Slot>& slots, void* out) {
            reduce_block(*memory_, out, slots, 0, count, type, op);
        });
    }

    void all_gather(const void* send, void* recv, std::size_t count, DType type) override {
        std::size_t bytes = checked_bytes(count, type);
        need(send, bytes, "all_gather");
        need(recv, bytes * static_cast<std::size_t>(size()), "all_gather");
        Slot s{Kind::AllGather, send, count, type, PartialOp::Sum, 0, nullptr, bytes};
        collective(s, bytes * static_cast<std::size_t>(size()), recv,
                   [&](const std::vector<Slot>& slots, void* out) {
                       for (std::size_t q = 0; q < slots.size(); ++q)
                           memory_->copy(static_cast<char*>(out) + q * bytes, slots[q].send, bytes);
                   });
    }

    void reduce_scatter(const void* send, void* recv, std::size_t count, DType type,
                        PartialOp op) override {
        std::size_t bytes = checked_bytes(count, type);
        need(send, bytes * static_cast<std::size_t>(size()), "reduce_scatter");
        need(recv, bytes, "reduce_scatter");
        Slot s{Kind::ReduceScatter,
               send,
               count,
               type,
               op,
               0,
               nullptr,
               bytes * static_cast<std::size_t>(size())};
        collective(s, bytes, recv, [&](const std::vector<Slot>& slots, void* out) {
            reduce_block(*memory_, out, slots, static_cast<std::size_t>(position_), count, type,
                         op);
        });
    }

    void all_to_all(const void* send, void* recv, std::size_t count, DType type) override {
        std::size_t bytes = checked_bytes(count, type);
        std::size_t total = bytes * static_cast<std::size_t>(size());
        need(send, total, "all_to_all");
        need(recv, total, "all_to_all");
        Slot s{Kind::AllToAll, send, count, type, PartialOp::Sum, 0, nullptr, total};
        collective(s, total, recv, [&](const std::vector<Slot>& slots, void* out) {
            std::size_t mine = static_cast<std::size_t>(position_) * bytes;
            for (std::size_t q = 0; q < slots.size(); ++q)
                memory_->copy(static_cast<char*>(out) + q * bytes,
                              static_cast<const char*>(slots[q].send) + mine, bytes);
        });
    }

    void permute(const void* send, void* recv, std::size_t count, DType type, int to,
                 int from) override {
        for (int m : {to, from})
            if (m < 0 || m >= size())
                throw ExecError("permute: member " + std::to_string(m) + " is outside a group of " +
                                std::to_string(size()));
        std::size_t bytes = checked_bytes(count, type);
        need(send, bytes, "permute");
        need(recv, bytes, "permute");
        Slot s{Kind::Permute, send, count, type, PartialOp::Sum, to, nullptr, bytes};
        collective(s, bytes, recv, [&](const std::vector<Slot>& slots, void* out) {
            const Slot& src = slots[static_cast<std::size_t>(from)];
            if (src.to != position_)
                throw ExecError("permute in " + state_.name + ": member " +
                                std::to_string(position_) + " receives from member " +
                                std::to_string(from) + ", which sends to member " +
                                std::to_string(src.to));
            memory_->copy(out, src.send, bytes);
        });
    }

    void exchange(const std::vector<SendPart>& sends, const std::vector<RecvPart>& recvs,
                  DType type) override {
        const std::size_t elem = dtype_bytes(type);
        for (const auto& p : sends) {
            exchange_peer(p.peer, size(), position_, "a send to");
            need(p.data, p.count * elem, "exchange");
        }
        for (const auto& p : recvs) {
            exchange_peer(p.peer, size(), position_, "a receive from");
            need(p.data, p.count * elem, "exchange");
        }
        Slot s{Kind::Exchange, nullptr, 0, type, PartialOp::Sum, 0, nullptr, 0, &sends};
        memory_->finish();
        wait_first(s);
        // Each receive reads its peer's matching send; a receive that overlaps some member's
        // send buffer is staged and written after every member has read.
        std::vector<std::pair<std::size_t, std::shared_ptr<void>>> staged;
        std::exception_ptr err;
        try {
            check_same(s);
            for (std::size_t i = 0; i < recvs.size(); ++i) {
                const auto& r = recvs[i];
                const Slot& from = state_.slots[static_cast<std::size_t>(r.peer)];
                const SendPart* match = nullptr;
                for (const auto& p : *from.parts)
                    if (p.peer == position_) match = &p;
                if (match == nullptr || match->count != r.count)
                    throw ExecError(
                        "exchange in " + state_.name + ": member " + std::to_string(position_) +
                        " receives " + std::to_string(r.count) + " elements from member " +
                        std::to_string(r.peer) + ", which sends it " +
                        (match ? std::to_string(match->count) + " elements" : "nothing"));
                const std::size_t bytes = r.count * elem;
                void* out = r.data;
                if (overlaps_any_send(r.data, bytes)) {
                    staged.emplace_back(i, memory_->alloc(bytes));
                    out = staged.back().second.get();
                }
                memory_->copy(out, match->data, bytes);
            }
            for (std::size_t q = 0; q < state_.slots.size(); ++q)
                for (const auto& p : *state_.slots[q].parts)
                    if (p.peer == position_ &&
                        std::none_of(recvs.begin(), recvs.end(), [&](const RecvPart& r) {
                            return r.peer == static_cast<int>(q);
                        }))
                        throw ExecError("exchange in " + state_.name + ": member " +
                                        std::to_string(q) + " sends member " +
                                        std::to_string(position_) +
                                        " elements that it does not receive");
            memory_->finish();
        } catch (...) {
            err = std::current_exception();
        }
        wait_second();
        if (err) std::rethrow_exception(err);
        for (const auto& [i, buf] : staged)
            memory_->copy(recvs[i].data, buf.get(), recvs[i].count * elem);
        memory_->finish();
    }

    void barrier() override {
        Slot s;
        wait_first(s);
        std::exception_ptr err;
        try {
            check_same(s);
        } catch (...) {
            err = std::current_exception();
        }
        wait_second();
        if (err) std::rethrow_exception(err);
    }

    /// gather_to_root over this (world) group.
    std::vector<std::vector<char>> gather(const std::vector<char>& mine) {
        Slot s;
        s.kind = Kind::Gather;
        s.bytes = &mine;
        wait_first(s);
        std::vector<std::vector<char>> result;
        std::exception_ptr err;
        try {
            check_same(s);
            if (position_ == 0)
                for (const Slot& o : state_.slots)
                    result.push_back(*o.bytes);
        } catch (...) {
            err = std::current_exception();
        }
        wait_second();
        if (err) std::rethrow_exception(err);
        return result;
    }

private:
    World& world_;
    GroupState& state_;
    int position_;
    std::unique_ptr<Memory>& memory_; // the rank's, set before its body runs

    /// count elements of `type` in bytes, after checking that size() such blocks fit.
    std::size_t checked_bytes(std::size_t count, DType type) const {
        std::size_t per = dtype_bytes(type) * static_cast<std::size_t>(size());
        if (count > std::numeric_limits<std::size_t>::max() / per)
            throw ExecError("collective of " + std::to_string(count) + " elements is too large");
        return count * dtype_bytes(type);
    }

    static void need(const void* p, std::size_t bytes, const char* what) {
        if (p == nullptr && bytes > 0)
            throw ExecError(std::string(what) + ": null buffer for a non-empty collective");
    }

    /// Publishes `s` and waits until every member has; throws Stopped when the run aborts
    /// first, and ExecError when a member has returned from its body instead of joining.
    void wait_first(const Slot& s) {
        std::unique_lock lock(world_.m);
        if (world_.aborted) throw Stopped();
        state_.slots[static_cast<std::size_t>(position_)] = s;
        if (arrive()) return;
        std::uint64_t gen = state_.generation;
        int gone = -1;
        world_.cv.wait(lock, [&] {
            if (state_.generation != gen || world_.aborted) return true;
            for (int r : state_.members)
                if (world_.finished[static_cast<std::size_t>(r)]) {
                    gone = r;
                    return true;
                }
            return false;
        });
        if (state_.generation != gen) return;
        if (world_.aborted) throw Stopped();
        throw ExecError("rank " + std::to_string(gone) + " returned without joining the " +
                        kind_name(s.kind) + " in " + state_.name +
                        " (every member must make the same collective calls)");
    }

    /// Waits until every member has finished reading the published buffers. Never abandoned:
    /// every member that passed wait_first gets here without blocking.
    void wait_second() {
        std::unique_lock lock(world_.m);
        if (arrive()) return;
        std::uint64_t gen = state_.generation;
        world_.cv.wait(lock, [&] { return state_.generation != gen; });
    }

    /// Counts this member in (lock held); true when it was the last and the barrier opens.
    bool arrive() {
        if (++state_.arrived < static_cast<int>(state_.members.size())) return false;
        state_.arrived = 0;
        ++state_.generation;
        world_.cv.notify_all();
        return true;
    }

    void check_same(const Slot& s) const {
        for (std::size_t q = 0; q < state_.slots.size(); ++q) {
            const Slot& o = state_.slots[q];
            std::string what;
            if (o.kind != s.kind)
                what = std::string("calls ") + kind_name(o.kind);
            else if (o.count != s.count)
                what = "passes " + std::to_string(o.count) + " elements, not " +
                       std::to_string(s.count);
            else if (o.type != s.type)
                what = "passes another element type";
            else if (o.op != s.op)
                what = "reduces with another operation";
            if (!what.empty())
                throw ExecError(std::string(kind_name(s.kind)) + " in " + state_.name +
                                ": member " + std::to_string(q) + " " + what);
        }
    }

    /// The rendezvous: publish, compute into a staging buffer from the members' buffers,
    /// wait until all have read, then write the result into `recv`.
    template <class Work>
    void collective(const Slot& s, std::size_t out_bytes, void* recv, Work&& work) {
        // This rank's earlier (asynchronous) writes to what it publishes are complete.
        memory_->finish();
        wait_first(s);
        std::shared_ptr<void> staged;
        std::exception_ptr err;
        try {
            check_same(s);
            // Straight into `recv` unless it overlaps a buffer some member publishes (in-place
            // use): then through a staging buffer, written to `recv` after every read.
            if (overlaps_a_send(recv, out_bytes)) staged = memory_->alloc(out_bytes);
            work(state_.slots, staged ? staged.get() : recv);
            // Every read of the other members' buffers is done before they may be released.
            memory_->finish();
        } catch (...) {
            err = std::current_exception();
        }
        wait_second();
        if (err) std::rethrow_exception(err);
        if (staged) memory_->copy(recv, staged.get(), out_bytes);
        memory_->finish();
    }

    /// Whether `recv` overlaps a send buffer of any member's exchange.
    bool overlaps_any_send(const void* recv, std::size_t bytes) const {
        const auto r = reinterpret_cast<std::uintptr_t>(recv);
        for (const Slot& o : state_.slots)
            for (const auto& p : *o.parts) {
                const auto at = reinterpret_cast<std::uintptr_t>(p.data);
                const auto n = p.count * dtype_bytes(o.type);
                if (bytes > 0 && n > 0 && r < at + n && at < r + bytes) return true;
            }
        return false;
    }

    bool overlaps_a_send(const void* recv, std::size_t bytes) const {
        const auto r = reinterpret_cast<std::uintptr_t>(recv);
        for (const Slot& o : state_.slots) {
            const auto p = reinterpret_cast<std::uintptr_t>(o.send);
            if (bytes > 0 && o.send_bytes > 0 && r < p + o.send_bytes && p < r + bytes) return true;
        }
        return false;
    }
};

} // namespace

int exchange_peer(int peer, int size, int self, const char* what) {
    if (peer < 0 || peer >= size || peer == self)
        throw ExecError(std::string("exchange: ") + what + " member " + std::to_string(peer) +
                        ", not another member of a group of " + std::to_string(size));
    return peer;
}

void throw_axis_error(int k, std::size_t axes) {
    throw ExecError("mesh axis " + std::to_string(k) + " is outside a mesh of " +
                    std::to_string(axes) + " axes");
}

namespace {

class SimCommunicator final : public Communicator {
public:
    SimCommunicator(int rank, int size, World& world, GroupRegistry& registry)
        : rank_(rank), size_(size), world_state_(world), registry_(registry) {}
    int rank() const override { return rank_; }
    int size() const override { return size_; }
    Group& axis(int k) override { return axis_at(axes_, k); }
    Group& group(const std::vector<int>& axes) override {
        if (axes.size() == 1) return axis(axes.front());
        if (auto it = groups_.find(axes); it != groups_.end()) return *it->second;
        const auto place = registry_.mesh->group_place(rank_, axes);
        GroupState* state = nullptr;
        {
            std::lock_guard lock(world_state_.m);
            auto& g = registry_.groups[{axes, place.colour}];
            if (!g) {
                g = std::make_unique<GroupState>();
                g->name = "axes";
                for (int k : axes)
                    g->name += " " + std::to_string(k);
                g->members = registry_.mesh->group_members(rank_, axes);
                g->slots.resize(g->members.size());
            }
            state = g.get();
        }
        auto& mine = groups_[axes];
        mine = std::make_unique<SimGroup>(world_state_, *state, place.position, memory_);
        return *mine;
    }
    Group& world() override { return *world_; }
    std::vector<std::vector<char>> gather_to_root(const std::vector<char>& mine) override {
        return world_->gather(mine);
    }

    std::vector<std::unique_ptr<SimGroup>> axes_;
    std::unique_ptr<SimGroup> world_;
    std::unique_ptr<Memory> memory_;

private:
    int rank_;
    int size_;
    World& world_state_;
    GroupRegistry& registry_;
    std::map<std::vector<int>, std::unique_ptr<SimGroup>> groups_;
};

} // namespace

void run_sim(const MeshShape& mesh, const std::function<void(Communicator&)>& body,
             const MemoryFactory& memory) {
    detail::check_mesh(mesh);
    const int n = mesh.device_count();
    const std::size_t axes = mesh.sizes.size();

    World world;
    world.finished.assign(static_cast<std::size_t>(n), 0);

    std::vector<std::unique_ptr<GroupState>> groups;
    auto new_group = [&](std::string name, int size) {
        auto g = std::make_unique<GroupState>();
        g->name = std::move(name);
        g->members.assign(static_cast<std::size_t>(size), -1);
        g->slots.resize(static_cast<std::size_t>(size));
        groups.push_back(std::move(g));
        return groups.back().get();
    };

    GroupRegistry registry;
    registry.mesh = &mesh;
    std::vector<std::unique_ptr<SimCommunicator>> comms;
    for (int r = 0; r < n; ++r)
        comms.push_back(std::make_unique<SimCommunicator>(r, n, world, registry));

    GroupState* all = new_group("world", n);
    for (int r = 0; r < n; ++r) {
        all->members[static_cast<std::size_t>(r)] = r;
        auto& c = *comms[static_cast<std::size_t>(r)];
        c.world_ = std::make_unique<SimGroup>(world, *all, r, c.memory_);
    }
    for (std::size_t k = 0; k < axes; ++k) {
        // One group per line along axis k: the ranks that agree on every other coordinate.
        std::map<std::vector<int>, GroupState*> lines;
        for (int r = 0; r < n; ++r) {
            std::vector<int> c = mesh.coords(r);
            int position = c[k];
            c[k] = -1;
            GroupState*& g = lines[c];
            if (g == nullptr) g = new_group("axis " + std::to_string(k), mesh.sizes[k]);
            g->members[static_cast<std::size_t>(position)] = r;
            auto& cr = *comms[static_cast<std::size_t>(r)];
            cr.axes_.push_back(std::make_unique<SimGroup>(world, *g, position, cr.memory_));
        }
    }

    // The first failure stops every rank.
    auto fail = [&](std::exception_ptr e) {
        std::lock_guard lock(world.m);
        if (!world.aborted) {
            world.first = e;
            world.aborted = true;
        }
        world.cv.notify_all();
    };
    auto run_rank = [&](int r) {
        try {
            auto& c = *comms[static_cast<std::size_t>(r)];
            c.memory_ = memory ? memory(r) : std::make_unique<HostMemory>();
            body(c);
        } catch (...) {
            fail(std::current_exception());
            return;
        }
        std::lock_guard lock(world.m);
        world.finished[static_cast<std::size_t>(r)] = 1;
        world.cv.notify_all();
    };

    std::vector<std::thread> threads;
    threads.reserve(static_cast<std::size_t>(n));
    try {
        for (int r = 0; r < n; ++r)
            threads.emplace_back(run_rank, r);
    } catch (...) {
        // Could not start every thread: stop those that run, then report.
        fail(std::current_exception());
    }
    for (auto& t : threads)
        t.join();
    if (world.first) std::rethrow_exception(world.first);
}

} // namespace shardscope::exec
