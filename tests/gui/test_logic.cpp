// The GL-free logic of the views: device colours, hatching, text fitting, the timeline
// layout, step-through frames, narration, selections and the default drawn dimensions.
#include "render/course.hpp"
#include "render/draw.hpp"
#include "render/narration.hpp"
#include "render/palette.hpp"
#include "render/pictures.hpp"
#include "render/stepthrough.hpp"
#include "render/timeline.hpp"

#include "../semantics/helpers.hpp"
#include "recording.hpp"

#include "tests/read_file.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

using namespace shardscope;
using namespace shardscope::render;

namespace {

std::string read_sample(const std::string& name) {
    return test::read_file(std::string(SHARDSCOPE_SAMPLES_DIR) + "/" + name);
}

} // namespace

TEST_CASE("device colours are distinct for every mesh size up to 1024 and never the hatching") {
    for (std::int64_t n : {1, 2, 4, 8, 10, 16, 20, 21, 64, 256, 1000, 1024}) {
        std::set<Color> seen;
        for (std::int64_t d = 0; d < n; ++d) {
            const Color c = device_color(d, n);
            CHECK(c.a == 255);
            CHECK(c != colors::kBackground);
            CHECK(c != Color{0, 0, 0, 255});
            seen.insert(c);
        }
        CHECK_MESSAGE(seen.size() == static_cast<std::size_t>(n), "mesh of " << n);
    }
    // The same device keeps its colour between calls.
    CHECK(device_color(3, 4) == device_color(3, 4));
}

TEST_CASE("issue 16: large meshes are coloured by coordinates, neighbours distinct") {
    // RGB distance between two colours.
    auto distance = [](Color a, Color b) {
        const double dr = a.r - b.r, dg = a.g - b.g, db = a.b - b.b;
        return std::sqrt(dr * dr + dg * dg + db * db);
    };
    for (const auto& sizes : std::vector<std::vector<std::int64_t>>{
             {16, 16}, {8, 8, 4}, {4, 4, 4, 4}, {2, 128}, {128, 2}, {4, 8}, {32, 32}}) {
        std::int64_t n = 1;
        for (auto s : sizes)
            n *= s;
        std::map<std::vector<int>, Color> colour;
        std::set<Color> seen;
        std::vector<int> c(sizes.size(), 0);
        for (std::int64_t id = 0; id < n; ++id) {
            const Color col = mesh_device_color(sizes, c, id);
            CHECK(col != colors::kBackground);
            colour[c] = col;
            seen.insert(col);
            for (std::size_t k = c.size(); k-- > 0;) {
                if (++c[k] < sizes[k]) break;
                c[k] = 0;
            }
        }
        std::string name;
        for (auto s : sizes)
            name += (name.empty() ? "" : "x") + std::to_string(s);
        CHECK_MESSAGE(seen.size() == static_cast<std::size_t>(n), name);
        // Neighbours (one apart along one axis) are clearly different.
        double closest = 1e9;
        for (const auto& [at, col] : colour)
            for (std::size_t k = 0; k < at.size(); ++k) {
                auto next = at;
                if (++next[k] >= sizes[k]) continue;
                closest = std::min(closest, distance(col, colour.at(next)));
            }
        CHECK_MESSAGE(closest >= 40, name << ": neighbours " << closest << " apart");
    }
    // Small meshes keep Tableau's colours.
    CHECK(mesh_device_color({2, 2}, {1, 1}, 3) == device_color(3, 4));
    CHECK(mesh_device_color({256}, {7}, 7) == device_color(7, 256));
    // Replica tints are none of the small meshes' device colours.
    for (std::uint32_t mask = 1; mask < 8; ++mask)
        for (std::int64_t d = 0; d < 20; ++d)
            CHECK(replicated_color(mask) != device_color(d, 20));
}

TEST_CASE("collective schedules: ring steps and pairs that deliver every block") {
    auto step = [](semantics::StepKind k, std::vector<int> axes) {
        semantics::Step s;
        s.kind = k;
        s.mesh_axes = std::move(axes);
        return s;
    };
    const auto c = test::run("mesh 2x4\ndim a=8\nA_{a_1} = B_{a_1}\n");
    const auto& mesh = c.plan.mesh;
    using K = semantics::StepKind;
    {
        const auto s = collective_schedule(mesh, step(K::AllGather, {1}));
        CHECK(s.group == std::vector<std::int64_t>{0, 1, 2, 3});
        CHECK(s.groups == 2);
        REQUIRE(s.steps.size() == 3);
        // Each device starts with its own block and only passes on what it holds: after the
        // n-1 steps every device holds every block.
        std::map<std::int64_t, std::set<int>> held;
        for (int i = 0; i < 4; ++i)
            held[i] = {i};
        for (const auto& st : s.steps) {
            CHECK(st.transfers.size() == 4);
            auto next = held;
            for (const auto& t : st.transfers) {
                CHECK(t.to == (t.from + 1) % 4); // a ring
                CHECK(held[t.from].count(t.block) == 1);
                CHECK_FALSE(t.reduce);
                next[t.to].insert(t.block);
            }
            held = next;
        }
        for (const auto& entry : held) // (clang 14 cannot capture structured bindings)
            CHECK_MESSAGE(entry.second.size() == 4, "device " << entry.first);
        CHECK(s.steps[0].title.find("ring step 1 of 3") == 0);
    }
    {
        // Reduce-scatter: partial sums travel the ring; device i ends with block i complete.
        const auto s = collective_schedule(mesh, step(K::ReduceScatter, {1}));
        REQUIRE(s.steps.size() == 3);
        std::map<std::pair<std::int64_t, int>, std::set<std::int64_t>> parts; // (device, block)
        for (int d = 0; d < 4; ++d)
            for (int b = 0; b < 4; ++b)
                parts[{d, b}] = {d};
        for (const auto& st : s.steps) {
            auto next = parts;
            for (const auto& t : st.transfers) {
                CHECK(t.reduce);
                for (auto p : parts[{t.from, t.block}])
                    next[{t.to, t.block}].insert(p);
            }
            parts = next;
        }
        for (int d = 0; d < 4; ++d) {
            const std::size_t whole = parts[std::pair<std::int64_t, int>{d, d}].size();
            CHECK_MESSAGE(whole == 4, "device " << d);
        }
    }
    {
        const auto s = collective_schedule(mesh, step(K::AllReduce, {1}));
        REQUIRE(s.steps.size() == 6);
        CHECK(s.steps[0].title.find("reduce-scatter ring step 1 of 3") == 0);
        CHECK(s.steps[3].title.find("all-gather ring step 1 of 3") == 0);
        // Over axis 0: groups of two (d0, d4), four of them.
        const auto t = collective_schedule(mesh, step(K::AllReduce, {0}));
        CHECK(t.group == std::vector<std::int64_t>{0, 4});
        CHECK(t.groups == 4);
        CHECK(t.steps.size() == 2);
    }
    {
        // All-to-all: every ordered pair exchanges its block once.
        const auto s = collective_schedule(mesh, step(K::AllToAll, {1}));
        REQUIRE(s.steps.size() == 3);
        std::set<std::pair<std::int64_t, std::int64_t>> pairs;
        for (const auto& st : s.steps)
            for (const auto& t : st.transfers) {
                CHECK(t.block == t.to); // the block that belongs to the receiver
                pairs.insert({t.from, t.to});
            }
        CHECK(pairs.size() == 12);
    }
    CHECK(collective_schedule(mesh, step(K::Compute, {})).steps.empty());
    // A permute without pairs moves nothing.
    CHECK(collective_schedule(mesh, step(K::Permute, {1})).steps.empty());
}

/// A statement's (last) permute step and its step-through frame; nullptr and -1 if none.
std::pair<const semantics::Step*, int> permute_frame(const semantics::Plan& plan,
                                                     const semantics::StatementPlan& s) {
    std::pair<const semantics::Step*, int> out{nullptr, -1};
    const auto frames = step_frames(plan, s);
    for (std::size_t i = 0; i < frames.size(); ++i)
        if (frames[i].collective && s.steps.at(static_cast<std::size_t>(frames[i].step)).kind ==
                                        semantics::StepKind::Permute)
            out = {&s.steps[static_cast<std::size_t>(frames[i].step)], static_cast<int>(i)};
    return out;
}

TEST_CASE("collective schedules: a permute's pairs, which device sends which block to which") {
    // redistribute_2x2's first statement: x_{i_0 j_1} -> x_{i_1 j_0}, the block swap.
    const auto c = test::run(read_sample("redistribute_2x2.ein"));
    const auto& s = c.plan.statements.at(0);
    const auto [permute, frame] = permute_frame(c.plan, s);
    REQUIRE(permute != nullptr);
    REQUIRE(permute->pairs.size() == 2);
    const auto sched = collective_schedule(c.plan.mesh, *permute);
    CHECK(sched.permute);
    CHECK(sched.group == std::vector<std::int64_t>{0, 1, 2, 3}); // every device, keepers too
    REQUIRE(sched.steps.size() == 1);
    std::set<std::pair<std::int64_t, std::int64_t>> moved;
    for (const auto& t : sched.steps[0].transfers) {
        moved.insert({t.from, t.to});
        CHECK(t.block == t.to); // the receiver's block (its position in the group)
        CHECK_FALSE(t.reduce);
    }
    CHECK(moved == std::set<std::pair<std::int64_t, std::int64_t>>{{1, 2}, {2, 1}});
    CHECK(sched.steps[0].title.find("2 messages at once") != std::string::npos);
    CHECK(sched.steps[0].title.find("the 2 other devices keep their own") != std::string::npos);
    // Drawn: one arrow per pair, labelled with the block the receiver holds afterwards
    // (device 1 = (0,1) ends with rows 4:8 x cols 0:4).
    test::RecordingCanvas rec;
    draw_step(rec, {0, 0, 1100, 560}, c.plan, 0, frame, 14, 1);
    CHECK(rec.has_text("permute, one step"));
    CHECK(rec.has_text("#1: d1 → d2 sends d2's block [0:4, 4:8] of x"));
    CHECK(rec.has_text("#2: d2 → d1 sends d1's block [4:8, 0:4] of x"));
    CHECK(rec.has_text("#1"));
    CHECK_FALSE(rec.has_text("block 0"));
    // The step-through plays it like the other collectives: frame, then its message step.
    const auto shots = step_sequence(c.plan, s);
    int messages = 0;
    for (const auto& shot : shots)
        messages += shot.frame == frame && shot.substep == 1;
    CHECK(messages == 1);
}

TEST_CASE("collective schedules: a permute with several senders per device names each part") {
    // The block swap on axes of different sizes: each device's new block in two halves from
    // two devices; an arrow carries the part the sender holds, not the whole block.
    const auto c = test::run("mesh 2x4\ndim i=16 j=16\nx_{i_0 j_1} -> x_{i_1 j_0}\n");
    const auto& s = c.plan.statements.at(0);
    const auto [permute, frame] = permute_frame(c.plan, s);
    REQUIRE_MESSAGE(permute != nullptr, c.text());
    const auto sched = collective_schedule(c.plan.mesh, *permute);
    REQUIRE(sched.steps.size() == 1);
    CHECK(sched.steps[0].transfers.size() == permute->pairs.size());
    CHECK(sched.steps[0].title.find("the part of the partner's new block that it holds") !=
          std::string::npos);
    test::RecordingCanvas rec;
    draw_step(rec, {0, 0, 1100, 900}, c.plan, 0, frame, 14, 1);
    // d0 = (0,0) holds rows 0:8 x cols 0:4; d1 = (0,1) ends with rows 4:8 x cols 0:8 (it
    // keeps rows 4:8 x cols 4:8 of its own).
    CHECK_MESSAGE(
        rec.has_text("#1: d0 → d1 sends [4:8, 0:4] of x, its part of d1's block [4:8, 0:8]"),
        c.text());
    CHECK(rec.has_text("the part of the receiver's new block that the sender holds"));
    CHECK_FALSE(rec.has_text("sends d1's block"));
}

TEST_CASE("text on a device colour is readable: white on dark, black on light") {
    CHECK(text_on({31, 119, 180, 255}) == Color{255, 255, 255, 255});
    CHECK(text_on({255, 187, 120, 255}) == colors::kText);
}

TEST_CASE("hatching: 45-degree segments inside the rectangle, spaced evenly") {
    const Rect r{10, 20, 110, 70};
    const auto segs = hatch_segments(r, 10);
    REQUIRE(segs.size() == 15); // (w + h) / spacing
    for (const auto& [a, b] : segs) {
        for (const Vec2 p : {a, b}) {
            CHECK(p.x >= r.x0 - 1e-3f);
            CHECK(p.x <= r.x1 + 1e-3f);
            CHECK(p.y >= r.y0 - 1e-3f);
            CHECK(p.y <= r.y1 + 1e-3f);
        }
        // Slope -1 in y-down coordinates: x + y constant.
        CHECK(a.x + a.y == doctest::Approx(b.x + b.y));
    }
    CHECK(hatch_segments({0, 0, 0, 10}, 5).empty());
    CHECK(hatch_segments(r, 0).empty());
}

TEST_CASE("elide keeps what fits and marks the cut") {
    test::RecordingCanvas c;
    const float size = 10; // 6.02 px per code point
    CHECK(elide(c, "abc", size, 100) == "abc");
    const std::string e = elide(c, "abcdefghijklmnop", size, 40);
    CHECK(e == "abcde…"); // 6 code points of 6.02 px would pass 40
    CHECK(elide(c, "r₀r₁r₂r₃", size, 31) == "r₀r₁…");
    CHECK(elide(c, "abc", size, 3).empty());
}

TEST_CASE("timeline: spans proportional to time, with a minimum width, filling the width") {
    SUBCASE("proportional") {
        const auto s = timeline_spans({1, 3}, 400, 4);
        REQUIRE(s.size() == 2);
        CHECK(s[0].x0 == 0);
        CHECK(s[0].x1 == doctest::Approx(100));
        CHECK(s[1].x0 == doctest::Approx(100));
        CHECK(s[1].x1 == 400);
    }
    SUBCASE("instant steps keep the minimum, the rest share what is left") {
        const auto s = timeline_spans({0, 1e-9, 5e-6, 5e-6}, 208, 4);
        CHECK(s[0].x1 - s[0].x0 == doctest::Approx(4));
        CHECK(s[1].x1 - s[1].x0 == doctest::Approx(4));
        CHECK(s[2].x1 - s[2].x0 == doctest::Approx(100));
        CHECK(s[3].x1 - s[3].x0 == doctest::Approx(100));
        CHECK(s[3].x1 == 208);
    }
    SUBCASE("no time at all, or no room for the minimum: equal spans") {
        for (const auto& s : {timeline_spans({0, 0, 0}, 300, 4), timeline_spans({1, 2, 3}, 6, 4)})
            for (const auto& sp : s)
                CHECK(sp.x1 - sp.x0 == doctest::Approx(s.back().x1 / 3));
    }
    CHECK(timeline_spans({}, 100, 4).empty());
}

TEST_CASE("step-through: inputs, one frame per step with its values, the result") {
    const auto c = test::run(read_sample("sequence_parallel.ein"));
    REQUIRE(c.plan.errors() == 0);
    const auto& s = c.plan.statements.at(0);
    const auto frames = step_frames(c.plan, s);
    REQUIRE(frames.size() == s.steps.size() + 2);
    CHECK(frames.front().title == "inputs");
    CHECK(frames.front().before.size() == 3); // x, W^0, W^1
    for (int v : frames.front().before)
        CHECK_FALSE(s.values.at(static_cast<std::size_t>(v)).load.empty());
    int collectives = 0;
    for (std::size_t i = 1; i + 1 < frames.size(); ++i) {
        const auto& f = frames[i];
        CHECK(f.step == static_cast<int>(i - 1));
        CHECK(f.after >= 0);
        CHECK(f.after < static_cast<int>(s.values.size()));
        collectives += f.collective;
    }
    CHECK(collectives == 2);
    CHECK(frames[1].title.find("all-gather(0)") != std::string::npos);
    CHECK(frames.back().after == s.result_value);
    CHECK(frames.back().title == "result: z");
}

TEST_CASE("narration: comment blocks attached to the statements after them") {
    const std::string text = "# Title\n# more\nmesh 2\n\n# first\nA_{i_0} = B_{i_0}\nexpect none\n"
                             "# second\n#\n# after a blank comment\nC_{i} = A_{i_0}\n";
    const auto n = narration(text);
    REQUIRE(n.size() == 3);
    CHECK(n[0].comment == "Title more");
    CHECK(n[0].statement == "mesh 2");
    CHECK(n[0].line == 3);
    CHECK(n[1].comment == "first");
    CHECK(n[1].statement == "A_{i_0} = B_{i_0}\nexpect none");
    CHECK(n[1].line == 6);
    CHECK(n[2].comment == "second\n\nafter a blank comment");
    CHECK(n[2].line == 11);
    // "Source:" lines and their indented continuations are for the file's reader, not the class.
    const auto src = narration("# Title\n# Source: a.txt, section \"X\";\n#         b.md "
                               "section 9.\n# Next line.\n#\n# Source: c.txt\nmesh 2\n");
    REQUIRE(src.size() == 1);
    CHECK(src[0].comment == "Title Next line.");
    for (const auto& b : narration(read_sample("sequence_parallel.ein")))
        CHECK(b.comment.find("Source:") == std::string::npos);
    // Every sample's narration covers each of its statements.
    const std::string sample = read_sample("placements_2x2.ein");
    const auto blocks = narration(sample);
    CHECK(blocks.size() >= 6);
    for (const auto& b : blocks)
        CHECK(b.line > 0);
}

TEST_CASE("selections: statements, tensor names with or without braces, errors that say why") {
    const auto c = test::run(read_sample("placements_2x2.ein"));
    REQUIRE(c.plan.errors() == 0);
    std::string error;
    auto sel = resolve_selection(c.plan, 0, "W^{SS}", error);
    REQUIRE(sel);
    CHECK(sel->statement == 2);
    CHECK(sel->tensor == "W^{SS}");
    CHECK(selected_layout(c.plan, *sel) == &c.plan.statements[2].result);
    sel = resolve_selection(c.plan, 0, "W^SS", error);
    REQUIRE(sel);
    CHECK(sel->tensor == "W^{SS}");
    // An input is found where it is first read.
    sel = resolve_selection(c.plan, 0, "X", error);
    REQUIRE(sel);
    CHECK(sel->statement == 3);
    CHECK_FALSE(resolve_selection(c.plan, 0, "Q", error));
    CHECK(error.find("no tensor 'Q'") != std::string::npos);
    CHECK(error.find("W^{SS}") != std::string::npos);
    CHECK_FALSE(resolve_selection(c.plan, 99, "", error));
    CHECK(error.find("out of range") != std::string::npos);
    CHECK_FALSE(resolve_selection(c.plan, 1, "Z", error));
    CHECK(error.find("statement 1 has no tensor 'Z'") != std::string::npos);
    CHECK(same_tensor_name("W^{SS}", "WSS"));
    CHECK_FALSE(same_tensor_name("W^{SS}", "W^{SR}"));
}

TEST_CASE("default drawn dimensions: the sharded ones first") {
    const auto c = test::run(read_sample("placements_2x2.ein"));
    const auto& ss = c.plan.statements.at(2).result; // W_{r_0 c r'_1 d}
    const Drawn d = default_drawn(ss);
    CHECK(d.row == 0);
    CHECK(d.col == 2);
    const auto& sr = c.plan.statements.at(1).result; // W_{a r'_0 d}
    const Drawn e = default_drawn(sr);
    CHECK(e.row == 1);
    CHECK(e.col == 2);
    const auto& rr = c.plan.statements.at(0).result; // W_{r c r' d}: the last two
    CHECK(default_drawn(rr).row == -1);
    Selection sel;
    sel.row_dim = 3;
    sel.col_dim = 1;
    CHECK(drawn_of(sel, ss).row == 3);
}

TEST_CASE("cached tile models: the same values give the same model, others a fresh one") {
    const auto c = test::run(read_sample("placements_2x2.ein"));
    const auto& ss = c.plan.statements.at(2).result;
    const auto a = cached_tile_model(c.plan.mesh, ss, default_drawn(ss));
    // A copy at another address, as a re-check's new Plan holds it: still a hit.
    const semantics::TensorLayout copy = ss;
    const semantics::Mesh mesh = c.plan.mesh;
    CHECK(cached_tile_model(mesh, copy, default_drawn(ss)) == a);
    // Another layout, other drawn dimensions: their own models, equal to fresh ones.
    const auto& z = c.plan.statements.at(3).result;
    const auto b = cached_tile_model(c.plan.mesh, z, {});
    CHECK(b != a);
    const auto fresh = tile_model(c.plan.mesh, z, {});
    CHECK(b->tiles.size() == fresh.tiles.size());
    CHECK(b->tensor == fresh.tensor);
    CHECK(cached_tile_model(c.plan.mesh, ss, {1, 3}) != a);
    semantics::TensorLayout changed = ss;
    changed.placements.at(0) = semantics::Placement{};
    CHECK(cached_tile_model(c.plan.mesh, changed, default_drawn(ss)) != a);
    // Errors are thrown every time, never cached.
    CHECK_THROWS(cached_tile_model(c.plan.mesh, ss, {7, 8}));
    CHECK_THROWS(cached_tile_model(c.plan.mesh, ss, {7, 8}));
    // Nine other entries push the first one out: then it is cut again.
    for (int i = 0; i < 9; ++i) {
        semantics::TensorLayout other = ss;
        other.tensor += std::to_string(i);
        (void)cached_tile_model(c.plan.mesh, other, default_drawn(ss));
    }
    const auto again = cached_tile_model(c.plan.mesh, ss, default_drawn(ss));
    CHECK(again != a);
    CHECK(again->tiles.size() == a->tiles.size());
}

TEST_CASE("holdings: what each device holds of a tensor, in words") {
    const auto c = test::run(read_sample("placements_2x2.ein"));
    const auto& ss = c.plan.statements.at(2).result;
    const auto m = tile_model(c.plan.mesh, ss, default_drawn(ss));
    CHECK(holding_text(m, 0) == "[0:1, 0:1] of 2×2×2×2");
    CHECK(holding_text(m, 3) == "[1:2, 1:2] of 2×2×2×2");
    const auto& z = c.plan.statements.at(3).result; // Z{U_0}: partial over axis 0
    const auto mz = tile_model(c.plan.mesh, z);
    CHECK(holding_text(mz, 0).find("Σ partial over 0") != std::string::npos);
    // Every written dimension, per device, without a tile model (the mesh's hover).
    CHECK(device_holding_text(c.plan.mesh, ss, {1, 1}) == "[1:2, 0:2, 1:2, 0:2] of 2×2×2×2");
    CHECK(device_holding_text(c.plan.mesh, z, {0, 1}) ==
          "[0:4, 1:2, 0:2] of 4×2×2  Σ partial over 0");
    const auto g = test::run("mesh 2\ndim a=8\nsplit a -> r c\nA_{(r_0 c)} = B_{(r_0 c)}\n"
                             "C_{(r c_0)} = B_{(r_0 c)}\n");
    REQUIRE(g.plan.statements.size() == 2);
    CHECK(device_holding_text(g.plan.mesh, g.plan.statements[0].result, {1}) == "[2:4] of 4");
    CHECK(device_holding_text(g.plan.mesh, g.plan.statements[1].result, {1}) ==
          "[(r 0:2, c 1:2)] of 4");
    const auto layouts = program_layouts(c.plan);
    std::set<std::string> names;
    for (const auto* t : layouts)
        names.insert(t->tensor);
    CHECK(names.size() == layouts.size());
    CHECK(names.count("W^{SS}") == 1);
    CHECK(names.count("X") == 1);
}

TEST_CASE("the course index lists every sample exactly once") {
    // A sample added to samples/ without a line in samples/COURSE fails here: the picker and
    // teaching mode would put it after the course, unexplained.
    const auto course = parse_course(read_sample("COURSE"));
    for (const auto& e : course.errors)
        FAIL_CHECK(e);
    std::multiset<std::string> listed;
    for (const auto& e : course.entries) {
        listed.insert(e.file);
        CHECK_MESSAGE(!e.title.empty(), e.file << " has no title in COURSE");
        CHECK_MESSAGE(std::filesystem::exists(std::string(SHARDSCOPE_SAMPLES_DIR) + "/" + e.file),
                      "COURSE lists " << e.file << ", which is not in samples/");
    }
    std::set<std::string> samples;
    for (const auto& f : std::filesystem::directory_iterator(SHARDSCOPE_SAMPLES_DIR))
        if (f.path().extension() == ".ein") samples.insert(f.path().filename().string());
    REQUIRE(samples.size() >= 13);
    for (const auto& f : samples)
        CHECK_MESSAGE(listed.count(f) == 1, f << " is listed " << listed.count(f)
                                              << " times in samples/COURSE (once, please)");
    CHECK(listed.size() == samples.size());
    CHECK(course.entries.front().file == "placements_2x2.ein"); // the course starts there
}

TEST_CASE("course order: the index's order, then what it does not list; errors with lines") {
    const auto course = parse_course("# a course\n\nb.ein  Second thing\n  a.ein First # note\n"
                                     "b.ein again\nnotes.txt\n",
                                     "idx");
    REQUIRE(course.entries.size() == 2);
    CHECK(course.entries[0].file == "b.ein");
    CHECK(course.entries[0].title == "Second thing");
    CHECK(course.entries[0].line == 3);
    CHECK(course.entries[1].title == "First");
    REQUIRE(course.errors.size() == 2);
    CHECK(course.errors[0] == "idx:5: b.ein is listed twice");
    CHECK(course.errors[1] == "idx:6: 'notes.txt' is not a sample (a .ein file name)");
    const std::vector<std::string> files{"s/z.ein", "s/a.ein", "s/c.ein", "s/b.ein"};
    CHECK(course_order(files, course) ==
          std::vector<std::string>{"s/b.ein", "s/a.ein", "s/c.ein", "s/z.ein"});
    CHECK(course_title(course, "s/a.ein") == "First");
    CHECK(course_title(course, "s/c.ein").empty());
}

TEST_CASE("quiz: the plan's collectives and the result's placements among distractors") {
    const auto c = test::run(read_sample("dot_product.ein"));
    // Statement 1: z = x_{r_0 e} y_{r_0 e}, an all-reduce over axis 0.
    const auto qs = quiz_questions(c.plan, 0);
    REQUIRE(qs.size() == 2);
    const auto& q = qs[0];
    CHECK(q.prompt == "Which collectives does statement 1 need?");
    REQUIRE(q.choices.size() >= 2);
    CHECK(q.choices.size() <= 4);
    CHECK(q.choices[static_cast<std::size_t>(q.answer)] == "all-reduce(0)");
    CHECK(std::set<std::string>(q.choices.begin(), q.choices.end()).size() == q.choices.size());
    CHECK(std::is_sorted(q.choices.begin(), q.choices.end()));
    // Statement 2 needs none.
    const auto q2 = quiz_questions(c.plan, 1);
    REQUIRE_FALSE(q2.empty());
    CHECK(q2[0].choices[static_cast<std::size_t>(q2[0].answer)] == "no collective");
    // The result's placements: p_{r_0} is S(0) over the mesh's one axis.
    REQUIRE(q2.size() == 2);
    CHECK(q2[1].choices[static_cast<std::size_t>(q2[1].answer)] == "[S(0)]");
    CHECK(q2[1].choices.size() >= 2);
    // Deterministic: the same questions every time.
    CHECK(quiz_questions(c.plan, 0)[0].choices == q.choices);
    CHECK(quiz_questions(c.plan, 99).empty());
    // A permute is named as the plan names it.
    const auto r = test::run(read_sample("redistribute_2x2.ein"));
    CHECK(collectives_answer(r.plan, r.plan.statements.at(0)) == "permute(0,1)");
}
