// The tile model (render/tiles.hpp) on layouts from the real checker: holders per tile,
// replication, partial marks, uneven chunks as torch.chunk makes them, groups, 3-D meshes.
#include "render/tiles.hpp"

#include "../semantics/helpers.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

using namespace shardscope;
using namespace shardscope::test;
using render::Drawn;
using render::TileModel;
using semantics::Range;

namespace {

/// The layout of `tensor` in the checked program: the result of the last statement that
/// defines it, else its last occurrence as an operand.
semantics::TensorLayout layout_of(const Checked& c, const std::string& tensor) {
    const semantics::TensorLayout* found = nullptr;
    for (const auto& s : c.plan.statements) {
        for (const auto& o : s.operands)
            if (o.tensor == tensor) found = &o;
        if (s.result.tensor == tensor) found = &s.result;
    }
    REQUIRE_MESSAGE(found != nullptr, ("no tensor " + tensor + "\n" + c.text()));
    return *found;
}

TileModel tiles(const Checked& c, const std::string& tensor, Drawn drawn = {}) {
    return render::tile_model(c.plan.mesh, layout_of(c, tensor), drawn);
}

std::string ranges(const std::vector<Range>& v) {
    std::string out;
    for (const auto& r : v)
        out += (out.empty() ? "" : " ") +
               ("[" + std::to_string(r.begin) + "," + std::to_string(r.end) + ")");
    return out;
}

std::string ids(const std::vector<std::int64_t>& v) {
    std::string out;
    for (auto d : v)
        out += (out.empty() ? "" : ",") + std::to_string(d);
    return "{" + out + "}";
}

/// Every tile's holders of one panel, row by row: "{0} {1} / {2} {3}".
std::string grid(const TileModel& m, int panel = 0) {
    std::string out;
    for (int r = 0; r < m.rows(); ++r) {
        if (r > 0) out += " / ";
        for (int c = 0; c < m.cols(); ++c)
            out += (c > 0 ? " " : "") + ids(m.at(r, c, panel).holders);
    }
    return out;
}

std::vector<int> tiles_of(const TileModel& m, std::int64_t device) {
    const auto* d = m.device(device);
    REQUIRE(d != nullptr);
    return d->tiles;
}

const char* kPlacements2x2 = "mesh 2x2\n"
                             "dim a=4 b=4 k=4\n"
                             "split a -> r c\n"
                             "split b -> r' d\n"
                             "split k -> p q\n"
                             "W^{SS}_{ab} -> W^{SS}_{r_0 c r'_1 d}\n"
                             "G_{(r_0 c) (r'_1 d)} = W_{(r_0 c) (r'_1 d)}\n"
                             "R_{ab} = W_{ab}\n"
                             "Z_{a r'_1 d}{U_0} = X_{a p_0 q} Y_{p_0 q r'_1 d}\n"
                             "H_{(c r_0) b} = W_{(c r_0) b}\n";

} // namespace

TEST_CASE("2x2 mesh, (Shard, Shard): four tiles, four distinct holders") {
    const auto c = run(kPlacements2x2);
    SUBCASE("groups (r_0 c) (r'_1 d): each written dimension cut at its sharded atom") {
        const auto m = tiles(c, "G");
        INFO(c.text());
        REQUIRE(m.row);
        REQUIRE(m.col);
        CHECK(m.row->index == "(r_0 c)");
        CHECK(ranges(m.row->cuts) == "[0,2) [2,4)");
        CHECK(ranges(m.col->cuts) == "[0,2) [2,4)");
        CHECK_FALSE(m.row->folded);
        CHECK(grid(m) == "{0} {1} / {2} {3}");
        CHECK(m.partial.empty());
        CHECK(m.others.empty());
        CHECK(tiles_of(m, 2) == std::vector<int>{2});
        CHECK(m.at(1, 0).rows == Range{2, 4});
        CHECK(m.at(1, 0).cols == Range{0, 2});
    }
    SUBCASE("W_{r_0 c r'_1 d}, rank 4, drawing r and r': four distinct holders") {
        const auto m = tiles(c, "W^{SS}", {0, 2});
        CHECK(m.row->index == "r_0");
        CHECK(m.col->index == "r'_1");
        CHECK(grid(m) == "{0} {1} / {2} {3}");
        REQUIRE(m.others.size() == 2);
        CHECK(m.others[0].index == "c");
        CHECK(m.others[0].shards == 1);
        CHECK(m.others[1].index == "d");
    }
    SUBCASE("W_{r_0 c r'_1 d} by default draws the last two: r' over axis 1, d whole") {
        const auto m = tiles(c, "W^{SS}");
        CHECK(m.row->dim == 2);
        CHECK(m.col->dim == 3);
        CHECK(ranges(m.row->cuts) == "[0,1) [1,2)");
        CHECK(ranges(m.col->cuts) == "[0,2)");
        // Devices along axis 0 differ only in r, an undrawn dimension: one panel per half
        // of r, so that no tile lists devices that hold different blocks.
        REQUIRE(m.panels.size() == 2);
        CHECK(m.panels[0].label == "r[0:1]");
        CHECK(m.panels[1].label == "r[1:2]");
        CHECK(grid(m, 0) == "{0} / {1}");
        CHECK(grid(m, 1) == "{2} / {3}");
        REQUIRE(m.others.size() == 2);
        CHECK(m.others[0].index == "r_0");
        CHECK(m.others[0].shards == 2);
        CHECK(m.others[0].axes == std::vector<std::string>{"0"});
        CHECK(m.others[1].shards == 1);
        CHECK(m.others[1].axes.empty());
    }
}

TEST_CASE("replicated tensors: every device holds every tile") {
    const auto c = run(kPlacements2x2);
    const auto m = tiles(c, "R");
    CHECK(ranges(m.row->cuts) == "[0,4)");
    CHECK(ranges(m.col->cuts) == "[0,4)");
    CHECK(grid(m) == "{0,1,2,3}");
    for (const auto& d : m.devices)
        CHECK(d.tiles == std::vector<int>{0});
    SUBCASE("a mesh of one axis, replicated along it and sharded on the other dimension") {
        const auto c2 = run("mesh 2x2\ndim i=4 j=6\ny_{i j_1} = x_{i j_1}\n");
        const auto m2 = tiles(c2, "y");
        CHECK(grid(m2) == "{0,2} {1,3}");
        CHECK(ranges(m2.col->cuts) == "[0,3) [3,6)");
    }
}

TEST_CASE("partial tensors are marked with their axes and reductions") {
    const auto c = run(kPlacements2x2);
    const auto m = tiles(c, "Z");
    REQUIRE(m.partial.size() == 1);
    CHECK(m.partial[0].axis == 0);
    CHECK(m.partial[0].name == "0");
    CHECK(m.partial[0].reduce == "sum");
    // Z_{a r'_1 d}: r' and d drawn, a listed.
    CHECK(grid(m) == "{0,2} / {1,3}");
    SUBCASE("a partial scalar: one tile, every device") {
        const auto c2 = run("mesh tp=4\ndim i=8\ns{U_{tp}} = a_{i_{tp}} b_{i_{tp}}\n");
        const auto s = tiles(c2, "s");
        CHECK_FALSE(s.row);
        CHECK_FALSE(s.col);
        CHECK(grid(s) == "{0,1,2,3}");
        REQUIRE(s.partial.size() == 1);
        CHECK(s.partial[0].name == "tp");
    }
    SUBCASE("max: the value a max over a sharded index leaves before its all-reduce") {
        const auto c2 = run("mesh 4\ndim i=8 j=8\ny_{i} = max_j(x_{i j_0})\n");
        const semantics::TensorLayout* pmax = nullptr;
        for (const auto& v : stmt(c2, "y").values)
            if (!v.layout.placements.empty() &&
                v.layout.placements[0].kind == semantics::Placement::Kind::Partial)
                pmax = &v.layout;
        REQUIRE_MESSAGE(pmax != nullptr, c2.text());
        const auto s = render::tile_model(c2.plan.mesh, *pmax);
        REQUIRE(s.partial.size() == 1);
        CHECK(s.partial[0].reduce == "max");
        CHECK(grid(s) == "{0,1,2,3}");
    }
}

TEST_CASE("uneven shards follow torch.chunk, and empty shards hold nothing") {
    // torch.chunk(torch.arange(10), 4): sizes 3, 3, 3, 1.
    CHECK(semantics::chunk(10, 4, 3) == Range{9, 10});
    const auto c = run("mesh 4\ndim n=10 m=6\ny_{n_0} = x_{n_0}\nz_{m_0} = x_{m_0}\n");
    const auto y = tiles(c, "y");
    CHECK_FALSE(y.row);
    CHECK(ranges(y.col->cuts) == "[0,3) [3,6) [6,9) [9,10)");
    CHECK(grid(y) == "{0} {1} {2} {3}");
    // torch.chunk(torch.arange(6), 4): three chunks of 2, the fourth device has none.
    const auto z = tiles(c, "z");
    CHECK(ranges(z.col->cuts) == "[0,2) [2,4) [4,6)");
    CHECK(grid(z) == "{0} {1} {2}");
    CHECK(tiles_of(z, 3).empty());
    SUBCASE("nested chunks over two axes: 7 over 2x2") {
        const auto c2 = run("mesh 2x2\ndim n=7\ny_{n_{01}} = x_{n_{01}}\n");
        const auto m = tiles(c2, "y");
        // chunk(7, 2) = 4, 3; chunk(4, 2) = 2, 2; chunk(3, 2) = 2, 1.
        CHECK(ranges(m.col->cuts) == "[0,2) [2,4) [4,6) [6,7)");
        CHECK(grid(m) == "{0} {1} {2} {3}");
    }
}

TEST_CASE("a group whose sharded atom is minor: strided tiles, several per device") {
    const auto c = run(kPlacements2x2);
    const auto m = tiles(c, "H");
    INFO(c.text());
    CHECK(m.row->index == "(c r_0)");
    CHECK_FALSE(m.row->folded);
    CHECK(ranges(m.row->cuts) == "[0,1) [1,2) [2,3) [3,4)");
    CHECK(grid(m) == "{0,1} / {2,3} / {0,1} / {2,3}");
    CHECK(tiles_of(m, 0) == std::vector<int>{0, 2});
    CHECK(tiles_of(m, 3) == std::vector<int>{1, 3});
    SUBCASE("too many pieces: folded into shard coordinates") {
        const auto c2 = run("mesh 2\ndim c=1024 r=4 b=3\nH_{(c r_0) b} = W_{(c r_0) b}\n");
        const auto f = tiles(c2, "H");
        CHECK(f.row->folded);
        CHECK(f.row->folded_atoms == std::vector<std::string>{"c"});
        CHECK(ranges(f.row->cuts) == "[0,2048) [2048,4096)");
        CHECK(grid(f) == "{0} / {1}");
    }
    SUBCASE("a minor atom over an axis of size 1 does not cut") {
        const auto c2 = run("mesh 1x2\ndim c=3 r=4\nH_{(c r_0) b_1} = W_{(c r_0) b_1}\n");
        const auto f = tiles(c2, "H");
        CHECK(ranges(f.row->cuts) == "[0,12)");
    }
}

TEST_CASE("3-D mesh with a device list: holders are device ids, not positions") {
    const auto c = run("mesh 2x2x2 devices [7 6 5 4 3 2 1 0]\ndim i=8 j=8 k=2\n"
                       "y_{i_0 j_{12} k} = x_{i_0 j_{12} k}\n");
    SUBCASE("drawing i and j: eight tiles, one holder each") {
        const auto m = tiles(c, "y", {0, 1});
        CHECK(ranges(m.row->cuts) == "[0,4) [4,8)");
        CHECK(ranges(m.col->cuts) == "[0,2) [2,4) [4,6) [6,8)");
        CHECK(grid(m) == "{7} {6} {5} {4} / {3} {2} {1} {0}");
        CHECK(m.others.size() == 1);
        CHECK(m.others[0].index == "k");
        const auto* d = m.device(5);
        REQUIRE(d != nullptr);
        CHECK(d->coords == std::vector<int>{0, 1, 0});
        CHECK(d->tiles == std::vector<int>{2});
    }
    SUBCASE("by default j and k: the devices along axis 0 share a tile") {
        const auto m = tiles(c, "y");
        REQUIRE(m.panels.size() == 2);
        CHECK(m.panels[0].label == "i[0:4]");
        CHECK(grid(m, 0) == "{7} / {6} / {5} / {4}");
        CHECK(grid(m, 1) == "{3} / {2} / {1} / {0}");
        REQUIRE(m.others.size() == 1);
        CHECK(m.others[0].index == "i_0");
        CHECK(m.others[0].shards == 2);
        CHECK(m.col->index == "k");
    }
}

TEST_CASE("dimensions to draw: defaults by rank, errors") {
    const auto c = run(kPlacements2x2);
    const auto w = layout_of(c, "W^{SS}");
    CHECK_THROWS_AS(render::tile_model(c.plan.mesh, w, {1, 1}), std::invalid_argument);
    CHECK_THROWS_AS(render::tile_model(c.plan.mesh, w, {0, 4}), std::invalid_argument);
    CHECK_THROWS_AS(render::tile_model(c.plan.mesh, w, {0, -1}), std::invalid_argument);
    const auto m = render::tile_model(c.plan.mesh, w, {3, 0});
    CHECK(m.row->dim == 3);
    CHECK(m.col->dim == 0);
    const auto c1 = run("mesh 2\ndim i=4\ny_{i_0} = x_{i_0}\n");
    CHECK_THROWS_AS(render::tile_model(c1.plan.mesh, layout_of(c1, "y"), {0, 1}),
                    std::invalid_argument);
    // A layout for another mesh.
    semantics::Mesh one;
    one.axes = {{"0", 4}};
    CHECK_THROWS_AS(render::tile_model(one, w), std::invalid_argument);
    // Too many devices to list.
    const auto big = run("mesh 256x512\ndim i=512\ny_{i_1} = x_{i_1}\n");
    CHECK_THROWS_AS(render::tile_model(big.plan.mesh, layout_of(big, "y")), std::invalid_argument);
}

TEST_CASE("a sharded dimension that is not drawn: one panel per slice, distinct holders") {
    // Issue 16: drawn as rows b and columns s, h's tiles once listed d0 and d2 together
    // although they hold different halves of f; a truly replicated z drew the same picture.
    const auto c = run("mesh dp=2 tp=2 sp=2\ndim b=8 s=4096 d=64 f=8192\n"
                       "h_{b_{dp} s_{sp} f_{tp}} = x_{b_{dp} s_{sp} d} W_{d f_{tp}}\n"
                       "z_{b_{dp} s_{sp} d} = x_{b_{dp} s_{sp} d}\n");
    const auto h = tiles(c, "h", {0, 1});
    REQUIRE(h.panels.size() == 2);
    CHECK(h.panels[0].label == "f[0:4096]");
    CHECK(h.panels[1].label == "f[4096:8192]");
    CHECK(h.tiles.size() == 8);
    // Mesh dp=2 tp=2 sp=2: device = 4 dp + 2 tp + sp; tp picks the panel.
    CHECK(grid(h, 0) == "{0} {1} / {4} {5}");
    CHECK(grid(h, 1) == "{2} {3} / {6} {7}");
    for (const auto& t : h.tiles)
        CHECK(render::replicated_axes(h, t).empty());
    const auto* d2 = h.device(2);
    REQUIRE(d2 != nullptr);
    REQUIRE(d2->tiles.size() == 1);
    CHECK(h.tiles[static_cast<std::size_t>(d2->tiles[0])].panel == 1);

    // z is replicated over tp: one panel, two holders per tile, replicated over tp.
    const auto z = tiles(c, "z", {0, 1});
    CHECK(z.panels.size() == 1);
    CHECK(z.panels[0].label.empty());
    CHECK(grid(z) == "{0,2} {1,3} / {4,6} {5,7}");
    CHECK(render::replicated_axes(z, z.at(0, 0)) == std::vector<int>{1});
}

TEST_CASE("a replicated result is one tile with every holder; a scalar is one tile") {
    const auto c = run("mesh X=4\ndim I=1024 J=4096 K=1024\n"
                       "Cfull[I, K] = A[I, J_X] B[J_X, K]\n"
                       "z_{} = A[I, J_X] A[I, J_X]\n");
    const auto m = tiles(c, "Cfull");
    REQUIRE(m.tiles.size() == 1);
    CHECK(ids(m.tiles[0].holders) == "{0,1,2,3}");
    CHECK(render::replicated_axes(m, m.tiles[0]) == std::vector<int>{0});
    const auto z = tiles(c, "z");
    REQUIRE(z.tiles.size() == 1);
    CHECK(z.tiles[0].holders.size() == 4);
}

namespace {
std::string joined(const std::vector<std::string>& v) {
    std::string out;
    for (const auto& s : v)
        out += "[" + s + "]";
    return out;
}
} // namespace

TEST_CASE("QA: a layout's indices carry the mesh axes of its own atoms, not the text's") {
    // y is read as y_{i j_0} by the second statement, but the planner keeps it S(0) along i
    // until its all-to-all: the value's text says j_0, its atoms say i over axis 0.
    const auto c = run("mesh 4\ndim i=8 j=8\ny_{i_0 j} = x_{i_0 j}\nz_{i j_0} = y_{i j_0}\n");
    const auto& s = c.plan.statements.at(1);
    bool found = false;
    for (const auto& v : s.values) {
        if (v.load != "y") continue;
        found = true;
        CHECK(v.layout.placements.at(0).text() == "S(0)");
        CHECK(render::layout_indices(c.plan.mesh, v.layout) ==
              std::vector<std::string>{"i_0", "j"});
        const auto m = render::tile_model(c.plan.mesh, v.layout);
        CHECK(m.indices == std::vector<std::string>{"i_0", "j"});
        REQUIRE(m.row);
        REQUIRE(m.col);
        CHECK(m.row->index == "i_0");
        CHECK(m.col->index == "j");
    }
    CHECK(found);
    // Several axes, named axes, groups: written as the parser reads them.
    const auto g = run("mesh dp=2 tp=2\ndim b=8 f=8\ng_{b_{dp,tp} f} = u_{b_{dp,tp} f}\n"
                       "h_{b f_{tp}} = v_{b f_{tp}}\n");
    REQUIRE_MESSAGE(g.plan.statements.size() == 2, g.text());
    // As the checker writes them (one axis `_tp`, several `_{dp,tp}`).
    CHECK(render::layout_indices(g.plan.mesh, g.plan.statements.at(0).result) ==
          std::vector<std::string>{"b_{dp,tp}", "f"});
    CHECK(joined(render::layout_indices(g.plan.mesh, g.plan.statements.at(1).result)) ==
          "[b][f_tp]");
    // Rewritten where they do not: the operand g read as h_{b f_tp}'s layout would say.
    auto moved = g.plan.statements.at(1).result;
    moved.atoms[0].axes = {0, 1};
    moved.atoms[1].axes = {};
    CHECK(render::layout_indices(g.plan.mesh, moved) == std::vector<std::string>{"b_{dp,tp}", "f"});
    moved.atoms[0].axes = {1};
    CHECK(render::layout_indices(g.plan.mesh, moved) == std::vector<std::string>{"b_tp", "f"});
    const auto p = run(kPlacements2x2);
    CHECK(render::layout_indices(p.plan.mesh, layout_of(p, "G")) ==
          std::vector<std::string>{"(r_0 c)", "(r'_1 d)"});
    const auto two = run("mesh 2x2\ndim i=8 j=8\nx_{i_0 j} -> x_{i j_{01}}\n");
    CHECK(joined(render::layout_indices(two.plan.mesh, two.plan.statements.at(0).result)) ==
          "[i][j_{0,1}]");
}

TEST_CASE("QA: partial marks by reduce op") {
    CHECK(render::partial_mark({}).empty());
    CHECK(render::partial_mark({{0, "0", "sum"}}) == "Σ");
    CHECK(render::partial_mark({{0, "0", "max"}}) == "max");
    CHECK(render::partial_mark({{0, "0", "sum"}, {1, "1", "max"}}) == "Σ/max");
    CHECK(render::partial_whole({{0, "0", "max"}}) == "max");
    CHECK(render::partial_whole({{0, "0", "sum"}}) == "sum");
}
