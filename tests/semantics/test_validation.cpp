// The cost model against published numbers (issue 18, docs/validation.md): the samples that
// reproduce a published figure, each predicted figure worked out here from the sample's sizes
// and the preset (not read back from the output), then compared with the published one within
// the error docs/validation.md states and explains.
#include "helpers.hpp"

#include "semantics/cost.hpp"
#include "semantics/redistribute.hpp"
#include "semantics/report.hpp"
#include "semantics/totals.hpp"

#include "tests/read_file.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

using namespace shardscope;
using namespace shardscope::test;
using semantics::ProgramTotals;

namespace {

std::string read_sample(const std::string& name) {
    auto text = test::read_file(std::string(SHARDSCOPE_SAMPLES_DIR) + "/" + name);
    REQUIRE(!text.empty());
    return text;
}

ProgramTotals totals_of(const std::string& text) {
    const auto program = parse_program(text);
    const auto plan = semantics::check(program, {});
    REQUIRE_MESSAGE(plan.errors() == 0, plan_text(text, plan));
    return semantics::program_totals(plan);
}

/// `text` with every occurrence of `from` replaced by `to` (at least one).
std::string replace_all(std::string text, const std::string& from, const std::string& to) {
    std::size_t at = text.find(from);
    REQUIRE_MESSAGE(at != std::string::npos, from);
    for (; at != std::string::npos; at = text.find(from, at + to.size()))
        text.replace(at, from.size(), to);
    return text;
}

double relative_error(double predicted, double published) {
    return (predicted - published) / published;
}

} // namespace

TEST_CASE("presets: each A100 part with its own memory bandwidth and capacity") {
    // NVIDIA A100 datasheet: 80GB SXM 2039 GB/s, 40GB 1555 GB/s; the same peaks and NVLink.
    const auto* big = semantics::find_hardware("a100");
    const auto* small = semantics::find_hardware("a100-40gb");
    REQUIRE(big != nullptr);
    REQUIRE(small != nullptr);
    CHECK(big->memory_bw == 2039e9);
    CHECK(big->hbm_bytes == 80e9);
    CHECK(small->memory_bw == 1555e9);
    CHECK(small->hbm_bytes == 40e9);
    CHECK(big->flops_bf16 == small->flops_bf16);
    CHECK(big->link_bw == small->link_bw);
    CHECK(semantics::hardware_names().find("a100-40gb") != std::string::npos);
    // A memory-bound statement runs 2039 / 1555 times faster on the 80 GB part.
    const std::string mlp = "mesh 1\ndtype bf16\ndim b=32 d=4096 f=8192\nHW\n"
                            "y_{b f} = x_{b d} W_{d f}\n";
    auto on = [&](const std::string& hw) {
        return totals_of(replace_all(mlp, "HW", "hw " + hw)).step_s;
    };
    CHECK(on("a100-40gb") / on("a100") == rel(2039.0 / 1555.0));
}

TEST_CASE("collective time: NCCL's protocols on NVLink, the plain formula elsewhere") {
    using semantics::collective_time;
    using semantics::StepKind;
    const auto* a100 = semantics::find_hardware("a100");
    const auto* h100 = semantics::find_hardware("h100");
    REQUIRE(a100 != nullptr);
    REQUIRE(h100 != nullptr);
    const semantics::Link nvlink_a100{a100->link_bw, a100->link_latency_s, a100->link_protocols};
    const semantics::Link nvlink_h100{h100->link_bw, h100->link_latency_s, h100->link_protocols};
    // The README's table (Cost model), each figure worked out from NCCL's tables here.
    // A small all-reduce on 8 A100: LL, 6.6 + 14 x 0.6 us (NCCL's model: 15 us).
    const double small = semantics::collective_bytes(StepKind::AllReduce, 8, 8, 8);
    CHECK(collective_time(StepKind::AllReduce, 8, small, nvlink_a100) ==
          rel(6.6e-6 + 14 * 0.6e-6 + small / (235e9 / 4)));
    // 10 GiB on 8 A100: Simple, bandwidth-bound (nccl-tests: 80.9 ms at busbw 232.2 GB/s).
    const double big = semantics::collective_bytes(StepKind::AllReduce, 8, 10737418240.0, 0);
    const double big_t = collective_time(StepKind::AllReduce, 8, big, nvlink_a100);
    CHECK(big_t == rel(8.4e-6 + 14 * 3.4e-6 + big / 235e9));
    CHECK(std::abs(relative_error(big_t, 80.922e-3)) < 0.02);
    // Issue 19 item 4 on 4 H100: the two statistics all-reduces of the 2 MiB softmax (512 B
    // each) against the all-gather of 3/4 of it.
    const double stat = semantics::collective_bytes(StepKind::AllReduce, 4, 512, 0);
    CHECK(collective_time(StepKind::AllReduce, 4, stat, nvlink_h100) ==
          rel(6.6e-6 + 6 * 0.6e-6 + stat / (370e9 / 4)));
    const double gathered = semantics::collective_bytes(StepKind::AllGather, 4, 2097152, 0);
    const double gather_t = collective_time(StepKind::AllGather, 4, gathered, nvlink_h100);
    CHECK(gather_t == rel(6.6e-6 + 3 * 0.6e-6 + gathered / (370e9 / 3))); // LL, a third
    CHECK(2 * collective_time(StepKind::AllReduce, 4, stat, nvlink_h100) < gather_t);
    // LL128 between the two: 14 + 7 x 1.9 us, 0.92 of the bandwidth (an 8-device gather of
    // 14.7 MB, the %2 of the Megatron MLP's alternative).
    CHECK(collective_time(StepKind::AllGather, 8, 14.68e6, nvlink_h100) ==
          rel(14e-6 + 7 * 1.9e-6 + 14.68e6 / (370e9 * 0.92)));
    // The protocol each time assumes: LL for the small ones, LL128 between, Simple for bulk.
    using semantics::NcclProtocol;
    CHECK(semantics::collective_timing(StepKind::AllReduce, 8, small, nvlink_a100).protocol ==
          NcclProtocol::LL);
    CHECK(semantics::collective_timing(StepKind::AllReduce, 8, big, nvlink_a100).protocol ==
          NcclProtocol::Simple);
    CHECK(semantics::collective_timing(StepKind::AllGather, 8, 14.68e6, nvlink_h100).protocol ==
          NcclProtocol::LL128);
    // Nothing moves on one device.
    CHECK(collective_time(StepKind::AllReduce, 1, 0, nvlink_h100) == 0);
    // A link without protocols (tpu-v5e, a `link` line with a latency): steps x latency +
    // bytes / bandwidth, no fixed term.
    const semantics::Link plain{45e9, 1e-6, {}};
    CHECK(collective_time(StepKind::AllReduce, 4, 1e6, plain) == rel(6 * 1e-6 + 1e6 / 45e9));
    CHECK(collective_time(StepKind::Permute, 2, 1e6, plain) == rel(1e-6 + 1e6 / 45e9));
    CHECK(semantics::collective_timing(StepKind::Permute, 2, 1e6, plain).protocol ==
          NcclProtocol::None);
}

TEST_CASE("check --json names the protocol a collective's time assumes") {
    auto steps_of = [](const std::string& text) {
        const auto program = parse_program(text);
        const auto plan = semantics::check(program, {});
        REQUIRE_MESSAGE(plan.errors() == 0, plan_text(text, plan));
        return semantics::plan_to_json(plan, "t.ein")["statements"][0]["steps"];
    };
    const std::string body = "dim i=64 j=64 k=64\nC_{ik} = A_{i j_0} B_{j_0 k}\n";
    const auto h100 = steps_of("mesh 4\n" + body);
    REQUIRE(h100.size() == 2);
    CHECK(h100[0]["kind"] == "compute");
    CHECK_FALSE(h100[0].contains("protocol"));
    CHECK(h100[1]["kind"] == "all-reduce");
    CHECK(h100[1]["protocol"] == "LL");
    // Bulk: Simple.
    const auto bulk = steps_of("mesh 4\ndim i=4096 j=4096 k=4096\nC_{ik} = A_{i j_0} B_{j_0 k}\n");
    CHECK(bulk[1]["protocol"] == "Simple");
    // The plain formula names none.
    CHECK_FALSE(steps_of("mesh 4\nhw tpu-v5e\n" + body)[1].contains("protocol"));
    CHECK_FALSE(steps_of("mesh 4\nlink 0 100GB/s 2us\n" + body)[1].contains("protocol"));
}

TEST_CASE("link lines: a latency makes the axis plain, a bandwidth alone keeps the protocols") {
    auto step_time = [](const std::string& text) {
        const auto program = parse_program(text);
        const auto plan = semantics::check(program, {});
        REQUIRE_MESSAGE(plan.errors() == 0, plan_text(text, plan));
        const auto& steps = plan.statements.at(0).steps;
        const auto it = std::find_if(steps.begin(), steps.end(), [](const semantics::Step& s) {
            return s.kind == semantics::StepKind::AllReduce;
        });
        REQUIRE_MESSAGE(it != steps.end(), plan_text(text, plan));
        return it->cost.time_s;
    };
    const std::string body = "dim i=4 j=4 k=4\nC_{ik} = A_{i j_0} B_{j_0 k}\n";
    // 64 B all-reduced over 4 devices: 96 B per device.
    CHECK(step_time("mesh 4\n" + body) == rel(6.6e-6 + 6 * 0.6e-6 + 96 / (370e9 / 4)));
    CHECK(step_time("mesh 4\nlink 0 100GB/s\n" + body) ==
          rel(6.6e-6 + 6 * 0.6e-6 + 96 / (100e9 / 4)));
    CHECK(step_time("mesh 4\nlink 0 100GB/s 2us\n" + body) == rel(6 * 2e-6 + 96 / 100e9));
}

TEST_CASE("a group's link: protocols only where every axis has the same") {
    const auto* h100 = semantics::find_hardware("h100");
    REQUIRE(h100 != nullptr);
    const semantics::Link nvlink{h100->link_bw, 0, h100->link_protocols};
    const semantics::Link slow{100e9, 2e-6, {}};
    const auto both = semantics::detail::group_link({nvlink, nvlink}, {0, 1});
    CHECK(semantics::same_protocols(both.protocols, h100->link_protocols));
    CHECK(both.bytes_per_second == h100->link_bw);
    // A ring through the group crosses the plain link: plain, its latency and bandwidth.
    for (const auto& axes : {std::vector<int>{0, 1}, std::vector<int>{1, 0}}) {
        const auto mixed = semantics::detail::group_link({nvlink, slow}, axes);
        CHECK(mixed.protocols.empty());
        CHECK(mixed.bytes_per_second == 100e9);
        CHECK(mixed.latency_s == 2e-6);
    }
}

TEST_CASE("validated: the performance book's roofline of a gated MLP on an A100") {
    // ml-performance-book.txt, "Practical Example": b=32, d_model=4096, hidden=8192, bf16,
    // A100 40GB: 312 TFLOP/s (tensor cores), 1555 GB/s. Published: estimate 129 us (memory-bound,
    // fused by torch.compile), measured 191 us.
    const double b = 32, d = 4096, f = 8192, bytes = 2, bw = 1555e9, peak = 312e12;
    const auto* a100 = semantics::find_hardware("a100-40gb"); // the book's "A100 40GB PCIe"
    REQUIRE(a100 != nullptr);
    CHECK(a100->memory_bw == bw); // the book's A100 figures are the preset's
    CHECK(a100->flops_bf16 == peak);
    const auto t = totals_of(read_sample("book_roofline_mlp.ein"));

    // The book's fused estimate: x, the three weights and the output cross HBM once.
    const double fused = (2 * b * d + 3 * d * f) * bytes / bw;
    CHECK(fused == doctest::Approx(129e-6).epsilon(0.01).scale(0));
    // The model prices each statement by its own roofline: each product reads its operands
    // and writes its result (all memory-bound here), relu and the gating product read and
    // write u and v (the book's x1 and x2, which fusion keeps out of HBM).
    const double product = (b * d + d * f + b * f) * bytes / bw;
    CHECK(product > 2 * b * d * f / peak); // memory-bound: the bytes take longer than the FLOPs
    const double relu = 2 * b * f * bytes / bw, gate = 3 * b * f * bytes / bw;
    const double predicted = 3 * product + relu + gate;
    CHECK(t.step_s == rel(predicted));
    CHECK(t.flops == rel(3 * 2 * b * d * f + b * f + 2 * b * f));
    // Against the book: +2.9% of its 129 us estimate (the unfused intermediates), within
    // the 5% docs/validation.md states; 30.5% under the measured 191 us (kernel launches and
    // the gaps between kernels, which a roofline leaves out: the book's own explanation).
    CHECK(std::abs(relative_error(t.step_s, 129e-6)) < 0.05);
    CHECK(relative_error(t.step_s, 191e-6) < -0.25);
    CHECK(relative_error(t.step_s, 191e-6) > -0.35);
}

namespace {

// Korthikanti et al. 2022 (arXiv:2205.05198), Table 3, the 22B model: a=64 heads, h=6144,
// L=48, t=8, p=1, 8 GPUs, global batch 4 (micro-batch 4: no data parallelism); s=2048,
// vocabulary 51200; A100 peak 312 TFLOP/s.
constexpr double kB = 4, kS = 2048, kH = 6144, kA = 64, kL = 48, kT = 8, kV = 51200;
constexpr double kPeak = 312e12;

/// The paper's model FLOPs per iteration (its Appendix A, eq. 7, the Megatron-LM formula):
/// forward and backward of every matrix product, recomputation excluded.
double megatron_model_flops() {
    return 72 * kB * kL * kS * kH * kH * (1 + kS / (6 * kH) + kV / (12 * kH * kL));
}

} // namespace

TEST_CASE("validated: Megatron-LM's 22B GPT step (Korthikanti et al. 2022, Tables 3 and 5)") {
    const auto t = totals_of(read_sample("megatron_gpt22b.ein"));
    CHECK(t.devices == 8);
    CHECK(t.peak_flops == kPeak);

    // Our reading of the configuration reproduces the published MFU from the published
    // iteration time (1.10 s): global batch 4 on the 8 GPUs of one tensor-parallel group.
    const double model = megatron_model_flops();
    CHECK(model / (1.10 * kT * kPeak) == doctest::Approx(0.415).epsilon(0.01).scale(0));

    // FLOPs per device: the model FLOPs, plus the QK^T product that selective recomputation
    // runs again in each layer's backward (2 b s^2 h / t), plus the elementwise work (norms,
    // softmax, GeLU: under 0.2%).
    const double recomputed = 2 * kB * kS * kS * kH * kL / kT;
    CHECK(t.flops > model / kT + recomputed);
    CHECK(t.flops < (model / kT + recomputed) * 1.002);

    // MFU as the paper defines it: model FLOPs / (time * peak), here with the predicted
    // step time. The roofline runs every product at the full 312 TFLOP/s and does not
    // price the optimizer step, so the prediction is an upper bound: 58.3% against the
    // published 41.5% (+40%; docs/validation.md explains the gap), and the step 28%
    // shorter than the published 1.10 s.
    const double mfu = model / kT / (t.step_s * kPeak);
    CHECK(mfu > 0.415);
    CHECK(relative_error(mfu, 0.415) < 0.45);
    CHECK(relative_error(t.step_s, 1.10) < -0.25);
    CHECK(relative_error(t.step_s, 1.10) > -0.32);
    // The step is no shorter than its matrix products at peak.
    CHECK(t.compute_s > (model / kT + recomputed) / kPeak);
}

TEST_CASE("validated: one layer's forward and backward (Korthikanti et al. 2022, Table 4)") {
    // Table 4, the 22B model's layer with selective recomputation and sequence parallelism:
    // forward 7.2 ms, backward 13.1 ms. Predicted: every step of the block in turn (no
    // overlap), 5.67 and 11.42 ms: -21% and -13% (docs/validation.md), and no faster than
    // the layer's matrix products at peak (the backward's: twice the forward's, and the
    // recomputed QK^T).
    const auto text = read_sample("megatron_gpt22b.ein");
    const auto plan = semantics::check(parse_program(text), {});
    REQUIRE(plan.errors() == 0);
    REQUIRE(plan.repeats.size() == 2);
    auto block_time = [&](const semantics::RepeatBlock& b) {
        double s = 0;
        for (std::size_t i = b.first; i < b.last; ++i)
            for (const auto& st : plan.statements[i].steps)
                s += st.cost.time_s;
        return s;
    };
    REQUIRE_FALSE(plan.repeats[0].reverse);
    REQUIRE(plan.repeats[1].reverse);
    const double forward = block_time(plan.repeats[0]), backward = block_time(plan.repeats[1]);
    const double products = (24 * kB * kS * kH * kH + 4 * kB * kS * kS * kH) / kT / kPeak;
    CHECK(forward > products);
    CHECK(backward > 2 * products + 2 * kB * kS * kS * kH / kT / kPeak);
    CHECK(relative_error(forward, 7.2e-3) < -0.15);
    CHECK(relative_error(forward, 7.2e-3) > -0.25);
    CHECK(relative_error(backward, 13.1e-3) < -0.05);
    CHECK(relative_error(backward, 13.1e-3) > -0.20);
}

TEST_CASE("validated: activation memory per layer (Korthikanti et al. 2022, section 4)") {
    // The activations one more layer adds: the totals at 48 layers minus those at 47.
    const auto text = read_sample("megatron_gpt22b.ein");
    auto per_layer = [&](const std::string& program) {
        const auto at48 = totals_of(program);
        const auto at47 = totals_of(replace_all(program, "repeat l=48", "repeat l=47"));
        return at48.memory.activations - at47.memory.activations;
    };
    const double sbh_t = kS * kB * kH / kT;      // elements of one sequence-sharded activation
    const double stats = 2 * (kB * kS / kT) * 2; // the two norms' per-token statistics, bf16

    // Tensor + sequence parallelism with selective recomputation: the paper's 34 s b h / t
    // bytes. Ours: c, a, Q, K, V, O, z, h (2 bytes each), u and G (8 each: 4h wide) and the
    // residual r (2: the totals keep a carried tensor per layer) = 34 s b h / t; the paper's
    // 34 has two 1-byte dropout masks, which the sample lacks, where we count r.
    const double selective = per_layer(text);
    CHECK(selective == rel(34 * sbh_t + stats));
    CHECK(std::abs(relative_error(selective, 34 * sbh_t)) < 1e-4);

    // Without recomputation the probabilities P are saved too: the paper's
    // s b h / t (34 + 5 a s / h); ours (34 + 2 a s / h): no dropout of the probabilities
    // (its 1-byte mask and 2-byte output, 3 a s / h), -45.5%.
    auto stored = replace_all(text,
                              "  R_{b s n_{tp} t} = softmax_t(0.102 Q_{b s n_{tp} k} K_{b t "
                              "n_{tp} k} + M_{s t})\n  expect none\n",
                              "");
    stored = replace_all(stored, "R_{b s n_{tp} t}", "P_{b s n_{tp} t}");
    const double saved = per_layer(stored);
    CHECK(saved == rel(sbh_t * (34 + 2 * kA * kS / kH) + stats));
    const double paper = sbh_t * (34 + 5 * kA * kS / kH);
    CHECK(relative_error(saved, paper) ==
          doctest::Approx(-3 * kA * kS / kH / (34 + 5 * kA * kS / kH)).epsilon(1e-3).scale(0));
}

namespace {

// Korthikanti et al. 2022, Table 3, the 175B model: a=96 heads, h=12288, L=96, t=8, p=8,
// 64 GPUs, global batch 64 of micro-batches of 1 (64 micro-batches, no data parallelism);
// Table 5: 13.75 s per iteration, MFU 51.4%.
namespace gpt175b {
constexpr double B = 64, S = 2048, H = 12288, L = 96, T = 8, P = 8, M = 64, V = 51200;
constexpr double kDevices = T * P;
constexpr double kIteration = 13.75, kMfu = 0.514;

double model_flops() { // Appendix A, eq. 7
    return 72 * B * L * S * H * H * (1 + S / (6 * H) + V / (12 * H * L));
}
} // namespace gpt175b

} // namespace

TEST_CASE("validated: Megatron-LM's 175B GPT step, t=8 p=8 (Korthikanti et al. 2022, Tables 3 "
          "and 5)") {
    using namespace gpt175b;
    const auto t = totals_of(read_sample("megatron_gpt175b.ein"));
    CHECK(t.devices == 64);
    CHECK(t.peak_flops == kPeak);

    // Our reading of the configuration reproduces the published MFU from the published
    // iteration time: global batch 64 on one pipeline of 8 stages of 8 GPUs.
    const double model = model_flops();
    CHECK(model / (kIteration * kDevices * kPeak) == doctest::Approx(kMfu).epsilon(0.01).scale(0));

    // The pipeline: 8 stages of 12 layers, 64 micro-batches, 1F1B: the bubble is
    // (P - 1) / (M + P - 1) = 7/71 of (M + P - 1) t, and the first stage holds min(P, M) = 8
    // micro-batches' activations.
    const auto& p = t.pipeline;
    REQUIRE(p.pipelined);
    CHECK(p.stages == 8);
    CHECK(p.layers_per_stage == 12);
    CHECK(p.microbatches == 64);
    CHECK(p.schedule == "1f1b");
    CHECK(p.in_flight == 8);
    CHECK(p.bubble_fraction == rel((P - 1) / (M + P - 1)));
    CHECK(p.pipeline_s == rel((M + P - 1) * p.microbatch_s));
    CHECK(p.bubble_s == rel((P - 1) * p.microbatch_s));
    // One model for both (docs/guide.md, "Program totals"): the step holds the schedule.
    CHECK(t.step_s >= p.pipeline_s);
    // The sends: the residual r forward and its gradient gr backward, one micro-batch's
    // sequence shard (s b h / t / M, bf16) per micro-batch and per block.
    CHECK(p.send_count == 2 * 64);
    CHECK(p.send_bytes == rel(2 * M * (S * (B / M) * H / T) * 2));

    // FLOPs per device: the model FLOPs over the 64 GPUs, plus the QK^T product recomputed
    // in each layer's backward (2 b s^2 h / t over the stage's L / p layers), plus the logits'
    // products (6 B s h V), which the program runs outside the pipeline on every stage (1/t
    // of them, where the paper's average has 1/(t p)), plus the elementwise work (< 0.2%).
    const double recomputed = 2 * B * S * S * H * (L / P) / T;
    const double logits_again = 6 * B * S * H * V * (1 / T - 1 / kDevices);
    const double expected = model / kDevices + recomputed + logits_again;
    CHECK(t.flops > expected);
    CHECK(t.flops < expected * 1.002);

    // Iteration time and MFU (the paper's: model FLOPs / (time * peak)), predicted: 10.50 s
    // against 13.75 s (-24%), 67.3% against 51.4% (+31%: the time's error inverted); the
    // products run at peak and the optimizer step is not priced (docs/validation.md).
    const double mfu = model / kDevices / (t.step_s * kPeak);
    CHECK(relative_error(t.step_s, kIteration) < -0.20);
    CHECK(relative_error(t.step_s, kIteration) > -0.27);
    CHECK(relative_error(mfu, kMfu) > 0.25);
    CHECK(relative_error(mfu, kMfu) < 0.37);
    // HFU (Table 5: 52.8%): the FLOPs the hardware runs, here the model's and the recomputed
    // QK^T: 67.6%, +28.1%.
    const double hfu = (model / kDevices + recomputed) / (t.step_s * kPeak);
    CHECK(relative_error(hfu, 0.528) > 0.22);
    CHECK(relative_error(hfu, 0.528) < 0.33);
    // The step is no shorter than the stage's matrix products at peak plus the bubble's share.
    CHECK(t.step_s > (model / kDevices + recomputed) / kPeak * (M + P - 1) / M);
}

TEST_CASE("validated: 175B activation memory per layer and per stage (Korthikanti et al. 2022, "
          "section 5)") {
    using namespace gpt175b;
    const auto text = read_sample("megatron_gpt175b.ein");
    // One more layer per stage (96 -> 88 layers is 12 -> 11 per stage): the activations it
    // adds, for the 8 micro-batches 1F1B holds in flight on the first stage.
    const auto at96 = totals_of(text);
    const auto at88 = totals_of(replace_all(text, "repeat l_{pp}=96", "repeat l_{pp}=88"));
    REQUIRE(at88.pipeline.layers_per_stage == 11);
    const double in_flight = std::min(P, M);
    const double per_layer = (at96.memory.activations - at88.memory.activations) / in_flight;
    // Per layer and micro-batch (b = 1), selective recomputation with sequence parallelism:
    // the paper's 34 s b h / t, plus the two norms' per-token statistics (as the 22B's).
    const double sbh_t = S * (B / M) * H / T;
    const double stats = 2 * ((B / M) * S / T) * 2;
    CHECK(per_layer == rel(34 * sbh_t + stats));
    CHECK(std::abs(relative_error(per_layer, 34 * sbh_t)) < 1e-4);
    // The first stage in all: 1F1B keeps p micro-batches of L / p layers, the paper's
    // L * 34 s b h / t (10.27 GB), plus the activations of the statements outside the
    // pipeline (the final norm, the logits and the cross-entropy, scaled by the totals with
    // the layers': +5.9%).
    const double stage = L * 34 * sbh_t;
    CHECK(at96.memory.activations > stage);
    CHECK(relative_error(at96.memory.activations, stage) < 0.07);
}
