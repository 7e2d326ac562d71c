// The pictures drawn on a recording canvas and as SVG (no GL, no display): tiles coloured by
// their holders, stripes for replicas, hatching and Σ for partial tensors, the mesh's cells,
// the plan's timeline proportional to time.
#include "render/palette.hpp"
#include "render/pictures.hpp"
#include "render/svg_canvas.hpp"
#include "render/timeline.hpp"

#include "../semantics/helpers.hpp"
#include "recording.hpp"

#include "tests/read_file.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

using namespace shardscope;
using namespace shardscope::render;

namespace {

std::string read_sample(const std::string& name) {
    return test::read_file(std::string(SHARDSCOPE_SAMPLES_DIR) + "/" + name);
}

/// How many fills of each device colour (by device id) a recording holds.
std::map<std::int64_t, int> device_fills(const test::RecordingCanvas& c, std::int64_t n) {
    std::map<std::int64_t, int> out;
    for (const auto& f : c.fills)
        for (std::int64_t d = 0; d < n; ++d)
            if (f.color == device_color(d, n)) ++out[d];
    return out;
}

/// The fill colours of an SVG's <rect> elements, with their areas.
std::map<std::string, double> svg_fills(const std::string& svg) {
    std::map<std::string, double> out;
    const std::regex rect(
        R"re(<rect x="([-\d.]+)" y="([-\d.]+)" width="([\d.]+)" height="([\d.]+)" fill="(#[0-9a-f]{6})")re");
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), rect); it != std::sregex_iterator();
         ++it)
        out[(*it)[5]] += std::stod((*it)[3]) * std::stod((*it)[4]);
    return out;
}

} // namespace

TEST_CASE("tiling of W_{r_0 c r'_1 d} on a 2x2 mesh: four tiles, four device colours") {
    const auto c = test::run(read_sample("placements_2x2.ein"));
    const auto& t = c.plan.statements.at(2).result;
    test::RecordingCanvas rec;
    draw_tiling(rec, {0, 0, 800, 600}, c.plan.mesh, t, default_drawn(t));
    // Each device colour fills its tile and its legend swatch: two fills each.
    const auto fills = device_fills(rec, 4);
    CHECK(fills.size() == 4);
    for (const auto& entry : fills) // (clang 14 cannot capture structured bindings)
        CHECK_MESSAGE(entry.second == 2, "device " << entry.first);
    CHECK(rec.lines == 2); // the two cuts; no hatching: not partial
    CHECK(rec.has_text("S(0), S(2)"));
    CHECK(rec.has_text("d3 (1,1)"));
    CHECK(rec.tips.size() == 4);
    CHECK(rec.tips[0].second.find("held by:\n  d0 (0,0)") != std::string::npos);
}

TEST_CASE("tiling of a replicated tensor: one tile striped with every holder") {
    const auto c = test::run(read_sample("placements_2x2.ein"));
    const auto& t = c.plan.statements.at(0).result; // W^{RR}
    test::RecordingCanvas rec;
    draw_tiling(rec, {0, 0, 800, 600}, c.plan.mesh, t, default_drawn(t));
    CHECK(rec.tips.size() == 1);
    const auto fills = device_fills(rec, 4);
    CHECK(fills.size() == 4);
    // Four stripes side by side, of equal width.
    std::vector<Rect> stripes;
    for (const auto& f : rec.fills)
        if (f.rect.height() > 100) stripes.push_back(f.rect);
    std::erase_if(stripes, [](const Rect& r) { return r.width() > 400; }); // the background
    REQUIRE(stripes.size() == 4);
    for (const auto& s : stripes)
        CHECK(s.width() == doctest::Approx(stripes[0].width()));
}

TEST_CASE("tiling of a partial tensor: hatched and marked Σ") {
    const auto c = test::run(read_sample("placements_2x2.ein"));
    const auto& t = c.plan.statements.at(3).result; // Z{U_0}
    test::RecordingCanvas rec;
    draw_tiling(rec, {0, 0, 800, 600}, c.plan.mesh, t, default_drawn(t));
    CHECK(rec.lines > 10);
    CHECK(rec.has_text("Σ partial over mesh axis 0 (sum)"));
    CHECK(rec.has_text(" Σ"));
    // The all-reduce's result is not partial.
    test::RecordingCanvas after;
    const auto& r = c.plan.statements.at(4).result;
    draw_tiling(after, {0, 0, 800, 600}, c.plan.mesh, r, default_drawn(r));
    CHECK(after.lines < 5); // the cuts only
    CHECK_FALSE(after.has_text("Σ"));
}

TEST_CASE("a drawn dimension out of range is said, not drawn") {
    const auto c = test::run(read_sample("placements_2x2.ein"));
    test::RecordingCanvas rec;
    draw_tiling(rec, {0, 0, 800, 600}, c.plan.mesh, c.plan.statements.at(2).result, {0, 9});
    CHECK(rec.fills.empty());
    CHECK(rec.texts.size() == 1);
}

TEST_CASE("mesh: one cell per device, 3-D meshes as small multiples, 1024 devices") {
    SUBCASE("2x2x2") {
        const auto c = test::run("mesh 2x2x2\ndim a=8\nA_{a_0} = B_{a_0}\n");
        test::RecordingCanvas rec;
        draw_mesh(rec, {0, 0, 760, 560}, c.plan.mesh, program_layouts(c.plan));
        CHECK(device_fills(rec, 8).size() == 8);
        CHECK(rec.has_text("0=0"));
        CHECK(rec.has_text("0=1"));
        REQUIRE(rec.tips.size() == 8);
        CHECK(rec.tips[5].second.find("device d5 (1,0,1)") == 0);
        CHECK(rec.tips[5].second.find("A: [4:8] of 8") != std::string::npos);
    }
    SUBCASE("1024 devices") {
        const auto c = test::run("mesh 32x32\ndim a=1024 b=1024\nA_{a_0 b_1} = B_{a_0 b_1}\n");
        test::RecordingCanvas rec;
        draw_mesh(rec, {0, 0, 980, 1020}, c.plan.mesh, program_layouts(c.plan));
        const auto fills = device_fills(rec, 1024);
        CHECK(fills.size() == 1024);
        CHECK(rec.tips.size() == 1024);
    }
}

TEST_CASE("plan: the timeline's blocks are proportional to the steps' times") {
    const auto c = test::run(read_sample("sequence_parallel.ein"));
    const auto& s = c.plan.statements.at(0);
    test::RecordingCanvas rec;
    draw_plan(rec, {0, 0, 960, 400}, c.plan, 0);
    // The bar's blocks: the fills in step colours that are taller than a swatch.
    std::vector<Rect> blocks;
    for (const auto& f : rec.fills)
        if (f.rect.height() > 30) blocks.push_back(f.rect);
    REQUIRE(blocks.size() == s.steps.size());
    const auto spans = timeline_spans(step_times(s), 944, 8);
    for (std::size_t i = 0; i < blocks.size(); ++i)
        CHECK(blocks[i].width() == doctest::Approx(spans[i].x1 - spans[i].x0));
    CHECK(rec.has_text("1. all-gather(0) of x"));
    CHECK(rec.has_text("alternatives"));
    CHECK(rec.tips.size() == s.steps.size());
}

TEST_CASE("SVG: the tiling's rect fills are the four device colours") {
    const auto c = test::run(read_sample("placements_2x2.ein"));
    std::string error;
    const auto sel = resolve_selection(c.plan, 0, "W^{SS}", error);
    REQUIRE(sel);
    const std::string svg = render_svg(c.plan, View::Tiling, *sel);
    CHECK(svg.rfind("<?xml", 0) == 0);
    CHECK(svg.find("</svg>") != std::string::npos);
    const auto fills = svg_fills(svg);
    int devices = 0;
    for (std::int64_t d = 0; d < 4; ++d) {
        const auto it = fills.find(device_color(d, 4).hex());
        REQUIRE(it != fills.end());
        CHECK(it->second > 50000); // a quarter of the grid, not just a legend swatch
        ++devices;
    }
    CHECK(devices == 4);
    CHECK(svg.find("<title>W^{SS} [0:1, 0:1]") != std::string::npos);
    // Text is escaped.
    const auto p = test::run("mesh 2\ndim a=4\nA_{a_0} = B_{a_0} + C_{a_0}\n");
    CHECK(render_svg(p.plan, View::Plan, {}).find("<text") != std::string::npos);
    CHECK(xml_escape("a<b & \"c\">") == "a&lt;b &amp; &quot;c&quot;&gt;");
}

TEST_CASE("every sample draws every view as SVG") {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(SHARDSCOPE_SAMPLES_DIR))
        if (e.path().extension() == ".ein") names.push_back(e.path().filename().string());
    CHECK(names.size() >= 12);
    for (const auto& name : names) {
        CAPTURE(name);
        const auto c = test::run(read_sample(name));
        for (std::size_t i = 0; i < c.plan.statements.size(); ++i)
            for (View v : {View::Tiling, View::Mesh, View::Plan, View::Steps}) {
                Selection sel;
                sel.statement = static_cast<int>(i);
                const std::string svg = render_svg(c.plan, v, sel);
                CHECK(svg.size() > 200);
                CHECK(svg.find("</svg>") != std::string::npos);
            }
    }
}
