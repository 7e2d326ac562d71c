// The pictures drawn on a recording canvas and as SVG (no GL, no display): tiles coloured by
// their holders, one tinted tile listing the holders of a replica, small multiples, hatching
// and Σ for partial tensors, the mesh's cells, the plan's timeline proportional to time.
#include "render/palette.hpp"
#include "render/pictures.hpp"
#include "render/stepthrough.hpp"
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

TEST_CASE("tiling of a replicated tensor: one tile in a replica tint listing every holder") {
    const auto c = test::run(read_sample("placements_2x2.ein"));
    const auto& t = c.plan.statements.at(0).result; // W^{RR}
    test::RecordingCanvas rec;
    draw_tiling(rec, {0, 0, 800, 600}, c.plan.mesh, t, default_drawn(t));
    CHECK(rec.tips.size() == 1);
    // One fill covers the tile (no bands that read as a split), in the tint of "replicated
    // over axes 0 and 1"; device colours only in the legend's small swatches.
    std::vector<Rect> large;
    for (const auto& f : rec.fills)
        if (f.rect.width() * f.rect.height() > 2000) large.push_back(f.rect);
    REQUIRE(large.size() == 1);
    for (const auto& f : rec.fills)
        if (f.rect.width() * f.rect.height() > 2000) CHECK(f.color == replicated_color(3));
    for (const auto& f : rec.fills)
        for (std::int64_t d = 0; d < 4; ++d)
            if (f.color == device_color(d, 4)) CHECK(f.rect.width() * f.rect.height() < 400);
    CHECK(rec.has_text("d0,1,2,3"));
    CHECK(rec.has_text("replicated over 0,1"));
}

TEST_CASE("issue 16: Cfull (an all-reduced result) is exactly one tile with four holders") {
    const auto c = test::run(read_sample("bracket_form.ein"));
    std::string error;
    const auto sel = resolve_selection(c.plan, 0, "Cfull", error);
    REQUIRE(sel);
    const auto* t = selected_layout(c.plan, *sel);
    REQUIRE(t != nullptr);
    test::RecordingCanvas rec;
    draw_tiling(rec, {0, 0, 820, 620}, c.plan.mesh, *t, drawn_of(*sel, *t));
    REQUIRE(rec.tips.size() == 1); // one tile
    CHECK(rec.tips[0].second.find("replicated over X") != std::string::npos);
    for (const char* d : {"d0 (0)", "d1 (1)", "d2 (2)", "d3 (3)"})
        CHECK(rec.tips[0].second.find(d) != std::string::npos);
    int labels = 0, large = 0;
    for (const auto& x : rec.texts)
        labels += x.text == "d0,1,2,3";
    for (const auto& f : rec.fills)
        if (f.rect.width() * f.rect.height() > 2000) {
            ++large;
            CHECK(f.color == replicated_color(1));
        }
    CHECK(labels == 1);
    CHECK(large == 1);
    // Cscat (a real column split) is four tiles in four device colours: not the same picture.
    const auto scat = resolve_selection(c.plan, 0, "Cscat", error);
    REQUIRE(scat);
    test::RecordingCanvas rs;
    const auto* ts = selected_layout(c.plan, *scat);
    draw_tiling(rs, {0, 0, 820, 620}, c.plan.mesh, *ts, drawn_of(*scat, *ts));
    CHECK(rs.tips.size() == 4);
    // C{U_X} is partial: one tile, hatched, that says over which axis.
    const auto part = resolve_selection(c.plan, 0, "C", error);
    REQUIRE(part);
    test::RecordingCanvas rp;
    const auto* tp = selected_layout(c.plan, *part);
    draw_tiling(rp, {0, 0, 820, 620}, c.plan.mesh, *tp, drawn_of(*part, *tp));
    CHECK(rp.tips.size() == 1);
    CHECK(rp.has_text("d0,1,2,3 Σ"));
    CHECK(rp.has_text("Σ partial over X"));
    CHECK(rp.lines > 10); // the hatching
    // The legend explains the tint, the hatching and (where a shard is empty) the grey.
    CHECK(rec.has_text("replicated over X: every listed device holds the whole block"));
    CHECK(rp.has_text("hatched, Σ: partial over X: each holder has a part of the sum"));
    CHECK_FALSE(rec.has_text("hatched"));
    const auto uneven = test::run("mesh 4\ndim n=6\ny_{n_0} = x_{n_0}\n");
    test::RecordingCanvas ru;
    draw_tiling(ru, {0, 0, 820, 620}, uneven.plan.mesh, uneven.plan.statements.at(0).result, {});
    CHECK(ru.has_text("d3 holds nothing: torch.chunk leaves the shard empty"));
    CHECK_FALSE(rec.has_text("holds nothing"));
    // A scalar is one cell.
    const auto sc = test::run("mesh X=4\ndim I=8 J=8\nz_{} = A[I, J_X] A[I, J_X]\n");
    test::RecordingCanvas rz;
    draw_tiling(rz, {0, 0, 820, 620}, sc.plan.mesh, sc.plan.statements.at(0).result, {});
    CHECK(rz.tips.size() == 1);
    int zl = 0;
    for (const auto& x : rz.texts)
        zl += x.text == "d0,1,2,3";
    CHECK(zl == 1);
}

TEST_CASE("issue 16: a sharded undrawn dimension is drawn as small multiples") {
    const auto c = test::run("mesh dp=2 tp=2 sp=2\ndim b=8 s=4096 d=64 f=8192\n"
                             "h_{b_{dp} s_{sp} f_{tp}} = x_{b_{dp} s_{sp} d} W_{d f_{tp}}\n"
                             "z_{b_{dp} s_{sp} d} = x_{b_{dp} s_{sp} d}\n");
    const auto& h = c.plan.statements.at(0).result;
    test::RecordingCanvas rec;
    draw_tiling(rec, {0, 0, 820, 620}, c.plan.mesh, h, {0, 1});
    CHECK(rec.has_text("f[0:4096]"));
    CHECK(rec.has_text("f[4096:8192]"));
    CHECK(rec.has_text("one panel per slice of the undrawn sharded dimensions"));
    REQUIRE(rec.tips.size() == 8);
    // Every tile has one holder, all eight distinct, and says which slice of f it is.
    std::set<std::string> holders;
    for (const auto& [r, tip] : rec.tips) {
        CHECK(tip.find("replicated") == std::string::npos);
        CHECK(tip.find(" f[") != std::string::npos);
        const auto at = tip.find("held by:\n  ");
        REQUIRE(at != std::string::npos);
        CHECK(tip.find('\n', at + 12) == std::string::npos); // one holder
        holders.insert(tip.substr(at + 11));
    }
    CHECK(holders.size() == 8);
    CHECK(rec.tips[0].second.rfind("h [0:4, 0:2048] f[0:4096]\nheld by:\n  d0 (0,0,0)", 0) == 0);
    // The two panels' tiles are in eight device colours, one fill each.
    const auto fills = device_fills(rec, 8);
    CHECK(fills.size() == 8);
    // z is truly replicated over tp: four tiles of two holders, in a replica tint.
    test::RecordingCanvas rz;
    draw_tiling(rz, {0, 0, 820, 620}, c.plan.mesh, c.plan.statements.at(1).result, {0, 1});
    CHECK(rz.tips.size() == 4);
    CHECK(rz.has_text("d0,2"));
    CHECK(rz.has_text("replicated over tp"));
    CHECK_FALSE(rz.has_text("f["));
    // The mesh's hover says which slice of f a device holds.
    test::RecordingCanvas rm;
    draw_mesh(rm, {0, 0, 760, 560}, c.plan.mesh, {&h});
    REQUIRE(rm.tips.size() == 8);
    CHECK(rm.tips[2].second.find("h: [0:4, 0:2048, 4096:8192] of 8×4096×8192") !=
          std::string::npos);
}

TEST_CASE("issue 16: a step-through frame draws before and after along the same dimensions") {
    const auto c = test::run(read_sample("sequence_parallel.ein"));
    // Statement 2: x_{b r_0 t d} -> x_{b r t d}, the all-gather.
    test::RecordingCanvas rec;
    draw_step(rec, {0, 0, 1100, 560}, c.plan, 1, 1);
    int r0 = 0, r = 0, t = 0;
    for (const auto& x : rec.texts) {
        r0 +=
            x.text.rfind("rows: r₀ (", 0) == 0 && x.text.find("columns: d (") != std::string::npos;
        r += x.text.rfind("rows: r (", 0) == 0 && x.text.find("columns: d (") != std::string::npos;
        t += x.text.rfind("rows: t", 0) == 0;
    }
    CHECK(r0 == 1); // before
    CHECK(r == 1);  // after: the same logical rows (r_0 is r cut over axis 0)
    CHECK(t == 0);
    CHECK(logical_index("r_0") == "r");
    CHECK(logical_index("b_{dp}") == "b");
    CHECK(logical_index("(r_0 c)") == "(r c)");
    CHECK(logical_index("seq_X") == "seq");
    CHECK(logical_index("r'_1") == "r'");
    // Mesh-axis numbers typeset as subscripts; named axes as written.
    CHECK(typeset_index("r_0") == "r₀");
    CHECK(typeset_index("j_{1,2}") == "j₁,₂");
    CHECK(typeset_index("j_{12}") == "j₁₂");
    CHECK(typeset_index("r'_1") == "r′₁");
    CHECK(typeset_index("(r_0 c)") == "(r₀ c)");
    CHECK(typeset_index("b_{dp}") == "b_{dp}");
    CHECK(typeset_index("f_tp") == "f_tp");
    CHECK(typeset_index("seq_X") == "seq_X");
    CHECK(rec.has_text("x_{b r₀ t d}"));
}

TEST_CASE("issue 16: a collective's frame, message step by message step") {
    const auto c = test::run(read_sample("fsdp_tp.ein"));
    // Statement 4's frame 2: the all-reduce over axis 1 (groups of four devices).
    const auto frames = step_frames(c.plan, c.plan.statements.at(3));
    REQUIRE(frames.size() > 2);
    REQUIRE(frames[2].collective);
    test::RecordingCanvas whole, first;
    draw_step(whole, {0, 0, 1100, 560}, c.plan, 3, 2);
    draw_step(first, {0, 0, 1100, 560}, c.plan, 3, 2, 14, 1);
    CHECK_FALSE(whole.has_text("ring step"));
    CHECK(first.has_text("reduce-scatter ring step 1 of 3"));
    CHECK(first.has_text("the 1 other groups do the same at once"));
    int labels = 0;
    for (const auto& t : first.texts)
        labels += t.text.rfind("block ", 0) == 0 && t.text.find(" Σ") != std::string::npos;
    CHECK(labels == 4); // one message per device of the group
    CHECK(device_fills(first, 8).size() == 4);
    // Past the last step: the last one.
    test::RecordingCanvas last;
    draw_step(last, {0, 0, 1100, 560}, c.plan, 3, 2, 14, 99);
    CHECK(last.has_text("all-gather ring step 3 of 3"));
}

TEST_CASE("issue 16: the step-through's sequence and its animated SVG") {
    const auto c = test::run(read_sample("fsdp_tp.ein"));
    const auto& s = c.plan.statements.at(3);
    const auto frames = step_frames(c.plan, s);
    const auto shots = step_sequence(c.plan, s);
    // Every frame once, in order, and after the all-reduce's frame (2) its six message steps.
    std::size_t messages = 0;
    for (const auto& f : frames)
        if (f.collective)
            messages +=
                collective_schedule(c.plan.mesh, s.steps.at(static_cast<std::size_t>(f.step)))
                    .steps.size();
    REQUIRE(messages >= 6);
    REQUIRE(shots.size() == frames.size() + messages);
    int frame_pictures = 0;
    for (std::size_t i = 0; i < shots.size(); ++i) {
        frame_pictures += shots[i].substep == 0;
        if (i > 0) {
            const auto& a = shots[i - 1];
            const auto& b = shots[i];
            CHECK(((b.frame == a.frame && b.substep == a.substep + 1) ||
                   (b.frame == a.frame + 1 && b.substep == 0)));
        }
    }
    CHECK(frame_pictures == static_cast<int>(frames.size()));
    CHECK(shots[3].frame == 2);
    CHECK(shots[3].substep == 1);

    std::string problem = "x";
    const std::string svg = render_steps_animation_svg(c.plan, 3, 2.0f, &problem);
    CHECK(problem.empty());
    // One group per picture, the first visible, the rest hidden until their turn.
    const std::regex group(R"re(<g id="(frame-\d+(-message-\d+)?)"( visibility="hidden")?>)re");
    std::vector<std::string> ids;
    int hidden = 0;
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), group);
         it != std::sregex_iterator(); ++it) {
        ids.push_back((*it)[1]);
        hidden += (*it)[3].matched;
    }
    REQUIRE(ids.size() == shots.size());
    CHECK(hidden == static_cast<int>(shots.size()) - 1);
    CHECK(ids[0] == "frame-0");
    CHECK(ids[3] == "frame-2-message-1");
    // Each picture has its own turn of `seconds`: key times i/n to (i+1)/n of n*2 s.
    const std::string dur = "dur=\"" + std::to_string(2 * shots.size()) + "s\"";
    std::size_t animations = 0;
    for (auto at = svg.find("<animate "); at != std::string::npos;
         at = svg.find("<animate ", at + 1)) {
        ++animations;
        const auto end = svg.find("/>", at);
        const std::string a = svg.substr(at, end - at);
        CHECK(a.find(dur) != std::string::npos);
        CHECK(a.find("calcMode=\"discrete\"") != std::string::npos);
    }
    CHECK(animations == shots.size());
    std::ostringstream third;
    third << "keyTimes=\"0;" << 3.0 / static_cast<double>(shots.size()) << ";"
          << 4.0 / static_cast<double>(shots.size()) << "\"";
    CHECK(svg.find(third.str()) != std::string::npos);
    // The pictures are the ones the window draws: the message step's title is in its group.
    const auto g3 = svg.find("<g id=\"frame-2-message-1\"");
    const auto g4 = svg.find("<g id=", g3 + 1);
    CHECK(svg.substr(g3, g4 - g3).find("reduce-scatter ring step 1 of 3") != std::string::npos);
    CHECK(svg.substr(0, g3).find("ring step") == std::string::npos);
    // One white background, below every picture.
    CHECK(svg_fills(svg.substr(0, svg.find("<g "))).count("#ffffff") == 1);
}

TEST_CASE("issue 16: teaching-mode step frames at 1280x720 keep large tiles") {
    const auto c = test::run(read_sample("sequence_parallel.ein"));
    // The step-through's area in teaching mode at 1280x720 (the right side, below the
    // toolbar and the step controls), and teaching's font.
    test::RecordingCanvas rec;
    draw_step(rec, {0, 0, 730, 540}, c.plan, 1, 1, 24);
    const auto fills = device_fills(rec, 2);
    REQUIRE(fills.size() == 2);
    int tiles = 0;
    for (const auto& f : rec.fills)
        for (std::int64_t d = 0; d < 2; ++d)
            if (f.color == device_color(d, 2)) {
                ++tiles;
                CHECK(f.rect.width() >= 150);
                CHECK(f.rect.height() >= 80);
            }
    CHECK(tiles == 2); // before: r's two halves; after: one replicated tile, tinted
    CHECK(rec.tips.size() == 3);
}

TEST_CASE("zoom and pan: the tiling's tiles drawn larger and moved, the same tiles") {
    const auto c = test::run(read_sample("placements_2x2.ein"));
    std::string error;
    auto found = resolve_selection(c.plan, 0, "W^{SS}", error);
    REQUIRE(found);
    const Selection sel = *found;
    auto tiles = [&](const Selection& s) {
        test::RecordingCanvas rec;
        draw_picture(rec, {0, 0, 820, 620}, c.plan, View::Tiling, s);
        // The tiles: the first fill of each device colour (the legend's swatches come after).
        std::vector<Rect> out;
        for (std::int64_t d = 0; d < 4; ++d)
            for (const auto& f : rec.fills)
                if (f.color == device_color(d, 4)) {
                    out.push_back(f.rect);
                    break;
                }
        return out;
    };
    const auto plain = tiles(sel);
    REQUIRE(plain.size() == 4);
    Selection zoomed = sel;
    zoomed.zoom = 2;
    const auto big = tiles(zoomed);
    REQUIRE(big.size() == 4);
    for (std::size_t i = 0; i < 4; ++i) {
        CHECK(big[i].width() > plain[i].width() * 1.8f);
        CHECK(big[i].height() > plain[i].height() * 1.8f);
    }
    Selection panned = zoomed;
    panned.pan = {-300, -100};
    const auto moved = tiles(panned);
    REQUIRE(moved.size() == 4);
    for (std::size_t i = 0; i < 4; ++i) {
        CHECK(moved[i].x0 == doctest::Approx(big[i].x0 - 300));
        CHECK(moved[i].y0 == doctest::Approx(big[i].y0 - 100));
        CHECK(moved[i].width() == doctest::Approx(big[i].width()));
    }
    const Rect z = zoomed_area({10, 20, 110, 70}, 3, {5, -5});
    CHECK(z.x0 == 15);
    CHECK(z.y0 == 15);
    CHECK(z.width() == 300);
    CHECK(z.height() == 150);
}

TEST_CASE("hover: the mesh reports the device under the pointer; the tiling outlines its tiles") {
    const auto c = test::run(read_sample("placements_2x2.ein"));
    // The mesh: the pointer over a cell names its device.
    test::RecordingCanvas mesh;
    draw_picture(mesh, {0, 0, 760, 560}, c.plan, View::Mesh, {});
    std::map<std::int64_t, Rect> cells;
    for (const auto& f : mesh.fills)
        for (std::int64_t d = 0; d < 4; ++d)
            if (f.color == device_color(d, 4) && !cells.count(d)) cells[d] = f.rect;
    REQUIRE(cells.size() == 4);
    test::RecordingCanvas over;
    over.pointer = cells[3].center();
    draw_picture(over, {0, 0, 760, 560}, c.plan, View::Mesh, {});
    CHECK(over.hovers == std::vector<std::int64_t>{3});
    // The tiling with device 3 highlighted: its one tile of W^{SS} outlined, a line says so.
    std::string error;
    auto found = resolve_selection(c.plan, 0, "W^{SS}", error);
    REQUIRE(found);
    Selection sel = *found;
    test::RecordingCanvas plain, lit;
    draw_picture(plain, {0, 0, 820, 620}, c.plan, View::Tiling, sel);
    sel.highlight = 3;
    draw_picture(lit, {0, 0, 820, 620}, c.plan, View::Tiling, sel);
    auto outlines = [](const test::RecordingCanvas& r) {
        std::vector<Rect> out;
        for (const auto& s : r.strokes)
            if (s.color == colors::kHighlight) out.push_back(s.rect);
        return out;
    };
    CHECK(outlines(plain).empty());
    const auto lit_tiles = outlines(lit);
    REQUIRE(lit_tiles.size() == 1);
    Rect tile3{};
    for (const auto& f : lit.fills)
        if (f.color == device_color(3, 4)) {
            tile3 = f.rect; // the tile (the legend's swatch comes after)
            break;
        }
    CHECK(lit_tiles[0].center().x == doctest::Approx(tile3.center().x));
    CHECK(lit_tiles[0].center().y == doctest::Approx(tile3.center().y));
    CHECK(lit.has_text("outlined: what d3 (1,1) holds"));
    // Hovering moves no tile: the outline takes the drawn dimensions' line.
    for (const auto& f : plain.fills)
        if (f.color == device_color(3, 4)) {
            CHECK(f.rect.y0 == doctest::Approx(tile3.y0));
            CHECK(f.rect.x0 == doctest::Approx(tile3.x0));
            break;
        }
    // A replicated tensor: the one tile every device holds is outlined for any of them.
    auto rep = resolve_selection(c.plan, 0, "W^{RR}", error);
    REQUIRE(rep);
    {
        rep->highlight = 2;
        test::RecordingCanvas r;
        draw_picture(r, {0, 0, 820, 620}, c.plan, View::Tiling, *rep);
        CHECK(outlines(r).size() == 1);
    }
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
        // Coloured by coordinates (hue by the rows' axis, lightness by the columns').
        std::set<std::int64_t> found;
        for (std::int64_t id = 0; id < 1024; ++id) {
            const Color want = mesh_device_color(
                {32, 32}, {static_cast<int>(id / 32), static_cast<int>(id % 32)}, id);
            for (const auto& f : rec.fills)
                if (f.color == want) found.insert(id);
        }
        CHECK(found.size() == 1024);
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

namespace {

/// How many texts of a recording start with `prefix`.
int starting_with(const test::RecordingCanvas& c, const std::string& prefix) {
    int n = 0;
    for (const auto& t : c.texts)
        n += t.text.rfind(prefix, 0) == 0;
    return n;
}

} // namespace

TEST_CASE("QA: a redistributed value's tile title writes its own layout's subscripts") {
    // y is read as y_{i j_0}, but until the all-to-all it is still S(0) along i: its tiles
    // are cut along i, and so must its title and captions say (y_{i₀ j}, not y_{i j₀}).
    const auto c = test::run("mesh 4\ndim i=8 j=8\ny_{i_0 j} = x_{i_0 j}\nz_{i j_0} = y_{i j_0}\n");
    for (int frame : {0, 1}) {
        CAPTURE(frame);
        test::RecordingCanvas rec;
        draw_step(rec, {0, 0, 1100, 560}, c.plan, 1, frame);
        CHECK(rec.has_text("y_{i₀ j}   (S(0))"));
        CHECK_FALSE(rec.has_text("y_{i j₀}   (S(0))"));
        CHECK(starting_with(rec, "rows: i₀ (8, 4 pieces)   columns: j (8, 1 piece)") == 1);
        if (frame == 1)
            CHECK(starting_with(rec, "rows: i (8, 1 piece)   columns: j₀ (8, 4 pieces)") == 1);
    }
    // The 2x2 gather: x_{i_0 j_1} before, x_{i j} after.
    const auto g = test::run("mesh 2x2\ndim i=8 j=8\nx_{i_0 j_1} -> x_{i j}\n");
    test::RecordingCanvas rec;
    draw_step(rec, {0, 0, 1100, 560}, g.plan, 0, 1);
    CHECK(rec.has_text("x_{i₀ j₁}   (S(0), S(1))"));
    CHECK_FALSE(rec.has_text("x_{i j}   (S(0), S(1))"));
}

TEST_CASE("QA: a permute's message carries the sender's part of the receiver's new block") {
    // d0 holds rows 0:4 of x; d2's new block is columns 4:6, all rows: d0 sends [0:4, 4:6]
    // (8 elements, the plan's 32 B), not d2's whole block [0:8, 4:6].
    const auto c = test::run("mesh 2x2\ndim i=8 j=8\nx_{i_0 j} -> x_{i j_{01}}\n");
    const auto& s = c.plan.statements.at(0);
    const auto frames = step_frames(c.plan, s);
    int frame = -1;
    for (std::size_t i = 0; i < frames.size(); ++i)
        if (frames[i].collective && s.steps.at(static_cast<std::size_t>(frames[i].step)).kind ==
                                        semantics::StepKind::Permute)
            frame = static_cast<int>(i);
    REQUIRE_MESSAGE(frame >= 0, c.text());
    const auto& step = s.steps.at(static_cast<std::size_t>(frames[frame].step));
    const auto sched = collective_schedule(c.plan, s, frames[frame].step);
    REQUIRE(sched.steps.size() == 1);
    CHECK(sched.parts);
    CHECK(sched.steps[0].title.find("the part of the partner's new block that it holds") !=
          std::string::npos);
    // What each device sends is what the plan prices.
    std::map<std::int64_t, std::int64_t> sent;
    for (const auto& t : sched.steps[0].transfers) {
        REQUIRE(t.part.size() == 2);
        sent[t.from] += t.part[0].size() * t.part[1].size();
    }
    for (const auto& entry : sent)
        CHECK(static_cast<double>(entry.second * step.cost.elem_bytes) <=
              step.cost.bytes_per_device);
    test::RecordingCanvas rec;
    draw_step(rec, {0, 0, 1100, 700}, c.plan, 0, frame, 14, 1);
    CHECK_MESSAGE(rec.has_text("d0 → d2 sends [0:4, 4:6] of x, its part of d2's block [0:8, 4:6]"),
                  c.text());
    CHECK_FALSE(rec.has_text("sends d2's block [0:8, 4:6]"));
    CHECK_FALSE(rec.has_text("the part of the sender's block that is the receiver's block"));
    // A block swap moves whole blocks, and says so.
    const auto w = test::run(read_sample("redistribute_2x2.ein"));
    const auto wf = step_frames(w.plan, w.plan.statements.at(0));
    for (const auto& f : wf)
        if (f.collective)
            CHECK_FALSE(collective_schedule(w.plan, w.plan.statements.at(0), f.step).parts);
}

TEST_CASE("QA: a P(max) value is marked max, and its ring takes the max") {
    const auto c = test::run("mesh 4\ndim b=8 s=64\nn_{b} = max_s(x_{b s_0})\n");
    const auto& s = c.plan.statements.at(0);
    const auto frames = step_frames(c.plan, s);
    int frame = -1;
    for (std::size_t i = 0; i < frames.size(); ++i)
        if (frames[i].collective) frame = static_cast<int>(i);
    REQUIRE_MESSAGE(frame >= 0, c.text());
    test::RecordingCanvas whole, ring;
    draw_step(whole, {0, 0, 1100, 560}, c.plan, 0, frame);
    draw_step(ring, {0, 0, 1100, 560}, c.plan, 0, frame, 14, 1);
    CHECK(whole.has_text("max partial over"));
    std::string texts;
    for (const auto& t : whole.texts)
        texts += t.text + "\n";
    CHECK_MESSAGE(whole.has_text("d0,1,2,3 max"), texts);
    CHECK_FALSE(whole.has_text("Σ"));
    CHECK(collective_schedule(c.plan, s, frames[frame].step).combine == semantics::PartialOp::Max);
    CHECK(ring.has_text("which takes the max with its own part"));
    CHECK(starting_with(ring, "block 3 max") == 1);
    CHECK_FALSE(ring.has_text("Σ"));
    CHECK_FALSE(ring.has_text("adds its own part"));
    // The full tiling's legend says what the parts are parts of.
    const auto* partial = &s.values.at(static_cast<std::size_t>(
        s.steps.at(static_cast<std::size_t>(frames[frame].step)).inputs[0]));
    test::RecordingCanvas tiling;
    draw_tiling(tiling, {0, 0, 800, 600}, c.plan.mesh, partial->layout,
                default_drawn(partial->layout));
    CHECK(tiling.has_text("hatched, max: partial over 0: each holder has a part of the max"));
    CHECK_FALSE(tiling.has_text("Σ"));
}

TEST_CASE("QA: a permute's result frame names the result, not its input") {
    const auto c = test::run(read_sample("ring_attention.ein"));
    const auto& s = c.plan.statements.at(5); // Kn = Permute_{r_0}(K)
    REQUIRE(s.target == "Kn");
    const auto frames = step_frames(c.plan, s);
    for (int frame = 1; frame < static_cast<int>(frames.size()); ++frame) {
        CAPTURE(frame);
        test::RecordingCanvas rec;
        draw_step(rec, {0, 0, 1100, 560}, c.plan, 5, frame);
        CHECK(starting_with(rec, "Kn_{") == 1);                // the result
        if (frame == 1) CHECK(starting_with(rec, "K_{") == 1); // the input, before it
    }
    CHECK(value_name(s, s.result_value) == "Kn");
    // The all-to-all's result is the stored z, not the y it was read from.
    const auto z = test::run("mesh 4\ndim i=8 j=8\ny_{i_0 j} = x_{i_0 j}\nz_{i j_0} = y_{i j_0}\n");
    test::RecordingCanvas rec;
    draw_step(rec, {0, 0, 1100, 560}, z.plan, 1, 1);
    CHECK(rec.has_text("z_{i j₀}   (S(1))"));
    CHECK_FALSE(rec.has_text("y_{i j₀}"));
}

TEST_CASE("QA: a computation's frame names what it gives: a scalar, the statement's target") {
    // z = x_{r_0 e} y_{r_0 e}: the einsum's output is a scalar (nothing after "->").
    const auto c = test::run(read_sample("dot_product.ein"));
    const auto frames = step_frames(c.plan, c.plan.statements.at(0));
    REQUIRE(frames.size() > 2);
    CHECK_MESSAGE(frames[1].title.find("-> (scalar), giving ") != std::string::npos,
                  frames[1].title);
    CHECK(frames[1].title.find("->  ") == std::string::npos);
    // A softmax stored as P: its frames show P, not an intermediate's %N.
    const auto m = test::run("mesh 4\ndim b=8 v=64\nP_{b_0 v} = softmax_v(L_{b_0 v})\n");
    const auto& s = m.plan.statements.at(0);
    const auto mf = step_frames(m.plan, s);
    bool giving_p = false;
    for (const auto& f : mf)
        giving_p = giving_p || f.title.ends_with(", giving P");
    CHECK_MESSAGE(giving_p, m.text());
    test::RecordingCanvas rec;
    draw_step(rec, {0, 0, 1100, 560}, m.plan, 0, static_cast<int>(mf.size()) - 1);
    CHECK(starting_with(rec, "P_{") == 1);
    CHECK(starting_with(rec, "%") == 0);
}

TEST_CASE("QA: a long tensor name is shortened before its placements are") {
    const auto c =
        test::run(std::string("mesh dataparallelaxis=2 tensorparallelaxis=4\n") +
                  "dim batch=64 hidden=4096 ffn=16384\n"
                  "OutputActivationsOfTheVeryLongLayerName[batch_{dataparallelaxis}, "
                  "ffn_{tensorparallelaxis}] = "
                  "InputActivationsWithAVeryLongName[batch_{dataparallelaxis}, hidden] "
                  "WeightMatrixOfTheFirstProjection[hidden, ffn_{tensorparallelaxis}]\n");
    const auto& t = c.plan.statements.at(0).result;
    test::RecordingCanvas rec;
    draw_tiling(rec, {0, 0, 820, 620}, c.plan.mesh, t, default_drawn(t));
    std::string texts;
    for (const auto& x : rec.texts)
        texts += x.text + "\n";
    CHECK_MESSAGE(starting_with(rec, "OutputActivations") == 1, texts);
    bool whole = false;
    for (const auto& x : rec.texts)
        whole = whole || (x.text.rfind("Output", 0) == 0 && x.text.ends_with("   (S(0), S(1))") &&
                          x.text.find("…") != std::string::npos);
    CHECK(whole);
    // The function: the name first, then the indices; the placements kept whole.
    test::RecordingCanvas m;
    const float size = 10, cw = mono_text_width("x", size);
    CHECK(tiling_title(m, "name", "i j", "S(0)", size, 100 * cw) == "name_{i j}   (S(0))");
    CHECK(tiling_title(m, "averyverylongname", "i j", "S(0)", size, 24.5f * cw) ==
          "averyver…_{i j}   (S(0))");
    CHECK(tiling_title(m, "averyverylongname", "iiiiiiiiii jjjjjjjjjj", "S(0)", size, 24.5f * cw) ==
          "a…_{iiiiiiiiii…   (S(0))");
}

TEST_CASE("QA: a tile both copied and partial is not said to hold the same values") {
    const auto c = test::run("mesh 2x2\ndim i=8 k=8\nz_{i}{U_0} = x_{i k_0} y_{k_0}\n");
    const auto& t = c.plan.statements.at(0).result;
    test::RecordingCanvas rec;
    draw_tiling(rec, {0, 0, 800, 600}, c.plan.mesh, t, default_drawn(t));
    CHECK_FALSE(rec.has_text("every listed device holds the whole block"));
    CHECK_FALSE(rec.has_text("replicated over"));
    CHECK(rec.has_text("copies over 1, partial over 0: listed devices differing only along 1 "
                       "hold the same values"));
    for (const auto& x : rec.texts) // the legend line whole, not elided
        if (x.text.rfind("copies over 1, partial over 0", 0) == 0)
            CHECK(x.text.find("…") == std::string::npos);
}

TEST_CASE("QA: a PNG of a large mesh does not say hover") {
    const auto c = test::run("mesh 128\ndim i=1024 j=64\ny_{i_0 j} = x_{i_0 j}\n");
    const auto& t = c.plan.statements.at(0).result;
    test::RecordingCanvas png; // no hover texts: as the PNG's canvas
    draw_tiling(png, {0, 0, 900, 700}, c.plan.mesh, t, default_drawn(t));
    CHECK_FALSE(png.has_text("hover a tile for its devices"));
    CHECK(png.has_text("a tile's devices: hover it in the SVG (-o X.svg)"));
    const auto svg = render_svg(c.plan, View::Tiling, Selection{});
    CHECK(svg.find("hover a tile for its devices") != std::string::npos);
}
