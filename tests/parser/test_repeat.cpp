// `repeat l=N` ... `end` (issue 18): the construct, its spellings, its positioned errors, the
// printer's round trip and the JSON.
#include "helpers.hpp"

#include "parser/json.hpp"

#include <doctest/doctest.h>

#include <string>
#include <variant>
#include <vector>

using namespace shardscope;
using shardscope::test::diagnostics_text;
using shardscope::test::parse_text;

namespace {

const char* kProgram = "mesh 2\n"
                       "dim b=4 d=8\n"
                       "y_{bd} = x_{bd}\n"
                       "repeat l=32\n"
                       "  y_{bd} := relu(y_{b d'} W_{d' d})  # one layer\n"
                       "  expect none\n"
                       "end\n"
                       "z_{b} = sum_{d}(y_{bd})\n";

std::vector<const ast::Statement*> statements(const ast::Program& p) {
    std::vector<const ast::Statement*> out;
    for (const auto& item : p.items)
        if (const auto* s = std::get_if<ast::Statement>(&item)) out.push_back(s);
    return out;
}

/// The one error of `text`: its code, line and column.
void check_one_error(const std::string& text, const std::string& code, std::uint32_t line,
                     std::uint32_t column, const std::string& part = {}) {
    INFO("input:\n", text);
    const auto r = parse_text(text);
    INFO("diagnostics:\n", diagnostics_text(text, r));
    REQUIRE(r.diagnostics.size() == 1);
    const auto& d = r.diagnostics[0];
    CHECK(d.severity == Severity::Error);
    CHECK(d.code == code);
    CHECK(d.range.line == line);
    CHECK(d.range.column == column);
    if (!part.empty()) CHECK(d.message.find(part) != std::string::npos);
}

} // namespace

TEST_CASE("repeat: a block of statements between 'repeat l=N' and 'end'") {
    const auto r = parse_text(kProgram);
    REQUIRE_MESSAGE(!r.has_errors(), diagnostics_text(kProgram, r));
    const auto s = statements(r.program);
    REQUIRE(s.size() == 8);
    const auto* rp = std::get_if<ast::RepeatDecl>(&s[3]->node);
    REQUIRE(rp);
    CHECK(rp->index.name == "l");
    CHECK(rp->index.axes.empty());
    CHECK(rp->count == 32);
    CHECK_FALSE(rp->reverse);
    CHECK(s[3]->range.line == 4);
    CHECK(std::holds_alternative<ast::Equation>(s[4]->node));
    CHECK(s[4]->comment == "one layer");
    CHECK(std::holds_alternative<ast::Expect>(s[5]->node));
    CHECK(std::holds_alternative<ast::EndDecl>(s[6]->node));
    CHECK(s[6]->range.line == 7);
}

TEST_CASE("repeat: spellings (reverse, spaces, primes, a layer index with a mesh axis)") {
    auto first = [](const std::string& text) {
        const auto r = parse_text(text);
        REQUIRE_MESSAGE(!r.has_errors(), diagnostics_text(text, r));
        return std::get<ast::RepeatDecl>(std::get<ast::Statement>(r.program.items.at(0)).node);
    };
    CHECK(first("repeat l=3 reverse\nend\n").reverse);
    CHECK(first("repeat   l = 3\nend\n").count == 3);
    CHECK(first("repeat l'=2\nend\n").index.primes == 1);
    // Pipeline parallelism: the layer index sharded over a mesh axis.
    const auto pp = first("repeat l_{pp}=32\nend\n");
    REQUIRE(pp.index.axes.size() == 1);
    CHECK(pp.index.axes[0].name == "pp");
    // 'repeat' and 'end' stay tensor names where an assignment follows.
    const auto r = parse_text("repeat = x\nend_{i} = y_{i}\nend := x\n");
    CHECK_FALSE(r.has_errors());
    for (const auto* s : statements(r.program))
        CHECK(std::holds_alternative<ast::Equation>(s->node));
}

TEST_CASE("repeat: errors are positioned and coded") {
    check_one_error("repeat\nend\n", "P159", 1, 7, "layer index");
    check_one_error("repeat l\nend\n", "P141", 1, 9);
    check_one_error("repeat l=\nend\n", "P165", 1, 10, "number of layers");
    check_one_error("repeat l=x\nend\n", "P165", 1, 10);
    check_one_error("repeat l=0\nend\n", "P214", 1, 10, "at least once");
    check_one_error("repeat l=99999999999999999999\nend\n", "P205", 1, 10);
    check_one_error("repeat l=2 twice\nend\n", "P101", 1, 12);
    check_one_error("mesh 2\nrepeat l=2\ny = x\n", "P218", 2, 1, "no 'end'");
    check_one_error("mesh 2\ny = x\nend\n", "P216", 3, 1, "without a 'repeat'");
    check_one_error("repeat l=2\n  y = x\n  repeat k=2\n  end\nend\n", "P215", 3, 3, "do not nest");
    check_one_error("repeat l=2\n  dim b=4\nend\n", "P217", 2, 3, "declarations");
    check_one_error("repeat l=2\n  fn swish elementwise\nend\n", "P217", 2, 3);
    check_one_error("end extra\n", "P102", 1, 5);
    // A repeat line with an error still opens a block: its end is not a second error.
    check_one_error("repeat l=\n  y = x\nend\n", "P165", 1, 10);
    check_one_error("repeat l=x\n  repeat k=2\n  end\nend\n", "P165", 1, 10);
}

TEST_CASE("repeat: the printer writes it back (body indented), and it parses to the same tree") {
    const auto r = parse_text(kProgram);
    REQUIRE(!r.has_errors());
    const auto text = parser::print(r.program);
    CHECK(text.find("repeat l=32\n  y_{bd} := relu(y_{bd'} W_{d'd})  # one layer\n"
                    "  expect none\nend\n") != std::string::npos);
    const auto back = parse_text(text);
    REQUIRE_MESSAGE(!back.has_errors(), diagnostics_text(text, back));
    CHECK(back.program == r.program);
    const auto unicode = parser::print(r.program, {true});
    const auto back2 = parse_text(unicode);
    REQUIRE_MESSAGE(!back2.has_errors(), diagnostics_text(unicode, back2));
    CHECK(back2.program == r.program);
    // reverse and a mesh axis on the index print as written.
    const auto r2 = parse_text("repeat l_{pp}=4 reverse\nend\n");
    REQUIRE(!r2.has_errors());
    CHECK(parser::print(r2.program) == "repeat l_{pp}=4 reverse\nend\n");
}

TEST_CASE("repeat: parse --json shows the block") {
    const auto r = parse_text(kProgram);
    REQUIRE(!r.has_errors());
    const auto s = statements(r.program);
    const auto j = parser::to_json(*s[3]);
    INFO(j.dump(2));
    CHECK(j["type"] == "repeat");
    CHECK(j["count"] == 32);
    CHECK(j["reverse"] == false);
    CHECK(j["index"]["name"] == "l");
    CHECK(parser::to_json(*s[6])["type"] == "end");
}

TEST_CASE("repeat: pipeline options (microbatches, schedule) parse, print back and show in JSON") {
    const std::string text = "repeat l_{pp}=32 microbatches=8 schedule=gpipe\nend\n";
    const auto r = parse_text(text);
    REQUIRE_MESSAGE(!r.has_errors(), diagnostics_text(text, r));
    const auto& rp =
        std::get<ast::RepeatDecl>(std::get<ast::Statement>(r.program.items.at(0)).node);
    CHECK(rp.count == 32);
    CHECK(rp.microbatches == 8);
    CHECK(rp.schedule == "gpipe");
    CHECK_FALSE(rp.reverse);
    CHECK(parser::print(r.program) == text);
    const auto back = parse_text(parser::print(r.program, {true}));
    REQUIRE(!back.has_errors());
    CHECK(back.program == r.program);
    const auto j = parser::to_json(std::get<ast::Statement>(r.program.items.at(0)));
    CHECK(j["microbatches"] == 8);
    CHECK(j["schedule"] == "gpipe");
    // Any order, with reverse among them; unwritten options stay unwritten.
    const auto r2 = parse_text("repeat l_{pp} = 4 schedule = 1f1b reverse microbatches=2\nend\n");
    REQUIRE_MESSAGE(!r2.has_errors(), diagnostics_text("", r2));
    const auto& rp2 =
        std::get<ast::RepeatDecl>(std::get<ast::Statement>(r2.program.items.at(0)).node);
    CHECK(rp2.reverse);
    CHECK(rp2.microbatches == 2);
    CHECK(rp2.schedule == "1f1b");
    CHECK(parser::print(r2.program) ==
          "repeat l_{pp}=4 reverse microbatches=2 schedule=1f1b\nend\n");
    const auto r3 = parse_text("repeat l=4\nend\n");
    const auto& rp3 =
        std::get<ast::RepeatDecl>(std::get<ast::Statement>(r3.program.items.at(0)).node);
    CHECK(rp3.microbatches == 0);
    CHECK(rp3.schedule.empty());
    CHECK(parser::print(r3.program) == "repeat l=4\nend\n");
}

TEST_CASE("repeat: bad pipeline options are positioned errors") {
    check_one_error("repeat l_{pp}=4 stages=2\nend\n", "P219", 1, 17, "unknown repeat option");
    check_one_error("repeat l_{pp}=4 microbatches=2 microbatches=4\nend\n", "P219", 1, 32, "twice");
    check_one_error("repeat l_{pp}=4 reverse reverse\nend\n", "P219", 1, 25, "twice");
    check_one_error("repeat l_{pp}=4 microbatches=0\nend\n", "P220", 1, 30, "at least 1");
    check_one_error("repeat l_{pp}=4 microbatches=x2\nend\n", "P220", 1, 30);
    check_one_error("repeat l_{pp}=4 schedule=zb\nend\n", "P220", 1, 26, "not a schedule");
    check_one_error("repeat l_{pp}=4 schedule=\nend\n", "P178", 1, 26);
}
