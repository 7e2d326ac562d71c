// Open shardings (`W_{d f_?}`, `f_{tp?}`; docs/reference.md "Open shardings"): each spelling's
// AST, the canonical and Unicode printing and the round trip, parse --json, and the errors
// with their positions (P138, P240, P241).
#include "helpers.hpp"
#include "parser/json.hpp"
#include "parser/open.hpp"

#include <doctest/doctest.h>

#include <string>
#include <variant>
#include <vector>

using namespace shardscope;
using shardscope::test::diagnostics_text;
using shardscope::test::parse_text;
using shardscope::test::single_statement;

namespace {

const ast::TensorRef& lhs_of(const ast::Statement& s) {
    REQUIRE(std::holds_alternative<ast::Equation>(s.node));
    return std::get<ast::Equation>(s.node).lhs;
}

std::vector<std::string> names(const ast::Index& ix) {
    std::vector<std::string> out;
    for (const auto& a : ix.open_axes)
        out.push_back(a.name);
    return out;
}

/// The one error of `text`: its code, line and column.
void check_error(const std::string& text, const std::string& code, std::uint32_t line,
                 std::uint32_t column, const std::string& part = {}) {
    INFO("input: ", text);
    const auto r = parse_text(text);
    INFO(diagnostics_text(text, r));
    REQUIRE(r.diagnostics.size() == 1);
    CHECK(r.diagnostics[0].severity == Severity::Error);
    CHECK(r.diagnostics[0].code == code);
    CHECK(r.diagnostics[0].range.line == line);
    CHECK(r.diagnostics[0].range.column == column);
    if (!part.empty()) CHECK(r.diagnostics[0].message.find(part) != std::string::npos);
}

} // namespace

TEST_CASE("open sharding: every spelling reads as an open index with its axes") {
    struct Case {
        std::string text;
        std::vector<std::string> axes; ///< of f
        std::string printed;           ///< canonical ASCII
    };
    const std::vector<Case> cases = {
        {"y_{b f_?} = x_{b f}", {}, "y_{b f_?} = x_{bf}"},
        {"y_{b f_{?}} = x_{b f}", {}, "y_{b f_?} = x_{bf}"},
        {"y_{b f_{ ? }} = x_{b f}", {}, "y_{b f_?} = x_{bf}"},
        {"y_{b f_{tp?}} = x_{b f}", {"tp"}, "y_{b f_{tp?}} = x_{bf}"},
        {"y_{b f_{tp ?}} = x_{b f}", {"tp"}, "y_{b f_{tp?}} = x_{bf}"},
        {"y_{b f_{dp,tp?}} = x_{b f}", {"dp", "tp"}, "y_{b f_{dp,tp?}} = x_{bf}"},
        {"y_{b f_{dp tp,?}} = x_{b f}", {"dp", "tp"}, "y_{b f_{dp,tp?}} = x_{bf}"},
        {"y_{b f_{0?}} = x_{b f}", {"0"}, "y_{b f_{0?}} = x_{bf}"},
        {"y_{b f_{01?}} = x_{b f}", {"0", "1"}, "y_{b f_{0,1?}} = x_{bf}"},
        // LaTeX: the same subscript inside math.
        {"$y_{b f_{tp?}} = x_{b f}$", {"tp"}, "y_{b f_{tp?}} = x_{bf}"},
        // Bracket form.
        {"y[b, f_?] = x[b, f]", {}, "y[b, f_?] = x[b, f]"},
        {"y[b, f_{X?}] = x[b, f]", {"X"}, "y[b, f_{X?}] = x[b, f]"},
        // Primes before the marker.
        {"y_{b f'_?} = x_{b f'}", {}, "y_{b f'_?} = x_{bf'}"},
    };
    for (const auto& c : cases) {
        INFO(c.text);
        const auto s = single_statement(c.text);
        const auto& f = lhs_of(s).dims.at(1).parts.at(0);
        CHECK(f.open);
        CHECK(names(f) == c.axes);
        CHECK(f.axes.empty()); // unresolved, it reads as replicated
        CHECK_FALSE(lhs_of(s).dims.at(0).parts.at(0).open);
        CHECK(parser::print(s) == c.printed);
        // The round trip: the printed text reads back as the same tree.
        CHECK(single_statement(c.printed) == s);
        // Unicode printing keeps the marker (no subscript '?' exists) and reads back.
        const auto u = parser::print(s, {true});
        CHECK(u.find('?') != std::string::npos);
        CHECK(single_statement(u) == s);
    }
    // Open and written are different trees.
    CHECK_FALSE(single_statement("y_{b f_{tp?}} = x_{b f}") ==
                single_statement("y_{b f_{tp}} = x_{b f}"));
    // Inside a group.
    const auto g = single_statement("y_{b (r_? c)} = x_{b r c}");
    CHECK(lhs_of(g).dims.at(1).parts.at(0).open);
    CHECK(single_statement(parser::print(g)) == g);
}

TEST_CASE("open sharding: parse --json marks the index open with its axes") {
    const auto j = parser::to_json(single_statement("y_{b f_{tp?}} = x_{b f}"));
    const auto dump = j.dump();
    CHECK(dump.find("\"open\":true") != std::string::npos);
    CHECK(dump.find("\"open_axes\":[\"tp\"]") != std::string::npos);
    const auto closed = parser::to_json(single_statement("y_{b f_{tp}} = x_{b f}")).dump();
    CHECK(closed.find("\"open\"") == std::string::npos);
}

TEST_CASE("open sharding: errors are positioned") {
    // P138: '?' ends the list.
    check_error("y_{b f_{tp?x}} = x_{b f}", "P138", 1, 12);
    check_error("y_{b f_{?", "P138", 1, 10);
    // P240: not on a tensor's index.
    check_error("z = x_{b}{U_?}", "P240", 1, 13, "partial");
    check_error("z = x_{b}{U_{tp?}}", "P240", 1, 16, "partial");
    check_error("z_{b} = sum_{s_?}(x_{b s})", "P240", 1, 16, "function");
    check_error("repeat l_?=4\nx_{b} := x_{b}\nend", "P240", 1, 10, "repeat");
    // P241: one dimension, two lists, at the second occurrence with the first's line.
    const std::string two = "y_{b f_{tp?}} = W_{f d} x_{b d}\nz_{b} = y_{b f_{dp?}} u_{f}\n";
    check_error(two, "P241", 2, 14, "line 1");
    // The same list in another order, or a dimension open once and written elsewhere: fine.
    CHECK_FALSE(parse_text("y_{b f_{dp,tp?}} = W_{f d} x_{b d}\nz_{b} = y_{b f_{tp,dp?}} u_{f}\n")
                    .has_errors());
    CHECK_FALSE(
        parse_text("y_{b f_?} = W_{f d} x_{b d}\nz_{b} = y_{b f_{tp}} u_{f}\n").has_errors());
}

TEST_CASE("open sharding: the variables, their occurrences and the rewrite") {
    const auto r = parse_text("h_{b f_?} = W^0_{f_{tp?} d} x_{b d}\n"
                              "z_{b d} = W^1_{d f_{tp?}} phi(h_{b f_?})\n"
                              "q_{b d} = h_{b f} u_{d}\n");
    REQUIRE_FALSE(r.has_errors());
    REQUIRE(ast::has_open(r.program));
    const auto open = ast::open_dimensions(r.program);
    REQUIRE(open.size() == 3);
    CHECK(open[0].key == "h f");
    CHECK(open[0].occurrences == 2);
    CHECK(open[0].axes.empty());
    CHECK(open[1].key == "W^0 f");
    CHECK(open[1].axes == std::vector<std::string>{"tp"});
    CHECK(open[2].key == "W^1 f");
    CHECK(open[0].at.line == 1);
    const auto refs = ast::open_refs(r.program);
    CHECK(refs.size() == 4);
    auto p = r.program;
    ast::close_open(p, [](const std::string& key) {
        return key == "h f" ? std::vector<std::string>{"tp"} : std::vector<std::string>{};
    });
    CHECK_FALSE(ast::has_open(p));
    CHECK(parser::print(p) == "h_{b f_{tp}} = W^0_{fd} x_{bd}\n"
                              "z_{bd} = W^1_{df} phi(h_{b f_{tp}})\n"
                              "q_{bd} = h_{bf} u_{d}\n");
}
