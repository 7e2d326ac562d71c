// The checker on `repeat l=N` ... `end` (issue 18): the body is planned once, each of its
// statement plans runs N times per program step (StatementPlan::repeat), Plan::repeats lists
// the blocks with their per-layer parameters, and what cannot run layer after layer as the
// one checked layer is an error.
#include "helpers.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

using namespace shardscope;
using shardscope::test::check_text;
using shardscope::test::codes;
using shardscope::test::plan_text;

namespace {

const char* kLayers = "mesh 2\n"
                      "dim b=4 d=8 e=16\n"
                      "y_{bd} = x_{bd}\n"
                      "repeat l=24\n"
                      "  a_{bd} = y_{bd}\n"
                      "  u_{b e_0} = a_{bd} W_{d e_0}\n"
                      "  o_{bd} = relu(u_{b e_0}) U_{e_0 d}\n"
                      "  expect all-reduce(0)\n"
                      "  y_{bd} := a_{bd} + o_{bd}\n"
                      "end\n"
                      "z_{b} = sum_{d}(y_{bd})\n";

bool has(const std::vector<std::string>& v, const std::string& x) {
    return std::find(v.begin(), v.end(), x) != v.end();
}

} // namespace

TEST_CASE("repeat: the body is planned once; its statements run count times per step") {
    const auto plan = check_text(kLayers);
    INFO(plan_text(kLayers, plan));
    CHECK(plan.errors() == 0);
    REQUIRE(plan.statements.size() == 6);
    const std::vector<std::int64_t> want = {1, 24, 24, 24, 24, 1};
    for (std::size_t i = 0; i < want.size(); ++i)
        CHECK(plan.statements[i].repeat == want[i]);
    REQUIRE(plan.repeats.size() == 1);
    const auto& b = plan.repeats[0];
    CHECK(b.index == "l");
    CHECK(b.count == 24);
    CHECK_FALSE(b.reverse);
    CHECK(b.first == 1);
    CHECK(b.last == 5);
    CHECK(b.range.line == 4);
    // Read in the body and defined nowhere: per-layer parameters (x is read before it).
    CHECK(b.parameters == std::vector<std::string>{"U", "W"});
    CHECK(b.defines == std::vector<std::string>{"a", "o", "u", "y"});
    // The plans are one layer's: the all-reduce of the row-parallel product, as written.
    CHECK(semantics::collectives_of(plan.mesh, plan.statements[3]) ==
          std::vector<std::string>{"all-reduce(0)"});
}

TEST_CASE("repeat: at small sizes (exec --small) a repeat runs two layers") {
    semantics::CheckOptions o;
    o.small_defaults = true;
    o.ignore_dims = true;
    const auto plan = check_text(kLayers, o);
    REQUIRE(plan.repeats.size() == 1);
    CHECK(plan.repeats[0].count == 2);
    CHECK(plan.statements[2].repeat == 2);
    const auto one = check_text("mesh 2\nrepeat l=1\n  y_{b} = x_{b}\nend\n", o);
    CHECK(one.repeats.at(0).count == 1);
}

TEST_CASE("repeat: a carried tensor must exist before the repeat and keep its layout") {
    // Read before the body stores it, and nothing stores it before the repeat.
    const std::string no_input = "mesh 2\nrepeat l=2\n  a_{b} = y_{b}\n  y_{b} = a_{b}\nend\n";
    auto plan = check_text(no_input);
    INFO(plan_text(no_input, plan));
    CHECK(has(codes(plan), "S151"));
    // Enters replicated, leaves sharded: the second layer would not run as checked.
    const std::string moved = "mesh 2\ndim b=4\ny_{b} = x_{b}\n"
                              "repeat l=2\n  a_{b} = y_{b}\n  y_{b_0} = a_{b_0}\nend\n";
    plan = check_text(moved);
    INFO(plan_text(moved, plan));
    CHECK(has(codes(plan), "S152"));
    const auto it = std::find_if(plan.diagnostics.begin(), plan.diagnostics.end(),
                                 [](const Diagnostic& d) { return d.code == "S152"; });
    REQUIRE(it != plan.diagnostics.end());
    CHECK(it->range.line == 6);
    // The same layout in and out: fine.
    const std::string kept = "mesh 2\ndim b=4\ny_{b_0} = x_{b_0}\n"
                             "repeat l=2\n  a_{b} = y_{b}\n  y_{b_0} = a_{b_0}\nend\n";
    plan = check_text(kept);
    INFO(plan_text(kept, plan));
    CHECK(plan.errors() == 0);
}

TEST_CASE("repeat: every tensor a chain of products stores in the body is carried (S152)") {
    // The chain stores A and B gathered; both entered sharded: each is reported, B too (the
    // second moved factor), at the chain.
    const std::string src = "mesh 2\ndim i=8 j=8\nA_{i_0 j} = a_{i_0 j}\nB_{j_0} = b_{j_0}\n"
                            "repeat l=2\n  A_{i_0 j} B_{j_0} -> A_{ij} B_{j}\nend\n";
    const auto plan = check_text(src);
    INFO(plan_text(src, plan));
    std::vector<std::string> named;
    for (const auto& d : plan.diagnostics)
        if (d.code == "S152") {
            CHECK(d.range.line == 6u);
            named.push_back(d.message.substr(0, d.message.find(" as ")));
        }
    CHECK((named == std::vector<std::string>{"the layer stores A", "the layer stores B"}));
    REQUIRE(plan.repeats.size() == 1);
    CHECK((plan.repeats[0].defines == std::vector<std::string>{"A", "B"}));
    // The chain's plan lists B as stored besides its result.
    const auto& sp = plan.statements.at(2);
    const auto stores = sp.stores();
    REQUIRE(stores.size() == 2u);
    CHECK(stores[0].first == "A");
    CHECK(stores[1].first == "B");
    CHECK(stores[1].second->placements.at(0).kind == semantics::Placement::Kind::Replicate);
}

TEST_CASE("repeat: a pipelined repeat needs layers that divide into its stages; reverse needs a "
          "forward repeat") {
    const std::string pp = "mesh pp=4\nrepeat l_{pp}=30\n  y_{b} = x_{b}\nend\n";
    auto plan = check_text(pp);
    INFO(plan_text(pp, plan));
    REQUIRE(has(codes(plan), "S150"));
    const auto it = std::find_if(plan.diagnostics.begin(), plan.diagnostics.end(),
                                 [](const Diagnostic& d) { return d.code == "S150"; });
    CHECK(it->range.line == 2);
    CHECK(it->range.column == 8);
    CHECK(it->message.find("do not divide") != std::string::npos);
    const std::string rev = "mesh 2\nrepeat l=2 reverse\n  y_{b} = x_{b}\nend\n";
    plan = check_text(rev);
    INFO(plan_text(rev, plan));
    CHECK(has(codes(plan), "S153"));
    const std::string both =
        "mesh 2\nrepeat l=2\n  y_{b} = x_{b}\nend\nrepeat l=2 reverse\n  g_{b} = y_{b}\nend\n";
    plan = check_text(both);
    INFO(plan_text(both, plan));
    CHECK(plan.errors() == 0);
    REQUIRE(plan.repeats.size() == 2);
    CHECK(plan.repeats[1].reverse);
    CHECK(plan.repeats[1].parameters.empty()); // y is defined by the forward block
    CHECK(plan.repeats[1].forward == 0);
    // Two forward repeats over one index: the reverse blocks pair with them last to first,
    // as a derived backward writes them; a third reverse block finds none left.
    const std::string two = "mesh 2\n"
                            "repeat l=2\n  y_{b} = x_{b}\nend\n"
                            "repeat l=2\n  z_{b} = y_{b}\nend\n"
                            "repeat l=2 reverse\n  gy_{b} = z_{b}\nend\n"
                            "repeat l=2 reverse\n  gx_{b} = y_{b}\nend\n";
    plan = check_text(two);
    INFO(plan_text(two, plan));
    CHECK(plan.errors() == 0);
    REQUIRE(plan.repeats.size() == 4);
    CHECK(plan.repeats[2].forward == 1);
    CHECK(plan.repeats[3].forward == 0);
    plan = check_text(two + "repeat l=2 reverse\n  gw_{b} = y_{b}\nend\n");
    CHECK(has(codes(plan), "S153"));
}
