// The MPI communicator, run under mpirun (see tests/CMakeLists.txt):
//   test_comm_mpi MESH                   e.g. 2x2 with -np 4: every collective, checked
//   test_comm_mpi --expect-size-error N  a mesh of N devices on a different number of ranks
// Prints one line per check and exits non-zero on any failure. The checks mirror
// test_comm.cpp's for the sim communicator: integer-valued data, expected values computed
// here from the mesh coordinates.
#include "exec/comm.hpp"
#include "exec/tensor.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <string>
#include <vector>

using namespace shardscope::exec;

namespace {

int failures = 0;
int rank_for_output = -1;

void expect(bool ok, const std::string& what) {
    std::printf("rank %d: %s %s\n", rank_for_output, ok ? "ok  " : "FAIL", what.c_str());
    if (!ok) ++failures;
}

/// "2x2x2" -> {2, 2, 2}; empty on a malformed argument.
std::vector<int> parse_mesh(const std::string& text) {
    std::vector<int> sizes;
    std::size_t at = 0;
    while (at <= text.size()) {
        std::size_t x = text.find('x', at);
        std::string part = text.substr(at, x == std::string::npos ? std::string::npos : x - at);
        if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos ||
            part.size() > 6)
            return {};
        sizes.push_back(std::stoi(part));
        if (x == std::string::npos) break;
        at = x + 1;
    }
    return sizes;
}

/// The mesh's geometry (identity device order), computed independently of MeshShape.
struct Geometry {
    std::vector<int> sizes;
    std::vector<std::vector<int>> coord_of;
    std::map<std::vector<int>, int> device_of;

    explicit Geometry(std::vector<int> s) : sizes(std::move(s)) {
        int n = 1;
        for (int x : sizes)
            n *= x;
        for (int d = 0; d < n; ++d) {
            std::vector<int> c(sizes.size());
            int stride = n;
            for (std::size_t k = 0; k < sizes.size(); ++k) {
                stride /= sizes[k];
                c[k] = (d / stride) % sizes[k];
            }
            coord_of.push_back(c);
            device_of[c] = d;
        }
    }
    int count() const { return static_cast<int>(coord_of.size()); }
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

double val(int device, std::size_t i, int salt) {
    return static_cast<double>((device * 13 + static_cast<int>(i) * 7 + salt * 5 + 1000) % 17 - 8);
}

double fold(PartialOp op, const std::vector<double>& xs) {
    double acc = xs[0];
    for (std::size_t q = 1; q < xs.size(); ++q)
        acc = op == PartialOp::Sum ? acc + xs[q] : std::max(acc, xs[q]);
    return acc;
}

template <class T>
bool all_equal(const std::vector<T>& got, const std::vector<double>& want) {
    if (got.size() != want.size()) return false;
    for (std::size_t i = 0; i < got.size(); ++i)
        if (got[i] != static_cast<T>(want[i])) return false;
    return true;
}

template <class T>
void check_group(Group& g, const std::vector<int>& members, int me, const std::string& name,
                 int salt) {
    const DType type = sizeof(T) == 4 ? DType::F32 : DType::F64;
    const std::string where = name + (sizeof(T) == 4 ? " f32 " : " f64 ");
    const int n = static_cast<int>(members.size());
    const int p = static_cast<int>(std::find(members.begin(), members.end(), me) - members.begin());
    expect(g.size() == n && g.rank() == p, where + "size " + std::to_string(g.size()) + " rank " +
                                               std::to_string(g.rank()) + " (expected " +
                                               std::to_string(n) + ", " + std::to_string(p) + ")");
    if (g.size() != n || g.rank() != p) return;

    for (PartialOp op : {PartialOp::Sum, PartialOp::Max}) {
        const std::string w = where + (op == PartialOp::Sum ? "sum " : "max ");
        {
            const std::size_t count = 5;
            std::vector<T> buf(count);
            std::vector<double> want(count);
            for (std::size_t i = 0; i < count; ++i) {
                buf[i] = static_cast<T>(val(me, i, salt));
                std::vector<double> xs;
                for (int d : members)
                    xs.push_back(val(d, i, salt));
                want[i] = fold(op, xs);
            }
            g.all_reduce(buf.data(), count, type, op);
            expect(all_equal(buf, want), w + "all_reduce");
        }
        {
            const std::size_t count = 4;
            std::vector<T> send(count * static_cast<std::size_t>(n)), recv(count, T(-99));
            std::vector<double> want(count);
            for (std::size_t i = 0; i < send.size(); ++i)
                send[i] = static_cast<T>(val(me, i, salt + 1));
            for (std::size_t i = 0; i < count; ++i) {
                std::vector<double> xs;
                for (int d : members)
                    xs.push_back(val(d, static_cast<std::size_t>(p) * count + i, salt + 1));
                want[i] = fold(op, xs);
            }
            g.reduce_scatter(send.data(), recv.data(), count, type, op);
            expect(all_equal(recv, want), w + "reduce_scatter");
        }
    }
    {
        const std::size_t count = 3;
        std::vector<T> send(count), recv(count * static_cast<std::size_t>(n), T(-99));
        std::vector<double> want;
        for (std::size_t i = 0; i < count; ++i)
            send[i] = static_cast<T>(val(me, i, salt + 2));
        for (int d : members)
            for (std::size_t i = 0; i < count; ++i)
                want.push_back(val(d, i, salt + 2));
        g.all_gather(send.data(), recv.data(), count, type);
        expect(all_equal(recv, want), where + "all_gather");
    }
    {
        const std::size_t count = 2;
        const std::size_t total = count * static_cast<std::size_t>(n);
        std::vector<T> send(total), recv(total, T(-99));
        std::vector<double> want;
        for (std::size_t i = 0; i < total; ++i)
            send[i] = static_cast<T>(val(me, i, salt + 3));
        for (int d : members)
            for (std::size_t i = 0; i < count; ++i)
                want.push_back(val(d, static_cast<std::size_t>(p) * count + i, salt + 3));
        g.all_to_all(send.data(), recv.data(), count, type);
        expect(all_equal(recv, want), where + "all_to_all");
    }
    for (int shift : {1, -1}) {
        const std::size_t count = 3;
        const int to = ((p + shift) % n + n) % n;
        const int from = ((p - shift) % n + n) % n;
        std::vector<T> send(count), recv(count, T(-99));
        std::vector<double> want(count);
        for (std::size_t i = 0; i < count; ++i) {
            send[i] = static_cast<T>(val(me, i, salt + 4 + shift));
            want[i] = val(members[static_cast<std::size_t>(from)], i, salt + 4 + shift);
        }
        g.permute(send.data(), recv.data(), count, type, to, from);
        expect(all_equal(recv, want), where + "permute shift " + std::to_string(shift));
    }
    // exchange: member p sends p+s (s = 1, 2, where that is another member) s+p elements.
    {
        std::vector<std::vector<T>> out, in;
        std::vector<std::vector<double>> want;
        std::vector<SendPart> sends;
        std::vector<RecvPart> recvs;
        for (int shift : {1, 2}) {
            if (shift % n == 0 || (shift == 2 && n == 2)) continue;
            const int to = (p + shift) % n, from = ((p - shift) % n + n) % n;
            out.emplace_back(static_cast<std::size_t>(shift + p));
            for (std::size_t i = 0; i < out.back().size(); ++i)
                out.back()[i] = static_cast<T>(val(me, i, salt + 10 + shift));
            in.emplace_back(static_cast<std::size_t>(shift + from), T(-99));
            want.emplace_back();
            for (std::size_t i = 0; i < in.back().size(); ++i)
                want.back().push_back(
                    val(members[static_cast<std::size_t>(from)], i, salt + 10 + shift));
            sends.push_back({to, out.back().data(), out.back().size()});
            recvs.push_back({from, in.back().data(), in.back().size()});
        }
        g.exchange(sends, recvs, type);
        for (std::size_t k = 0; k < in.size(); ++k)
            expect(all_equal(in[k], want[k]), where + "exchange " + std::to_string(k));
    }
    g.all_reduce(nullptr, 0, type, PartialOp::Sum);
    g.barrier();
    expect(true, where + "empty all_reduce and barrier");
}

int run_checks(const std::vector<int>& sizes) {
    const Geometry geo(sizes);
    auto comm = make_mpi(MeshShape{sizes, {}});
    const int me = comm->rank();
    rank_for_output = me;
    expect(comm->size() == geo.count(), "communicator size " + std::to_string(comm->size()));
    for (int k = 0; k < static_cast<int>(sizes.size()); ++k) {
        check_group<float>(comm->axis(k), geo.line(me, k), me, "axis " + std::to_string(k), k);
        check_group<double>(comm->axis(k), geo.line(me, k), me, "axis " + std::to_string(k), k);
    }
    check_group<float>(comm->world(), geo.everyone(), me, "world", 7);
    check_group<double>(comm->world(), geo.everyone(), me, "world", 7);

    // 200 collectives back to back on alternating groups.
    const int axes = static_cast<int>(sizes.size());
    bool loop_ok = true;
    for (int it = 0; it < 200; ++it) {
        const int k = it % (axes + 1);
        Group& g = k == axes ? comm->world() : comm->axis(k);
        const std::vector<int> members = k == axes ? geo.everyone() : geo.line(me, k);
        std::vector<double> buf(3), want(3, 0.0);
        for (std::size_t i = 0; i < buf.size(); ++i) {
            buf[i] = val(me, i, it);
            for (int d : members)
                want[i] += val(d, i, it);
        }
        g.all_reduce(buf.data(), buf.size(), DType::F64, PartialOp::Sum);
        loop_ok = loop_ok && buf == want;
    }
    expect(loop_ok, "200 back-to-back all_reduces on alternating groups");

    // gather_to_root with a different size per rank (some empty).
    auto bytes_of = [](int r) {
        std::vector<char> v(static_cast<std::size_t>((r * 3) % 5));
        for (std::size_t j = 0; j < v.size(); ++j)
            v[j] = static_cast<char>(r * 10 + static_cast<int>(j));
        return v;
    };
    auto got = comm->gather_to_root(bytes_of(me));
    if (me == 0) {
        bool ok = static_cast<int>(got.size()) == geo.count();
        for (int r = 0; ok && r < geo.count(); ++r)
            ok = got[static_cast<std::size_t>(r)] == bytes_of(r);
        expect(ok, "gather_to_root on the root");
    } else {
        expect(got.empty(), "gather_to_root elsewhere is empty");
    }
    comm.reset(); // frees the communicators before MPI_Finalize
    return failures;
}

int expect_size_error(int devices) {
    try {
        auto comm = make_mpi(MeshShape{{devices}, {}});
        expect(false, "make_mpi accepted a mesh of " + std::to_string(devices) + " devices");
    } catch (const ExecError& e) {
        const std::string what = e.what();
        std::printf("message: %s\n", what.c_str());
        const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
        const std::string ranks = size != nullptr ? size : "?";
        expect(what.find("mesh has " + std::to_string(devices) + " devices") != std::string::npos,
               "the message names the mesh's device count");
        expect(what.find("started " + ranks + " rank") != std::string::npos,
               "the message names the number of ranks (" + ranks + ")");
        expect(what.find("mpirun -np " + std::to_string(devices)) != std::string::npos,
               "the message gives the mpirun command");
    }
    return failures;
}

} // namespace

int main(int argc, char** argv) {
    const std::vector<std::string> args(argv + 1, argv + argc);
    if (!mpi_available()) {
        std::printf("built without MPI\n");
        return 1;
    }
    if (const char* r = std::getenv("OMPI_COMM_WORLD_RANK")) rank_for_output = std::atoi(r);
    int rc = 0;
    try {
        if (args.size() == 2 && args[0] == "--expect-size-error") {
            auto sizes = parse_mesh(args[1]);
            if (sizes.size() != 1) {
                std::fprintf(stderr, "usage: test_comm_mpi --expect-size-error DEVICES\n");
                return 2;
            }
            expect(launched_by_mpirun(), "launched_by_mpirun");
            rc = expect_size_error(sizes[0]);
        } else if (args.size() == 1 && !parse_mesh(args[0]).empty()) {
            expect(launched_by_mpirun(), "launched_by_mpirun");
            rc = run_checks(parse_mesh(args[0]));
        } else {
            std::fprintf(stderr, "usage: test_comm_mpi MESH (e.g. 2x2) | --expect-size-error N\n");
            return 2;
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "rank %d: error: %s\n", rank_for_output, e.what());
        std::fflush(stdout);
        abort_mpi(1);
    }
    std::printf("rank %d: %d failure(s)\n", rank_for_output, failures);
    std::fflush(stdout);
    finalize_mpi();
    return rc == 0 ? 0 : 1;
}
