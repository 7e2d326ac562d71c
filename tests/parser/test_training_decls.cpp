// The declarations of program totals (issue 18): `param` (the trained weights) and `train`
// (optimizer, master weights, recomputation): parse, print, JSON, and positioned errors.
#include "helpers.hpp"

#include "parser/json.hpp"
#include "parser/printer.hpp"

#include <doctest/doctest.h>

#include <string>
#include <variant>

using namespace shardscope;
using shardscope::test::diagnostics_text;
using shardscope::test::parse_text;
using shardscope::test::single_statement;

namespace {

template <typename T>
T parse_as(const std::string& text) {
    const auto s = single_statement(text);
    REQUIRE_MESSAGE(std::holds_alternative<T>(s.node), "statement holds another node kind");
    return std::get<T>(s.node);
}

/// Exactly one error, with this code at this column of line 1.
void check_error(const std::string& text, const std::string& code, std::uint32_t column,
                 const std::string& part) {
    INFO("input: ", text);
    const auto r = parse_text(text);
    INFO("diagnostics:\n", diagnostics_text(text, r));
    REQUIRE(r.diagnostics.size() == 1);
    const auto& d = r.diagnostics[0];
    CHECK(d.severity == Severity::Error);
    CHECK(d.code == code);
    CHECK(d.range.line == 1);
    CHECK(d.range.column == column);
    CHECK(d.message.find(part) != std::string::npos);
}

} // namespace

TEST_CASE("param: the trained weights, with their labels") {
    const auto p = parse_as<ast::ParamDecl>("param W^0 W^{up}, b E");
    REQUIRE(p.tensors.size() == 4);
    CHECK(p.tensors[0].name == "W");
    CHECK(p.tensors[0].label == "0");
    CHECK(p.tensors[1].name == "W");
    CHECK(p.tensors[1].label == "up");
    CHECK(p.tensors[2].name == "b");
    CHECK(p.tensors[2].label.empty());
    CHECK(p.tensors[3].name == "E");
    // Each tensor's range covers its name and label.
    CHECK(p.tensors[1].range.column == 11);
    CHECK(p.tensors[1].range.end_column == 17);
    // Unicode superscripts are the same label.
    CHECK(parse_as<ast::ParamDecl>("param W⁰").tensors.at(0).label == "0");
    // `param` followed by an assignment is a tensor called param.
    CHECK(std::holds_alternative<ast::Equation>(single_statement("param = x").node));
}

TEST_CASE("train: optimizer, master weights, recomputation, with defaults") {
    auto t = parse_as<ast::TrainDecl>("train adam");
    CHECK(t.optimizer == "adam");
    CHECK(t.master == "f32");
    CHECK(t.recompute == "none");
    t = parse_as<ast::TrainDecl>("train sgd master=none, recompute=full");
    CHECK(t.optimizer == "sgd");
    CHECK(t.master == "none");
    CHECK(t.recompute == "full");
    t = parse_as<ast::TrainDecl>("train adam recompute = full master=bf16");
    CHECK(t.master == "bf16");
    CHECK(t.recompute == "full");
    CHECK(t.zero == 0);
    t = parse_as<ast::TrainDecl>("train adam zero=2");
    CHECK(t.zero == 2);
    CHECK(t.master == "f32");
    CHECK(parser::print(single_statement("train adam zero=1")) ==
          "train adam master=f32 recompute=none zero=1");
    CHECK(parser::print(single_statement("train adam zero=0")) ==
          "train adam master=f32 recompute=none");
}

TEST_CASE("param and train: printed canonically, parsed back equal, in JSON") {
    const std::string text = "param W^0 W^{up} b\ntrain adam recompute=full\n";
    const auto r = parse_text(text);
    REQUIRE_FALSE(r.has_errors());
    const auto printed = parser::print(r.program);
    CHECK(printed == "param W^0 W^{up} b\ntrain adam master=f32 recompute=full\n");
    const auto again = parse_text(printed);
    REQUIRE_FALSE(again.has_errors());
    CHECK(again.program == r.program);
    const auto j = parser::to_json(r.program);
    const auto& items = j.at("items");
    REQUIRE(items.size() == 2);
    const auto& p = items[0].at("statement");
    CHECK(p.at("type") == "param");
    CHECK(p.at("tensors").size() == 3);
    CHECK(p.at("tensors")[1].at("label") == "up");
    const auto& t = items[1].at("statement");
    CHECK(t.at("type") == "train");
    CHECK(t.at("optimizer") == "adam");
    CHECK(t.at("master") == "f32");
    CHECK(t.at("recompute") == "full");
}

TEST_CASE("param and train: positioned errors") {
    check_error("param", "P175", 6, "tensor name after 'param'");
    check_error("param 3", "P175", 7, "tensor name after 'param'");
    check_error("param W W", "P230", 9, "already a parameter");
    check_error("param W^0 V W^0", "P230", 13, "'W^0' is already");
    check_error("train", "P176", 6, "optimizer");
    check_error("train lion", "P231", 7, "unknown optimizer 'lion'");
    check_error("train adam master", "P177", 18, "'='");
    check_error("train adam master=", "P178", 19, "value");
    check_error("train adam moments=f32", "P232", 12, "unknown training option 'moments'");
    check_error("train adam master=f32 master=none", "P233", 23, "given twice");
    check_error("train adam master=f33", "P234", 19, "unknown element type 'f33'");
    check_error("train adam recompute=some", "P234", 22, "recompute=some");
    check_error("train adam zero=3", "P234", 17, "stage 3 is the weights' own placement");
    check_error("train adam zero=12", "P234", 17, "zero=12 is not a ZeRO stage");
    check_error("train adam zero=", "P178", 17, "value");
}
