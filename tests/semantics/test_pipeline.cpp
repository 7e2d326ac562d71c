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
    semantics::Training training;
};

Checked checked(const std::string& text, semantics::CheckOptions options = {}) {
    const auto program = parse_program(text);
    Checked c{semantics::check(program, options), semantics::training_of(program)};
    REQUIRE_MESSAGE(c.plan.errors() == 0, plan_text(text, c.plan));
    return c;
}

double serial_time(const semantics::StatementPlan& s) {
    double t = 0;
    for (const auto& st : s.steps)
        t += st.time_s;
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
    CHECK(s.bytes_per_device == doctest::Approx((8.0 / 2) * 64 * 4 / 4));
    CHECK(s.time_s > 0);
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
    const auto t = semantics::program_totals(c.plan, c.training);
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
    const double send = blk.sends[0].time_s;
    const double tm = N / P * layer_s / M + send;
    CHECK(t.pipeline.microbatch_s == doctest::Approx(tm));
    CHECK(t.pipeline.pipeline_s == doctest::Approx((M + P - 1) * tm));
    CHECK(t.pipeline.bubble_s == doctest::Approx((P - 1) * tm));
    CHECK(t.pipeline.bubble_fraction == doctest::Approx((P - 1) / (M + P - 1)));
    // Against the same program run unpipelined with a stage's 2 layers: the step adds the
    // bubble and the sends, the activations are the same (GPipe: all M in flight).
    const auto two = checked(layers("repeat l=2", "train adam master=f32\n"));
    const auto t2 = semantics::program_totals(two.plan, two.training);
    CHECK(t.compute_s == doctest::Approx(t2.compute_s));
    CHECK(t.step_s == doctest::Approx(t2.step_s + M * send + (P - 1) * tm));
    CHECK(t.memory.activations == doctest::Approx(t2.memory.activations));
    CHECK(t.pipeline.in_flight == 4);
    // 1F1B with 8 micro-batches on 4 stages keeps 4 in flight: half the activations.
    const auto f =
        checked(layers("repeat l_{pp}=8 microbatches=8 schedule=1f1b", "train adam master=f32\n"));
    const auto tf = semantics::program_totals(f.plan, f.training);
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
