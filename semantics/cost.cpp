#include "cost.hpp"

#include <algorithm>
#include <array>
#include <limits>

namespace shardscope::semantics {

// NCCL's ring protocols over NVLink, from its own cost model (NVIDIA/nccl src/graph/tuning.cc:
// baseLat and hwLat, unchanged from NCCL 2.19 to 2.28; the bandwidth shares of
// ncclTopoTuneModel). LL sends 8-byte stores of 4 bytes of data and a 4-byte flag: fast to
// start but reaches a quarter of the bus bandwidth for an all-reduce and a third for the
// other collectives; LL128 reaches 120/128 of it (NCCL writes 0.92); Simple all of it, but
// starts slowest per step. NCCL caps LL's bandwidth further (llMaxBws: 87.7 GB/s on Ampere,
// 141 on Hopper, one node), above LL's shares of the presets' 235 and 370 GB/s, so the caps
// are left out (a `link` line faster than 260 GB/s on an A100 would reach them).
static constexpr std::array<Protocol, 3> kNvlinkRing{{
    {NcclProtocol::LL, 6.6e-6, 0.6e-6, 1.0 / 4.0, 1.0 / 3.0},
    {NcclProtocol::LL128, 14.0e-6, 1.9e-6, 0.92, 0.92},
    {NcclProtocol::Simple, 8.4e-6, 3.4e-6, 1.0, 1.0},
}};

// Dense peak figures from the vendors' datasheets. The link figures are calibrated for the
// model's own formula (NOTATION.md section 8, with NCCL's protocols on NVLink: cost.hpp):
// - bandwidth is the measured nccl-tests *bus* bandwidth of large collectives (busbw is
//   defined with the same (n-1)/n and 2(n-1)/n factors as collective_bytes), not the line rate;
// - latency on NVLink is NCCL's per protocol (kNvlinkRing above): a collective costs the
//   fastest protocol's fixed latency plus its latency per ring step plus the bytes at its
//   share of the bandwidth, which reproduces NCCL's 15 us for a small all-reduce on 8 GPUs
//   (LL: 6.6 + 14 · 0.6) and its choice of Simple for large ones (README.md, "Cost model").
//   A single latency per step cannot: it undercounts small groups and small messages and
//   overcounts large ones (issue 19 item 4).
static constexpr std::array<Hardware, 4> kPresets{{
    // A100 SXM 80GB: 19.5 TFLOP/s f32, 312 TFLOP/s bf16 tensor core, 2039 GB/s HBM2e, 80 GB
    // (NVIDIA A100 datasheet: GPU memory bandwidth 2,039 GB/s for the 80GB SXM part; the part
    // of Megatron-LM's published runs, docs/validation.md).
    // Link: NVLink 3 is 300 GB/s each way (line rate). all_reduce_perf on the 8 A100-SXM4-40GB
    // of one node, 10 GiB: 80922 us, busbw 232.2 GB/s (Oracle's OCI HPC tutorials
    // (ocitutorials), the NCCL Tests page for BM.GPU4.8/BM.GPU.A100-v2.8 on Ubuntu, section
    // 3-1, NCCL 2.26.5; runs on the same shape in the other OCI guides give 232.8-235.4 GB/s),
    // and NCCL's tuning model caps the bus bandwidth of compute capability 8.0 at 235 GB/s
    // (NVIDIA/nccl src/graph/tuning.cc, commit 01afd20:
    // `if (compCap80) busBw = std::min(busBw, 235.0f)`): the same NVLink on both parts.
    // Latency: NCCL's protocols (kNvlinkRing).
    {"a100", 19.5e12, 312e12, 2039e9, 235e9, 0, kNvlinkRing, 80e9,
     "NVIDIA A100 80GB SXM datasheet; nccl-tests busbw on 8 A100 (235 GB/s); NCCL tuning.cc "
     "latencies"},
    // A100 40GB: the same peaks, 1555 GB/s HBM2, 40 GB (NVIDIA A100 datasheet: 1,555 GB/s for
    // the 40GB parts; the same figures in ml-performance-book.txt's roofline example, whose
    // A100 is an A100 40GB PCIe). Link and latency as the a100 above (measured on
    // A100-SXM4-40GB); a PCIe card's own links are not modelled.
    {"a100-40gb", 19.5e12, 312e12, 1555e9, 235e9, 0, kNvlinkRing, 40e9,
     "NVIDIA A100 40GB datasheet; nccl-tests busbw on 8 A100-SXM4-40GB; NCCL tuning.cc"},
    // H100 SXM: 67 TFLOP/s f32, 989 TFLOP/s dense bf16, 3.35 TB/s HBM3 (NVIDIA H100 datasheet,
    // 2022). Link: NVLink 4 is 450 GB/s each way (line rate); NCCL's maintainer: "With the
    // protocol overhead (~20%) NCCL can get an effective NVLink bandwidth of 370GB/s, which you
    // can observe as BusBw when running non-allreduce operations, or when running with
    // NCCL_ALGO=RING"; the NVLink-SHARP all-reduce reaches busbw ~480 GB/s on 8 GPUs
    // (https://github.com/NVIDIA/nccl-tests/issues/212; 476 GB/s measured in
    // https://github.com/NVIDIA/nccl-tests/issues/290). The ring figure is the one for every
    // collective the model prices. Latency: NCCL's protocols (kNvlinkRing).
    // Capacity: 80 GB HBM3 (NVIDIA H100 datasheet, H100 SXM "GPU Memory: 80GB").
    {"h100", 67e12, 989e12, 3350e9, 370e9, 0, kNvlinkRing, 80e9,
     "NVIDIA H100 SXM datasheet; nccl-tests issue 212 (370 GB/s ring busbw); NCCL tuning.cc"},
    // TPU v5e: 197 TFLOP/s bf16, 819 GB/s HBM, ICI 400 GB/s bidirectional per chip over 4
    // ports (https://cloud.google.com/tpu/docs/v5e, "System architecture"), i.e. 50 GB/s per
    // link each way. Kept at 45 GB/s (NOTATION.md section 8), 90% of that line rate: no
    // published measured ICI bus bandwidth was found, so this figure is NOT calibrated.
    // f32 runs on the MXU at a quarter of the bf16 rate. Latency: 1 us per step, NOT
    // calibrated either (no published v5e collective latency was found).
    // Capacity: 16 GB HBM2 per chip (same page, key chip specifications: "HBM2 capacity and
    // bandwidth: 16 GB, 819 GBps").
    {"tpu-v5e", 197e12 / 4, 197e12, 819e9, 45e9, 1e-6, Protocols{}, 16e9,
     "Google Cloud TPU v5e documentation"},
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

CollectiveTime collective_timing(StepKind kind, std::int64_t n, double bytes, const Link& link) {
    return timing_in_steps(kind, collective_steps(kind, n), bytes, link);
}

CollectiveTime timing_in_steps(StepKind kind, std::int64_t step_count, double bytes,
                               const Link& link) {
    const double steps = static_cast<double>(step_count);
    if (steps == 0) return {};
    const auto transfer = [&](double share) {
        const double bw = link.bytes_per_second * share;
        return bw > 0 ? bytes / bw : 0;
    };
    if (link.protocols.empty()) return {steps * link.latency_s + transfer(1), NcclProtocol::None};
    CollectiveTime best{std::numeric_limits<double>::infinity(), NcclProtocol::None};
    for (const auto& p : link.protocols) {
        const double share = kind == StepKind::AllReduce ? p.share_all_reduce : p.share_other;
        const double t = p.base_s + steps * p.step_s + transfer(share);
        if (t < best.time_s) best = {t, p.kind};
    }
    return best;
}

double compute_time(double flops, double bytes_moved, const Hardware& hw, int dtype_bytes,
                    bool matrix_product) {
    const double peak = matrix_product && dtype_bytes <= 2 ? hw.flops_bf16 : hw.flops_f32;
    return std::max(flops / peak, bytes_moved / hw.memory_bw);
}

} // namespace shardscope::semantics
