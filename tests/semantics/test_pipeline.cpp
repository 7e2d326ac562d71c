// Pipeline parallelism (issue 18): `repeat l_{pp}=N microbatches=M schedule=gpipe|1f1b`. The
// checker's block (axis, stages, micro-batches, schedule, the stage-to-stage sends), its
// positioned errors, and the totals of semantics/pipeline.hpp, each figure worked out here
// from the program's sizes and the pipeline's formulas.
#include "helpers.hpp"

#include "semantics/pipeline.hpp"
#include "semantics/totals.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

using namespace shardscope;
using namespace shardscope::test;
using semantics::StepKind;

namespace {

/// dp=2 x pp=4; b cut over dp; 8 layers of one d x d product, carried y.
std::string layers(const std::string& repeat_line, const std::string& extra = {}) {
    return "mesh dp=2 pp=4\ndim b=8 d=64 e=64\nparam W\n" + extra +
           "y_{b_{dp} d} = x_{b_{dp} d}\n" + repeat_line +
           "\n"
           "  a_{b_{dp} e} = y_{b_{dp} e}\n"
           "  y_{b_{dp} d} := a_{b_{dp} e} W_{e d}\n"
           "end\n";
}

std::vector<std::string> messages(const semantics::Plan& plan, const std::string& code) {
    std::vector<std::string> out;
    for (const auto& d : plan.diagnostics)
        if (d.code == code) out.push_back(d.message);
    return out;
}

const Diagnostic* find_code(const semantics::Plan& plan, const std::string& code) {
    for (const auto& d : plan.diagnostics)
        if (d.code == code) return &d;
    return nullptr;
}

struct Checked {
    semantics::Plan plan;
};

Checked checked(const std::string& text, semantics::CheckOptions options = {}) {
    const auto program = parse_program(text);
    Checked c{semantics::check(program, options)};
    REQUIRE_MESSAGE(c.plan.errors() == 0, plan_text(text, c.plan));
    return c;
}

double serial_time(const semantics::StatementPlan& s) {
    double t = 0;
    for (const auto& st : s.steps)
        t += st.cost.time_s;
    return t;
}

} // namespace

TEST_CASE("pipeline: the block records its axis, stages, micro-batches, schedule and sends") {
    const auto text = layers("repeat l_{pp}=8 microbatches=4 schedule=gpipe");
    const auto c = checked(text);
    INFO(plan_text(text, c.plan));
    REQUIRE(c.plan.repeats.size() == 1);
    const auto& b = c.plan.repeats[0];
    CHECK(b.pipelined());
    CHECK(b.axis == 1);
    CHECK(b.stages == 4);
    CHECK(b.microbatches == 4);
    CHECK(b.schedule == "gpipe");
    CHECK(b.layers_per_stage() == 2);
    CHECK(b.stage_of(0) == 0);
    CHECK(b.stage_of(1) == 0);
    CHECK(b.stage_of(2) == 1);
    CHECK(b.stage_of(7) == 3);
    // The statements still run N times in the program (every stage together).
    CHECK(c.plan.statements[1].repeat == 8);
    // One carried tensor (y), one send: permute over pp, one micro-batch of y's block
    // (b/dp x d f32, a quarter of it), from (dp, k) to (dp, k+1) for k < 3.
    REQUIRE(b.sends.size() == 1);
    const auto& s = b.sends[0];
    CHECK(s.kind == StepKind::Permute);
    CHECK(s.mesh_axes == std::vector<int>{1});
    CHECK(s.tensor == "y");
    CHECK(s.cost.bytes_per_device == doctest::Approx((8.0 / 2) * 64 * 4 / 4));
    CHECK(s.cost.time_s > 0);
    const std::vector<std::pair<std::int64_t, std::int64_t>> pairs = {{0, 1}, {1, 2}, {2, 3},
                                                                      {4, 5}, {5, 6}, {6, 7}};
    CHECK(s.pairs == pairs);
    // The printed plan shows the sends.
    const auto shown = semantics::format_plan(c.plan, "t.ein");
    CHECK(shown.find("pipeline over pp: 4 stages x 2 layers, 4 micro-batches, gpipe") !=
          std::string::npos);
    CHECK(shown.find("permute(pp)") != std::string::npos);
    // And so does check --json.
    const auto j = semantics::plan_to_json(c.plan, "t.ein");
    REQUIRE(j["repeats"].size() == 1);
    CHECK(j["repeats"][0]["count"] == 8);
    CHECK(j["repeats"][0]["pipeline"]["axis"] == "pp");
    CHECK(j["repeats"][0]["pipeline"]["schedule"] == "gpipe");
    CHECK(j["repeats"][0]["pipeline"]["sends"][0]["tensor"] == "y");
    CHECK(j["repeats"][0]["pipeline"]["sends"][0]["pairs"].size() == 6);
    // 64 B per micro-batch on h100's NVLink: NCCL's LL protocol prices it.
    CHECK(s.cost.protocol == semantics::NcclProtocol::LL);
    CHECK(j["repeats"][0]["pipeline"]["sends"][0]["protocol"] == "LL");
    // Defaults: one micro-batch, 1F1B.
    const auto d = checked(layers("repeat l_{pp}=8"));
    CHECK(d.plan.repeats[0].microbatches == 1);
    CHECK(d.plan.repeats[0].schedule == "1f1b");
    // Not pipelined: no axis, no sends.
    const auto u = checked(layers("repeat l=8"));
    CHECK_FALSE(u.plan.repeats[0].pipelined());
    CHECK(semantics::plan_to_json(u.plan, "t.ein")["repeats"][0]["pipeline"].is_null());
    CHECK(u.plan.repeats[0].sends.empty());
}

TEST_CASE("pipeline: a reverse block sends from stage k+1 back to stage k") {
    const std::string text = "mesh pp=2\ndim b=4 d=8\n"
                             "y_{b d} = x_{b d}\n"
                             "repeat l_{pp}=2\n  y_{b d} := tanh(y_{b d})\nend\n"
                             "g_{b d} = y_{b d}\n"
                             "repeat l_{pp}=2 reverse\n  g_{b d} := g_{b d} y_{b d}\nend\n";
    const auto c = checked(text);
    REQUIRE(c.plan.repeats.size() == 2);
    REQUIRE(c.plan.repeats[1].sends.size() == 1);
    CHECK(c.plan.repeats[1].sends[0].pairs ==
          std::vector<std::pair<std::int64_t, std::int64_t>>{{1, 0}});
    CHECK(c.plan.repeats[0].sends[0].pairs ==
          std::vector<std::pair<std::int64_t, std::int64_t>>{{0, 1}});
}

TEST_CASE("pipeline: at small sizes (exec --small) one layer per stage") {
    semantics::CheckOptions small;
    small.ignore_dims = true;
    small.small_defaults = true;
    const auto c = checked(layers("repeat l_{pp}=8 microbatches=2"), small);
    CHECK(c.plan.repeats[0].count == 4);
    CHECK(c.plan.repeats[0].layers_per_stage() == 1);
}

TEST_CASE("pipeline: errors are positioned and coded") {
    // 6 layers on 4 stages.
    auto plan = check_text(layers("repeat l_{pp}=6"));
    const auto* d = find_code(plan, "S150");
    REQUIRE(d);
    CHECK(d->range.line == 5);
    CHECK(d->range.column == 8);
    CHECK(d->message.find("6 layers do not divide into the 4 stages") != std::string::npos);
    // Two axes.
    plan = check_text(layers("repeat l_{dp,pp}=8"));
    d = find_code(plan, "S154");
    REQUIRE(d);
    CHECK(d->range.line == 5);
    // A body tensor sharded over the pipeline's axis.
    plan = check_text("mesh pp=2\ndim b=4 d=8\ny_{b d} = x_{b d}\nrepeat l_{pp}=2\n"
                      "  u_{b_{pp} d} = y_{b d}\n  y_{b d} := y_{b d}\nend\n");
    d = find_code(plan, "S155");
    REQUIRE(d);
    CHECK(d->range.line == 5);
    CHECK(d->message.find("u is S(0) over mesh axis pp") != std::string::npos);
    // Options without a pipeline.
    plan = check_text(layers("repeat l=8 microbatches=4"));
    d = find_code(plan, "S156");
    REQUIRE(d);
    CHECK(d->range.line == 5);
    CHECK(d->range.column == 1);
    CHECK(messages(plan, "S150").empty());
    // An unknown axis is the usual unknown-axis error; the block is not pipelined.
    plan = check_text(layers("repeat l_{zz}=8"));
    CHECK(plan.errors() > 0);
    CHECK((plan.repeats.empty() || !plan.repeats[0].pipelined()));
}

TEST_CASE("pipeline: the formulas") {
    CHECK(semantics::bubble_fraction(4, 4) == doctest::Approx(3.0 / 7));
    CHECK(semantics::bubble_fraction(1, 8) == 0);
    CHECK(semantics::bubble_fraction(8, 1) == doctest::Approx(7.0 / 8));
    CHECK(semantics::pipeline_time(2.0, 4, 8) == doctest::Approx(11 * 2.0));
    CHECK(semantics::microbatches_in_flight("gpipe", 4, 8) == 8);
    CHECK(semantics::microbatches_in_flight("1f1b", 4, 8) == 4);
    CHECK(semantics::microbatches_in_flight("1f1b", 4, 2) == 2);
}

TEST_CASE("pipeline: totals per device are one stage's, with the bubble and the sends") {
    const double b = 8, d = 64, dp = 2, P = 4, M = 4, N = 8;
    const auto c =
        checked(layers("repeat l_{pp}=8 microbatches=4 schedule=gpipe", "train adam master=f32\n"));
    const auto t = semantics::program_totals(c.plan);
    REQUIRE(t.pipeline.pipelined);
    CHECK(t.pipeline.axis == "pp");
    CHECK(t.pipeline.stages == 4);
    CHECK(t.pipeline.microbatches == 4);
    CHECK(t.pipeline.layers_per_stage == 2);
    // Compute: the stage's N/P layers of the product, b/dp rows each (plus the copies, 0 flop).
    CHECK(t.flops == doctest::Approx(N / P * 2 * (b / dp) * d * d));
    // Weights, gradients, Adam: N/P copies of the replicated d x d f32 weight.
    const double w = d * d * 4;
    CHECK(t.memory.weights == doctest::Approx(N / P * w));
    CHECK(t.memory.gradients == doctest::Approx(N / P * w));
    CHECK(t.memory.optimizer == doctest::Approx(N / P * 2 * w));
    // The sends: M micro-batches of y's block (b/dp x d f32) / M each.
    const double y_block = (b / dp) * d * 4;
    CHECK(t.pipeline.send_count == 4);
    CHECK(t.pipeline.send_bytes == doctest::Approx(M * (y_block / M)));
    const auto permute = std::find_if(t.bytes_by_kind.begin(), t.bytes_by_kind.end(),
                                      [](const auto& k) { return k.kind == StepKind::Permute; });
    REQUIRE(permute != t.bytes_by_kind.end());
    CHECK(permute->bytes == doctest::Approx(y_block));
    CHECK(permute->count == 4);
    // Time: t = (stage's layers, whole batch) / M + one send; (M+P-1) t; bubble (P-1) t.
    const auto& blk = c.plan.repeats[0];
    double layer_s = 0;
    for (std::size_t j = blk.first; j < blk.last; ++j)
        layer_s += serial_time(c.plan.statements[j]);
    const double send = blk.sends[0].cost.time_s;
    const double tm = N / P * layer_s / M + send;
    CHECK(t.pipeline.microbatch_s == doctest::Approx(tm));
    CHECK(t.pipeline.pipeline_s == doctest::Approx((M + P - 1) * tm));
    CHECK(t.pipeline.bubble_s == doctest::Approx((P - 1) * tm));
    CHECK(t.pipeline.bubble_fraction == doctest::Approx((P - 1) / (M + P - 1)));
    // Against the same program run unpipelined with a stage's 2 layers: the step adds the
    // bubble and the sends, the activations are the same (GPipe: all M in flight).
    const auto two = checked(layers("repeat l=2", "train adam master=f32\n"));
    const auto t2 = semantics::program_totals(two.plan);
    CHECK(t.compute_s == doctest::Approx(t2.compute_s));
    CHECK(t.step_s == doctest::Approx(t2.step_s + M * send + (P - 1) * tm));
    CHECK(t.memory.activations == doctest::Approx(t2.memory.activations));
    CHECK(t.pipeline.in_flight == 4);
    // 1F1B with 8 micro-batches on 4 stages keeps 4 in flight: half the activations.
    const auto f =
        checked(layers("repeat l_{pp}=8 microbatches=8 schedule=1f1b", "train adam master=f32\n"));
    const auto tf = semantics::program_totals(f.plan);
    CHECK(tf.pipeline.in_flight == 4);
    CHECK(tf.memory.activations == doctest::Approx(t2.memory.activations * 4 / 8));
    CHECK(tf.pipeline.bubble_fraction == doctest::Approx(3.0 / 11));
    // The text shows it.
    const auto text = semantics::format_totals(t);
    CHECK(text.find("pipeline bubble") != std::string::npos);
    CHECK(text.find("pipeline pp: 4 stages x 2 layers, 4 micro-batches, gpipe") !=
          std::string::npos);
    CHECK(text.find("bubble 42.9%") != std::string::npos); // 3/7
}

namespace {

/// The steps of statement `s`, by kind: its compute time and its collectives' time.
std::pair<double, double> compute_and_comm(const semantics::StatementPlan& s) {
    double compute = 0, comm = 0;
    for (const auto& st : s.steps)
        (semantics::is_collective(st.kind) ? comm : compute) += st.cost.time_s;
    return {compute, comm};
}

} // namespace

TEST_CASE("pipeline: the stage time is the overlap model's, so the step is never shorter") {
    // An FSDP weight gathered in a statement of its own: it reads only W, so the next layer's
    // gather runs while this layer computes. By hand, one stage = 2 layers, each: V = gather
    // W (comm g), a = y (compute c1), y := a V (compute c2, waits for a and V):
    //   layer 0: gather [0, g]; a [0, c1]; y [max(c1, g), e0 = max(c1, g) + c2]
    //   layer 1: gather [g, 2g]; a [e0, e0 + c1]; y [max(e0 + c1, 2g), + c2]
    const std::string text = "mesh fsdp=2 pp=2\ndim b=8 d=64 e=64\nparam W\n"
                             "y_{b d} = x_{b d}\n"
                             "repeat l_{pp}=4 microbatches=4 schedule=gpipe\n"
                             "  V_{e d} = W_{e_{fsdp} d}\n"
                             "  a_{b e} = y_{b e}\n"
                             "  y_{b d} := a_{b e} V_{e d}\n"
                             "end\n";
    const auto c = checked(text);
    INFO(plan_text(text, c.plan));
    const auto& blk = c.plan.repeats.at(0);
    REQUIRE(blk.last - blk.first == 3);
    const auto [g0, g] = compute_and_comm(c.plan.statements[blk.first]);
    const auto [c1, a_comm] = compute_and_comm(c.plan.statements[blk.first + 1]);
    const auto [c2, y_comm] = compute_and_comm(c.plan.statements[blk.first + 2]);
    REQUIRE(g0 == 0.0); // the gather statement is one collective
    REQUIRE(a_comm == 0.0);
    REQUIRE(y_comm == 0.0);
    REQUIRE(g > 0);
    const double e0 = std::max(c1, g) + c2;
    const double stage = std::max(e0 + c1, 2 * g) + c2;
    const auto t = semantics::program_totals(c.plan);
    REQUIRE(t.pipelines.size() == 1);
    CHECK(t.pipeline.stage_s == doctest::Approx(stage));
    CHECK(t.pipeline.stage_s < 2 * (g + c1 + c2)); // some of the gathers hidden
    const double send = blk.sends.at(0).cost.time_s, M = 4, P = 2;
    const double tm = stage / M + send;
    CHECK(t.pipeline.microbatch_s == doctest::Approx(tm));
    CHECK(t.pipeline.pipeline_s == doctest::Approx((M + P - 1) * tm));
    CHECK(t.pipeline.bubble_s == doctest::Approx((P - 1) * tm));
    // The step: the stage's program under the overlap model, the sends, the bubble; never
    // shorter than the pipeline line.
    const auto s = semantics::program_totals(semantics::stage_plan(c.plan));
    CHECK(t.step_s == doctest::Approx(s.step_s + M * send + (P - 1) * tm));
    CHECK(t.step_s >= t.pipeline.pipeline_s);
    CHECK(t.step_s >= (M + P - 1) * tm * (1 - 1e-12));
}

TEST_CASE("pipeline: an exposed all-reduce counts whole in the stage time") {
    // Megatron tensor parallelism: the second product's all-reduce, which the next layer
    // reads, hides behind nothing; the stage time is the serial time of its layers.
    const std::string text = "mesh tp=2 pp=2\ndim b=8 d=64 f=128\nparam A B\n"
                             "y_{b d} = x_{b d}\n"
                             "repeat l_{pp}=4 microbatches=2\n"
                             "  u_{b f_{tp}} = y_{b d} A_{d f_{tp}}\n"
                             "  y_{b d} := u_{b f_{tp}} B_{f_{tp} d}\n"
                             "end\n";
    const auto c = checked(text);
    INFO(plan_text(text, c.plan));
    const auto& blk = c.plan.repeats.at(0);
    double layer = 0, comm = 0;
    for (std::size_t j = blk.first; j < blk.last; ++j) {
        layer += serial_time(c.plan.statements[j]);
        comm += compute_and_comm(c.plan.statements[j]).second;
    }
    REQUIRE(comm > 0);
    const auto t = semantics::program_totals(c.plan);
    CHECK(t.pipeline.stage_s == doctest::Approx(2 * layer));
    CHECK(t.step_s >= t.pipeline.pipeline_s);
}

TEST_CASE("pipeline: each pipelined block has its own P, M and schedule") {
    // Two forward blocks over pp (4 stages): 8 layers in 2 micro-batches (GPipe), then 4
    // layers in 8 micro-batches (1F1B). Each is a pipeline of its own.
    const std::string text = "mesh dp=2 pp=4\ndim b=8 d=64 e=64\nparam W U\n"
                             "y_{b_{dp} d} = x_{b_{dp} d}\n"
                             "repeat l_{pp}=8 microbatches=2 schedule=gpipe\n"
                             "  a_{b_{dp} e} = y_{b_{dp} e}\n"
                             "  y_{b_{dp} d} := a_{b_{dp} e} W_{e d}\n"
                             "end\n"
                             "z_{b_{dp} d} = y_{b_{dp} d}\n"
                             "repeat k_{pp}=4 microbatches=8 schedule=1f1b\n"
                             "  c_{b_{dp} e} = z_{b_{dp} e}\n"
                             "  z_{b_{dp} d} := c_{b_{dp} e} U_{e d}\n"
                             "end\n";
    const auto c = checked(text);
    INFO(plan_text(text, c.plan));
    const auto t = semantics::program_totals(c.plan);
    REQUIRE(t.pipelines.size() == 2);
    const auto& p0 = t.pipelines[0];
    const auto& p1 = t.pipelines[1];
    CHECK(p0.microbatches == 2);
    CHECK(p0.schedule == "gpipe");
    CHECK(p0.layers_per_stage == 2);
    CHECK(p0.in_flight == 2);
    CHECK(p1.microbatches == 8);
    CHECK(p1.schedule == "1f1b");
    CHECK(p1.layers_per_stage == 1);
    CHECK(p1.in_flight == 4);
    CHECK(p0.bubble_fraction == doctest::Approx(3.0 / 5));
    CHECK(p1.bubble_fraction == doctest::Approx(3.0 / 11));
    // Each by hand: t = stage_s / M + its send; bubble (P - 1) t.
    for (std::size_t g = 0; g < 2; ++g) {
        const auto& blk = c.plan.repeats[g];
        const auto& p = t.pipelines[g];
        double layer = 0;
        for (std::size_t j = blk.first; j < blk.last; ++j)
            layer += serial_time(c.plan.statements[j]); // no collectives: serial = overlap
        const double M = static_cast<double>(blk.microbatches);
        CHECK(p.stage_s == doctest::Approx(static_cast<double>(blk.layers_per_stage()) * layer));
        const double tm = p.stage_s / M + blk.sends.at(0).cost.time_s;
        CHECK(p.microbatch_s == doctest::Approx(tm));
        CHECK(p.bubble_s == doctest::Approx(3 * tm));
        CHECK(p.send_count == static_cast<int>(M));
    }
    // The step adds both; the summary sums them under the first's configuration.
    const auto s = semantics::program_totals(semantics::stage_plan(c.plan));
    const double sends =
        2 * c.plan.repeats[0].sends[0].cost.time_s + 8 * c.plan.repeats[1].sends[0].cost.time_s;
    CHECK(t.step_s == doctest::Approx(s.step_s + sends + p0.bubble_s + p1.bubble_s));
    CHECK(t.pipeline.microbatches == 2);
    CHECK(t.pipeline.bubble_s == doctest::Approx(p0.bubble_s + p1.bubble_s));
    CHECK(t.pipeline.send_count == 10);
    // Activations: the larger in-flight fraction (GPipe's 2 of 2).
    CHECK(t.memory.activations == doctest::Approx(s.memory.activations));
    // Two pipeline lines.
    const auto shown = semantics::format_totals(t);
    CHECK(shown.find("8 layers") == std::string::npos);
    CHECK(shown.find("pipeline pp: 4 stages x 2 layers, 2 micro-batches, gpipe") !=
          std::string::npos);
    CHECK(shown.find("pipeline pp: 4 stages x 1 layers, 8 micro-batches, 1f1b") !=
          std::string::npos);
}

TEST_CASE("pipeline: a forward block and its reverse block are one pipeline") {
    const std::string text = "mesh pp=2\ndim b=4 d=8\n"
                             "y_{b d} = x_{b d}\n"
                             "repeat l_{pp}=2 microbatches=4 schedule=gpipe\n"
                             "  y_{b d} := tanh(y_{b d})\nend\n"
                             "g_{b d} = y_{b d}\n"
                             "repeat l_{pp}=2 reverse\n  g_{b d} := g_{b d} y_{b d}\nend\n";
    const auto c = checked(text);
    const auto t = semantics::program_totals(c.plan);
    REQUIRE(t.pipelines.size() == 1);
    const auto& p = t.pipelines[0];
    CHECK(p.microbatches == 4); // the forward block's
    CHECK(p.schedule == "gpipe");
    // Both blocks' stage time and sends: one bubble for the pair.
    double stage = 0, send = 0;
    for (const auto& blk : c.plan.repeats) {
        double layer = 0;
        for (std::size_t j = blk.first; j < blk.last; ++j)
            layer += serial_time(c.plan.statements[j]);
        stage += static_cast<double>(blk.layers_per_stage()) * layer;
        send += blk.sends.at(0).cost.time_s;
    }
    CHECK(p.stage_s == doctest::Approx(stage));
    CHECK(p.microbatch_s == doctest::Approx(stage / 4 + send));
    CHECK(p.bubble_s == doctest::Approx(p.microbatch_s));
    CHECK(p.send_count == 8);
}
