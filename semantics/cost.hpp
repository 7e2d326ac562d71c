// The cost model (NOTATION.md section 8): hardware presets, ring collectives, roofline compute.
#pragma once

#include "plan.hpp"

#include <span>
#include <string_view>

namespace shardscope::semantics {

/// One NCCL protocol on a link (NCCL's ring model, src/graph/tuning.cc): a fixed latency
/// per collective, a latency per ring step, and the share of the link's bus bandwidth it
/// reaches. NCCL picks, per collective and size, the protocol its model finds fastest; the
/// cost model does the same.
struct Protocol {
    NcclProtocol kind = NcclProtocol::None;
    double base_s = 0;           ///< per collective
    double step_s = 0;           ///< per ring step
    double share_all_reduce = 1; ///< of the bus bandwidth, for an all-reduce
    double share_other = 1;      ///< for every other collective
    bool operator==(const Protocol&) const = default;
};

/// The protocols of one kind of link (empty: the plain `steps · latency + bytes / bandwidth`).
using Protocols = std::span<const Protocol>;
/// The same table (the presets' tables are static: identity is equality).
inline bool same_protocols(Protocols a, Protocols b) {
    return a.data() == b.data() && a.size() == b.size();
}

/// A hardware preset: peak compute per element type, memory capacity and bandwidth, and
/// interconnect bandwidth.
struct Hardware {
    std::string_view name;
    double flops_f32 = 0;      ///< FLOP/s, non-tensor-core f32
    double flops_bf16 = 0;     ///< FLOP/s, dense bf16/f16 matrix units
    double memory_bw = 0;      ///< bytes/s (HBM)
    double link_bw = 0;        ///< bytes/s per device into its mesh axis (one direction)
    double link_latency_s = 0; ///< per collective step (the plain model: no protocols)
    Protocols link_protocols;  ///< how NCCL drives the link (empty: the plain model)
    double hbm_bytes = 0;      ///< memory capacity per device (bytes): program totals' "fits"
    std::string_view source;   ///< where the figures come from
};

/// The preset named `name` (a100, a100-40gb, h100, tpu-v5e), or nullptr.
const Hardware* find_hardware(std::string_view name);
/// Names of all presets, comma-separated, for messages.
std::string hardware_names();

/// Bandwidth and latency of the links along one mesh axis. With protocols (a preset's
/// NVLink), a collective costs the fastest protocol's `base + steps · step + bytes /
/// (bandwidth · share)`; without (a `link` line with a latency, a TPU), `steps · latency +
/// bytes / bandwidth`.
struct Link {
    double bytes_per_second = 0;
    double latency_s = 0; ///< per ring step; used only without protocols
    Protocols protocols;
};

/// Bytes each device sends for a collective over a group of n devices (ring algorithms, the
/// NCCL bus-bandwidth view). `group_bytes` is the size of the whole tensor within the group
/// (gathered for all-gather, the partial input for all-reduce and reduce-scatter);
/// `local_bytes` is one device's piece (all-to-all).
double collective_bytes(StepKind kind, std::int64_t n, double group_bytes, double local_bytes);
/// Sequential ring steps of a collective over n devices.
std::int64_t collective_steps(StepKind kind, std::int64_t n);
/// A collective's estimated time and the protocol it assumes (None: the plain formula).
struct CollectiveTime {
    double time_s = 0;
    NcclProtocol protocol = NcclProtocol::None;
};
/// The time of one collective: the fastest protocol's `base + steps · step + bytes /
/// (bandwidth · share)`, or `steps · latency + bytes / bandwidth` on a link without protocols.
CollectiveTime collective_timing(StepKind kind, std::int64_t n, double bytes, const Link& link);
/// The same for a collective of `steps` sequential steps: a permute whose busiest device sends
/// to, or receives from, `steps` peers (each peer a step, as each neighbour is a ring's step).
CollectiveTime timing_in_steps(StepKind kind, std::int64_t steps, double bytes, const Link& link);
/// The same, the time alone.
inline double collective_time(StepKind kind, std::int64_t n, double bytes, const Link& link) {
    return collective_timing(kind, n, bytes, link).time_s;
}

/// Roofline: max(flops / peak, bytes moved / memory bandwidth). Matrix products use the
/// matrix-unit peak for 16-bit types; everything else the f32 peak.
double compute_time(double flops, double bytes_moved, const Hardware& hw, int dtype_bytes,
                    bool matrix_product);

} // namespace shardscope::semantics
