// The cuda backend on a GPU: its local compute against the host kernels (random einsums in f32,
// f64 and bf16, reductions, broadcasting ops, functions, softmax, the layout operations and
// copies of device-resident tensors), its virtual-rank
// collectives against the sim backend with device and host buffers, and a clear error for an
// allocation the GPU cannot hold. Exits 77 (ctest: skipped) saying why when no GPU is usable.
#define DOCTEST_CONFIG_IMPLEMENT
#include "exec/compute.hpp"
#include "exec/cuda_kernels.hpp"
#include "exec/cuda_util.hpp"
#include "exec/device.hpp"

#include <cuda_bf16.h>
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <random>
#include <vector>

using namespace shardscope::exec;

namespace {

using Dims = std::vector<std::int64_t>;

template <class T>
Tensor<T> random_tensor(Dims shape, std::vector<int> labels, std::mt19937& rng) {
    auto t = Tensor<T>::zeros(std::move(shape), std::move(labels));
    std::uniform_real_distribution<double> u(-1, 1);
    for (auto& v : t.data)
        v = static_cast<T>(u(rng));
    return t;
}

template <class T>
double rel_diff(const Tensor<T>& x, const Tensor<T>& y) {
    REQUIRE(x.shape == y.shape);
    REQUIRE(x.labels == y.labels);
    double d = 0, m = 1e-30;
    for (std::size_t i = 0; i < x.data.size(); ++i) {
        d = std::max(d, std::abs(double(x.data[i]) - double(y.data[i])));
        m = std::max(m, std::abs(double(y.data[i])));
    }
    return d / m;
}

/// A random einsum of 1..3 operands over up to six labels.
template <class T>
void random_einsums(double tol) {
    auto gpu = make_cuda_compute<T>(0);
    HostCompute<T> host;
    std::mt19937 rng(5);
    for (int trial = 0; trial < 200; ++trial) {
        std::vector<std::int64_t> ext(6);
        for (auto& e : ext)
            e = std::uniform_int_distribution<int>(trial % 9 == 0 ? 0 : 1, 5)(rng);
        const int n = 1 + trial % 3;
        std::vector<Tensor<T>> ins;
        std::vector<int> all;
        for (int i = 0; i < n; ++i) {
            std::vector<int> ls;
            for (int l = 0; l < 6; ++l)
                if (rng() % 2) ls.push_back(l);
            std::shuffle(ls.begin(), ls.end(), rng);
            Dims s;
            for (int l : ls) {
                s.push_back(ext[static_cast<std::size_t>(l)]);
                if (std::find(all.begin(), all.end(), l) == all.end()) all.push_back(l);
            }
            ins.push_back(random_tensor<T>(s, ls, rng));
        }
        std::vector<int> out;
        for (int l : all)
            if (rng() % 2) out.push_back(l);
        std::shuffle(out.begin(), out.end(), rng);
        std::vector<const Tensor<T>*> p, dp;
        std::vector<Tensor<T>> dev;
        for (const auto& t : ins)
            dev.push_back(gpu->upload(t));
        for (std::size_t i = 0; i < ins.size(); ++i) {
            p.push_back(&ins[i]);
            dp.push_back(&dev[i]);
        }
        INFO("trial " << trial);
        CHECK(rel_diff(gpu->download(gpu->einsum(dp, out)), host.einsum(p, out)) < tol);
    }
}

} // namespace

TEST_CASE("cuda einsum matches the host einsum (f32, f64)") {
    random_einsums<float>(1e-5);
    random_einsums<double>(1e-12);
}

TEST_CASE("cuda reductions, broadcasting ops, functions and softmax match the host") {
    auto gpu = make_cuda_compute<double>(0);
    HostCompute<double> host;
    std::mt19937 rng(3);
    const auto x = random_tensor<double>({3, 4, 5}, {0, 1, 2}, rng);
    const auto b = random_tensor<double>({5, 3}, {2, 0}, rng);
    const auto dx = gpu->upload(x), db = gpu->upload(b);
    auto down = [&](const Tensor<double>& t) { return gpu->download(t); };
    for (auto r : {PartialOp::Sum, PartialOp::Max})
        CHECK(rel_diff(down(gpu->reduce(dx, {2, 0}, r)), host.reduce(x, {2, 0}, r)) < 1e-12);
    for (auto op : {Binary::Add, Binary::Sub, Binary::Mul, Binary::Div})
        CHECK(rel_diff(down(gpu->binary(dx, db, op, {1, 2, 0})), host.binary(x, b, op, {1, 2, 0})) <
              1e-12);
    for (Fn f : {Fn::Gelu, Fn::Relu, Fn::Exp, Fn::Log, Fn::Dsilu, Fn::Tanh, Fn::Half}) {
        auto g = dx, h = x;
        gpu->function(g, f); // g shares dx's buffer: the function writes a copy
        host.function(h, f);
        CHECK(rel_diff(down(g), h) < 1e-12);
    }
    for (int label : {0, 1, 2}) {
        auto g = dx, h = x;
        gpu->softmax(g, label);
        host.softmax(h, label);
        CHECK(rel_diff(down(g), h) < 1e-12);
    }
    CHECK(down(dx).data == x.data);
    {
        // A NaN anywhere in a max wins, on the GPU as on the host (first, middle, last).
        auto n = x;
        n.data[0] = n.data[27] = n.data[59] = std::nan("");
        const auto got = down(gpu->reduce(gpu->upload(n), {0}, PartialOp::Max));
        const auto want = host.reduce(n, {0}, PartialOp::Max);
        REQUIRE(got.data.size() == want.data.size());
        for (std::size_t i = 0; i < got.data.size(); ++i)
            CHECK_MESSAGE(std::isnan(got.data[i]) == std::isnan(want.data[i]), "element " << i);
        CHECK(std::isnan(want.data[0]));
        CHECK(std::isnan(want.data[1]));
        CHECK(std::isnan(want.data[2]));
    }
    // The kernels' time, by CUDA events: positive, and far below a second for these sizes.
    CHECK(gpu->device_seconds() > 0);
    CHECK(gpu->device_seconds() < 1);
    CHECK(host.device_seconds() == 0);
}

TEST_CASE("cuda long reductions with few outputs run in parts and match the host") {
    // The split: none for short reductions or many outputs, else parts of >= 1024 positions.
    CHECK(cuda::reduce_parts(1, 4095) == 1);
    CHECK(cuda::reduce_parts(1, 4096) == 4);
    CHECK(cuda::reduce_parts(1 << 18, 1 << 20) == 1);
    CHECK(cuda::reduce_parts(3, 1 << 20) == 1024);
    CHECK(cuda::reduce_parts(1 << 10, 1 << 20) == 256);
    auto gpu = make_cuda_compute<double>(0);
    HostCompute<double> host;
    std::mt19937 rng(17);
    // A sum to a scalar, rows of a wide matrix (contiguous), columns of a tall one (strided),
    // and a length that the parts do not divide.
    struct Case {
        std::vector<std::int64_t> shape;
        std::vector<int> out;
    };
    for (const Case& k : {Case{{1 << 16}, {}}, Case{{3, 50000}, {0}}, Case{{50000, 3}, {1}},
                          Case{{2, 3, 4099}, {1, 0}}}) {
        std::vector<int> labels;
        for (std::size_t d = 0; d < k.shape.size(); ++d)
            labels.push_back(static_cast<int>(d));
        auto x = random_tensor<double>(k.shape, labels, rng);
        x.data[x.data.size() / 2] = 50; // a maximum in the middle of some reduction
        const auto dx = gpu->upload(x);
        for (auto r : {PartialOp::Sum, PartialOp::Max}) {
            const auto got = gpu->download(gpu->reduce(dx, k.out, r));
            const auto want = host.reduce(x, k.out, r);
            CHECK_MESSAGE(rel_diff(got, want) < 1e-12,
                          "shape " << k.shape.size() << "-d, " << x.data.size() << " elements");
        }
    }
}

TEST_CASE("cuda timing: more timed operations than events in flight, read in batches") {
    // CudaCompute reads its events in batches: the 33rd timed operation reads the first 32.
    auto gpu = make_cuda_compute<double>(0);
    std::mt19937 rng(5);
    const auto x = random_tensor<double>({16, 8}, {0, 1}, rng);
    auto g = gpu->upload(x);
    for (int i = 0; i < 40; ++i)
        gpu->scale(g, 2.0);
    const double first = gpu->device_seconds();
    CHECK(first > 0);
    for (int i = 0; i < 100; ++i)
        gpu->scale(g, i < 40 ? 0.5 : 1.0);
    const double second = gpu->device_seconds();
    CHECK(second > first);
    CHECK(gpu->device_seconds() == second); // nothing ran since
    CHECK(gpu->download(g).data == x.data); // 2^40 * 2^-40, exact in f64
}

TEST_CASE("cuda einsum in bf16 (f32 accumulation) matches the host on the rounded inputs") {
    cuda::Context c(0);
    std::mt19937 rng(9);
    auto a = random_tensor<float>({4, 64, 96}, {0, 1, 2}, rng); // b i k
    auto b = random_tensor<float>({96, 4, 80}, {2, 0, 3}, rng); // k b j
    auto to_dev = [&](Tensor<float>& t) {
        std::vector<__nv_bfloat16> h(t.data.size());
        for (std::size_t i = 0; i < h.size(); ++i) {
            h[i] = __float2bfloat16(t.data[i]);
            t.data[i] = __bfloat162float(h[i]); // the host sees the rounded values
        }
        cuda::DeviceTensor<__nv_bfloat16> d{t.shape, t.labels, cuda::Buffer(h.size() * 2)};
        cuda::check(cudaMemcpy(d.ptr(), h.data(), h.size() * 2, cudaMemcpyHostToDevice), "copy");
        // A copy from pageable memory may still be on its way when cudaMemcpy returns, and
        // the einsum's non-blocking stream does not wait for the legacy stream.
        cuda::check(cudaDeviceSynchronize(), "copy");
        return d;
    };
    const auto da = to_dev(a), db = to_dev(b);
    const auto dc = cuda::einsum<__nv_bfloat16>({&da, &db}, {0, 3, 1}, c);
    c.sync();
    std::vector<__nv_bfloat16> h(static_cast<std::size_t>(dc.size()));
    cuda::check(cudaMemcpy(h.data(), dc.ptr(), h.size() * 2, cudaMemcpyDeviceToHost), "copy");
    Tensor<float> got{dc.shape, dc.labels, {}};
    for (auto v : h)
        got.data.push_back(__bfloat162float(v));
    CHECK(rel_diff(got, einsum<float>({&a, &b}, {0, 3, 1})) < 2e-2);
}

namespace {

/// Every collective on `mesh`'s axis 0 and the world with buffers on the device (or the
/// host), returned per rank as one vector; the same with run_sim for the expectation.
std::vector<std::vector<float>> collectives(const MeshShape& mesh, bool gpu, bool device_buffers,
                                            std::size_t count) {
    const int n = mesh.device_count();
    std::vector<std::vector<float>> result(static_cast<std::size_t>(n));
    auto body = [&](Communicator& comm, int device) {
        Group& g = comm.axis(0);
        const auto size = static_cast<std::size_t>(g.size());
        std::vector<float> send(count * size), out;
        for (std::size_t i = 0; i < send.size(); ++i)
            send[i] = static_cast<float>((comm.rank() + 1) * 1000 + static_cast<int>(i % 977));
        auto run = [&](auto&& op, std::size_t in_n, std::size_t out_n) {
            std::vector<float> in(send.begin(), send.begin() + static_cast<std::ptrdiff_t>(in_n));
            std::vector<float> res(out_n);
            if (device_buffers) {
                cuda::check(cudaSetDevice(device), "device");
                cuda::Buffer di(in_n * 4), dr(std::max<std::size_t>(out_n, in_n) * 4);
                cuda::check(cudaMemcpy(di.get(), in.data(), in_n * 4, cudaMemcpyDefault), "in");
                cuda::check(cudaDeviceSynchronize(), "in"); // see the bf16 einsum's test
                op(di.as<float>(), dr.as<float>());
                cuda::check(cudaMemcpy(res.data(), dr.get(), out_n * 4, cudaMemcpyDefault), "out");
            } else {
                res.resize(std::max(out_n, in_n));
                op(in.data(), res.data());
                res.resize(out_n);
            }
            out.insert(out.end(), res.begin(), res.end());
        };
        run([&](float* s, float* r) { g.all_gather(s, r, count, DType::F32); }, count,
            count * size);
        run([&](float* s, float* r) { g.reduce_scatter(s, r, count, DType::F32, PartialOp::Sum); },
            count * size, count);
        run([&](float* s, float* r) { g.all_to_all(s, r, count, DType::F32); }, count * size,
            count * size);
        run(
            [&](float* s, float* r) {
                const int to = (g.rank() + 1) % g.size(),
                          from = (g.rank() + g.size() - 1) % g.size();
                g.permute(s, r, count, DType::F32, to, from);
            },
            count, count);
        run(
            [&](float* s, float* r) {
                // The same shift as an exchange (a group of one has no other member to
                // exchange with: it copies by a permute to itself instead).
                if (g.size() == 1) return g.permute(s, r, count, DType::F32, 0, 0);
                g.exchange({{(g.rank() + 1) % g.size(), s, count}},
                           {{(g.rank() + g.size() - 1) % g.size(), r, count}}, DType::F32);
            },
            count, count);
        run(
            [&](float* s, float* r) {
                if (device_buffers) {
                    // A copy between device buffers returns before it is done.
                    cuda::check(cudaMemcpy(r, s, count * size * 4, cudaMemcpyDefault), "copy");
                    cuda::check(cudaDeviceSynchronize(), "copy");
                } else {
                    std::copy(s, s + count * size, r);
                }
                comm.world().all_reduce(r, count * size, DType::F32, PartialOp::Max);
            },
            count * size, count * size);
        result[static_cast<std::size_t>(comm.rank())] = out;
    };
    if (gpu)
        run_cuda(mesh, body);
    else
        run_sim(mesh, [&](Communicator& comm) { body(comm, 0); });
    return result;
}

} // namespace

TEST_CASE("cuda virtual-rank collectives match sim, with device and with host buffers") {
    for (const MeshShape& mesh : {MeshShape{{2}, {}}, MeshShape{{3, 2}, {}}, MeshShape{{8}, {}}})
        for (std::size_t count : {std::size_t{1}, std::size_t{37}, std::size_t{40000}}) {
            const auto want = collectives(mesh, false, false, count);
            CHECK(collectives(mesh, true, true, count) == want);
            CHECK(collectives(mesh, true, false, count) == want);
        }
}

TEST_CASE("an allocation the GPU cannot hold is a DeviceError that says so") {
    cuda::check(cudaSetDevice(0), "device");
    try {
        cuda::Buffer huge(std::size_t{1} << 52);
        FAIL("a 4 PiB allocation succeeded");
    } catch (const DeviceError& e) {
        CHECK(std::string(e.what()).find("out of device memory") != std::string::npos);
    }
    // The device is still usable afterwards.
    auto gpu = make_cuda_compute<float>(0);
    const auto x = gpu->upload(Tensor<float>{{2}, {0}, {1, 2}});
    CHECK(gpu->download(gpu->reduce(x, {}, PartialOp::Sum)).data == std::vector<float>{3});
}

TEST_CASE("cuda layout operations and copies of device-resident tensors match the host") {
    auto gpu = make_cuda_compute<float>(0);
    HostCompute<float> host;
    std::mt19937 rng(11);
    const auto x = random_tensor<float>({3, 4, 5}, {0, 1, 2}, rng);
    const auto dx = gpu->upload(x);
    CHECK(dx.on_device());
    CHECK(dx.data.empty());
    CHECK_THROWS_AS(gpu->permute(x, {2, 0, 1}), ExecError); // a host tensor: not uploaded
    CHECK(gpu->download(gpu->permute(dx, {2, 0, 1})).data == host.permute(x, {2, 0, 1}).data);
    for (int label : {0, 1, 2})
        CHECK(gpu->download(gpu->slice(dx, label, 1, 3)).data == host.slice(x, label, 1, 3).data);
    CHECK(gpu->download(gpu->slice(dx, 1, 2, 2)).size() == 0);
    const auto z = gpu->download(gpu->zeros({2, 7}, {0, 1}));
    CHECK(z.data == std::vector<float>(14, 0.f));
    // Pitched rows (the packing of an all-to-all), one row (a block), each against the host.
    for (auto [dst_at, dst_pitch, src_at, src_pitch, width, rows] :
         std::vector<std::array<std::int64_t, 6>>{{3, 6, 2, 5, 4, 5}, {10, 0, 7, 0, 30, 1}}) {
        auto gd = gpu->zeros({60}, {0});
        auto hd = host.zeros({60}, {0});
        gpu->copy_rows(gd, dst_at, dst_pitch, dx, src_at, src_pitch, width, rows);
        host.copy_rows(hd, dst_at, dst_pitch, x, src_at, src_pitch, width, rows);
        CHECK(gpu->download(gd).data == hd.data);
    }
    auto a = dx, h = x; // a shares dx's buffer until written
    gpu->scale(a, 0.5f);
    host.scale(h, 0.5f);
    gpu->accumulate(a, dx);
    host.accumulate(h, x);
    CHECK(gpu->download(a).data == h.data);
    auto w = dx;
    float* p = gpu->writable(w);
    CHECK(cuda::on_device(p, 0));
    CHECK(cudaMemset(p, 0, 4) == cudaSuccess);
    CHECK(cudaDeviceSynchronize() == cudaSuccess); // the memset ran on the legacy stream
    CHECK(gpu->download(dx).data == x.data);       // the write went to w's own copy
    CHECK(gpu->download(w).data[0] == 0.f);
    CHECK(cuda::on_device(gpu->buffer(dx), 0));
}

int main(int argc, char** argv) {
    const auto probe = probe_gpus();
    if (probe.devices == 0) {
        std::printf("SKIPPED: %s\n", probe.problem.c_str());
        return 77;
    }
    std::printf("%d GPU(s)\n", probe.devices);
    doctest::Context context(argc, argv);
    return context.run();
}
