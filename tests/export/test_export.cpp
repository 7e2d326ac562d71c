// Exporters: the LaTeX export of every sample (and of a derived backward pass) parses back to
// the same plans, with its \textrm{(...)} expectations passing; the Python exports name the
// plan's placements and collectives.
#include "codegen/export.hpp"
#include "codegen/preludes.hpp"
#include "exec/functions.hpp"
#include "frontend/document.hpp"
#include "frontend/gradients.hpp"
#include "parser/functions.hpp"
#include "parser/parser.hpp"
#include "semantics/checker.hpp"
#include "semantics/grad.hpp"
#include "semantics/report.hpp"

#include "tests/read_file.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

using namespace shardscope;
using test::read_file;

namespace {

struct Checked {
    parser::ParseResult parsed;
    semantics::Plan plan;
    std::string diagnostics;
};

Checked check_text(const std::string& name, const std::string& text, bool small) {
    semantics::CheckOptions o;
    o.small_defaults = small;
    o.ignore_dims = small;
    auto checked = frontend::check_text(name, text, o);
    const SourceFile& f = *checked.source;
    Checked c;
    c.parsed = std::move(checked.parsed);
    for (const auto& d : c.parsed.diagnostics)
        c.diagnostics += format_diagnostic(f, d);
    if (c.parsed.has_errors()) return c; // the parse errors only, no plan
    c.plan = std::move(checked.plan);
    for (const auto& d : c.plan.diagnostics)
        if (d.severity != Severity::Note) c.diagnostics += format_diagnostic(f, d);
    return c;
}

/// The LaTeX export of `text` reads back to the same plans.
void round_trip(const std::string& name, const std::string& text, bool small) {
    const auto a = check_text(name, text, small);
    REQUIRE(a.plan.errors() == 0);
    const auto tex = codegen::export_latex(a.parsed.program, a.plan);
    const auto b = check_text(name + ".tex", tex, small);
    INFO(name, "\n", tex, "\n", b.diagnostics);
    REQUIRE(!b.parsed.has_errors());
    CHECK(b.plan.errors() == 0); // the \textrm{(...)} expectations hold
    REQUIRE(b.plan.statements.size() == a.plan.statements.size());
    for (std::size_t i = 0; i < a.plan.statements.size(); ++i) {
        const auto& x = a.plan.statements[i];
        const auto& y = b.plan.statements[i];
        CAPTURE(x.source);
        CHECK(semantics::collectives_of(b.plan.mesh, y) ==
              semantics::collectives_of(a.plan.mesh, x));
        CHECK(y.result.placements == x.result.placements);
        CHECK(y.result.global_shape == x.result.global_shape);
        REQUIRE(y.operands.size() == x.operands.size());
        for (std::size_t o = 0; o < x.operands.size(); ++o)
            CHECK(y.operands[o].placements == x.operands[o].placements);
    }
}

} // namespace

TEST_CASE("LaTeX round trip: every sample parses back to the same plans") {
    int files = 0;
    for (const auto& e : std::filesystem::directory_iterator(SHARDSCOPE_SAMPLES_DIR)) {
        if (e.path().extension() != ".ein") continue;
        ++files;
        const auto text = read_file(e.path().string());
        round_trip(e.path().filename().string(), text, false);
        round_trip(e.path().filename().string(), text, true);
    }
    CHECK(files >= 10); // not passing by finding no sample
}

TEST_CASE("LaTeX round trip: a derived backward pass, with its derivative functions") {
    const auto g = frontend::derive_gradients(
        SourceFile("m.ein", read_file(SHARDSCOPE_SAMPLES_DIR "/megatron_mlp.ein")));
    REQUIRE(g.errors() == 0);
    round_trip("megatron_grad.ein", g.text, false);
}

TEST_CASE("LaTeX: placements written out, caption and collectives") {
    const auto c = check_text("t.ein",
                              "mesh 4\nh_{b r_0 f} = W_{r_0 f d} x_{bd}\n"
                              "z_{bd} = V_{d r_0 f} h_{brf}\n",
                              false);
    const auto tex = codegen::export_latex(c.parsed.program, c.plan);
    // The use of h inherits S on r: written out.
    CHECK(tex.find("z_{bd} = V_{d r_0 f} h_{b r_0 f} \\quad \\textrm{(all-reduce(0))}") !=
          std::string::npos);
    CHECK(tex.find("\\textrm{$V$ S(1), $h$ S(1) $\\to$ $z$ R}&") != std::string::npos);
    CHECK(tex.find("\\begin{align}") != std::string::npos);
}

TEST_CASE("Python exports: the plan's placements, collectives and functions") {
    const auto c =
        check_text("t.ein", "mesh 2x2\nz_{i_0 j} = tanh(x_{i_0 k_1} w_{k_1 j})\n", false);
    const auto jax = codegen::export_jax(c.parsed.program, c.plan);
    CHECK(jax.find("MESH_SHAPE = (2, 2, )") != std::string::npos);
    CHECK(jax.find("# all-reduce(1)") != std::string::npos);
    CHECK(jax.find("v2 = jnp.einsum(\"ab,bc->ac\", v0, v1)") != std::string::npos);
    CHECK(jax.find("(\"0\", \"1\", )") != std::string::npos); // x: i on 0, k on 1
    CHECK(jax.find("fn(\"tanh\", False)") != std::string::npos);
    const auto torch = codegen::export_torch(c.parsed.program, c.plan);
    CHECK(torch.find("[Shard(0), Shard(1)]") != std::string::npos);
    CHECK(torch.find("[Shard(0), Partial()]") != std::string::npos);
    CHECK(torch.find("v2 = torch.einsum(\"ab,bc->ac\", v0, v1)") != std::string::npos);
    CHECK(torch.find("torchrun --nproc-per-node 4") != std::string::npos);
    CHECK(codegen::parse_export_target("jax") == codegen::ExportTarget::Jax);
    CHECK(!codegen::parse_export_target("tf"));
}

namespace {

/// Where `needle` starts in `text`, failing the test when it is not there.
std::size_t position(const std::string& text, const std::string& needle) {
    const auto at = text.find(needle);
    CHECK_MESSAGE(at != std::string::npos, needle);
    return at;
}

/// A chain of products that moves A and B, then statements reading both (issue 19).
const std::string kChainProducts = "mesh 2x2\ndim i=8 j=8 k=8\n"
                                   "A_{i_0 j_1} B_{j k_0} -> A_{i j} B_{j_1 k}\n"
                                   "z_{ik} = A_{ij} B_{jk}\n"
                                   "u_{jk} = relu(B_{jk})\n";

/// The chain in a repeated layer (line 6), moving A and B there and back.
const std::string kChainInRepeat =
    "mesh 2x2\ndim i=8 j=8 k=8\nA_{i_0 j_1} = X_{i_0 j_1}\nB_{j k_0} = Y_{j k_0}\nrepeat l=2\n"
    "A_{i_0 j_1} B_{j k_0} -> A_{i j} B_{j_1 k} -> A_{i_0 j_1} B_{j k_0}\n"
    "z_{ik} = A_{ij} B_{jk}\nend\n";

} // namespace

TEST_CASE("Python exports: a chain of products stores every factor it moves") {
    const auto c = check_text("t.ein", kChainProducts, false);
    INFO(c.diagnostics);
    REQUIRE(c.plan.errors() == 0);
    const auto& sp = c.plan.statements.at(0);
    REQUIRE(sp.also_stored.size() == 1u);
    const auto b = std::to_string(sp.also_stored[0]);
    REQUIRE(sp.values.at(sp.also_stored[0]).layout.tensor == "B");
    SUBCASE("JAX: the jitted chain returns B too, stored in the chain's layout before A") {
        const auto jax = codegen::export_jax(c.parsed.program, c.plan);
        INFO(jax);
        position(jax, "        return out, v" + b + "\n");
        // A replicated, B sharded on j over axis 1: the out_shardings say both.
        position(jax, "out_shardings=(named((None, None, )), named((\"1\", None, )), ))");
        const auto store_b =
            position(jax, "    store(3, \"B\", outs[1], False, (\"1\", None, ), reported=False)\n");
        const auto store_a = position(jax, "    store(3, \"A\", outs[0], False, (None, None, ))\n");
        CHECK(store_b < store_a); // exec's order: the other moved factors, then the target
        // The statements after the chain read B from the state (as the chain stored it).
        CHECK(store_a < position(jax, "line 4: z_{ik} = A_{ij} B_{jk}"));
    }
    SUBCASE("torch: B stored with its DTensor placements before A") {
        const auto torch = codegen::export_torch(c.parsed.program, c.plan);
        INFO(torch);
        const auto store_b = position(torch, "    store(3, \"B\", v" + b +
                                                 ", False, [Replicate(), Shard(0)], "
                                                 "reported=False)\n");
        const auto store_a =
            position(torch, "    store(3, \"A\", out, False, [Replicate(), Replicate()])\n");
        CHECK(store_b < store_a);
    }
    SUBCASE("a chain of one tensor stores only its target") {
        const auto one = check_text("t.ein", "mesh 4\nx_{i_0 j} -> x_{ij}\n", false);
        REQUIRE(one.plan.errors() == 0);
        const auto jax = codegen::export_jax(one.parsed.program, one.plan);
        CHECK(jax.find(", reported=False)\n") == std::string::npos);
        CHECK(jax.find("        return out\n") != std::string::npos);
        CHECK(codegen::export_torch(one.parsed.program, one.plan).find(", reported=False)\n") ==
              std::string::npos);
    }
    SUBCASE("a plan storing a value the statement does not have: ExportError") {
        auto plan = c.plan;
        plan.statements[0].also_stored[0] = static_cast<int>(sp.values.size());
        CHECK_THROWS_AS(codegen::export_jax(c.parsed.program, plan), codegen::ExportError);
        CHECK_THROWS_AS(codegen::export_torch(c.parsed.program, plan), codegen::ExportError);
    }
}

TEST_CASE("Python exports: a statement past 52 indices is refused at its place") {
    // 53 indices: a..z, a'..z', a''; einsum has one letter per index and 52 letters.
    std::string idx;
    for (const char* primes : {"", "'", "''"})
        for (char c = 'a'; c <= 'z'; ++c) {
            if (primes == std::string("''") && c > 'a') break;
            idx += std::string(idx.empty() ? "" : " ") + c + primes;
        }
    const auto c = check_text("t.ein", "mesh 2\n\ny_{" + idx + "} = x_{" + idx + "}\n", true);
    REQUIRE(c.plan.errors() == 0);
    for (const bool jax : {true, false}) {
        try {
            (void)(jax ? codegen::export_jax(c.parsed.program, c.plan)
                       : codegen::export_torch(c.parsed.program, c.plan));
            FAIL("exported a statement of 53 indices");
        } catch (const codegen::ExportError& e) {
            CHECK(std::string(e.what()).find("more than 52 indices") != std::string::npos);
            CHECK(e.range.line == 3);
            CHECK(e.range.column == 1);
        }
    }
}

TEST_CASE("Python exports: a chain of products in a repeat block stores B in each layer's tape") {
    const auto c = check_text("t.ein", kChainInRepeat, false);
    INFO(c.diagnostics);
    REQUIRE(c.plan.errors() == 0);
    REQUIRE(c.plan.repeats.size() == 1u);
    // (No structured binding: clang 14 refuses one captured by INFO's lambda.)
    for (const auto& code : {codegen::export_jax(c.parsed.program, c.plan),
                             codegen::export_torch(c.parsed.program, c.plan)}) {
        INFO(code);
        const auto loop = position(code, "    for layer in range(2):\n");
        // Inside the loop (indented twice), before the layer's values are saved.
        const auto store_b = code.find("        store(", loop);
        REQUIRE(store_b != std::string::npos);
        CHECK(code.compare(store_b, 20, "        store(6, \"B\"") == 0);
        const auto saved =
            position(code, "        saved_0.append({k: state[k] for k in (\"A\", \"B\", ");
        CHECK(loop < store_b);
        CHECK(store_b < saved);
    }
}

TEST_CASE("LaTeX: a chain of products as written, every moved factor in its placements") {
    const auto c = check_text("t.ein",
                              "mesh 4\ndim i=8 j=8 k=8\n"
                              "A_{i_0 j} C_{jk} B_{j k_0} \\xrightarrow{all-gather} "
                              "A_{ij} C_{jk} B_{j k_0} -> A_{ij} C_{jk} B_{jk}\n",
                              false);
    INFO(c.diagnostics);
    REQUIRE(c.plan.errors() == 0);
    const auto tex = codegen::export_latex(c.parsed.program, c.plan);
    INFO(tex);
    // Every side keeps its context factor C, the arrow its label; A and B in their layouts.
    CHECK(tex.find("A_{i_0 j} C_{jk} B_{j k_0} \\xrightarrow{all-gather} A_{ij} "
                   "C_{jk} B_{j k_0} \\longrightarrow A_{ij} C_{jk} B_{jk} \\quad") !=
          std::string::npos);
    // The caption ends with everything the chain stores.
    CHECK(tex.find("$\\to$ $A$ R, $B$ R}") != std::string::npos);
    round_trip("chain_products.ein", kChainProducts, false);
    round_trip("chain_products_small.ein", kChainProducts, true);
}

namespace {

/// The keys of the `FUNCTIONS = {...}` dictionary of a Python prelude.
std::set<std::string> python_function_names(std::string_view prelude) {
    std::set<std::string> names;
    const auto start = prelude.find("FUNCTIONS = {");
    const auto end = prelude.find("\n}", start);
    REQUIRE(start != std::string_view::npos);
    REQUIRE(end != std::string_view::npos);
    std::istringstream lines{std::string(prelude.substr(start, end - start))};
    std::string line;
    while (std::getline(lines, line)) {
        const auto q = line.find('"');
        const auto q2 = q == std::string::npos ? q : line.find("\":", q + 1);
        if (q2 != std::string::npos) names.insert(line.substr(q + 1, q2 - q - 1));
    }
    return names;
}

} // namespace

TEST_CASE("exporters, executor and parser share one function vocabulary") {
    std::set<std::string> exec_names;
    for (const auto& [name, fn] : exec::kNamedFunctions)
        exec_names.insert(std::string(name));
    // The generated scripts compute what exec computes, name for name.
    CHECK(python_function_names(codegen::preludes::jax_functions) == exec_names);
    CHECK(python_function_names(codegen::preludes::torch_functions) == exec_names);
    // Every built-in elementwise or linear function of the language has a meaning there.
    int checked = 0;
    for (const auto& f : builtin_functions()) {
        if (f.kind != ast::FunctionKind::Elementwise && f.kind != ast::FunctionKind::Linear)
            continue;
        ++checked;
        CHECK_MESSAGE(exec_names.count(std::string(f.name)) == 1, f.name);
    }
    CHECK(checked >= 11);
}
