// The terminal drawing of the tile model (render/text_tiles.hpp): golden pictures.
#include "render/text_tiles.hpp"

#include "../semantics/helpers.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace shardscope;
using namespace shardscope::test;

namespace {

std::string draw(const std::string& program, const std::string& tensor, render::Drawn drawn = {},
                 render::TextTileOptions o = {}) {
    const auto c = run(program);
    const semantics::TensorLayout* found = nullptr;
    for (const auto& s : c.plan.statements) {
        for (const auto& op : s.operands)
            if (op.tensor == tensor) found = &op;
        if (s.result.tensor == tensor) found = &s.result;
    }
    REQUIRE_MESSAGE(found != nullptr, c.text());
    return render::draw_tiles(render::tile_model(c.plan.mesh, *found, drawn), o);
}

} // namespace

TEST_CASE("2x2 (Shard, Shard): one device per box, a colour per device on a terminal") {
    const std::string program = "mesh 2x2\ndim a=4 b=4\nG_{a_0 b_1} = W_{a_0 b_1}\n";
    CHECK(draw(program, "G") == R"(G [a_0 b_1]  4×4  (S(0), S(1))
rows: a_0 (4, 2 tiles)
columns: b_1 (4, 2 tiles)
      0:2   2:4
    ┌─────┬─────┐
    │     │     │
0:2 │  0  │  1  │
    │     │     │
    ├─────┼─────┤
    │     │     │
2:4 │  2  │  3  │
    │     │     │
    └─────┴─────┘
)");
    const auto coloured = draw(program, "G", {}, {true});
    CHECK(coloured.find("\033[30;48;5;153m  0  \033[0m") != std::string::npos);
    CHECK(coloured.find("\033[30;48;5;223m  3  \033[0m") != std::string::npos);
}

TEST_CASE("3-D mesh: replicas along an undrawn dimension, and the two chosen dimensions") {
    const std::string program =
        "mesh 2x2x2\ndim i=8 j=8 k=2\ny_{i_0 j_{12} k} = x_{i_0 j_{12} k}\n";
    CHECK(draw(program, "y") == R"(y [i_0 j_{1,2} k]  8×8×2  (S(0), S(1), S(1))
rows: j_{1,2} (8, 4 tiles)
columns: k (2, 1 tile)
not drawn: i_0 (8, 2 shards over mesh axis 0)
one grid per slice of i (each device holds one slice)
slice 1 of 2: i[0:4]
      0:2
    ┌─────┐
0:2 │  0  │
    ├─────┤
2:4 │  1  │
    ├─────┤
4:6 │  2  │
    ├─────┤
6:8 │  3  │
    └─────┘
slice 2 of 2: i[4:8]
      0:2
    ┌─────┐
0:2 │  4  │
    ├─────┤
2:4 │  5  │
    ├─────┤
4:6 │  6  │
    ├─────┤
6:8 │  7  │
    └─────┘
)");
    CHECK(draw(program, "y", {0, 1}) == R"(y [i_0 j_{1,2} k]  8×8×2  (S(0), S(1), S(1))
rows: i_0 (8, 2 tiles)
columns: j_{1,2} (8, 4 tiles)
not drawn: k (2, whole)
      0:2   2:4   4:6   6:8
    ┌─────┬─────┬─────┬─────┐
    │     │     │     │     │
0:4 │  0  │  1  │  2  │  3  │
    │     │     │     │     │
    ├─────┼─────┼─────┼─────┤
    │     │     │     │     │
4:8 │  4  │  5  │  6  │  7  │
    │     │     │     │     │
    └─────┴─────┴─────┴─────┘
)");
}

TEST_CASE("rank 1 with an empty shard, a partial scalar") {
    CHECK(draw("mesh 4\ndim n=6\ny_{n_0} = x_{n_0}\n", "y") == R"(y [n_0]  6  (S(0))
columns: n_0 (6, 3 tiles)
  0:2   2:4   4:6
┌─────┬─────┬─────┐
│     │     │     │
│  0  │  1  │  2  │
│     │     │     │
└─────┴─────┴─────┘
device 3 holds nothing: torch.chunk leaves its shard empty
)");
    CHECK(draw("mesh tp=4\ndim i=8\ns{U_{tp}} = a_{i_{tp}} b_{i_{tp}}\n", "s") ==
          R"(s []  scalar  (P(sum))
partial over mesh axis tp (sum): each holder has a part still to be summed, marked Σ
┌───────┐
│       │
│ 0-3 Σ │
│       │
└───────┘
)");
}

TEST_CASE("too many tiles for the width: the middle columns are elided") {
    CHECK(draw("mesh 64\ndim n=64 m=4\ny_{m n_0} = x_{m n_0}\n", "y") == R"(y [m n_0]  4×64  (S(1))
rows: m (4, 1 tile)
columns: n_0 (64, 64 tiles)
       0:1     1:2     2:3     3:4     4:5     5:6     6:7      ⋯     63:64
    ┌───────┬───────┬───────┬───────┬───────┬───────┬───────┬───────┬───────┐
    │       │       │       │       │       │       │       │       │       │
0:4 │   0   │   1   │   2   │   3   │   4   │   5   │   6   │   ⋯   │  63   │
    │       │       │       │       │       │       │       │       │       │
    └───────┴───────┴───────┴───────┴───────┴───────┴───────┴───────┴───────┘
)");
}

TEST_CASE("a folded group says so") {
    const auto text = draw("mesh 2\ndim c=1024 r=4 b=3\nH_{(c r_0) b} = W_{(c r_0) b}\n", "H");
    CHECK(text.find("(c r_0) is folded: its shards are strided; c left out") != std::string::npos);
    CHECK(text.find("   0:2048 │  0  │") != std::string::npos);
}

TEST_CASE("holder labels: runs of three or more as ranges") {
    CHECK(render::holders_label({0}) == "0");
    CHECK(render::holders_label({0, 2}) == "0,2");
    CHECK(render::holders_label({0, 1}) == "0,1");
    CHECK(render::holders_label({0, 1, 2, 3, 6, 8, 9, 10}) == "0-3,6,8-10");
    CHECK(render::holders_label({}) == "-");
}

TEST_CASE("issue 16: :viz draws a sharded undrawn dimension as one grid per slice") {
    const std::string program = "mesh dp=2 tp=2 sp=2\ndim b=8 s=4096 d=64 f=8192\n"
                                "h_{b_{dp} s_{sp} f_{tp}} = x_{b_{dp} s_{sp} d} W_{d f_{tp}}\n"
                                "z_{b_{dp} s_{sp} d} = x_{b_{dp} s_{sp} d}\n";
    const auto h = draw(program, "h", {0, 1});
    CHECK(h.find("one grid per slice of f (each device holds one slice)\n") != std::string::npos);
    CHECK(h.find("slice 1 of 2: f[0:4096]\n") != std::string::npos);
    CHECK(h.find("slice 2 of 2: f[4096:8192]\n") != std::string::npos);
    CHECK(h.find("│     0     │     1     │") != std::string::npos);
    CHECK(h.find("│     2     │     3     │") != std::string::npos);
    CHECK(h.find("0,2") == std::string::npos); // no tile lists devices holding different blocks
    CHECK(h.find("replicated") == std::string::npos);
    // z is replicated over tp: one grid, two devices a box, and said so.
    const auto z = draw(program, "z", {0, 1});
    CHECK(z.find("slice") == std::string::npos);
    CHECK(z.find("│    0,2    │    1,3    │") != std::string::npos);
    CHECK(z.find("replicated over mesh axis tp: every device of a box holds the same block\n") !=
          std::string::npos);
}

TEST_CASE("QA: :viz of a tensor partial over one axis and replicated over the other") {
    // z holds a part of the sum over axis 0 on each device: d0 and d1 (axis 1) are copies,
    // d0 and d2 (axis 0) are not; the line must not say every device of a box holds the same.
    const auto z = draw("mesh 2x2\ndim i=8 k=8\nz_{i}{U_0} = x_{i k_0} y_{k_0}\n", "z", {-1, 0});
    CHECK(z.find("every device of a box holds the same block") == std::string::npos);
    CHECK(z.find("copies over mesh axis 1: devices of a box that differ only along 1 hold the "
                 "same values") != std::string::npos);
}
