#include "cost.hpp"

#include <algorithm>
#include <array>

namespace shardscope::semantics {

// Dense peak figures from the vendors' datasheets; link figures per GPU and direction.
static constexpr std::array<Hardware, 3> kPresets{{
    // A100 SXM: 19.5 TFLOP/s f32, 312 TFLOP/s bf16 tensor core, 1555 GB/s HBM2 (40 GB part);
    // NVLink 3: 600 GB/s bidirectional = 300 GB/s each way. NVIDIA A100 datasheet (2020);
    // the same f32/bf16/HBM figures are used in ml-performance-book.txt, "Roofline".
    {"a100", 19.5e12, 312e12, 1555e9, 300e9, 5e-6,
     "NVIDIA A100 datasheet; ml-performance-book.txt (roofline example)"},
    // H100 SXM: 67 TFLOP/s f32, 989 TFLOP/s dense bf16, 3.35 TB/s HBM3; NVLink 4: 900 GB/s
    // bidirectional = 450 GB/s each way. NVIDIA H100 datasheet (2022).
    {"h100", 67e12, 989e12, 3350e9, 450e9, 5e-6, "NVIDIA H100 SXM datasheet"},
    // TPU v5e: 197 TFLOP/s bf16, 819 GB/s HBM, ICI 45 GB/s per link each way (Google Cloud TPU
    // v5e documentation); f32 runs on the MXU at a quarter of the bf16 rate.
    {"tpu-v5e", 197e12 / 4, 197e12, 819e9, 45e9, 1e-6, "Google Cloud TPU v5e documentation"},
}};

const Hardware* find_hardware(std::string_view name) {
    for (const auto& h : kPresets)
        if (h.name == name) return &h;
    return nullptr;
}

std::string hardware_names() {
    std::string out;
    for (const auto& h : kPresets)
        out += (out.empty() ? "" : ", ") + std::string(h.name);
    return out;
}

double collective_bytes(StepKind kind, std::int64_t n, double group_bytes, double local_bytes) {
    if (n <= 1) return 0;
    const double f = static_cast<double>(n - 1) / static_cast<double>(n);
    switch (kind) {
    case StepKind::AllGather:
    case StepKind::ReduceScatter:
        return f * group_bytes;
    case StepKind::AllReduce:
        return 2 * f * group_bytes;
    case StepKind::AllToAll:
        return f * local_bytes;
    case StepKind::Permute:
        return local_bytes;
    default:
        return 0;
    }
}

std::int64_t collective_steps(StepKind kind, std::int64_t n) {
    if (n <= 1) return 0;
    switch (kind) {
    case StepKind::AllReduce:
        return 2 * (n - 1);
    case StepKind::AllGather:
    case StepKind::ReduceScatter:
    case StepKind::AllToAll:
        return n - 1;
    case StepKind::Permute:
        return 1;
    default:
        return 0;
    }
}

double collective_time(StepKind kind, std::int64_t n, double bytes, const Link& link) {
    const double steps = static_cast<double>(collective_steps(kind, n));
    return steps * link.latency_s + (link.bytes_per_second > 0 ? bytes / link.bytes_per_second : 0);
}

double compute_time(double flops, double bytes_moved, const Hardware& hw, int dtype_bytes,
                    bool matrix_product) {
    const double peak = matrix_product && dtype_bytes <= 2 ? hw.flops_bf16 : hw.flops_f32;
    return std::max(flops / peak, bytes_moved / hw.memory_bw);
}

} // namespace shardscope::semantics
