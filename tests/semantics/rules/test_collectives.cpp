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
