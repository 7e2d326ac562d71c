// semantics/rules/contraction_order: the greedy pair order of a product of several operands
// and its FLOPs, against orders and costs computed by hand.
#include "semantics/rules/contraction_order.hpp"

#include <doctest/doctest.h>

#include <random>
#include <string>
#include <utility>
#include <vector>

using namespace shardscope::semantics;

namespace {

/// One operand's indices, one letter each: "ij" is {i, j}.
FlatSet<IndexId> set_of(const std::string& letters) {
    FlatSet<IndexId> s;
    for (char c : letters)
        s.insert(IndexId{std::string(1, c), 0});
    return s;
}

std::vector<FlatSet<IndexId>> operands_of(const std::vector<std::string>& ops) {
    std::vector<FlatSet<IndexId>> out;
    for (const auto& o : ops)
        out.push_back(set_of(o));
    return out;
}

FlatMap<IndexId, double> extents_of(const std::vector<std::pair<char, double>>& es) {
    FlatMap<IndexId, double> out;
    for (const auto& [c, e] : es)
        out[IndexId{std::string(1, c), 0}] = e;
    return out;
}

using Pairs = std::vector<std::pair<std::size_t, std::size_t>>;

} // namespace

TEST_CASE("contraction order: a chain contracts its cheap end first") {
    // A_ij B_jk C_kl -> il, i=10 j=100 k=2 l=50. Pairs: AB {ijk} 2*10*100*2 = 4000,
    // AC {ijkl} 200000, BC {jkl} 20000: AB first; it keeps i (output) and k (C), drops j.
    // Then {ik} with {kl}: 2*10*2*50 = 2000. Total 6000.
    const auto r =
        contraction_order(operands_of({"ij", "jk", "kl"}),
                          extents_of({{'i', 10}, {'j', 100}, {'k', 2}, {'l', 50}}), set_of("il"));
    CHECK(r.pairs == Pairs{{0, 1}, {0, 1}});
    CHECK(r.flops == 6000);
}

TEST_CASE("contraction order: the other end when it is cheaper") {
    // i=100 j=100 k=2 l=1: AB 2*100*100*2 = 40000, AC 40000, BC {jkl} 2*100*2*1 = 400.
    // BC first (positions 1, 2); it keeps j (A) and l (output), drops k. Then A {ij} with
    // {jl}: 2*100*100*1 = 20000. Total 20400.
    const auto r =
        contraction_order(operands_of({"ij", "jk", "kl"}),
                          extents_of({{'i', 100}, {'j', 100}, {'k', 2}, {'l', 1}}), set_of("il"));
    CHECK(r.pairs == Pairs{{1, 2}, {0, 1}});
    CHECK(r.flops == 20400);
}

TEST_CASE("contraction order: ties go to the earliest pair") {
    SUBCASE("every pair costs the same: (0, 1) first") {
        // A_i B_i C_i -> (), i=4: every pair costs 2*4 = 8; AB first keeps i (C needs it).
        const auto r =
            contraction_order(operands_of({"i", "i", "i"}), extents_of({{'i', 4}}), set_of(""));
        CHECK(r.pairs == Pairs{{0, 1}, {0, 1}});
        CHECK(r.flops == 16);
    }
    SUBCASE("two cheapest pairs: the smaller first position wins") {
        // A_x B_y C (a scalar) -> xy, x=y=3: AB {xy} 18, AC {x} 6, BC {y} 6: AC (0, 2) before
        // BC (1, 2). AC keeps x (output); then {x} with B {y}: 18. Total 24.
        const auto r = contraction_order(operands_of({"x", "y", ""}),
                                         extents_of({{'x', 3}, {'y', 3}}), set_of("xy"));
        CHECK(r.pairs == Pairs{{0, 2}, {0, 1}});
        CHECK(r.flops == 24);
    }
    SUBCASE("a tie after a merge, among recomputed and kept costs") {
        // A_ab B_bc C_cd D_de -> ae, a=b=e=10, c=d=1. Pairs: AB 200, AC 200, AD 2000, BC 20,
        // BD 200, CD 20: BC and CD tie at 20, BC (1, 2) first; it keeps b (A) and d (D).
        // Now A {ab}, BC {bd}, D {de}: A-BC {abd} 200, A-D 2000, BC-D {bde} 200: the tie goes
        // to (0, 1), which keeps a (output) and d (D). Last: {ad} with {de}: 200. Total 420.
        const auto r = contraction_order(
            operands_of({"ab", "bc", "cd", "de"}),
            extents_of({{'a', 10}, {'b', 10}, {'c', 1}, {'d', 1}, {'e', 10}}), set_of("ae"));
        CHECK(r.pairs == Pairs{{1, 2}, {0, 1}, {0, 1}});
        CHECK(r.flops == 420);
    }
}

TEST_CASE("contraction order: four operands, the merged operand re-priced") {
    // A_ab B_bc C_cd D_de -> ae, a=2 b=3 c=5 d=7 e=11. AB {abc} 60 is the cheapest (BC 210,
    // CD 770, AC 420, AD 924, BD 2310); AB keeps a, c. Then {ac}-C {acd} 140, {ac}-D {acde}
    // 1540, C-D {cde} 770: (0, 1), keeping a, d. Last {ad}-{de}: 2*2*7*11 = 308. Total 508.
    const auto r = contraction_order(
        operands_of({"ab", "bc", "cd", "de"}),
        extents_of({{'a', 2}, {'b', 3}, {'c', 5}, {'d', 7}, {'e', 11}}), set_of("ae"));
    CHECK(r.pairs == Pairs{{0, 1}, {0, 1}, {0, 1}});
    CHECK(r.flops == 508);
}

TEST_CASE("contraction order: fewer than two operands contract nothing") {
    const auto one =
        contraction_order(operands_of({"ij"}), extents_of({{'i', 2}, {'j', 3}}), set_of("ij"));
    CHECK(one.pairs.empty());
    CHECK(one.flops == 0);
    const auto none = contraction_order({}, {}, {});
    CHECK(none.pairs.empty());
    CHECK(none.flops == 0);
}

TEST_CASE("contraction order: two operands are one pair over the union of their indices") {
    // A_ij B_jk -> ik, i=2 j=3 k=4: 2*2*3*4 = 48, whatever the output keeps.
    const auto r = contraction_order(operands_of({"ij", "jk"}),
                                     extents_of({{'i', 2}, {'j', 3}, {'k', 4}}), set_of("ik"));
    CHECK(r.pairs == Pairs{{0, 1}});
    CHECK(r.flops == 48);
}

TEST_CASE("contraction order: a product of more than 512 operands is contracted left to right") {
    // A chain of matrices A_{ab} B_{bc} C_{ca} A_{ab} ... (1000 of them, output empty): left to
    // right, each pair is the running result (the two indices still needed) times the next
    // matrix. Cubic in time, the greedy search took seconds at 1600 operands.
    const std::vector<std::string> cycle = {"ab", "bc", "ca"};
    std::vector<std::string> names;
    for (int k = 0; k < 1000; ++k)
        names.push_back(cycle[static_cast<std::size_t>(k % 3)]);
    const auto r = contraction_order(operands_of(names), extents_of({{'a', 2}, {'b', 3}, {'c', 5}}),
                                     set_of(""));
    REQUIRE(r.pairs.size() == 999);
    for (const auto& p : r.pairs)
        CHECK(p == std::pair<std::size_t, std::size_t>{0, 1});
    // Every index is needed again until the end, so the running result keeps all three and
    // each pair costs 2 * 2*3*5; the last operand is `ab` (999 % 3 == 0) and after the `ca`
    // before it only a and b are left: the last pair costs 2 * 2*3.
    CHECK(r.flops == doctest::Approx(998 * 2 * 2 * 3 * 5 + 2 * 2 * 3));
    // At the bound the greedy order still runs: a product of 512 is ordered by cost.
    names.resize(512);
    const auto g = contraction_order(operands_of(names), extents_of({{'a', 2}, {'b', 3}, {'c', 5}}),
                                     set_of(""));
    CHECK(g.pairs.size() == 511);
}

TEST_CASE("contraction order: the bit-mask path gives the reference's pairs and FLOPs") {
    // contraction_order over at most 64 indices keeps each operand as a bit mask and each
    // position's cheapest partner; contraction_order_by_sets rescans every pair at each step.
    // Random products, including equal costs (small extents) and indices shared by many.
    std::mt19937 rng(7);
    for (int trial = 0; trial < 400; ++trial) {
        const int letters = 2 + trial % 10;
        const int count = 2 + static_cast<int>(rng() % (trial < 300 ? 9 : 60));
        std::vector<std::string> ops;
        for (int o = 0; o < count; ++o) {
            std::string s;
            for (int c = 0; c < letters; ++c)
                if (rng() % 3 == 0) s += static_cast<char>('a' + c);
            ops.push_back(s);
        }
        std::vector<std::pair<char, double>> es;
        for (int c = 0; c < letters; ++c)
            es.emplace_back(static_cast<char>('a' + c), 1 + static_cast<double>(rng() % 4));
        std::string output;
        for (int c = 0; c < letters; ++c)
            if (rng() % 4 == 0) output += static_cast<char>('a' + c);
        const auto fast = contraction_order(operands_of(ops), extents_of(es), set_of(output));
        const auto reference =
            contraction_order_by_sets(operands_of(ops), extents_of(es), set_of(output));
        CAPTURE(trial);
        CHECK(fast.pairs == reference.pairs);
        CHECK(fast.flops == reference.flops);
    }
}

TEST_CASE("contraction order: hundreds of operands over few indices in well under a second") {
    // The gradient of a product of N factors has N statements of N - 1 factors each: the
    // greedy order was cubic per statement (grad of 400 factors took 15 s).
    std::vector<std::string> ops(500, "ab");
    const auto r =
        contraction_order(operands_of(ops), extents_of({{'a', 4}, {'b', 4}}), set_of("ab"));
    CHECK(r.pairs.size() == 499);
    CHECK(r.flops == 499 * 2 * 16);
}
