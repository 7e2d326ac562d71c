// semantics/rules/collectives.cpp: collectives written by hand (AllReduce, AllGather,
// ReduceScatter as functions; NOTATION.md sections 4 and 8).
#include "rule_helpers.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace shardscope;
using namespace shardscope::test;
using semantics::CheckOptions;
using semantics::StepKind;

TEST_CASE("AllGather over both axes of an index sharded over two (found by tests/diff)") {
    // It was refused: gathering over axis 0 gathers the minor axis 1 too, and the second
    // target then found nothing sharded on axis 1 (S124).
    const auto c = run("mesh 2x2\ndim i=8\nz_{i} = AllGather_{i_{01}}(x_{i_{01}})\n"
                       "w_{i} = AllGather_{i_{10}}(x_{i_{01}})\n");
    REQUIRE_MESSAGE(c.plan.errors() == 0, c.text());
    // Written over both axes in the index's order: one all-gather over the group (issue 19);
    // in the other order: per axis, minor-most first.
    CHECK_MESSAGE(cols(c, c.plan.statements.at(0)) == "all-gather(0,1)", c.text());
    CHECK_MESSAGE(cols(c, c.plan.statements.at(1)) == "all-gather(1), all-gather(0)", c.text());
    // An axis the value is not sharded on is still an error.
    const auto bad = run("mesh 2x2\ndim i=8\nz_{i} = AllGather_{i_{01}}(x_{i_0})\n");
    CHECK_MESSAGE(bad.plan.errors() == 1, bad.text());
}

TEST_CASE("Permute_{i_k}: one step round the ring of the axes i is sharded over") {
    SUBCASE("one axis: each device sends its whole block to the next, one block of the index") {
        const auto c =
            run("mesh 4\ndim u=16 d=8 s=1024\nK_{r_0 u d} := Permute_{r_0}(K_{r_0 u d})\n"
                "L_{s_0 d} = Permute_{s_0}(x_{s_0 d})\n");
        REQUIRE_MESSAGE(c.plan.errors() == 0, c.text());
        for (std::size_t i = 0; i < 2; ++i) {
            const auto& sp = c.plan.statements.at(i);
            CHECK_MESSAGE(cols(c, sp) == "permute(0)", c.text());
            REQUIRE(count_steps(sp, StepKind::Permute) == 1);
            const auto& st = *std::find_if(sp.steps.begin(), sp.steps.end(), [](const auto& s) {
                return s.kind == StepKind::Permute;
            });
            const std::vector<std::pair<std::int64_t, std::int64_t>> ring{
                {0, 1}, {1, 2}, {2, 3}, {3, 0}};
            CHECK(st.pairs == ring);
            CHECK(st.mesh_axes == std::vector<int>{0});
            // r is a device index (range 4): one position; s (1024): 256 positions.
            CHECK(st.shift == (i == 0 ? 1 : 256));
            CHECK(st.from_index.name == (i == 0 ? "r" : "s"));
            // The whole local block: 16 x 8 f32 of K, 256 x 8 of x.
            CHECK(st.cost.bytes_per_device == doctest::Approx(i == 0 ? 16 * 8 * 4 : 256 * 8 * 4));
            CHECK(st.cost.time_s > 0);
            // The layout does not change: the value moves one block along the ring.
            CHECK(sp.result.placements == sp.operands.at(0).placements);
        }
    }
    SUBCASE("a ring over two axes, major first, under an explicit device order") {
        const auto c = run("mesh 2x2 devices [3 1 2 0]\ndim i=8 j=4\n"
                           "y_{i_{01} j} = Permute_{i_{01}}(x_{i_{01} j})\n");
        REQUIRE_MESSAGE(c.plan.errors() == 0, c.text());
        const auto& st = c.plan.statements.at(0).steps.back();
        REQUIRE(st.kind == StepKind::Permute);
        // Positions 0 -> 1 -> 2 -> 3 -> 0, named by the device order.
        const std::vector<std::pair<std::int64_t, std::int64_t>> ring{
            {0, 3}, {1, 2}, {2, 0}, {3, 1}};
        CHECK(st.pairs == ring);
        CHECK(st.mesh_axes == std::vector<int>{0, 1});
        CHECK(st.shift == 2);
        CHECK_MESSAGE(cols(c, c.plan.statements.at(0)) == "permute(0,1)", c.text());
    }
    SUBCASE("a ring over the minor axis of a 2-D mesh: four rings of two at once") {
        const auto c = run("mesh 4x2\ndim i=8 j=4\ny_{i_0 j_1} = Permute_{j_1}(x_{i_0 j_1})\n");
        REQUIRE_MESSAGE(c.plan.errors() == 0, c.text());
        const auto& st = c.plan.statements.at(0).steps.back();
        const std::vector<std::pair<std::int64_t, std::int64_t>> ring{
            {0, 1}, {1, 0}, {2, 3}, {3, 2}, {4, 5}, {5, 4}, {6, 7}, {7, 6}};
        CHECK(st.pairs == ring);
        CHECK(st.shift == 2);
    }
    SUBCASE("an axis of one device: nothing moves") {
        const auto c = run("mesh 1x4\ndim i=8\ny_{i_0} = Permute_{i_0}(x_{i_0})\n");
        REQUIRE_MESSAGE(c.plan.errors() == 0, c.text());
        CHECK_MESSAGE(cols(c, c.plan.statements.at(0)) == "none", c.text());
    }
    SUBCASE("refused: no axes, an index not sharded over exactly the ring, partial, uneven") {
        auto expect_error = [](const std::string& src, const std::string& code,
                               const std::string& words) {
            const auto c = run(src);
            CHECK_MESSAGE(count_code(c.plan, code) == 1, c.text());
            bool named = false;
            for (const auto& d : c.plan.diagnostics)
                named = named || d.message.find(words) != std::string::npos;
            CHECK_MESSAGE(named, words << "\n" << c.text());
        };
        expect_error("mesh 4\ndim i=8\ny_{i_0} = Permute_{i}(x_{i_0})\n", "S123",
                     "the mesh axes of its ring");
        expect_error("mesh 4\ndim i=8 j=8\ny_{i_0 j} = Permute_{j_0}(x_{i_0 j})\n", "S124",
                     "j is not sharded");
        expect_error("mesh 2x2\ndim i=8\ny_{i_{01}} = Permute_{i_0}(x_{i_{01}})\n", "S124",
                     "sharded over axis 0, axis 1");
        expect_error("mesh 2x2\ndim i=8 j=8\ny_{i_0 j}{U_1} = Permute_{i_0}(x_{i_0 j}{U_1})\n",
                     "S124", "partial");
        expect_error("mesh 4\ndim i=10\ny_{i_0} = Permute_{i_0}(x_{i_0})\n", "S124",
                     "does not divide into 4 equal blocks");
        expect_error("mesh 4\ndim i=8\ny_{i_0} = Permute_{i_7}(x_{i_0})\n", "S102", "unknown");
    }
    SUBCASE("AllToAll stays refused as a function (S125)") {
        const auto c = run("mesh 4\ndim i=8 j=8\ny_{i j_0} = AllToAll_{j_0}(x_{i_0 j})\n");
        CHECK_MESSAGE(count_code(c.plan, "S125") == 1, c.text());
    }
}
