// The sim communicator: group geometry against mesh coordinates, every collective's exact
// result in F32 and F64 (integer-valued data, so sums compare exactly), long runs of
// collectives, and failure handling (a throwing rank, a rank that skips a collective,
// mismatched calls) without hangs.
#include "exec/comm.hpp"
#include "exec/tensor.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

using namespace shardscope::exec;

namespace {

/// The mesh's geometry computed here, independently of MeshShape's own functions.
struct Geometry {
    std::vector<int> sizes;
    std::vector<std::vector<int>> coord_of; // by device id
    std::map<std::vector<int>, int> device_of;

    explicit Geometry(const MeshShape& m) : sizes(m.sizes) {
        int n = 1;
        for (int s : sizes)
            n *= s;
        coord_of.resize(static_cast<std::size_t>(n));
        for (int index = 0; index < n; ++index) {
            std::vector<int> c(sizes.size());
            int stride = n;
            for (std::size_t k = 0; k < sizes.size(); ++k) {
                stride /= sizes[k];
                c[k] = (index / stride) % sizes[k];
            }
            int device = m.devices.empty() ? index : m.devices[static_cast<std::size_t>(index)];
            coord_of[static_cast<std::size_t>(device)] = c;
            device_of[c] = device;
        }
    }
    int count() const { return static_cast<int>(coord_of.size()); }
    /// The devices along axis k through `device`, by their coordinate along k.
    std::vector<int> line(int device, int k) const {
        std::vector<int> c = coord_of[static_cast<std::size_t>(device)];
        std::vector<int> out;
        for (int i = 0; i < sizes[static_cast<std::size_t>(k)]; ++i) {
            c[static_cast<std::size_t>(k)] = i;
            out.push_back(device_of.at(c));
        }
        return out;
    }
    std::vector<int> everyone() const {
        std::vector<int> out;
        for (int d = 0; d < count(); ++d)
            out.push_back(d);
        return out;
    }
};

/// Failures reported by rank threads, checked on the test's thread.
struct Log {
    std::mutex m;
    std::vector<std::string> errors;
    int checks = 0;
    void expect(bool ok, const std::string& what) {
        std::lock_guard lock(m);
        ++checks;
        if (!ok) errors.push_back(what);
    }
};

void report(Log& log, int min_checks) {
    for (std::size_t i = 0; i < log.errors.size() && i < 20; ++i)
        MESSAGE(log.errors[i]);
    CHECK(log.errors.empty());
    CHECK(log.checks >= min_checks);
}

/// run_sim, but a hang fails the test (the process aborts) instead of blocking ctest.
void run_guarded(const MeshShape& mesh, const std::function<void(Communicator&)>& body) {
    auto done = std::async(std::launch::async, [&] { run_sim(mesh, body); });
    if (done.wait_for(std::chrono::seconds(60)) == std::future_status::timeout) {
        std::fprintf(stderr, "run_sim did not return within 60 s: a deadlock\n");
        std::abort();
    }
    done.get();
}

/// Integer-valued element i of some buffer of `device` (distinct per device and salt).
double val(int device, std::size_t i, int salt) {
    return static_cast<double>((device * 13 + static_cast<int>(i) * 7 + salt * 5 + 1000) % 17 - 8);
}

double fold(PartialOp op, const std::vector<double>& xs) {
    double acc = xs[0];
    for (std::size_t q = 1; q < xs.size(); ++q)
        acc = op == PartialOp::Sum ? acc + xs[q] : std::max(acc, xs[q]);
    return acc;
}

const char* op_name(PartialOp op) {
    return op == PartialOp::Sum ? "sum" : "max";
}

/// Every collective of `g`, whose members (by position) are the devices `members`, checked
/// against values computed here. `me` is this rank's device id.
template <class T>
void check_group(Group& g, const std::vector<int>& members, int me, const std::string& name,
                 Log& log, int salt) {
    const DType type = sizeof(T) == 4 ? DType::F32 : DType::F64;
    const std::string where =
        name + (sizeof(T) == 4 ? " f32" : " f64") + " on device " + std::to_string(me) + ": ";
    const int n = static_cast<int>(members.size());
    const auto pos_it = std::find(members.begin(), members.end(), me);
    const int p = static_cast<int>(pos_it - members.begin());
    log.expect(g.size() == n,
               where + "size " + std::to_string(g.size()) + ", expected " + std::to_string(n));
    log.expect(g.rank() == p,
               where + "rank " + std::to_string(g.rank()) + ", expected " + std::to_string(p));
    if (g.size() != n || g.rank() != p) return; // the rest would index out of range

    for (PartialOp op : {PartialOp::Sum, PartialOp::Max}) {
        const std::string w = where + op_name(op) + " ";
        // all_reduce, in place.
        {
            const std::size_t count = 5;
            std::vector<T> buf(count);
            for (std::size_t i = 0; i < count; ++i)
                buf[i] = static_cast<T>(val(me, i, salt));
            g.all_reduce(buf.data(), count, type, op);
            for (std::size_t i = 0; i < count; ++i) {
                std::vector<double> xs;
                for (int d : members)
                    xs.push_back(val(d, i, salt));
                log.expect(buf[i] == static_cast<T>(fold(op, xs)),
                           w + "all_reduce element " + std::to_string(i));
            }
        }
        // reduce_scatter: member p gets the reduction of everyone's block p.
        {
            const std::size_t count = 4;
            std::vector<T> send(count * static_cast<std::size_t>(n)), recv(count, T(-99));
            for (std::size_t i = 0; i < send.size(); ++i)
                send[i] = static_cast<T>(val(me, i, salt + 1));
            g.reduce_scatter(send.data(), recv.data(), count, type, op);
            for (std::size_t i = 0; i < count; ++i) {
                std::vector<double> xs;
                for (int d : members)
                    xs.push_back(val(d, static_cast<std::size_t>(p) * count + i, salt + 1));
                log.expect(recv[i] == static_cast<T>(fold(op, xs)),
                           w + "reduce_scatter element " + std::to_string(i));
            }
        }
    }
    // all_gather: block q is member q's send.
    {
        const std::size_t count = 3;
        std::vector<T> send(count), recv(count * static_cast<std::size_t>(n), T(-99));
        for (std::size_t i = 0; i < count; ++i)
            send[i] = static_cast<T>(val(me, i, salt + 2));
        g.all_gather(send.data(), recv.data(), count, type);
        for (int q = 0; q < n; ++q)
            for (std::size_t i = 0; i < count; ++i)
                log.expect(
                    recv[static_cast<std::size_t>(q) * count + i] ==
                        static_cast<T>(val(members[static_cast<std::size_t>(q)], i, salt + 2)),
                    where + "all_gather block " + std::to_string(q));
    }
    // all_to_all: block q of recv is block p of member q's send.
    {
        const std::size_t count = 2;
        const std::size_t total = count * static_cast<std::size_t>(n);
        std::vector<T> send(total), recv(total, T(-99));
        for (std::size_t i = 0; i < total; ++i)
            send[i] = static_cast<T>(val(me, i, salt + 3));
        g.all_to_all(send.data(), recv.data(), count, type);
        for (int q = 0; q < n; ++q)
            for (std::size_t i = 0; i < count; ++i)
                log.expect(
                    recv[static_cast<std::size_t>(q) * count + i] ==
                        static_cast<T>(val(members[static_cast<std::size_t>(q)],
                                           static_cast<std::size_t>(p) * count + i, salt + 3)),
                    where + "all_to_all block " + std::to_string(q));
    }
    // permute: ring shifts by +1 and -1 (send to p+s, receive from p-s).
    for (int shift : {1, -1}) {
        const std::size_t count = 3;
        const int to = ((p + shift) % n + n) % n;
        const int from = ((p - shift) % n + n) % n;
        std::vector<T> send(count), recv(count, T(-99));
        for (std::size_t i = 0; i < count; ++i)
            send[i] = static_cast<T>(val(me, i, salt + 4 + shift));
        g.permute(send.data(), recv.data(), count, type, to, from);
        for (std::size_t i = 0; i < count; ++i)
            log.expect(recv[i] == static_cast<T>(val(members[static_cast<std::size_t>(from)], i,
                                                     salt + 4 + shift)),
                       where + "permute shift " + std::to_string(shift) + " element " +
                           std::to_string(i));
    }
    // exchange: member p sends p+s (s = 1, 2, where that is another member) s+p elements;
    // counts differ per pair, and a group of one exchanges nothing.
    {
        std::vector<std::vector<T>> out, in;
        std::vector<SendPart> sends;
        std::vector<RecvPart> recvs;
        std::vector<int> froms, shifts;
        for (int shift : {1, 2}) {
            if (shift % n == 0 || (shift == 2 && n == 2)) continue;
            const int from = ((p - shift) % n + n) % n;
            out.emplace_back(static_cast<std::size_t>(shift + p));
            for (std::size_t i = 0; i < out.back().size(); ++i)
                out.back()[i] = static_cast<T>(val(me, i, salt + 10 + shift));
            in.emplace_back(static_cast<std::size_t>(shift + from), T(-99));
            froms.push_back(from);
            shifts.push_back(shift);
        }
        for (std::size_t k = 0; k < out.size(); ++k) {
            sends.push_back({(p + shifts[k]) % n, out[k].data(), out[k].size()});
            recvs.push_back({froms[k], in[k].data(), in[k].size()});
        }
        g.exchange(sends, recvs, type);
        for (std::size_t k = 0; k < in.size(); ++k)
            for (std::size_t i = 0; i < in[k].size(); ++i)
                log.expect(in[k][i] ==
                               static_cast<T>(val(members[static_cast<std::size_t>(froms[k])], i,
                                                  salt + 10 + shifts[k])),
                           where + "exchange shift " + std::to_string(shifts[k]) + " element " +
                               std::to_string(i));
    }
    // Empty collectives are legal, and a barrier.
    g.all_reduce(nullptr, 0, type, PartialOp::Sum);
    g.all_gather(nullptr, nullptr, 0, type);
    g.barrier();
}

std::vector<MeshShape> meshes() {
    return {
        {{1}, {}},
        {{2}, {}},
        {{4}, {}},
        {{2, 2}, {}},
        {{2, 3}, {}},
        {{2, 2, 2}, {}},
        {{2, 2}, {3, 1, 2, 0}},
        {{3, 2}, {5, 0, 3, 1, 4, 2}},
    };
}

std::string mesh_name(const MeshShape& m) {
    std::string s;
    for (int x : m.sizes)
        s += (s.empty() ? "" : "x") + std::to_string(x);
    if (!m.devices.empty()) {
        s += " devices";
        for (int d : m.devices)
            s += " " + std::to_string(d);
    }
    return s;
}

template <class T>
void check_all_collectives() {
    for (const MeshShape& mesh : meshes()) {
        INFO("mesh ", mesh_name(mesh));
        const Geometry geo(mesh);
        Log log;
        run_guarded(mesh, [&](Communicator& c) {
            const int me = c.rank();
            log.expect(c.size() == geo.count(), "communicator size");
            for (int k = 0; k < static_cast<int>(mesh.sizes.size()); ++k)
                check_group<T>(c.axis(k), geo.line(me, k), me, "axis " + std::to_string(k), log, k);
            check_group<T>(c.world(), geo.everyone(), me, "world", log, 7);
        });
        // Per rank, per group: 2 + 2*(5+4) + 3n + 2n + 6 checks at least.
        report(log, geo.count() * static_cast<int>(mesh.sizes.size() + 1) * 26);
    }
}

} // namespace

TEST_CASE("dtype_bytes") {
    CHECK(dtype_bytes(DType::F32) == 4);
    CHECK(dtype_bytes(DType::F64) == 8);
}

TEST_CASE("MeshShape: coordinates and device ids, identity and explicit order") {
    MeshShape id{{2, 3}, {}};
    CHECK(id.device_count() == 6);
    CHECK(id.coords(0) == std::vector<int>{0, 0});
    CHECK(id.coords(4) == std::vector<int>{1, 1});
    CHECK(id.coords(5) == std::vector<int>{1, 2});
    CHECK(id.device_at({0, 2}) == 2);
    CHECK(id.device_at({1, 0}) == 3);

    MeshShape swapped{{2, 2}, {3, 1, 2, 0}};
    CHECK(swapped.device_count() == 4);
    CHECK(swapped.coords(3) == std::vector<int>{0, 0});
    CHECK(swapped.coords(1) == std::vector<int>{0, 1});
    CHECK(swapped.coords(2) == std::vector<int>{1, 0});
    CHECK(swapped.coords(0) == std::vector<int>{1, 1});
    CHECK(swapped.device_at({0, 0}) == 3);
    CHECK(swapped.device_at({1, 1}) == 0);

    MeshShape cube{{2, 2, 2}, {}};
    CHECK(cube.device_count() == 8);
    CHECK(cube.coords(6) == std::vector<int>{1, 1, 0});
    CHECK(cube.device_at({1, 0, 1}) == 5);

    CHECK(MeshShape{{}, {}}.device_count() == 1);
    CHECK_THROWS_AS(id.coords(6), ExecError);
    CHECK_THROWS_AS(id.coords(-1), ExecError);
    CHECK_THROWS_AS(id.device_at({2, 0}), ExecError);
    CHECK_THROWS_AS(id.device_at({0}), ExecError);
}

TEST_CASE("run_sim rejects malformed meshes") {
    auto nothing = [](Communicator&) {};
    CHECK_THROWS_AS(run_sim(MeshShape{{2, 0}, {}}, nothing), ExecError);
    CHECK_THROWS_AS(run_sim(MeshShape{{2, 2}, {0, 1, 2}}, nothing), ExecError);
    CHECK_THROWS_AS(run_sim(MeshShape{{2, 2}, {0, 1, 1, 3}}, nothing), ExecError);
    CHECK_THROWS_AS(run_sim(MeshShape{{2}, {0, 2}}, nothing), ExecError);
}

TEST_CASE("sim: groups follow the mesh coordinates") {
    for (const MeshShape& mesh : meshes()) {
        INFO("mesh ", mesh_name(mesh));
        const Geometry geo(mesh);
        Log log;
        std::vector<int> seen(static_cast<std::size_t>(geo.count()), 0);
        run_guarded(mesh, [&](Communicator& c) {
            const int me = c.rank();
            const std::string who = "device " + std::to_string(me) + ": ";
            {
                std::lock_guard lock(log.m);
                if (me >= 0 && me < geo.count()) ++seen[static_cast<std::size_t>(me)];
            }
            log.expect(c.size() == geo.count(), who + "size");
            log.expect(c.world().size() == geo.count(), who + "world size");
            log.expect(c.world().rank() == me, who + "world rank");
            const std::vector<int>& coords = geo.coord_of[static_cast<std::size_t>(me)];
            for (int k = 0; k < static_cast<int>(mesh.sizes.size()); ++k) {
                log.expect(c.axis(k).size() == mesh.sizes[static_cast<std::size_t>(k)],
                           who + "axis " + std::to_string(k) + " size");
                log.expect(c.axis(k).rank() == coords[static_cast<std::size_t>(k)],
                           who + "axis " + std::to_string(k) + " rank");
            }
            log.expect(mesh.coords(me) == coords, who + "MeshShape::coords");
            log.expect(mesh.device_at(coords) == me, who + "MeshShape::device_at");
        });
        for (int d = 0; d < geo.count(); ++d)
            CHECK(seen[static_cast<std::size_t>(d)] == 1);
        report(log, geo.count() * 5);
    }
}

TEST_CASE("sim: every collective, F32") {
    check_all_collectives<float>();
}

TEST_CASE("sim: every collective, F64") {
    check_all_collectives<double>();
}

TEST_CASE("sim: gather_to_root with a different size per rank") {
    for (const MeshShape& mesh : meshes()) {
        INFO("mesh ", mesh_name(mesh));
        const int n = Geometry(mesh).count();
        auto bytes_of = [](int r) {
            std::vector<char> v(static_cast<std::size_t>((r * 3) % 5));
            for (std::size_t j = 0; j < v.size(); ++j)
                v[j] = static_cast<char>(r * 10 + static_cast<int>(j));
            return v;
        };
        Log log;
        run_guarded(mesh, [&](Communicator& c) {
            for (int round = 0; round < 3; ++round) {
                auto got = c.gather_to_root(bytes_of(c.rank()));
                if (c.rank() == 0) {
                    log.expect(static_cast<int>(got.size()) == n, "root gets every rank");
                    for (int r = 0; r < n && r < static_cast<int>(got.size()); ++r)
                        log.expect(got[static_cast<std::size_t>(r)] == bytes_of(r),
                                   "root: bytes of rank " + std::to_string(r));
                } else {
                    log.expect(got.empty(), "non-root result is empty");
                }
            }
        });
        report(log, 3 * n);
    }
}

TEST_CASE("sim: 200 back-to-back collectives on alternating axes") {
    for (const MeshShape& mesh :
         {MeshShape{{2, 2, 2}, {}}, MeshShape{{2, 3}, {1, 3, 5, 0, 2, 4}}, MeshShape{{4}, {}}}) {
        INFO("mesh ", mesh_name(mesh));
        const Geometry geo(mesh);
        const int axes = static_cast<int>(mesh.sizes.size());
        Log log;
        run_guarded(mesh, [&](Communicator& c) {
            const int me = c.rank();
            for (int it = 0; it < 200; ++it) {
                const int k = it % (axes + 1); // axes, then the world
                Group& g = k == axes ? c.world() : c.axis(k);
                const std::vector<int> members = k == axes ? geo.everyone() : geo.line(me, k);
                const std::string where =
                    "iteration " + std::to_string(it) + " device " + std::to_string(me) + ": ";
                const std::size_t count = 3;
                if ((it / (axes + 1)) % 2 == 0) {
                    std::vector<double> buf(count);
                    for (std::size_t i = 0; i < count; ++i)
                        buf[i] = val(me, i, it);
                    g.all_reduce(buf.data(), count, DType::F64, PartialOp::Sum);
                    for (std::size_t i = 0; i < count; ++i) {
                        double want = 0;
                        for (int d : members)
                            want += val(d, i, it);
                        log.expect(buf[i] == want, where + "all_reduce");
                    }
                } else {
                    std::vector<float> send(count), recv(count * members.size());
                    for (std::size_t i = 0; i < count; ++i)
                        send[i] = static_cast<float>(val(me, i, it));
                    g.all_gather(send.data(), recv.data(), count, DType::F32);
                    for (std::size_t q = 0; q < members.size(); ++q)
                        for (std::size_t i = 0; i < count; ++i)
                            log.expect(recv[q * count + i] ==
                                           static_cast<float>(val(members[q], i, it)),
                                       where + "all_gather");
                }
            }
        });
        report(log, geo.count() * 200 * 3);
    }
}

TEST_CASE("sim: a rank that throws stops the others and its exception is rethrown") {
    for (const MeshShape& mesh : {MeshShape{{4}, {}}, MeshShape{{2, 2}, {}}}) {
        INFO("mesh ", mesh_name(mesh));
        std::mutex m;
        std::vector<std::string> others; // what the other ranks saw
        auto body = [&](Communicator& c) {
            if (c.rank() == 1) throw std::runtime_error("boom");
            std::vector<double> buf(4, 1.0);
            try {
                c.world().all_reduce(buf.data(), buf.size(), DType::F64, PartialOp::Sum);
            } catch (const ExecError& e) {
                std::lock_guard lock(m);
                others.push_back(e.what());
                throw;
            }
            std::lock_guard lock(m);
            others.push_back("returned normally");
        };
        bool caught = false;
        try {
            run_guarded(mesh, body);
        } catch (const ExecError& e) {
            FAIL("rethrew a secondary error: ", std::string(e.what()));
        } catch (const std::runtime_error& e) {
            caught = true;
            CHECK(std::string(e.what()) == "boom");
        }
        CHECK(caught);
        CHECK(others.size() == 3);
        for (const auto& o : others)
            CHECK(o == "stopped: another rank failed");
    }
}

TEST_CASE("sim: a failure later on stops ranks in any group, now or later") {
    // Rank 3 fails after a few collectives; the others are inside (or about to enter)
    // collectives on other axes and must all stop.
    const MeshShape mesh{{2, 2, 2}, {}};
    std::mutex m;
    int stopped = 0;
    bool caught = false;
    try {
        run_guarded(mesh, [&](Communicator& c) {
            std::vector<float> buf(2, 1.0f);
            try {
                for (int it = 0; it < 50; ++it) {
                    if (c.rank() == 3 && it == 5) throw std::logic_error("rank 3 failed");
                    c.axis(it % 3).all_reduce(buf.data(), buf.size(), DType::F32, PartialOp::Max);
                }
            } catch (const ExecError& e) {
                std::lock_guard lock(m);
                if (std::string(e.what()) == "stopped: another rank failed") ++stopped;
                throw;
            }
        });
    } catch (const std::logic_error& e) {
        caught = true;
        CHECK(std::string(e.what()) == "rank 3 failed");
    }
    CHECK(caught);
    CHECK(stopped == 7);
}

TEST_CASE("sim: a rank that skips a collective is an error, not a hang") {
    bool caught = false;
    try {
        run_guarded(MeshShape{{2, 2}, {}}, [](Communicator& c) {
            if (c.rank() == 2) return; // the others wait for it along both axes
            std::vector<double> buf(3, 1.0);
            c.world().all_reduce(buf.data(), buf.size(), DType::F64, PartialOp::Sum);
        });
    } catch (const ExecError& e) {
        caught = true;
        const std::string what = e.what();
        INFO(what);
        CHECK(what.find("rank 2 returned without joining the all_reduce") != std::string::npos);
    }
    CHECK(caught);
}

TEST_CASE("sim: mismatched calls are errors on every member") {
    auto expect_error = [](const MeshShape& mesh, const std::function<void(Communicator&)>& body,
                           const std::string& part) {
        bool caught = false;
        try {
            run_guarded(mesh, body);
        } catch (const ExecError& e) {
            caught = true;
            const std::string what = e.what();
            INFO(what);
            CHECK(what.find(part) != std::string::npos);
        }
        CHECK(caught);
    };
    // Different counts.
    expect_error(
        MeshShape{{3}, {}},
        [](Communicator& c) {
            std::vector<float> buf(4, 1.0f);
            c.axis(0).all_reduce(buf.data(), c.rank() == 2 ? 4 : 3, DType::F32, PartialOp::Sum);
        },
        "elements");
    // Different collectives.
    expect_error(
        MeshShape{{2}, {}},
        [](Communicator& c) {
            std::vector<float> a(2, 1.0f), b(2, 0.0f);
            if (c.rank() == 0)
                c.axis(0).all_to_all(a.data(), b.data(), 1, DType::F32);
            else
                c.axis(0).barrier();
        },
        "barrier");
    // A permute whose sources and destinations disagree.
    expect_error(
        MeshShape{{3}, {}},
        [](Communicator& c) {
            std::vector<double> a(2, 1.0), b(2, 0.0);
            c.axis(0).permute(a.data(), b.data(), 2, DType::F64, 0, (c.rank() + 1) % 3);
        },
        "permute");
    // An exchange whose receive count differs from the send, and one that receives what
    // nobody sends.
    expect_error(
        MeshShape{{2}, {}},
        [](Communicator& c) {
            std::vector<double> a(3, 1.0), b(3, 0.0);
            const int other = 1 - c.rank();
            c.axis(0).exchange({{other, a.data(), c.rank() == 0 ? 2u : 3u}}, {{other, b.data(), 2}},
                               DType::F64);
        },
        "exchange");
    expect_error(
        MeshShape{{2}, {}},
        [](Communicator& c) {
            std::vector<double> b(2, 0.0);
            c.axis(0).exchange({}, {{1 - c.rank(), b.data(), 2}}, DType::F64);
        },
        "sends it nothing");
    // A member outside the group.
    expect_error(
        MeshShape{{2}, {}},
        [](Communicator& c) {
            std::vector<double> a(2, 1.0), b(2, 0.0);
            c.axis(0).permute(a.data(), b.data(), 2, DType::F64, 2, 0);
        },
        "outside");
    // An axis the mesh does not have.
    expect_error(
        MeshShape{{2}, {}}, [](Communicator& c) { c.axis(1).barrier(); }, "axis 1");
}

TEST_CASE("sim: a run after a failed run works (no state survives)") {
    CHECK_THROWS_AS(run_guarded(MeshShape{{2}, {}},
                                [](Communicator& c) {
                                    if (c.rank() == 0) throw ExecError("first");
                                    c.world().barrier();
                                }),
                    ExecError);
    Log log;
    run_guarded(MeshShape{{2}, {}}, [&](Communicator& c) {
        double x = c.rank() + 1.0;
        c.world().all_reduce(&x, 1, DType::F64, PartialOp::Sum);
        log.expect(x == 3.0, "sum after a failed run");
    });
    report(log, 2);
}

TEST_CASE("launched_by_mpirun follows the environment") {
    const char* names[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"};
    std::vector<std::pair<std::string, std::string>> saved;
    for (const char* n : names)
        if (const char* v = std::getenv(n)) saved.emplace_back(n, v);
    for (const char* n : names)
        unsetenv(n);
    CHECK_FALSE(launched_by_mpirun());
    setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
    CHECK(launched_by_mpirun());
    unsetenv("OMPI_COMM_WORLD_SIZE");
    setenv("PMI_SIZE", "2", 1);
    CHECK(launched_by_mpirun());
    unsetenv("PMI_SIZE");
    for (const auto& [n, v] : saved)
        setenv(n.c_str(), v.c_str(), 1);
}

TEST_CASE("sim: a group over several mesh axes, numbered row-major in the order given") {
    // 2x4 with an explicit device order: the group (1,0) through a device holds all eight,
    // member q at coordinates (q % 2, q / 2); (0,1) at (q / 4, q % 4).
    MeshShape mesh{{2, 4}, {7, 6, 5, 4, 3, 2, 1, 0}};
    const Geometry geo(mesh);
    for (const auto& axes : {std::vector<int>{0, 1}, std::vector<int>{1, 0}}) {
        std::mutex m;
        std::map<int, std::vector<float>> got;
        run_sim(mesh, [&](Communicator& c) {
            Group& g = c.group(axes);
            const auto me = geo.coord_of[static_cast<std::size_t>(c.rank())];
            const int want = axes[0] == 0 ? me[0] * 4 + me[1] : me[1] * 2 + me[0];
            CHECK(g.size() == 8);
            CHECK(g.rank() == want);
            const float mine = static_cast<float>(c.rank());
            std::vector<float> all(8);
            g.all_gather(&mine, all.data(), 1, DType::F32);
            std::lock_guard lock(m);
            got[c.rank()] = all;
        });
        for (const auto& [rank, all] : got)
            for (int q = 0; q < 8; ++q) {
                const std::vector<int> at =
                    axes[0] == 0 ? std::vector<int>{q / 4, q % 4} : std::vector<int>{q % 2, q / 2};
                CHECK(all[static_cast<std::size_t>(q)] == static_cast<float>(geo.device_of.at(at)));
            }
        CHECK(got.size() == 8);
    }
    // On 2x2x2, the group (2,0) through a device is the four devices sharing its axis-1
    // coordinate; a repeated or unknown axis is refused.
    MeshShape cube{{2, 2, 2}, {}};
    CHECK(cube.group_members(0, {2, 0}) == std::vector<int>{0, 4, 1, 5});
    CHECK(cube.group_members(2, {2, 0}) == std::vector<int>{2, 6, 3, 7});
    CHECK_THROWS(cube.group_place(0, {0, 0}));
    CHECK_THROWS(cube.group_place(0, {3}));
}
