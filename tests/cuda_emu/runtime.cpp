// The CUDA runtime functions shardscope calls, emulated on the host (README.md): devices,
// registered device memory with a capacity, streams whose work waits in a queue until
// something synchronises with it, events, copies and the memory pool's calls.
#include "tests/cuda_emu/emu.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

using Clock = std::chrono::steady_clock;

/// A stream: its queued work, run in order by whoever synchronises with it.
struct CUstream_st {
    int device = 0;
    bool blocking = true;         // synchronises with the legacy default stream
    std::mutex lock;              // guards `queue`
    std::recursive_mutex running; // held while the queue runs, so that work keeps its order
    std::deque<std::function<void()>> queue;
    std::atomic<bool> stalled{false}; // reached work that never completes (enqueue_stall)
};

/// An event: done once the stream reached the record that `generation` counts.
struct CUevent_st {
    int device = 0;
    std::shared_ptr<CUstream_st> stream;
    std::atomic<unsigned> generation{0};
    std::atomic<unsigned> done_generation{0};
    Clock::time_point at{};
    bool recorded = false;
};

struct CUmemPoolHandle_st {
    int device = 0;
};

namespace shardscope::cuda_emu {

namespace {

struct Allocation {
    std::size_t bytes = 0;
    int device = 0;
    bool pooled = false; // from cudaMallocAsync: other devices may not touch it
};

/// Everything the emulated devices hold. Never destroyed: handles may be released by static
/// destructors after main returns.
struct State {
    int devices = 1;
    std::vector<int> physical; // the machine's index of each visible device (CUDA_VISIBLE_DEVICES)
    std::size_t capacity = std::size_t{4} << 30;
    bool no_driver = false;
    std::mutex m;
    std::map<std::uintptr_t, Allocation> allocations; // by base address
    std::vector<std::size_t> used;                    // bytes allocated, per device
    std::map<CUstream_st*, std::shared_ptr<CUstream_st>> streams;
    std::vector<std::shared_ptr<CUstream_st>> null_streams; // the legacy default stream, per device
    std::map<CUevent_st*, std::shared_ptr<CUevent_st>> events;
    std::vector<CUmemPoolHandle_st> pools;
};

std::size_t parse_bytes(const char* s) {
    char* end = nullptr;
    const double v = std::strtod(s, &end);
    double unit = 1;
    if (end && *end) {
        switch (*end) {
        case 'K':
        case 'k':
            unit = 1024.0;
            break;
        case 'M':
        case 'm':
            unit = 1024.0 * 1024;
            break;
        case 'G':
        case 'g':
            unit = 1024.0 * 1024 * 1024;
            break;
        default:
            fault(std::string("SHARDSCOPE_CUDA_EMU_MEMORY=") + s +
                  ": expected bytes, or K, M or G");
        }
    }
    return static_cast<std::size_t>(v * unit);
}

State& state() {
    static State* s = [] {
        auto* st = new State;
        if (const char* d = std::getenv("SHARDSCOPE_CUDA_EMU_DEVICES")) st->devices = std::atoi(d);
        if (const char* m = std::getenv("SHARDSCOPE_CUDA_EMU_MEMORY"))
            st->capacity = parse_bytes(m);
        if (const char* v = std::getenv("SHARDSCOPE_CUDA_EMU_DRIVER"))
            st->no_driver = std::strcmp(v, "missing") == 0;
        if (st->devices < 0) st->devices = 0;
        // CUDA_VISIBLE_DEVICES, as the driver reads it: indices, in order, up to the first
        // that is not one of the machine's devices.
        if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES")) {
            std::vector<int> visible;
            for (const char* p = v; *p;) {
                char* end = nullptr;
                const long d = std::strtol(p, &end, 10);
                if (end == p || d < 0 || d >= st->devices ||
                    std::find(visible.begin(), visible.end(), d) != visible.end())
                    break;
                visible.push_back(static_cast<int>(d));
                p = *end == ',' ? end + 1 : end;
                if (*end != ',') break;
            }
            st->physical = visible;
            st->devices = static_cast<int>(visible.size());
        } else {
            for (int d = 0; d < st->devices; ++d)
                st->physical.push_back(d);
        }
        st->used.assign(static_cast<std::size_t>(st->devices), 0);
        st->pools.resize(static_cast<std::size_t>(st->devices));
        for (int d = 0; d < st->devices; ++d) {
            st->pools[static_cast<std::size_t>(d)].device = d;
            auto n = std::make_shared<CUstream_st>();
            n->device = d;
            st->null_streams.push_back(std::move(n));
        }
        return st;
    }();
    return *s;
}

thread_local int current = 0;
thread_local cudaError_t last_error = cudaSuccess;

cudaError_t fail(cudaError_t e) {
    last_error = e;
    return e;
}

/// The driver's answer before anything else: no driver, or no device.
cudaError_t usable() {
    auto& s = state();
    if (s.no_driver) return cudaErrorInsufficientDriver;
    if (s.devices == 0) return cudaErrorNoDevice;
    return cudaSuccess;
}

std::string hex(const void* p) {
    char b[32];
    std::snprintf(b, sizeof b, "%p", p);
    return b;
}

std::shared_ptr<CUstream_st> stream_of(cudaStream_t s) {
    auto& st = state();
    std::lock_guard g(st.m);
    if (!s) {
        if (current < 0 || current >= st.devices) fault("the default stream of an invalid device");
        return st.null_streams[static_cast<std::size_t>(current)];
    }
    const auto it = st.streams.find(s);
    if (it == st.streams.end()) fault("stream " + hex(s) + " was destroyed or never created");
    return it->second;
}

std::shared_ptr<CUevent_st> event_of(cudaEvent_t e) {
    auto& st = state();
    std::lock_guard g(st.m);
    const auto it = st.events.find(e);
    if (it == st.events.end()) fault("event " + hex(e) + " was destroyed or never created");
    return it->second;
}

/// Runs queued work of `s`, all of it or until `until` says stop.
void run_queue(CUstream_st& s, const std::function<bool()>& until = {}) {
    std::lock_guard run(s.running);
    for (;;) {
        if (s.stalled) return;
        if (until && until()) return;
        std::function<void()> op;
        {
            std::lock_guard g(s.lock);
            if (s.queue.empty()) return;
            op = std::move(s.queue.front());
            s.queue.pop_front();
        }
        op();
    }
}

/// Faults where a synchronisation would wait for ever on a GPU: `s` reached a stall.
void no_stall(const CUstream_st& s, const char* what) {
    if (s.stalled)
        fault(std::string(what) + " waits for a stream whose collective never completes: a GPU "
                                  "would wait here for ever (poll cudaStreamQuery and NCCL's "
                                  "asynchronous error instead)");
}

/// Runs every stream of `device` (all devices when -1), the default streams included.
void synchronize_device(int device) {
    std::vector<std::shared_ptr<CUstream_st>> all;
    {
        auto& st = state();
        std::lock_guard g(st.m);
        for (const auto& [p, s] : st.streams)
            if (device < 0 || s->device == device) all.push_back(s);
        for (const auto& s : st.null_streams)
            if (device < 0 || s->device == device) all.push_back(s);
    }
    for (const auto& s : all) {
        run_queue(*s);
        no_stall(*s, "a device synchronisation");
    }
}

/// The live allocation holding address p, with its base; null when p is in none (host
/// memory). The caller holds state().m.
const Allocation* allocation_at(const void* p, std::uintptr_t& base) {
    auto& st = state();
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    auto it = st.allocations.upper_bound(a);
    if (it == st.allocations.begin()) return nullptr;
    --it;
    if (a >= it->first + it->second.bytes) return nullptr;
    base = it->first;
    return &it->second;
}

/// The device of the allocation holding [p, p + bytes); -1 when p is not in one (host memory).
/// Part inside, part outside one allocation: the GPU would fault.
int device_of(const void* p, std::size_t bytes, const char* what) {
    std::lock_guard g(state().m);
    std::uintptr_t base = 0;
    const Allocation* al = allocation_at(p, base);
    if (!al) return -1;
    if (reinterpret_cast<std::uintptr_t>(p) + bytes > base + al->bytes)
        fault(std::string(what) + ": " + std::to_string(bytes) + " bytes at " + hex(p) +
              " run past the end of a device allocation of " + std::to_string(al->bytes) +
              " bytes at " + hex(reinterpret_cast<void*>(base)));
    return al->device;
}

/// Faults when a copy on a stream of `device` touches pool memory of another device: pool
/// allocations are reachable only from their own device unless cudaMemPoolSetAccess grants
/// more (peer access does not), and the emulator takes a copy engine's access as access.
void check_pool_access(const void* p, int device, const char* what) {
    std::lock_guard g(state().m);
    std::uintptr_t base = 0;
    const Allocation* al = allocation_at(p, base);
    if (al && al->pooled && al->device != device)
        fault(std::string(what) + " on a stream of device " + std::to_string(device) +
              " touches stream-ordered pool memory of device " + std::to_string(al->device) +
              ", which that pool does not grant");
}

cudaError_t allocate(void** p, std::size_t bytes, int device, bool pooled) {
    if (!p) return fail(cudaErrorInvalidValue);
    *p = nullptr;
    if (const auto e = usable()) return fail(e);
    if (bytes == 0) return cudaSuccess;
    auto& st = state();
    {
        std::lock_guard g(st.m);
        auto& used = st.used[static_cast<std::size_t>(device)];
        if (bytes > st.capacity - used) return fail(cudaErrorMemoryAllocation);
        used += bytes;
    }
    void* q = ::operator new (bytes, std::align_val_t{256}, std::nothrow);
    std::lock_guard g(st.m);
    if (!q) {
        st.used[static_cast<std::size_t>(device)] -= bytes;
        return fail(cudaErrorMemoryAllocation);
    }
    // Fresh device memory holds garbage, not zeros: make reading it unwritten visible.
    std::memset(q, 0xA5, bytes);
    st.allocations[reinterpret_cast<std::uintptr_t>(q)] = {bytes, device, pooled};
    *p = q;
    return cudaSuccess;
}

void release(void* p, const char* what) {
    auto& st = state();
    std::lock_guard g(st.m);
    const auto it = st.allocations.find(reinterpret_cast<std::uintptr_t>(p));
    if (it == st.allocations.end())
        fault(std::string(what) + " of " + hex(p) +
              ", which is not the start of a live device allocation (freed twice?)");
    st.used[static_cast<std::size_t>(it->second.device)] -= it->second.bytes;
    st.allocations.erase(it);
    ::operator delete (p, std::align_val_t{256});
}

} // namespace

void enqueue(cudaStream_t stream, std::function<void()> op) {
    const auto s = stream_of(stream);
    if (stream && s->blocking) {
        // A blocking stream's work waits for the legacy default stream's earlier work.
        const auto legacy = [&] {
            auto& st = state();
            std::lock_guard g(st.m);
            return st.null_streams[static_cast<std::size_t>(s->device)];
        }();
        op = [legacy, op = std::move(op)] {
            run_queue(*legacy);
            op();
        };
    }
    std::lock_guard g(s->lock);
    s->queue.push_back(std::move(op));
}

void enqueue_stall(cudaStream_t stream, std::function<void()> reached) {
    const auto s = stream_of(stream);
    enqueue(stream, [s, reached = std::move(reached)] {
        s->stalled = true;
        reached();
    });
}

int stream_device(cudaStream_t stream) {
    return stream_of(stream)->device;
}

int current_device() {
    return current;
}

bool is_device_range(const void* p, std::size_t bytes, int device) {
    std::lock_guard g(state().m);
    std::uintptr_t base = 0;
    const Allocation* al = allocation_at(p, base);
    return al && reinterpret_cast<std::uintptr_t>(p) + bytes <= base + al->bytes &&
           (device < 0 || al->device == device);
}

void set_last_error(cudaError_t e) {
    last_error = e;
}

void fault(const std::string& what) {
    std::fprintf(stderr, "cuda-emu: %s\n", what.c_str());
    std::fflush(stderr);
    std::abort();
}

} // namespace shardscope::cuda_emu

using namespace shardscope::cuda_emu;

extern "C" {

cudaError_t cudaGetDeviceCount(int* count) {
    if (!count) return fail(cudaErrorInvalidValue);
    *count = 0;
    if (const auto e = usable()) return fail(e);
    *count = state().devices;
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
    if (const auto e = usable()) return fail(e);
    if (device < 0 || device >= state().devices) return fail(cudaErrorInvalidDevice);
    current = device;
    return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
    if (!device) return fail(cudaErrorInvalidValue);
    if (const auto e = usable()) return fail(e);
    *device = current;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetPCIBusId(char* bus_id, int len, int device) {
    if (!bus_id || len <= 0) return fail(cudaErrorInvalidValue);
    if (const auto e = usable()) return fail(e);
    if (device < 0 || device >= state().devices) return fail(cudaErrorInvalidDevice);
    // One bus per device of the machine: the same device has the same id in every process.
    std::snprintf(bus_id, static_cast<std::size_t>(len), "00000000:%02X:00.0",
                  0x10 + state().physical[static_cast<std::size_t>(device)]);
    return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
    if (!prop) return fail(cudaErrorInvalidValue);
    if (const auto e = usable()) return fail(e);
    if (device < 0 || device >= state().devices) return fail(cudaErrorInvalidDevice);
    *prop = {};
    std::snprintf(prop->name, sizeof prop->name, "shardscope host CUDA emulator (tests only)");
    prop->totalGlobalMem = state().capacity;
    prop->major = 9; // the build's target, sm_90
    prop->maxThreadsPerBlock = 1024;
    prop->memPitch = 2147483647;
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize() {
    if (const auto e = usable()) return fail(e);
    synchronize_device(current);
    return cudaSuccess;
}

cudaError_t cudaGetLastError() {
    const auto e = last_error;
    last_error = cudaSuccess;
    return e;
}

cudaError_t cudaPeekAtLastError() {
    return last_error;
}

const char* cudaGetErrorName(cudaError_t e) {
    switch (e) {
    case cudaSuccess:
        return "cudaSuccess";
    case cudaErrorInvalidValue:
        return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation:
        return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration:
        return "cudaErrorInvalidConfiguration";
    case cudaErrorInsufficientDriver:
        return "cudaErrorInsufficientDriver";
    case cudaErrorNoDevice:
        return "cudaErrorNoDevice";
    case cudaErrorInvalidDevice:
        return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle:
        return "cudaErrorInvalidResourceHandle";
    case cudaErrorNotReady:
        return "cudaErrorNotReady";
    case cudaErrorInvalidPitchValue:
        return "cudaErrorInvalidPitchValue";
    default:
        return "cudaErrorUnknown";
    }
}

// The runtime's own wording, for the messages shardscope builds from it.
const char* cudaGetErrorString(cudaError_t e) {
    switch (e) {
    case cudaSuccess:
        return "no error";
    case cudaErrorInvalidValue:
        return "invalid argument";
    case cudaErrorMemoryAllocation:
        return "out of memory";
    case cudaErrorInvalidConfiguration:
        return "invalid configuration argument";
    case cudaErrorInsufficientDriver:
        return "CUDA driver version is insufficient for CUDA runtime version";
    case cudaErrorNoDevice:
        return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice:
        return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle:
        return "invalid resource handle";
    case cudaErrorNotReady:
        return "device not ready";
    case cudaErrorInvalidPitchValue:
        return "invalid pitch argument";
    default:
        return "unknown error";
    }
}

cudaError_t cudaMalloc(void** p, size_t bytes) {
    return allocate(p, bytes, current, false);
}

cudaError_t cudaMallocAsync(void** p, size_t bytes, cudaStream_t stream) {
    return allocate(p, bytes, stream_device(stream), true);
}

cudaError_t cudaFree(void* p) {
    if (!p) return cudaSuccess;
    // cudaFree waits for the device's work, which may still use the memory.
    const int d = device_of(p, 1, "cudaFree");
    if (d < 0) fault("cudaFree of " + hex(p) + ", which is not device memory (freed twice?)");
    synchronize_device(d);
    release(p, "cudaFree");
    return cudaSuccess;
}

cudaError_t cudaFreeAsync(void* p, cudaStream_t stream) {
    if (!p) return cudaSuccess;
    if (device_of(p, 1, "cudaFreeAsync") < 0)
        fault("cudaFreeAsync of " + hex(p) + ", which is not device memory (freed twice?)");
    enqueue(stream, [p] { release(p, "cudaFreeAsync"); });
    return cudaSuccess;
}

cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* pool, int device) {
    if (const auto e = usable()) return fail(e);
    if (!pool) return fail(cudaErrorInvalidValue);
    if (device < 0 || device >= state().devices) return fail(cudaErrorInvalidDevice);
    *pool = &state().pools[static_cast<std::size_t>(device)];
    return cudaSuccess;
}

cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, cudaMemPoolAttr, void* value) {
    if (!pool || !value) return fail(cudaErrorInvalidValue);
    return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* a, const void* p) {
    if (!a) return fail(cudaErrorInvalidValue);
    *a = {};
    const int d = p ? device_of(p, 1, "cudaPointerGetAttributes") : -1;
    if (d >= 0) {
        a->type = cudaMemoryTypeDevice;
        a->device = d;
        a->devicePointer = const_cast<void*>(p);
    } else {
        a->type = cudaMemoryTypeUnregistered;
        a->device = cudaInvalidDeviceId;
        a->hostPointer = const_cast<void*>(p);
    }
    return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags) {
    if (!stream) return fail(cudaErrorInvalidValue);
    if (const auto e = usable()) return fail(e);
    auto s = std::make_shared<CUstream_st>();
    s->device = current;
    s->blocking = (flags & cudaStreamNonBlocking) == 0;
    auto& st = state();
    std::lock_guard g(st.m);
    *stream = s.get();
    st.streams[s.get()] = std::move(s);
    return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t* stream) {
    return cudaStreamCreateWithFlags(stream, cudaStreamDefault);
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
    if (!stream) return fail(cudaErrorInvalidResourceHandle);
    const auto s = stream_of(stream);
    run_queue(*s); // its work still completes
    auto& st = state();
    std::lock_guard g(st.m);
    st.streams.erase(stream);
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
    const auto s = stream_of(stream);
    run_queue(*s);
    no_stall(*s, "cudaStreamSynchronize");
    return cudaSuccess;
}

cudaError_t cudaStreamQuery(cudaStream_t stream) {
    // The emulated GPU progresses when asked: the stream's work runs, up to a stall.
    const auto s = stream_of(stream);
    run_queue(*s);
    return s->stalled ? cudaErrorNotReady : cudaSuccess; // not an error: no last error
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream) {
    if (bytes == 0) return cudaSuccess;
    if (!dst || !src) return fail(cudaErrorInvalidValue);
    const int dd = device_of(dst, bytes, "cudaMemcpy's destination");
    const int sd = device_of(src, bytes, "cudaMemcpy's source");
    const bool ok = kind == cudaMemcpyDefault ||
                    (kind == cudaMemcpyHostToDevice && sd < 0 && dd >= 0) ||
                    (kind == cudaMemcpyDeviceToHost && sd >= 0 && dd < 0) ||
                    (kind == cudaMemcpyDeviceToDevice && sd >= 0 && dd >= 0) ||
                    (kind == cudaMemcpyHostToHost && sd < 0 && dd < 0);
    if (!ok)
        fault("cudaMemcpy of kind " + std::to_string(static_cast<int>(kind)) + " from " +
              (sd < 0 ? "host" : "device") + " memory to " + (dd < 0 ? "host" : "device") +
              " memory");
    const int on = stream_device(stream);
    check_pool_access(dst, on, "cudaMemcpy's destination");
    check_pool_access(src, on, "cudaMemcpy's source");
    if (sd < 0) {
        // Pageable host memory is staged when the call is made: the caller may reuse it.
        auto staged = std::make_shared<std::vector<std::byte>>(
            static_cast<const std::byte*>(src), static_cast<const std::byte*>(src) + bytes);
        enqueue(stream, [dst, staged] { std::memcpy(dst, staged->data(), staged->size()); });
    } else {
        enqueue(stream, [dst, src, bytes] { std::memmove(dst, src, bytes); });
    }
    return cudaSuccess;
}

cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch,
                              size_t width, size_t height, cudaMemcpyKind kind,
                              cudaStream_t stream) {
    if (width == 0 || height == 0) return cudaSuccess;
    if (!dst || !src) return fail(cudaErrorInvalidValue);
    // The device's maxPitch (2^31 - 1 on current GPUs) bounds both pitches.
    constexpr size_t max_pitch = 2147483647;
    if (width > dpitch || width > spitch || dpitch > max_pitch || spitch > max_pitch)
        return fail(cudaErrorInvalidPitchValue);
    const size_t dspan = (height - 1) * dpitch + width, sspan = (height - 1) * spitch + width;
    const int dd = device_of(dst, dspan, "cudaMemcpy2D's destination");
    const int sd = device_of(src, sspan, "cudaMemcpy2D's source");
    if (kind != cudaMemcpyDefault && kind != cudaMemcpyDeviceToDevice)
        fault("cudaMemcpy2DAsync is emulated for device-to-device copies only");
    if (dd < 0 || sd < 0) fault("cudaMemcpy2DAsync between device memory and host memory");
    check_pool_access(dst, stream_device(stream), "cudaMemcpy2D's destination");
    check_pool_access(src, stream_device(stream), "cudaMemcpy2D's source");
    enqueue(stream, [=] {
        for (size_t r = 0; r < height; ++r)
            std::memmove(static_cast<std::byte*>(dst) + r * dpitch,
                         static_cast<const std::byte*>(src) + r * spitch, width);
    });
    return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
    // The legacy default stream: waits for the device's blocking streams, then copies.
    for (const auto& s : [] {
             std::vector<std::shared_ptr<CUstream_st>> b;
             auto& st = state();
             std::lock_guard g(st.m);
             for (const auto& [p, q] : st.streams)
                 if (q->blocking && q->device == current) b.push_back(q);
             return b;
         }())
        run_queue(*s);
    // It returns when the copy is done only for a host destination: a device destination
    // (from pageable host memory, staged now, or from device memory) is written later, in the
    // legacy stream's order, which non-blocking streams do not wait for.
    const auto e = cudaMemcpyAsync(dst, src, bytes, kind, nullptr);
    if (e == cudaSuccess && device_of(dst, bytes, "cudaMemcpy's destination") < 0)
        run_queue(*stream_of(nullptr));
    return e;
}

cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t stream) {
    if (bytes == 0) return cudaSuccess;
    if (device_of(p, bytes, "cudaMemset") < 0)
        fault("cudaMemset of " + hex(p) + ", which is not device memory");
    enqueue(stream, [p, value, bytes] { std::memset(p, value, bytes); });
    return cudaSuccess;
}

cudaError_t cudaMemset(void* p, int value, size_t bytes) {
    // Asynchronous to the host for device memory: queued on the legacy default stream.
    return cudaMemsetAsync(p, value, bytes, nullptr);
}

cudaError_t cudaEventCreate(cudaEvent_t* event) {
    if (!event) return fail(cudaErrorInvalidValue);
    if (const auto e = usable()) return fail(e);
    auto ev = std::make_shared<CUevent_st>();
    ev->device = current;
    auto& st = state();
    std::lock_guard g(st.m);
    *event = ev.get();
    st.events[ev.get()] = std::move(ev);
    return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int) {
    return cudaEventCreate(event);
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
    if (!event) return fail(cudaErrorInvalidResourceHandle);
    event_of(event); // a destroyed one faults
    auto& st = state();
    std::lock_guard g(st.m);
    st.events.erase(event); // a queued record keeps it alive
    return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
    const auto ev = event_of(event);
    const auto s = stream_of(stream);
    if (s->device != ev->device) return fail(cudaErrorInvalidResourceHandle);
    const unsigned g = ++ev->generation;
    ev->stream = s;
    ev->recorded = true;
    enqueue(stream, [ev, g] {
        if (ev->generation != g) return; // recorded again since
        ev->at = Clock::now();
        ev->done_generation = g;
    });
    return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
    const auto ev = event_of(event);
    if (!ev->recorded) return cudaSuccess;
    const unsigned g = ev->generation;
    run_queue(*ev->stream, [&] { return ev->done_generation == g; });
    if (ev->done_generation != g) no_stall(*ev->stream, "cudaEventSynchronize");
    return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
    if (!ms) return fail(cudaErrorInvalidValue);
    const auto a = event_of(start), b = event_of(end);
    if (!a->recorded || !b->recorded) return fail(cudaErrorInvalidResourceHandle);
    if (a->done_generation != a->generation || b->done_generation != b->generation)
        return fail(cudaErrorNotReady);
    *ms = std::chrono::duration<float, std::milli>(b->at - a->at).count();
    return cudaSuccess;
}

} // extern "C"
