// One TEST_CASE per construct of NOTATION.md sections 2-5 and 7, with a SUBCASE per spelling.
// Every check looks at the AST fields the construct should produce, not only at "no error".
#include "helpers.hpp"
#include "parser/json.hpp"
#include "parser/splitter.hpp"

#include <doctest/doctest.h>

#include <string>
#include <type_traits>
#include <variant>
#include <vector>

using namespace shardscope;
using shardscope::test::diagnostics_text;
using shardscope::test::parse_text;
using shardscope::test::single_statement;

namespace {

// ---- access helpers ---------------------------------------------------------------------------

template <typename T>
T node_of(const ast::Statement& s) {
    REQUIRE_MESSAGE(std::holds_alternative<T>(s.node), "statement holds another node kind");
    return std::get<T>(s.node);
}

template <typename T>
const T& as(const ast::Expr& e) {
    REQUIRE_MESSAGE(std::holds_alternative<T>(e.node), "expression holds another node kind");
    return std::get<T>(e.node);
}

/// For a temporary expression: a copy, so that `const auto& p = as<T>(rhs(...))` is safe.
template <typename T>
T as(ast::Expr&& e) {
    REQUIRE_MESSAGE(std::holds_alternative<T>(e.node), "expression holds another node kind");
    return std::get<T>(std::move(e.node));
}

template <typename T>
const T& item_as(const ast::Program& p, std::size_t i) {
    REQUIRE(i < p.items.size());
    REQUIRE_MESSAGE(std::holds_alternative<T>(p.items[i]), "item " << i << " is another kind");
    return std::get<T>(p.items[i]);
}

/// The single statement of `text`, as node kind T.
template <typename T>
T parse_as(const std::string& text) {
    return node_of<T>(single_statement(text));
}

/// The equation of a one-statement program.
ast::Equation equation(const std::string& text) {
    return parse_as<ast::Equation>(text);
}

/// The right-hand side of `y = <text>`.
ast::Expr rhs(const std::string& text) {
    return equation("y = " + text).rhs;
}

/// The tensor reference `text`, read as the left-hand side of `<text> = 1`.
ast::TensorRef tensor(const std::string& text) {
    return equation(text + " = 1").lhs;
}

/// The only index of the only dimension of `x_{<text>}`.
ast::Index sub_index(const std::string& text) {
    const auto r = tensor("x_{" + text + "}");
    REQUIRE(r.dims.size() == 1);
    REQUIRE(r.dims[0].parts.size() == 1);
    return r.dims[0].parts[0];
}

std::vector<std::string> axis_names(const std::vector<ast::AxisRef>& axes) {
    std::vector<std::string> out;
    for (const auto& a : axes)
        out.push_back(a.name);
    return out;
}

std::vector<std::string> dim_names(const ast::TensorRef& r) {
    std::vector<std::string> out;
    for (const auto& d : r.dims) {
        std::string s;
        for (const auto& p : d.parts)
            s += (s.empty() ? "" : " ") + p.name;
        out.push_back(d.grouped ? "(" + s + ")" : s);
    }
    return out;
}

using Strings = std::vector<std::string>;

/// The program of `text`, which must parse without errors.
ast::Program program(const std::string& text) {
    auto r = parse_text(text);
    REQUIRE_MESSAGE(!r.has_errors(), diagnostics_text(text, r));
    return r.program;
}

} // namespace

// =============================================================================================
// Section 5: declarations

TEST_CASE("declaration: mesh") {
    SUBCASE("mesh 4: one axis named 0") {
        const auto m = parse_as<ast::MeshDecl>("mesh 4");
        REQUIRE(m.axes.size() == 1);
        CHECK(m.axes[0].name == "0");
        CHECK(m.axes[0].size == 4);
        CHECK_FALSE(m.named);
        CHECK(m.devices.empty());
    }
    SUBCASE("mesh 2x4: axes 0 and 1") {
        const auto m = parse_as<ast::MeshDecl>("mesh 2x4");
        REQUIRE(m.axes.size() == 2);
        CHECK(m.axes[0].name == "0");
        CHECK(m.axes[0].size == 2);
        CHECK(m.axes[1].name == "1");
        CHECK(m.axes[1].size == 4);
        CHECK_FALSE(m.named);
    }
    SUBCASE("mesh 2×4 (Unicode times) is mesh 2x4") {
        CHECK(parse_as<ast::MeshDecl>("mesh 2×4") == parse_as<ast::MeshDecl>("mesh 2x4"));
        CHECK(parse_as<ast::MeshDecl>("mesh 2 x 4") == parse_as<ast::MeshDecl>("mesh 2x4"));
    }
    SUBCASE("mesh dp=2 tp=4: named axes in order") {
        const auto m = parse_as<ast::MeshDecl>("mesh dp=2 tp=4");
        REQUIRE(m.axes.size() == 2);
        CHECK(m.named);
        CHECK(m.axes[0].name == "dp");
        CHECK(m.axes[0].size == 2);
        CHECK(m.axes[1].name == "tp");
        CHECK(m.axes[1].size == 4);
    }
    SUBCASE("explicit device order") {
        const auto m = parse_as<ast::MeshDecl>("mesh X=2 Y=4 devices [0 2 1 3 4 6 5 7]");
        REQUIRE(m.axes.size() == 2);
        CHECK(m.axes[0].name == "X");
        CHECK(m.axes[1].name == "Y");
        CHECK(m.devices == std::vector<std::int64_t>{0, 2, 1, 3, 4, 6, 5, 7});
    }
    SUBCASE("device list with commas") {
        const auto m = parse_as<ast::MeshDecl>("mesh 2x2 devices [3, 2, 1, 0]");
        CHECK(m.devices == std::vector<std::int64_t>{3, 2, 1, 0});
    }
}

TEST_CASE("declaration: dim") {
    SUBCASE("several bindings") {
        const auto d = parse_as<ast::DimDecl>("dim b=8 s=2048 d=4096");
        REQUIRE(d.bindings.size() == 3);
        CHECK(d.bindings[0].index.name == "b");
        CHECK(d.bindings[0].size == 8);
        CHECK(d.bindings[1].index.name == "s");
        CHECK(d.bindings[1].size == 2048);
        CHECK(d.bindings[2].index.name == "d");
        CHECK(d.bindings[2].size == 4096);
        CHECK(d.bindings[2].index.primes == 0);
    }
    SUBCASE("primed indices and multi-letter names") {
        const auto d = parse_as<ast::DimDecl>("dim d=64 d'=32 d''=16 d′=8 batch=4");
        REQUIRE(d.bindings.size() == 5);
        CHECK(d.bindings[1].index.name == "d");
        CHECK(d.bindings[1].index.primes == 1);
        CHECK(d.bindings[1].size == 32);
        CHECK(d.bindings[2].index.primes == 2);
        CHECK(d.bindings[2].size == 16);
        CHECK(d.bindings[3].index.primes == 1);
        CHECK(d.bindings[4].index.name == "batch");
        CHECK(d.bindings[4].size == 4);
    }
    SUBCASE("commas between bindings") {
        CHECK(parse_as<ast::DimDecl>("dim b=8, s=16") == parse_as<ast::DimDecl>("dim b=8 s=16"));
    }
}

TEST_CASE("declaration: split") {
    const auto s = parse_as<ast::SplitDecl>("split s -> r t");
    CHECK(s.from.name == "s");
    REQUIRE(s.parts.size() == 2);
    CHECK(s.parts[0].name == "r");
    CHECK(s.parts[1].name == "t");
    SUBCASE("Unicode arrow") {
        CHECK(parse_as<ast::SplitDecl>("split s → r t") == s);
    }
    SUBCASE("parenthesised parts") {
        CHECK(parse_as<ast::SplitDecl>("split s -> (r t)") == s);
    }
    SUBCASE("primed parts and three parts") {
        const auto p = parse_as<ast::SplitDecl>("split e -> r' f g");
        CHECK(p.from.name == "e");
        REQUIRE(p.parts.size() == 3);
        CHECK(p.parts[0].name == "r");
        CHECK(p.parts[0].primes == 1);
        CHECK(p.parts[2].name == "g");
    }
}

TEST_CASE("declaration: dtype") {
    CHECK(parse_as<ast::DtypeDecl>("dtype bf16").dtype == "bf16");
    CHECK(parse_as<ast::DtypeDecl>("dtype f32").dtype == "f32");
}

TEST_CASE("declaration: tensor") {
    SUBCASE("plain name") {
        const auto t = parse_as<ast::TensorDecl>("tensor x : f32");
        CHECK(t.name == "x");
        CHECK(t.label.empty());
        CHECK(t.dtype == "f32");
    }
    SUBCASE("superscript label") {
        const auto t = parse_as<ast::TensorDecl>("tensor W^0 : bf16");
        CHECK(t.name == "W");
        CHECK(t.label == "0");
        CHECK(t.dtype == "bf16");
    }
    SUBCASE("braced and Unicode labels") {
        CHECK(parse_as<ast::TensorDecl>("tensor W^{up}: f16").label == "up");
        CHECK(parse_as<ast::TensorDecl>("tensor W⁰ : bf16") ==
              parse_as<ast::TensorDecl>("tensor W^0 : bf16"));
    }
}

TEST_CASE("declaration: hw") {
    CHECK(parse_as<ast::HwDecl>("hw h100").preset == "h100");
    CHECK(parse_as<ast::HwDecl>("hw tpu-v5e").preset == "tpu-v5e");
    CHECK(parse_as<ast::HwDecl>("hw a100").preset == "a100");
}

TEST_CASE("declaration: link") {
    SUBCASE("bandwidth and latency") {
        const auto l = parse_as<ast::LinkDecl>("link tp 450GB/s 1us");
        CHECK(l.axis.name == "tp");
        CHECK(l.bytes_per_second == doctest::Approx(450e9));
        CHECK(l.bandwidth_text == "450GB/s");
        CHECK(l.latency_seconds == doctest::Approx(1e-6));
        CHECK(l.latency_text == "1us");
    }
    SUBCASE("without latency") {
        const auto l = parse_as<ast::LinkDecl>("link 0 100GB/s");
        CHECK(l.axis.name == "0");
        CHECK(l.bytes_per_second == doctest::Approx(100e9));
        CHECK(l.latency_seconds == 0);
        CHECK(l.latency_text.empty());
    }
    SUBCASE("other units") {
        const auto l = parse_as<ast::LinkDecl>("link X 1.5TB/s 20ns");
        CHECK(l.axis.name == "X");
        CHECK(l.bytes_per_second == doctest::Approx(1.5e12));
        CHECK(l.latency_seconds == doctest::Approx(20e-9));
        CHECK(parse_as<ast::LinkDecl>("link 1 2GiB/s 3ms").bytes_per_second ==
              doctest::Approx(2.0 * 1024 * 1024 * 1024));
        CHECK(parse_as<ast::LinkDecl>("link 1 2GiB/s 3ms").latency_seconds ==
              doctest::Approx(3e-3));
    }
    SUBCASE("space between number and unit") {
        const auto l = parse_as<ast::LinkDecl>("link tp 450 GB/s 1 us");
        CHECK(l.bytes_per_second == doctest::Approx(450e9));
        CHECK(l.latency_seconds == doctest::Approx(1e-6));
    }
}

TEST_CASE("declaration: fn") {
    SUBCASE("elementwise") {
        const auto f = parse_as<ast::FnDecl>("fn swish elementwise");
        CHECK(f.name == "swish");
        CHECK(f.kind == ast::FunctionKind::Elementwise);
    }
    SUBCASE("linear") {
        const auto f = parse_as<ast::FnDecl>("fn double linear");
        CHECK(f.name == "double");
        CHECK(f.kind == ast::FunctionKind::Linear);
    }
    SUBCASE("a declared name becomes callable, but only after its declaration") {
        const std::string before = "y = swish(x)";
        const auto bad = parse_text(before);
        REQUIRE(bad.diagnostics.size() == 1);
        CHECK(bad.diagnostics[0].code == "P108");
        CHECK(bad.program.items.empty());

        const std::string text = "y = swish(x)\nfn swish elementwise\nz = swish(x)";
        const auto r = parse_text(text);
        REQUIRE_MESSAGE(r.diagnostics.size() == 1, diagnostics_text(text, r));
        CHECK(r.diagnostics[0].code == "P108");
        CHECK(r.diagnostics[0].range.line == 1);
        REQUIRE(r.program.items.size() == 2);
        const auto eq = node_of<ast::Equation>(item_as<ast::Statement>(r.program, 1));
        const auto& c = as<ast::Call>(eq.rhs);
        CHECK(c.function == "swish");
        CHECK(c.indices.empty());
        CHECK(as<ast::TensorRef>(*c.arg).name == "x");
    }
    SUBCASE("functions declared before the text (ParseOptions)") {
        SourceFile file("test.ein", "y = swish(x)");
        parser::ParseOptions options;
        options.functions = {"swish"};
        const auto r = parser::parse(file, options);
        CHECK_FALSE(r.has_errors());
        REQUIRE(r.program.items.size() == 1);
        const auto eq = node_of<ast::Equation>(std::get<ast::Statement>(r.program.items[0]));
        CHECK(as<ast::Call>(eq.rhs).function == "swish");
    }
}

// =============================================================================================
// Section 3: tensor references, subscript form

TEST_CASE("subscript form: one letter per index") {
    SUBCASE("compact x_{bsd}") {
        const auto r = tensor("x_{bsd}");
        CHECK(r.name == "x");
        CHECK(r.style == ast::IndexStyle::Subscript);
        CHECK(dim_names(r) == Strings{"b", "s", "d"});
        for (const auto& d : r.dims) {
            CHECK_FALSE(d.grouped);
            CHECK(d.parts[0].axes.empty());
            CHECK(d.parts[0].primes == 0);
        }
    }
    SUBCASE("spaced x_{b s d} is the same") {
        CHECK(tensor("x_{b s d}") == tensor("x_{bsd}"));
    }
    SUBCASE("multi-letter index in braces") {
        const auto r = tensor("x_{b {seq} d}");
        CHECK(dim_names(r) == Strings{"b", "seq", "d"});
    }
    SUBCASE("bare x_k") {
        const auto r = tensor("x_k");
        CHECK(r.style == ast::IndexStyle::Subscript);
        CHECK(dim_names(r) == Strings{"k"});
        CHECK(r.partial_axes.empty());
    }
    SUBCASE("a bare name is a scalar") {
        const auto r = tensor("z");
        CHECK(r.name == "z");
        CHECK(r.style == ast::IndexStyle::None);
        CHECK(r.dims.empty());
        CHECK(r.partial_axes.empty());
    }
    SUBCASE("names: letters then digits, '_' never part of the name") {
        CHECK(tensor("gW_{de}").name == "gW");
        CHECK(tensor("Q2_{ab}").name == "Q2");
        CHECK(dim_names(tensor("Q2_{ab}")) == Strings{"a", "b"});
    }
}

TEST_CASE("subscript form: primes") {
    SUBCASE("ASCII primes") {
        CHECK(sub_index("d'").primes == 1);
        CHECK(sub_index("d''").primes == 2);
        CHECK(sub_index("d'").name == "d");
    }
    SUBCASE("Unicode primes") {
        CHECK(sub_index("d′").primes == 1);
        CHECK(sub_index("d″").primes == 2);
        CHECK(sub_index("d″") == sub_index("d''"));
    }
    SUBCASE("compact list with a prime") {
        const auto r = tensor("x_{bsd'}");
        REQUIRE(r.dims.size() == 3);
        CHECK(r.dims[1].parts[0].primes == 0);
        CHECK(r.dims[2].parts[0].name == "d");
        CHECK(r.dims[2].parts[0].primes == 1);
    }
    SUBCASE("prime before or after the mesh subscript") {
        const auto a = sub_index("r'_0");
        CHECK(a.name == "r");
        CHECK(a.primes == 1);
        CHECK(axis_names(a.axes) == Strings{"0"});
        CHECK(sub_index("r_{0}'") == a);
        CHECK(sub_index("r_0'") == a);
        CHECK(tensor("W_{r c r'_0 f}") == tensor("W_{r c r_{0}' f}"));
    }
}

TEST_CASE("subscript form: mesh subscripts") {
    const Strings zero{"0"};
    SUBCASE("r_0, r_{0} and r₀") {
        const auto a = sub_index("r_0");
        CHECK(a.name == "r");
        CHECK(a.primes == 0);
        CHECK(axis_names(a.axes) == zero);
        CHECK(sub_index("r_{0}") == a);
        CHECK(sub_index("r₀") == a);
        CHECK(axis_names(sub_index("r₁").axes) == Strings{"1"});
    }
    SUBCASE("named axis r_{tp}") {
        const auto a = sub_index("r_{tp}");
        CHECK(a.name == "r");
        CHECK(axis_names(a.axes) == Strings{"tp"});
    }
    SUBCASE("single-letter named axis r_X") {
        const auto r = tensor("x_{r_X c}");
        REQUIRE(r.dims.size() == 2);
        CHECK(axis_names(r.dims[0].parts[0].axes) == Strings{"X"});
        CHECK(r.dims[1].parts[0].name == "c");
        CHECK(r.dims[1].parts[0].axes.empty());
    }
    SUBCASE("several axes, major to minor") {
        const Strings both{"0", "1"};
        CHECK(axis_names(sub_index("b_{01}").axes) == both);
        CHECK(axis_names(sub_index("b_{0,1}").axes) == both);
        CHECK(axis_names(sub_index("b₀₁").axes) == both);
        CHECK(axis_names(sub_index("b_{1,0}").axes) == Strings{"1", "0"});
        CHECK(sub_index("b_{01}").name == "b");
    }
    SUBCASE("mesh subscripts in a compact list") {
        const auto r = tensor("x_{r_0 e}");
        REQUIRE(r.dims.size() == 2);
        CHECK(r.dims[0].parts[0].name == "r");
        CHECK(axis_names(r.dims[0].parts[0].axes) == zero);
        CHECK(r.dims[1].parts[0].name == "e");
        CHECK(r.dims[1].parts[0].axes.empty());
        CHECK(tensor("x_{r₀e}") == r);
    }
    SUBCASE("LaTeX spacing inside _{ }") {
        CHECK(tensor("x_{ r _{0} e }") == tensor("x_{r_0 e}"));
        CHECK(tensor("x_{ r _{ 0 } e }") == tensor("x_{r_0 e}"));
        CHECK(tensor("W_{ d r _{0} f }") == tensor("W_{d r_0 f}"));
        CHECK(tensor("x _{ bsd }") == tensor("x_{bsd}"));
    }
}

TEST_CASE("subscript form: groups") {
    SUBCASE("x_{(r_0 c) s d}") {
        const auto r = tensor("x_{(r_0 c) s d}");
        REQUIRE(r.dims.size() == 3);
        CHECK(r.dims[0].grouped);
        REQUIRE(r.dims[0].parts.size() == 2);
        CHECK(r.dims[0].parts[0].name == "r");
        CHECK(axis_names(r.dims[0].parts[0].axes) == Strings{"0"});
        CHECK(r.dims[0].parts[1].name == "c");
        CHECK(r.dims[0].parts[1].axes.empty());
        CHECK_FALSE(r.dims[1].grouped);
        CHECK(r.dims[1].parts.size() == 1);
        CHECK(dim_names(r) == Strings{"(r c)", "s", "d"});
    }
    SUBCASE("compact group x_{(rc)sd}") {
        const auto r = tensor("x_{(rc)sd}");
        CHECK(dim_names(r) == Strings{"(r c)", "s", "d"});
        CHECK(r.dims[0].grouped);
    }
}

// =============================================================================================
// Section 2/3: superscript labels

TEST_CASE("superscript labels") {
    SUBCASE("W^0 and W^{0}") {
        const auto a = tensor("W^0_{de}");
        CHECK(a.name == "W");
        CHECK(a.label == "0");
        CHECK(dim_names(a) == Strings{"d", "e"});
        CHECK(tensor("W^{0}_{de}") == a);
    }
    SUBCASE("word label W^{up}") {
        const auto a = tensor("W^{up}_{de}");
        CHECK(a.name == "W");
        CHECK(a.label == "up");
    }
    SUBCASE("Unicode W⁰ and W¹⁰") {
        CHECK(tensor("W⁰_{de}") == tensor("W^0_{de}"));
        CHECK(tensor("W¹⁰").label == "10");
        CHECK(tensor("W²").label == "2");
        CHECK(tensor("W¹⁰") == tensor("W^{10}"));
    }
    SUBCASE("label before or after the subscript") {
        CHECK(tensor("W^1_{de}") == tensor("W_{de}^1"));
        CHECK(tensor("W_{de}^1").label == "1");
    }
    SUBCASE("W^0 and W^1 are different tensors") {
        CHECK_FALSE(tensor("W^0") == tensor("W^1"));
    }
    SUBCASE("two superscripts are an error") {
        const auto r = parse_text("y = W^0_{de}^1 x_{e}");
        REQUIRE(r.diagnostics.size() == 1);
        CHECK(r.diagnostics[0].code == "P203");
        CHECK(r.program.items.empty());
    }
}

// =============================================================================================
// Section 3: bracket form

TEST_CASE("bracket form") {
    SUBCASE("A[I_X, J]") {
        const auto r = tensor("A[I_X, J]");
        CHECK(r.name == "A");
        CHECK(r.style == ast::IndexStyle::Bracket);
        REQUIRE(r.dims.size() == 2);
        CHECK(r.dims[0].parts[0].name == "I");
        CHECK(axis_names(r.dims[0].parts[0].axes) == Strings{"X"});
        CHECK(r.dims[1].parts[0].name == "J");
        CHECK(r.dims[1].parts[0].axes.empty());
    }
    SUBCASE("long names and numeric axes: x[batch, seq_0, d]") {
        const auto r = tensor("x[batch, seq_0, d]");
        CHECK(dim_names(r) == Strings{"batch", "seq", "d"});
        CHECK(axis_names(r.dims[1].parts[0].axes) == Strings{"0"});
        CHECK(r.dims[0].parts[0].axes.empty());
    }
    SUBCASE("commas or spaces") {
        CHECK(tensor("x[batch seq_0 d]") == tensor("x[batch, seq_0, d]"));
        CHECK(tensor("x[ batch ,seq_0,d ]") == tensor("x[batch, seq_0, d]"));
    }
    SUBCASE("bracket and subscript forms are kept apart") {
        CHECK(tensor("x[b, s]").style == ast::IndexStyle::Bracket);
        CHECK(tensor("x_{bs}").style == ast::IndexStyle::Subscript);
        CHECK_FALSE(tensor("x[b, s]") == tensor("x_{bs}"));
    }
    SUBCASE("several axes: I_{X,Y} and I_{X Y}") {
        CHECK(axis_names(tensor("A[I_{X,Y}, J]").dims[0].parts[0].axes) == Strings{"X", "Y"});
        CHECK(axis_names(tensor("A[I_{X Y}, J]").dims[0].parts[0].axes) == Strings{"X", "Y"});
    }
    SUBCASE("I_{XY}: a braced word is one named axis, as r_{tp} is") {
        // NOTATION.md: "named axes r_{tp}"; the bracket form uses the same mesh subscript
        // syntax, so {XY} reads as one axis called XY (the scaling book would mean X then Y).
        CHECK(axis_names(tensor("A[I_{XY}, J]").dims[0].parts[0].axes) == Strings{"XY"});
    }
    SUBCASE("groups and primes") {
        const auto r = tensor("x[(r_0 c), seq', d]");
        REQUIRE(r.dims.size() == 3);
        CHECK(r.dims[0].grouped);
        REQUIRE(r.dims[0].parts.size() == 2);
        CHECK(axis_names(r.dims[0].parts[0].axes) == Strings{"0"});
        CHECK(r.dims[1].parts[0].name == "seq");
        CHECK(r.dims[1].parts[0].primes == 1);
    }
}

// =============================================================================================
// Section 3: partial markers

TEST_CASE("partial markers") {
    SUBCASE("bracket form C[I, K]{U_X}") {
        const auto r = tensor("C[I, K]{U_X}");
        CHECK(dim_names(r) == Strings{"I", "K"});
        CHECK(axis_names(r.partial_axes) == Strings{"X"});
        CHECK(r.style == ast::IndexStyle::Bracket);
    }
    SUBCASE("subscript form z_{ij}{U_0}") {
        const auto r = tensor("z_{ij}{U_0}");
        CHECK(dim_names(r) == Strings{"i", "j"});
        CHECK(axis_names(r.partial_axes) == Strings{"0"});
    }
    SUBCASE("several axes {U_{0,1}}") {
        CHECK(axis_names(tensor("z_{ij}{U_{0,1}}").partial_axes) == Strings{"0", "1"});
    }
    SUBCASE("scalar partial z_0, z_{0}, z₀") {
        const auto a = tensor("z_0");
        CHECK(a.name == "z");
        CHECK(a.dims.empty());
        CHECK(axis_names(a.partial_axes) == Strings{"0"});
        CHECK(tensor("z_{0}") == a);
        CHECK(tensor("z₀") == a);
        CHECK(tensor("z{U_0}").partial_axes == a.partial_axes);
        CHECK(tensor("z{U_0}").dims.empty());
    }
    SUBCASE("the NOTATION example z_0 = x_{a_0} y_{a_0}") {
        const auto eq = equation("z_0 = x_{a_0} y_{a_0}");
        CHECK(axis_names(eq.lhs.partial_axes) == Strings{"0"});
        const auto& p = as<ast::Product>(eq.rhs);
        REQUIRE(p.factors.size() == 2);
        CHECK(as<ast::TensorRef>(p.factors[0]).partial_axes.empty());
        CHECK(axis_names(as<ast::TensorRef>(p.factors[0]).dims[0].parts[0].axes) == Strings{"0"});
    }
    SUBCASE("no marker") {
        CHECK(tensor("z_{ij}").partial_axes.empty());
    }
}

// =============================================================================================
// Section 4: expressions

TEST_CASE("expressions: products") {
    SUBCASE("juxtaposition is an einsum") {
        const auto e = rhs("W_{de} x_{e}");
        const auto& p = as<ast::Product>(e);
        REQUIRE(p.factors.size() == 2);
        CHECK(as<ast::TensorRef>(p.factors[0]).name == "W");
        CHECK(as<ast::TensorRef>(p.factors[1]).name == "x");
        CHECK(dim_names(as<ast::TensorRef>(p.factors[1])) == Strings{"e"});
    }
    SUBCASE("three factors make one flat product") {
        CHECK(as<ast::Product>(rhs("a b c")).factors.size() == 3);
        CHECK(as<ast::Product>(rhs("a * b * c")).factors.size() == 3);
    }
    SUBCASE("'*', '\\cdot', '·', '\\times' are juxtaposition") {
        const auto j = rhs("W_{de} x_{e}");
        CHECK(rhs("W_{de} * x_{e}") == j);
        CHECK(rhs("W_{de}*x_{e}") == j);
        CHECK(rhs("W_{de} \\cdot x_{e}") == j);
        CHECK(rhs("W_{de} · x_{e}") == j);
        CHECK(rhs("W_{de} \\times x_{e}") == j);
        CHECK(rhs("W_{de}x_{e}") == j);
    }
    SUBCASE("parentheses keep a nested product") {
        const auto& p = as<ast::Product>(rhs("a * (b c)"));
        REQUIRE(p.factors.size() == 2);
        CHECK(as<ast::TensorRef>(p.factors[0]).name == "a");
        const auto& inner = as<ast::Product>(p.factors[1]);
        REQUIRE(inner.factors.size() == 2);
        CHECK(as<ast::TensorRef>(inner.factors[0]).name == "b");
        CHECK(as<ast::TensorRef>(inner.factors[1]).name == "c");

        const auto& q = as<ast::Product>(rhs("(a b) c"));
        REQUIRE(q.factors.size() == 2);
        CHECK(as<ast::Product>(q.factors[0]).factors.size() == 2);
        CHECK(as<ast::TensorRef>(q.factors[1]).name == "c");

        // Juxtaposition works when the factor before '(' is not a bare name.
        const auto& w = as<ast::Product>(rhs("W_{de} (x_{e} + y_{e})"));
        REQUIRE(w.factors.size() == 2);
        CHECK(as<ast::Sum>(w.factors[1]).terms.size() == 2);
        CHECK(rhs("2 (b c)") == rhs("2 * (b c)"));
    }
    SUBCASE("a bare name before '(' is a call, so 'a (b c)' is an unknown function") {
        // NOTATION.md section 4: "An unknown name before `(` is an error, not a tensor", and
        // whitespace only separates names; the fix suggests writing the product with '*'.
        const auto r = parse_text("y = a (b c)");
        REQUIRE(r.diagnostics.size() == 1);
        CHECK(r.diagnostics[0].code == "P108");
        CHECK(r.diagnostics[0].fix.find("a * (...)") != std::string::npos);
    }
    SUBCASE("redundant parentheses disappear") {
        CHECK(rhs("(a)") == rhs("a"));
        CHECK(rhs("((a b))") == rhs("a b"));
        CHECK(rhs("\\left( a b \\right)") == rhs("a b"));
    }
}

TEST_CASE("expressions: quotients") {
    SUBCASE("a / b") {
        const auto& q = as<ast::Quotient>(rhs("a / b"));
        CHECK(as<ast::TensorRef>(*q.num).name == "a");
        CHECK(as<ast::TensorRef>(*q.den).name == "b");
    }
    SUBCASE("\\frac{a}{b} is a / b") {
        CHECK(rhs("\\frac{a}{b}") == rhs("a / b"));
        CHECK(rhs("\\frac{ N_{td} }{ Z_{t} }") == rhs("N_{td} / Z_{t}"));
        CHECK(rhs("\\dfrac{a}{b}") == rhs("a / b"));
    }
    SUBCASE("left-associative with products") {
        // a b / c = (a b) / c
        const auto& q = as<ast::Quotient>(rhs("a b / c"));
        CHECK(as<ast::Product>(*q.num).factors.size() == 2);
        CHECK(as<ast::TensorRef>(*q.den).name == "c");
        // a / b c = (a / b) c
        const auto& p = as<ast::Product>(rhs("a / b c"));
        REQUIRE(p.factors.size() == 2);
        CHECK(std::holds_alternative<ast::Quotient>(p.factors[0].node));
    }
    SUBCASE("fraction of sums") {
        const auto& q = as<ast::Quotient>(rhs("\\frac{a + b}{c - d}"));
        CHECK(as<ast::Sum>(*q.num).negated == std::vector<bool>{false, false});
        CHECK(as<ast::Sum>(*q.den).negated == std::vector<bool>{false, true});
    }
}

TEST_CASE("expressions: sums and signs") {
    SUBCASE("a + b - c") {
        const auto& s = as<ast::Sum>(rhs("a + b - c"));
        REQUIRE(s.terms.size() == 3);
        CHECK(s.negated == std::vector<bool>{false, false, true});
        CHECK(as<ast::TensorRef>(s.terms[2]).name == "c");
    }
    SUBCASE("terms are products") {
        const auto& s = as<ast::Sum>(rhs("a b - c d"));
        REQUIRE(s.terms.size() == 2);
        CHECK(as<ast::Product>(s.terms[0]).factors.size() == 2);
        CHECK(as<ast::Product>(s.terms[1]).factors.size() == 2);
        CHECK(s.negated == std::vector<bool>{false, true});
    }
    SUBCASE("leading minus") {
        const auto& s = as<ast::Sum>(rhs("-a"));
        REQUIRE(s.terms.size() == 1);
        CHECK(s.negated == std::vector<bool>{true});
        CHECK(as<ast::TensorRef>(s.terms[0]).name == "a");

        const auto& t = as<ast::Sum>(rhs("-a b + c"));
        REQUIRE(t.terms.size() == 2);
        CHECK(t.negated == std::vector<bool>{true, false});
        CHECK(as<ast::Product>(t.terms[0]).factors.size() == 2);
    }
    SUBCASE("parenthesised sum in a product") {
        const auto& p = as<ast::Product>(rhs("(a + b) c"));
        REQUIRE(p.factors.size() == 2);
        CHECK(as<ast::Sum>(p.factors[0]).terms.size() == 2);
    }
}

TEST_CASE("expressions: numbers") {
    for (const std::string n : {"2", "0.5", "1e-3", "3.0E+2", "1024"}) {
        CAPTURE(n);
        const auto& p = as<ast::Product>(rhs(n + " x_{i}"));
        REQUIRE(p.factors.size() == 2);
        CHECK(as<ast::Number>(p.factors[0]).text == n);
        CHECK(as<ast::TensorRef>(p.factors[1]).name == "x");
    }
    CHECK(as<ast::Number>(rhs("0.5")).text == "0.5");
}

TEST_CASE("expressions: built-in calls") {
    SUBCASE("elementwise and linear functions by name") {
        for (const std::string f : {"phi", "relu", "gelu", "silu", "sigmoid", "tanh", "exp", "log",
                                    "sqrt", "neg", "scale"}) {
            CAPTURE(f);
            const auto e = rhs(f + "(x_{bd})");
            const auto& c = as<ast::Call>(e);
            CHECK(c.function == f);
            CHECK(c.indices.empty());
            CHECK(as<ast::TensorRef>(*c.arg).name == "x");
        }
    }
    SUBCASE("softmax and reductions carry an index") {
        struct Case {
            std::string text, function, index;
        };
        for (const auto& k : std::vector<Case>{{"softmax_v(x_{uv})", "softmax", "v"},
                                               {"Soft_v(x_{uv})", "softmax", "v"},
                                               {"\\texttt{Soft}_{v}(x_{uv})", "softmax", "v"},
                                               {"sum_s(x_{bs})", "sum", "s"},
                                               {"max_s(x_{bs})", "max", "s"},
                                               {"mean_s(x_{bs})", "mean", "s"},
                                               {"\\texttt{sum}_{s}(x_{bs})", "sum", "s"}}) {
            CAPTURE(k.text);
            const auto e = rhs(k.text);
            const auto& c = as<ast::Call>(e);
            CHECK(c.function == k.function);
            REQUIRE(c.indices.size() == 1);
            CHECK(c.indices[0].name == k.index);
            CHECK(c.indices[0].axes.empty());
        }
        CHECK(rhs("Soft_v(x_{uv})") == rhs("softmax_v(x_{uv})"));
        CHECK(rhs("\\texttt{Soft}_{v}(x_{uv})") == rhs("softmax_v(x_{uv})"));
    }
    SUBCASE("explicit collective AllReduce_{r_0}") {
        const auto e = rhs("AllReduce_{r_0}(x_{r_0})");
        const auto& c = as<ast::Call>(e);
        CHECK(c.function == "AllReduce");
        REQUIRE(c.indices.size() == 1);
        CHECK(c.indices[0].name == "r");
        CHECK(axis_names(c.indices[0].axes) == Strings{"0"});
        const auto& arg = as<ast::TensorRef>(*c.arg);
        CHECK(arg.name == "x");
        CHECK(axis_names(arg.dims.at(0).parts.at(0).axes) == Strings{"0"});
        CHECK(as<ast::Call>(rhs("AllGather_{i_0}(x_{i_0 j})")).function == "AllGather");
        CHECK(as<ast::Call>(rhs("ReduceScatter_{i_0}(x_{ij})")).function == "ReduceScatter");
        CHECK(as<ast::Call>(rhs("AllToAll_{j_0}(x_{i_0 j})")).function == "AllToAll");
    }
    SUBCASE("call argument is a whole expression") {
        const auto e = rhs("phi(W_{fd} x_{bd} + b_{f})");
        const auto& c = as<ast::Call>(e);
        const auto& s = as<ast::Sum>(*c.arg);
        REQUIRE(s.terms.size() == 2);
        CHECK(as<ast::Product>(s.terms[0]).factors.size() == 2);
    }
    SUBCASE("call inside a product (Megatron MLP)") {
        const auto e = rhs("W^1_{d r_0 f} phi(W^0_{r_0 f d'} x_{bsd'})");
        const auto& p = as<ast::Product>(e);
        REQUIRE(p.factors.size() == 2);
        CHECK(as<ast::TensorRef>(p.factors[0]).label == "1");
        const auto& c = as<ast::Call>(p.factors[1]);
        CHECK(c.function == "phi");
        CHECK(as<ast::Product>(*c.arg).factors.size() == 2);
    }
}

TEST_CASE("expressions: LaTeX and Unicode function spellings") {
    SUBCASE("\\phi, φ and ϕ are phi") {
        CHECK(as<ast::Call>(rhs("\\phi(x_{i})")).function == "phi");
        CHECK(rhs("\\phi(x_{i})") == rhs("phi(x_{i})"));
        CHECK(rhs("φ(x_{i})") == rhs("phi(x_{i})"));
        CHECK(rhs("ϕ(x_{i})") == rhs("phi(x_{i})"));
        CHECK(rhs("\\varphi(x_{i})") == rhs("phi(x_{i})"));
    }
    SUBCASE("\\sigma and σ are sigmoid") {
        CHECK(as<ast::Call>(rhs("\\sigma(x_{i})")).function == "sigmoid");
        CHECK(rhs("σ(x_{i})") == rhs("sigmoid(x_{i})"));
    }
    SUBCASE("\\exp, \\mathrm{relu}, \\operatorname{gelu}") {
        CHECK(rhs("\\exp(x_{i})") == rhs("exp(x_{i})"));
        CHECK(as<ast::Call>(rhs("\\mathrm{relu}(x_{i})")).function == "relu");
        CHECK(as<ast::Call>(rhs("\\operatorname{gelu}(x_{i})")).function == "gelu");
        CHECK(rhs("\\operatorname{gelu}(x_{i})") == rhs("gelu(x_{i})"));
    }
    SUBCASE("\\left( \\right) around the argument") {
        CHECK(rhs("\\phi \\left( x_{i} \\right)") == rhs("phi(x_{i})"));
        CHECK(rhs("\\phi \\left ( x_{i} \\right )") == rhs("phi(x_{i})"));
    }
    SUBCASE("operator form: \\texttt{sum}_{ u }\\exp \\left( x_{u} \\right)") {
        const auto e = rhs("\\texttt{sum}_{ u }\\exp \\left( x_{u} \\right)");
        const auto& outer = as<ast::Call>(e);
        CHECK(outer.function == "sum");
        REQUIRE(outer.indices.size() == 1);
        CHECK(outer.indices[0].name == "u");
        const auto& inner = as<ast::Call>(*outer.arg);
        CHECK(inner.function == "exp");
        CHECK(inner.indices.empty());
        CHECK(dim_names(as<ast::TensorRef>(*inner.arg)) == Strings{"u"});
        CHECK(e == rhs("sum_u(exp(x_{u}))"));
    }
    SUBCASE("function names in the middle of an einsum (LaTeX blog)") {
        const auto a = rhs("W^{ 1 }_{ dr _{0}f }\\phi \\left ( W^{ 0 }_{ r _{0}fd' } x_{ bsd' } "
                           "\\right )");
        CHECK(a == rhs("W^1_{d r_0 f} phi(W^0_{r_0 f d'} x_{bsd'})"));
    }
}

// =============================================================================================
// Section 4: statements

TEST_CASE("statements: equations") {
    SUBCASE("=") {
        const auto eq = equation("z_{bd} = x_{bd}");
        CHECK(eq.op == ast::AssignOp::Define);
        CHECK(eq.lhs.name == "z");
        CHECK(dim_names(eq.lhs) == Strings{"b", "d"});
        CHECK(as<ast::TensorRef>(eq.rhs).name == "x");
    }
    SUBCASE(":=") {
        const auto eq = equation("Z_{r_0 t} := Z_{r_0 t} + x_{r_0 t}");
        CHECK(eq.op == ast::AssignOp::Update);
        CHECK(eq.lhs.name == "Z");
        CHECK(as<ast::Sum>(eq.rhs).terms.size() == 2);
    }
    SUBCASE("+=") {
        const auto eq = equation("Z_{t} += x_{t}");
        CHECK(eq.op == ast::AssignOp::Accumulate);
        CHECK(as<ast::TensorRef>(eq.rhs).name == "x");
    }
    SUBCASE("no comment, range covers the statement") {
        const auto s = single_statement("z = x_{e} y_{e}");
        CHECK(s.comment.empty());
        CHECK(s.range.line == 1);
        CHECK(s.range.column == 1);
    }
}

TEST_CASE("statements: chains") {
    SUBCASE("two steps with ->") {
        const auto c = parse_as<ast::Chain>("x_{bsd} -> x_{(rc)sd} -> x_{r_0 c s d}");
        CHECK(dim_names(c.from) == Strings{"b", "s", "d"});
        REQUIRE(c.steps.size() == 2);
        CHECK(dim_names(c.steps[0].to) == Strings{"(r c)", "s", "d"});
        CHECK(dim_names(c.steps[1].to) == Strings{"r", "c", "s", "d"});
        CHECK(axis_names(c.steps[1].to.dims[0].parts[0].axes) == Strings{"0"});
        CHECK_FALSE(c.steps[0].expect.has_value());
        CHECK(c.steps[0].label.empty());
    }
    SUBCASE("arrow spellings") {
        const auto c = parse_as<ast::Chain>("x_{i_0 j} -> x_{ij}");
        CHECK(parse_as<ast::Chain>("x_{i_0 j} → x_{ij}") == c);
        CHECK(parse_as<ast::Chain>("x_{i_0 j} \\longrightarrow x_{ij}") == c);
        CHECK(parse_as<ast::Chain>("x_{i_0 j} \\rightarrow x_{ij}") == c);
        CHECK(parse_as<ast::Chain>("x_{i_0 j}\\rightarrow x_{ij}") == c);
    }
    SUBCASE("\\xrightarrow{all-gather}: an expectation for the step") {
        const auto c = parse_as<ast::Chain>("x_{i_0 j} \\xrightarrow{all-gather} x_{ij}");
        REQUIRE(c.steps.size() == 1);
        REQUIRE(c.steps[0].expect.has_value());
        REQUIRE(c.steps[0].expect->collectives.size() == 1);
        CHECK(c.steps[0].expect->collectives[0].kind == ast::CollectiveKind::AllGather);
        CHECK(c.steps[0].expect->collectives[0].axes.empty());
        CHECK(c.steps[0].label.empty());
        CHECK(dim_names(c.steps[0].to) == Strings{"i", "j"});
    }
    SUBCASE("\\xrightarrow{\\rm all-gather} is the same") {
        CHECK(parse_as<ast::Chain>("x_{i_0 j} \\xrightarrow{\\rm all-gather} x_{ij}") ==
              parse_as<ast::Chain>("x_{i_0 j} \\xrightarrow{all-gather} x_{ij}"));
        CHECK(parse_as<ast::Chain>("x_{i_0 j} \\xrightarrow{\\textrm{all-gather}} x_{ij}") ==
              parse_as<ast::Chain>("x_{i_0 j} \\xrightarrow{all-gather} x_{ij}"));
    }
    SUBCASE("\\xrightarrow with an axis") {
        const auto c = parse_as<ast::Chain>("x_{i_0 j} \\xrightarrow{all-to-all(0)} x_{i j_0}");
        REQUIRE(c.steps[0].expect.has_value());
        REQUIRE(c.steps[0].expect->collectives.size() == 1);
        CHECK(c.steps[0].expect->collectives[0].kind == ast::CollectiveKind::AllToAll);
        CHECK(axis_names(c.steps[0].expect->collectives[0].axes) == Strings{"0"});
    }
    SUBCASE("\\xrightarrow{TP matmul}: any other label is kept as text") {
        const auto c = parse_as<ast::Chain>("x_{bd} \\xrightarrow{TP matmul} x_{b d_0}");
        REQUIRE(c.steps.size() == 1);
        CHECK_FALSE(c.steps[0].expect.has_value());
        CHECK(c.steps[0].label == "TP matmul");
    }
    SUBCASE("mixed arrows, step by step") {
        const auto c = parse_as<ast::Chain>(
            "x_{bsd} \\longrightarrow x_{(rc)sd} \\xrightarrow{all-gather} x_{r c s d}");
        REQUIRE(c.steps.size() == 2);
        CHECK_FALSE(c.steps[0].expect.has_value());
        CHECK(c.steps[1].expect.has_value());
    }
}

TEST_CASE("statements: chains of products (the notation post's sequence-parallel step)") {
    const std::string blog = "W^0_{r'_0 f d'} x_{b r_0 t d'} \\xrightarrow{all-gather} "
                             "W^0_{r'_0 f d'} x_{b s d'}";
    SUBCASE("the moved factor is the one that changes; the others are context") {
        const auto c = parse_as<ast::Chain>(blog);
        CHECK(c.product());
        CHECK(c.moved == 1);
        CHECK(c.from.name == "x");
        CHECK(dim_names(c.from) == Strings{"b", "r", "t", "d"});
        REQUIRE(c.with.size() == 1);
        CHECK(c.with[0].name == "W");
        CHECK(c.with[0].label == "0");
        REQUIRE(c.steps.size() == 1);
        CHECK(c.steps[0].to.name == "x");
        CHECK(dim_names(c.steps[0].to) == Strings{"b", "s", "d"});
        REQUIRE(c.steps[0].with.size() == 1);
        CHECK(c.steps[0].with[0] == c.with[0]);
        REQUIRE(c.steps[0].expect.has_value());
        CHECK(c.steps[0].expect->collectives.at(0).kind == ast::CollectiveKind::AllGather);
        // Written order is kept: the factors of each side, W^0 first.
        const auto side = ast::chain_side(c.from, c.with, c.moved);
        REQUIRE(side.size() == 2);
        CHECK(side[0]->name == "W");
        CHECK(side[1]->name == "x");
    }
    SUBCASE("printed in written order, LaTeX and ASCII arrows, and parsed back the same") {
        const auto s = single_statement(blog);
        const auto text = parser::print(s);
        CHECK(text == "W^0_{r'_0 f d'} x_{b r_0 t d'} \\xrightarrow{all-gather} W^0_{r'_0 f d'} "
                      "x_{bsd'}");
        CHECK(single_statement(text) == s);
        const auto ascii = parse_as<ast::Chain>("W^0_{r'_0 f d'} x_{b r_0 t d'} -> W^0_{r'_0 f d'} "
                                                "x_{b s d'}");
        CHECK(ascii.moved == 1);
        CHECK(ascii.from == parse_as<ast::Chain>(blog).from);
        CHECK_FALSE(ascii.steps[0].expect.has_value());
    }
    SUBCASE("the moved factor first, and several arrows") {
        const auto c =
            parse_as<ast::Chain>("x_{i_0 j} W_{jk} -> x_{ij} W_{jk} -> x_{i j_0} W_{jk}");
        CHECK(c.moved == 0);
        CHECK(c.from.name == "x");
        REQUIRE(c.steps.size() == 2);
        CHECK(dim_names(c.steps[1].to) == Strings{"i", "j"});
        CHECK(axis_names(c.steps[1].to.dims[1].parts[0].axes) == Strings{"0"});
        CHECK(c.steps[1].with.at(0).name == "W");
    }
    SUBCASE("sides that differ parse (the checker reports them: S141, S142)") {
        const auto c = parse_as<ast::Chain>("W_{ik} x_{k_0 j} -> y_{ij}");
        CHECK(c.moved == 0);
        CHECK(c.from.name == "W");
        CHECK(c.with.size() == 1);
        CHECK(c.steps[0].with.empty());
        const auto two = parse_as<ast::Chain>("W_{i_0 k} x_{k_0 j} -> W_{ik} x_{kj}");
        CHECK(two.moved == 0);
        CHECK(two.with.at(0).name == "x");
    }
    SUBCASE("a single-tensor chain is no product") {
        const auto c = parse_as<ast::Chain>("x_{i_0 j} -> x_{ij}");
        CHECK_FALSE(c.product());
        CHECK(c.moved == 0);
        CHECK(c.steps[0].with.empty());
    }
    SUBCASE("parse --json lists each side's factors and the moved position") {
        const auto j = parser::to_json(single_statement(blog));
        INFO(j.dump(2));
        CHECK(j["type"] == "chain");
        CHECK(j["moved"] == 1);
        CHECK(j["from"]["name"] == "x");
        REQUIRE(j["product"].size() == 2);
        CHECK(j["product"][0]["name"] == "W");
        CHECK(j["steps"][0]["product"][1]["name"] == "x");
        CHECK_FALSE(parser::to_json(single_statement("x_{i_0 j} -> x_{ij}")).contains("product"));
    }
}

TEST_CASE("statements: expect") {
    using K = ast::CollectiveKind;
    SUBCASE("expect none") {
        const auto e = parse_as<ast::Expect>("expect none");
        CHECK(e.collectives.empty());
    }
    SUBCASE("expect all-reduce(0)") {
        const auto e = parse_as<ast::Expect>("expect all-reduce(0)");
        REQUIRE(e.collectives.size() == 1);
        CHECK(e.collectives[0].kind == K::AllReduce);
        CHECK(axis_names(e.collectives[0].axes) == Strings{"0"});
    }
    SUBCASE("a list in plan order") {
        const auto e = parse_as<ast::Expect>("expect all-gather(0), reduce-scatter(0)");
        REQUIRE(e.collectives.size() == 2);
        CHECK(e.collectives[0].kind == K::AllGather);
        CHECK(e.collectives[1].kind == K::ReduceScatter);
        CHECK(axis_names(e.collectives[1].axes) == Strings{"0"});
    }
    SUBCASE("axes left out") {
        const auto e = parse_as<ast::Expect>("expect all-reduce");
        REQUIRE(e.collectives.size() == 1);
        CHECK(e.collectives[0].kind == K::AllReduce);
        CHECK(e.collectives[0].axes.empty());
    }
    SUBCASE("named and several axes") {
        const auto e = parse_as<ast::Expect>("expect all-reduce(tp)");
        REQUIRE(e.collectives.size() == 1);
        CHECK(axis_names(e.collectives[0].axes) == Strings{"tp"});
        const auto f = parse_as<ast::Expect>("expect all-to-all(0, 1)");
        REQUIRE(f.collectives.size() == 1);
        CHECK(f.collectives[0].kind == K::AllToAll);
        CHECK(axis_names(f.collectives[0].axes) == Strings{"0", "1"});
    }
    SUBCASE("spellings") {
        const auto e = parse_as<ast::Expect>("expect all-reduce(0)");
        CHECK(parse_as<ast::Expect>("expect all_reduce(0)") == e);
        CHECK(parse_as<ast::Expect>("expect AllReduce(0)") == e);
        CHECK(parse_as<ast::Expect>("expect allreduce(0)") == e);
        CHECK(parse_as<ast::Expect>("expect permute").collectives.at(0).kind == K::Permute);
    }
    SUBCASE("inline \\textrm{(all-reduce)} is an Expect after the equation") {
        const std::string text = "z = x_{ r _{0} e } y_{ r _{0} e } \\quad \\textrm{(all-reduce)}";
        const auto p = program(text);
        REQUIRE(p.items.size() == 2);
        const auto eq = node_of<ast::Equation>(item_as<ast::Statement>(p, 0));
        CHECK(eq.lhs.name == "z");
        const auto e = node_of<ast::Expect>(item_as<ast::Statement>(p, 1));
        REQUIRE(e.collectives.size() == 1);
        CHECK(e.collectives[0].kind == K::AllReduce);
        CHECK(e.collectives[0].axes.empty());
        CHECK(p == program("z = x_{r_0 e} y_{r_0 e}\nexpect all-reduce"));
    }
    SUBCASE("inline \\text{(all-gather(0), reduce-scatter(0))}") {
        const auto p = program("z = x_{e} y_{e} \\text{(all-gather(0), reduce-scatter(0))}");
        REQUIRE(p.items.size() == 2);
        const auto e = node_of<ast::Expect>(item_as<ast::Statement>(p, 1));
        REQUIRE(e.collectives.size() == 2);
        CHECK(e.collectives[0].kind == K::AllGather);
        CHECK(e.collectives[1].kind == K::ReduceScatter);
    }
    SUBCASE("inline \\textrm{(none)}") {
        const auto p = program("z_{r_0} = x_{r_0 c} y_{r_0 c} \\textrm{(none)}");
        REQUIRE(p.items.size() == 2);
        CHECK(node_of<ast::Expect>(item_as<ast::Statement>(p, 1)).collectives.empty());
    }
}

// =============================================================================================
// Section 2: lexical rules

TEST_CASE("lexical: comments") {
    SUBCASE("trailing '#' comment belongs to the statement") {
        const auto s = single_statement("z = x_{e} y_{e}   # dot product");
        CHECK(s.comment == "dot product");
        CHECK(node_of<ast::Equation>(s).lhs.name == "z");
    }
    SUBCASE("trailing '%' comment") {
        CHECK(single_statement("mesh 4 % four devices").comment == "four devices");
    }
    SUBCASE("own-line comments are Comment items") {
        const auto p = program("# first\n% second\nmesh 4");
        REQUIRE(p.items.size() == 3);
        CHECK(item_as<ast::Comment>(p, 0).text == "first");
        CHECK(item_as<ast::Comment>(p, 1).text == "second");
        CHECK(item_as<ast::Statement>(p, 2).comment.empty());
        CHECK(item_as<ast::Comment>(p, 1).range.line == 2);
    }
    SUBCASE("a comment character ends the statement text") {
        CHECK(single_statement("y = a b # c d") == single_statement("y = a b # c d"));
        CHECK(node_of<ast::Equation>(single_statement("y = a b # c d")).rhs == rhs("a b"));
    }
}

TEST_CASE("lexical: statement separators") {
    SUBCASE("';' separates statements on one line") {
        const auto p = program("mesh 4; dim d=8");
        REQUIRE(p.items.size() == 2);
        CHECK(node_of<ast::MeshDecl>(item_as<ast::Statement>(p, 0)).axes.size() == 1);
        CHECK(node_of<ast::DimDecl>(item_as<ast::Statement>(p, 1)).bindings.size() == 1);
        CHECK(program("a = b;c = d;") == program("a = b\nc = d"));
    }
    SUBCASE("'\\' continues a line") {
        const auto p = program("y = a b \\\n    + c d");
        REQUIRE(p.items.size() == 1);
        const auto eq = node_of<ast::Equation>(item_as<ast::Statement>(p, 0));
        CHECK(eq.rhs == rhs("a b + c d"));
        CHECK(program("mesh \\\n 2x4") == program("mesh 2x4"));
    }
    SUBCASE("LaTeX align block: '\\\\' separates, '&' and \\nonumber are ignored") {
        const std::string text = "\\begin{align}\n"
                                 "y &= a b \\nonumber \\\\\n"
                                 "z &= c d \\nonumber\n"
                                 "\\end{align}\n";
        const auto p = program(text);
        REQUIRE(p.items.size() == 2);
        CHECK(p == program("y = a b\nz = c d"));
    }
    SUBCASE("align block on one line") {
        const auto p = program("\\begin{align} y &= a b \\\\ z &= c d \\end{align}");
        REQUIRE(p.items.size() == 2);
        CHECK(node_of<ast::Equation>(item_as<ast::Statement>(p, 0)).lhs.name == "y");
        CHECK(node_of<ast::Equation>(item_as<ast::Statement>(p, 1)).lhs.name == "z");
    }
}

TEST_CASE("lexical: LaTeX noise") {
    const auto plain = single_statement("y = a b");
    SUBCASE("trailing '\\ .' and ','") {
        CHECK(single_statement("y = a b \\ .") == plain);
        CHECK(single_statement("y = a b.") == plain);
        CHECK(single_statement("y = a b ,") == plain);
        CHECK(single_statement("y = a b \\ ,") == plain);
    }
    SUBCASE("\\quad, \\qquad, \\, and \\ ") {
        CHECK(single_statement("y = a \\quad b") == plain);
        CHECK(single_statement("y \\qquad = a\\,b") == plain);
        CHECK(single_statement("y = a \\ b \\quad") == plain);
    }
    SUBCASE("'$' is ignored") {
        CHECK(single_statement("$y = a b$") == plain);
        CHECK(single_statement("$$ y = a b $$") == plain);
    }
    SUBCASE("\\textrm{...:} caption is a Comment") {
        const auto p = program("\\textrm{dot product:}\\quad z = x_{ k } y_{ k }");
        REQUIRE(p.items.size() == 2);
        CHECK(item_as<ast::Comment>(p, 0).text == "dot product:");
        CHECK(node_of<ast::Equation>(item_as<ast::Statement>(p, 1)) == equation("z = x_{k} y_{k}"));
    }
    SUBCASE("caption inside an align block") {
        const std::string text =
            "\\begin{align}\n"
            "\\textrm{dot product:}&\\quad z = x_{ k } y_{ k } \\nonumber\\\\\n"
            "\\textrm{matmul:}&\\quad C_{ mn } = A_{ mk } B_{ kn } \\nonumber\n"
            "\\end{align}";
        const auto p = program(text);
        REQUIRE(p.items.size() == 4);
        CHECK(item_as<ast::Comment>(p, 0).text == "dot product:");
        CHECK(node_of<ast::Equation>(item_as<ast::Statement>(p, 1)).lhs.name == "z");
        CHECK(item_as<ast::Comment>(p, 2).text == "matmul:");
        CHECK(node_of<ast::Equation>(item_as<ast::Statement>(p, 3)).lhs.name == "C");
    }
}

TEST_CASE("lexical: blank lines") {
    SUBCASE("several blank lines collapse into one BlankLine") {
        const auto p = program("a = b\n\n\n\nc = d");
        REQUIRE(p.items.size() == 3);
        CHECK(std::holds_alternative<ast::Statement>(p.items[0]));
        CHECK(std::holds_alternative<ast::BlankLine>(p.items[1]));
        CHECK(std::holds_alternative<ast::Statement>(p.items[2]));
        CHECK(p == program("a = b\n\nc = d"));
    }
    SUBCASE("whitespace-only lines are blank") {
        CHECK(program("a = b\n   \n\t\nc = d") == program("a = b\n\nc = d"));
    }
    SUBCASE("CRLF line ends read like LF") {
        CHECK(program("mesh 4\r\n# c\r\n\r\ny = a b  # t\r\n") ==
              program("mesh 4\n# c\n\ny = a b  # t\n"));
        CHECK(program("y = a \\\r\n  + b\r\n") == program("y = a + b"));
    }
    SUBCASE("no BlankLine between adjacent lines, at the start or at the end") {
        CHECK(program("a = b\nc = d").items.size() == 2);
        CHECK(program("\n\na = b\n\n\n").items.size() == 1);
    }
}

// =============================================================================================
// Source ranges

TEST_CASE("source ranges") {
    SUBCASE("tensor and index ranges on line 1") {
        const auto eq = equation("z = x_{r_0 e} y_{e}");
        const auto& p = as<ast::Product>(eq.rhs);
        const auto& x = as<ast::TensorRef>(p.factors[0]);
        CHECK(x.range.line == 1);
        CHECK(x.range.column == 5);
        CHECK(x.range.end_column == 14);
        const auto& r = x.dims[0].parts[0];
        CHECK(r.range.column == 8);
        CHECK(r.range.end_column == 11);
        CHECK(x.dims[1].parts[0].range.column == 12);
        CHECK(as<ast::TensorRef>(p.factors[1]).range.column == 15);
        CHECK(eq.lhs.range.column == 1);
        CHECK(eq.lhs.range.end_column == 2);
    }
    SUBCASE("columns count code points, not bytes") {
        const std::string text = "mesh 4\nz = x_{r₀ e} w_{e}";
        const auto p = program(text);
        REQUIRE(p.items.size() == 2);
        const auto eq = node_of<ast::Equation>(item_as<ast::Statement>(p, 1));
        const auto& prod = as<ast::Product>(eq.rhs);
        const auto& x = as<ast::TensorRef>(prod.factors[0]);
        CHECK(x.range.line == 2);
        CHECK(x.range.column == 5);
        CHECK(x.range.end_column == 13);
        const auto& r0 = x.dims[0].parts[0];
        CHECK(r0.range.line == 2);
        CHECK(r0.range.column == 8);
        CHECK(r0.range.end_column == 10);
        const auto& e = x.dims[1].parts[0];
        CHECK(e.range.line == 2);
        CHECK(e.range.column == 11); // byte column would be 13
        CHECK(e.range.end_column == 12);
        CHECK(as<ast::TensorRef>(prod.factors[1]).range.column == 14);
    }
    SUBCASE("ranges on a continued line") {
        const auto eq = equation("y = a \\\n  + b_{i}");
        const auto& s = as<ast::Sum>(eq.rhs);
        const auto& b = as<ast::TensorRef>(s.terms[1]);
        CHECK(b.range.line == 2);
        CHECK(b.range.column == 5);
        CHECK(b.dims[0].parts[0].range.line == 2);
        CHECK(b.dims[0].parts[0].range.column == 8);
    }
    SUBCASE("statement range after ';'") {
        const auto p = program("a = b; c = d");
        REQUIRE(p.items.size() == 2);
        const auto& s = item_as<ast::Statement>(p, 1);
        CHECK(s.range.line == 1);
        CHECK(s.range.column == 8);
    }
}

// =============================================================================================
// The statement from the issue

TEST_CASE("the reduce-scatter display from the blog post") {
    const std::string blog = "z_{ r _{0}c } = W_{ r c r _{0}' f } x_{ r _{0}'f } \\quad "
                             "\\textrm{(reduce-scatter)} \\ .";
    const std::string clean = "z_{r_0 c} = W_{r c r'_0 f} x_{r'_0 f}\nexpect reduce-scatter";
    const auto a = program(blog);
    const auto b = program(clean);
    REQUIRE(a.items.size() == 2);
    CHECK(a == b);
    const auto eq = node_of<ast::Equation>(item_as<ast::Statement>(a, 0));
    CHECK(dim_names(eq.lhs) == Strings{"r", "c"});
    const auto& w = as<ast::TensorRef>(as<ast::Product>(eq.rhs).factors.at(0));
    REQUIRE(w.dims.size() == 4);
    CHECK(w.dims[2].parts[0].name == "r");
    CHECK(w.dims[2].parts[0].primes == 1);
    CHECK(axis_names(w.dims[2].parts[0].axes) == Strings{"0"});
    const auto e = node_of<ast::Expect>(item_as<ast::Statement>(a, 1));
    REQUIRE(e.collectives.size() == 1);
    CHECK(e.collectives[0].kind == ast::CollectiveKind::ReduceScatter);
}

// =============================================================================================
// Regressions of bugs found while writing these tests.

// NOTATION.md section 4 lists `sigmoid` and the LaTeX spelling `\sigma`; plain `sigma` is not a
// function name, so it is an ordinary tensor (a standard deviation, say).
TEST_CASE("ASCII 'sigma' is a tensor name (denominator)") {
    const auto e = rhs("x_{bd} / sigma_{b}");
    const auto& q = as<ast::Quotient>(e);
    CHECK(as<ast::TensorRef>(*q.den).name == "sigma");
}

TEST_CASE("ASCII 'sigma' is a tensor name (factor)") {
    const auto p = rhs("sigma_{b} x_{bd}");
    REQUIRE(as<ast::Product>(p).factors.size() == 2);
    CHECK(as<ast::TensorRef>(as<ast::Product>(p).factors[0]).name == "sigma");
}

TEST_CASE("a plain function name without parentheses is an error, not a tensor") {
    // NOTATION.md section 4: call := fname [ '_' indexlist ] '(' expr ')'. Reading `scale_{i}`
    // as a tensor would silently turn a typo into a product with an undefined input, so a
    // plain function name must be followed by '(' (P109). LaTeX spellings may apply to the
    // next factor (`\texttt{sum}_{u}\exp(...)`), tested with the constructs.
    const auto r = parse_text("y_{i} = scale_{i} x_{i}");
    REQUIRE(r.diagnostics.size() == 1);
    CHECK(r.diagnostics[0].code == "P109");
    CHECK(r.diagnostics[0].range.column == 18);
}

TEST_CASE("tensors named like a keyword with a label or brackets") {
    // grammar.hpp: "A declaration keyword commits only when no assignment follows (`dim = ...`
    // is a tensor)"; `dim_{i} = ...` works, the same tensor with a label or brackets does not.
    SUBCASE("subscript (works)") {
        CHECK(equation("dim_{i} = x_{i}").lhs.name == "dim");
    }
    SUBCASE("label") {
        CHECK(equation("dim^0 = x").lhs.label == "0");
    }
    SUBCASE("brackets") {
        CHECK(equation("mesh[i] = a[i]").lhs.style == ast::IndexStyle::Bracket);
    }
    SUBCASE("\\xrightarrow") {
        CHECK(parse_as<ast::Chain>("dim \\xrightarrow{all-gather} x").steps.size() == 1);
    }
    SUBCASE("an assignment right after the keyword") {
        // decl_kw's not_at<assign_op> matches the kept assign_op and the declaration fails:
        // its attempt must leave nothing behind (a stray node would be a P299 statement).
        // Every operator, and a declaration after it. (The marks of flat_tree.hpp's
        // seq_fails_clean are exercised by the round trips of test_roundtrip.cpp: a rule that
        // skips a needed mark fails them.)
        const auto define = equation("dim = x_{i}");
        CHECK(define.op == ast::AssignOp::Define);
        CHECK(std::get<ast::TensorRef>(define.rhs.node).name == "x");
        CHECK(equation("mesh := y").op == ast::AssignOp::Update);
        CHECK(equation("split += z_{i}").op == ast::AssignOp::Accumulate);
        const auto r = parse_text("dim = x\ndim b=2\n");
        CHECK(r.diagnostics.empty());
        REQUIRE(r.program.items.size() == 2);
        CHECK(std::holds_alternative<ast::DimDecl>(
            std::get<ast::Statement>(r.program.items[1]).node));
    }
}

namespace shardscope::test {

TEST_CASE("arrow labels are read like expect lines (named axes stay whole)") {
    // The label once went through a hand parser that split `tp` into axes t and p.
    const auto s = single_statement("x_{i_{tp} j} \\xrightarrow{all-gather(tp), none} x_{ij}");
    const auto& chain = std::get<ast::Chain>(s.node);
    // `all-gather(tp), none` is not a collective list: it stays a label.
    CHECK(!chain.steps[0].expect);
    CHECK(chain.steps[0].label == "all-gather(tp), none");
    const auto t = single_statement("x_{i_{tp} j} \\xrightarrow{all-gather(tp)} x_{ij}");
    const auto& step = std::get<ast::Chain>(t.node).steps[0];
    REQUIRE(step.expect);
    REQUIRE(step.expect->collectives.size() == 1);
    CHECK(step.expect->collectives[0].kind == ast::CollectiveKind::AllGather);
    REQUIRE(step.expect->collectives[0].axes.size() == 1);
    CHECK(step.expect->collectives[0].axes[0].name == "tp");
}

} // namespace shardscope::test

namespace {

/// Every range in an expression, with what it should be: SourceFile::range of its bytes.
void check_ranges(const SourceFile& file, const ast::SourceRange& r) {
    const auto want = file.range(r.offset, r.length);
    CHECK_MESSAGE(r.same_place(want),
                  "range at byte " << r.offset << " (+" << r.length << ") is line " << r.line << ":"
                                   << r.column << " to " << r.end_line << ":" << r.end_column
                                   << ", not " << want.line << ":" << want.column);
}
void check_ranges(const SourceFile& file, const ast::Index& ix) {
    check_ranges(file, ix.range);
    for (const auto& a : ix.axes)
        check_ranges(file, a.range);
    for (const auto& a : ix.open_axes)
        check_ranges(file, a.range);
}
void check_ranges(const SourceFile& file, const ast::TensorRef& t) {
    check_ranges(file, t.range);
    for (const auto& d : t.dims) {
        check_ranges(file, d.range);
        for (const auto& p : d.parts)
            check_ranges(file, p);
    }
    for (const auto& a : t.partial_axes)
        check_ranges(file, a.range);
}
void check_ranges(const SourceFile& file, const ast::Expr& e) {
    check_ranges(file, e.range);
    std::visit(
        [&](const auto& n) {
            using T = std::decay_t<decltype(n)>;
            if constexpr (std::is_same_v<T, ast::TensorRef>) {
                check_ranges(file, n);
            } else if constexpr (std::is_same_v<T, ast::Call>) {
                for (const auto& ix : n.indices)
                    check_ranges(file, ix);
                check_ranges(file, *n.arg);
            } else if constexpr (std::is_same_v<T, ast::Product>) {
                for (const auto& f : n.factors)
                    check_ranges(file, f);
            } else if constexpr (std::is_same_v<T, ast::Quotient>) {
                check_ranges(file, *n.num);
                check_ranges(file, *n.den);
            } else if constexpr (std::is_same_v<T, ast::Sum>) {
                for (const auto& t : n.terms)
                    check_ranges(file, t);
            }
        },
        e.node);
}

} // namespace

TEST_CASE("positions: every node's range is SourceFile::range of its bytes") {
    // The converter positions most nodes by arithmetic on the line of the node before; this
    // must give what SourceFile::range gives, on ASCII and non-ASCII lines, across
    // continuation lines, with several statements on a line and LaTeX whitespace.
    const std::string text =
        "mesh dp=4 tp=8\n"
        "z_{b_{dp} s d} = W^1_{d r_{tp} f} phi(W^0_{r_{tp} f e} x_{b_{dp} s e})\n"
        "y_{b s d} = \\left( a_{b s d} + b_{b s d} \\right) ; u_{i} = φ(v_{i}) / 2\n"
        "w_{i₀ j} = q_{i₀ j} \\cdot \\frac{p_{i₀ j}}{3} \\\n"
        "  + r_{i₀ j}\n"
        "C[I, K]{U_tp} = A[I, J_{tp}] B[J_{tp}, K] & \\quad\n"
        "o_{(r_{dp} c) f_?} = h_{(r_{dp} c) f_?}\n";
    const SourceFile file("test.ein", text);
    const auto result = parser::parse(file);
    REQUIRE_MESSAGE(!result.has_errors(), test::diagnostics_text(text, result));
    int equations = 0;
    for (const auto& item : result.program.items) {
        const auto* s = std::get_if<ast::Statement>(&item);
        if (!s) continue;
        check_ranges(file, s->range);
        if (const auto* eq = std::get_if<ast::Equation>(&s->node)) {
            ++equations;
            check_ranges(file, eq->lhs);
            check_ranges(file, eq->rhs);
        }
    }
    CHECK(equations == 6);

    // line_span: the line of every byte, as range() sees it.
    for (std::size_t off = 0; off <= text.size(); ++off) {
        const auto span = file.line_span(off);
        const auto r = file.range(off, 0);
        CHECK(span.line == r.line);
        CHECK(span.start <= off);
        CHECK(off <= span.end);
        CHECK((span.end == text.size() || text[span.end] == '\n'));
        if (span.ascii) CHECK(r.column == off - span.start + 1);
    }
    CHECK(file.line_span(text.find("φ")).ascii == false);
    CHECK(file.line_span(0).ascii == true);
}

TEST_CASE("an inline expectation that fails drops the statement before it") {
    // The converter appends a chunk's statements as it reads them: an error in the second
    // (the inline expectation) must leave neither.
    const auto r = test::parse_text("z_{i} = x_{i} \\textrm{(all-bogus)}\n");
    CHECK(r.program.items.empty());
    REQUIRE(r.diagnostics.size() == 1);
    CHECK(r.diagnostics[0].code == "P200");
}

TEST_CASE("splitter: a separator inside braces, escaped and stray braces, captions") {
    // The splitter counts braces only where a `;` or a caption asks (parser/splitter.cpp).
    auto kinds = [](std::string_view text) {
        std::string k;
        for (const auto& p : parser::split_statements(text))
            k += p.kind == parser::Piece::Kind::Statement ? 'S'
                 : p.kind == parser::Piece::Kind::Comment ? 'C'
                                                          : 'L';
        return k;
    };
    CHECK(kinds("a_{x;y} = b; c = d") == "SS");   // the first `;` is inside braces
    CHECK(kinds("a\\{ ; b") == "SS");             // an escaped brace opens nothing
    CHECK(kinds("a_{b} } ; c") == "SS");          // a stray `}` leaves the depth at zero
    CHECK(kinds("{\n; b") == "SLS");              // a line end closes every brace
    CHECK(kinds("x_{\\textrm{a b}} = y") == "S"); // inside braces: no caption
    CHECK(kinds("\\textrm{a b} x = y") == "CS");
    CHECK(kinds("a_{x # c\n; b") == "SCLS");
    CHECK(kinds("a_{x \\\\ b; c") == "SS"); // `\\` separates; the brace stays open
}
