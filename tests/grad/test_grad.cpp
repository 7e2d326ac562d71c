// Gradients (semantics/grad): the worked examples, the backward collectives of the
// parallelism schemes, and for every rule and every sample: the derived statements' plans run
// on sim ranks and verify (exec), and the single-device values of the derived gradients match
// central finite differences of the forward program, for the loss sum_o <o, go> over the
// outputs o with their seeds go.
#include "exec/data.hpp"
#include "exec/layout.hpp"
#include "exec/reference.hpp"
#include "exec/run.hpp"
#include "frontend/document.hpp"
#include "frontend/gradients.hpp"
#include "parser/parser.hpp"
#include "parser/printer.hpp"
#include "semantics/checker.hpp"
#include "semantics/grad.hpp"
#include "semantics/report.hpp"

#include "tests/read_file.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace shardscope;
using semantics::GradOptions;
using semantics::GradResult;
using test::read_file;

namespace {

/// Small ranges, as `exec --small`.
GradOptions small_options(std::vector<std::string> wrt = {}) {
    GradOptions o;
    o.wrt = std::move(wrt);
    o.check.small_defaults = true;
    o.check.ignore_dims = true;
    return o;
}

std::string diagnostics_text(const GradResult& r) {
    SourceFile f("grad.ein", r.text);
    std::string out;
    for (const auto& d : r.diagnostics)
        out += format_diagnostic(f, d);
    return out;
}

/// The canonical form of one statement.
std::string canonical(const std::string& statement) {
    SourceFile f("s.ein", "mesh 4\nfn dphi elementwise\n" + statement + "\n");
    const auto p = parser::parse(f);
    REQUIRE_MESSAGE(!p.has_errors(), statement);
    for (const auto& item : p.program.items)
        if (const auto* s = std::get_if<ast::Statement>(&item))
            if (std::holds_alternative<ast::Equation>(s->node) ||
                std::holds_alternative<ast::Chain>(s->node))
                return parser::print(*s);
    return {};
}

const semantics::DerivedStatement* derived_for(const GradResult& r, const std::string& wrt,
                                               std::size_t nth = 0) {
    for (const auto& s : r.statements)
        if (s.wrt == wrt && nth-- == 0) return &s;
    return nullptr;
}

std::vector<std::string> collectives_of(const GradResult& r, const semantics::DerivedStatement& s) {
    REQUIRE(s.plan_index >= 0);
    return semantics::collectives_of(r.plan.mesh,
                                     r.plan.statements[static_cast<std::size_t>(s.plan_index)]);
}

struct Parsed {
    parser::ParseResult parsed;
    semantics::Plan plan;
};

Parsed parse_and_check(const std::string& name, const std::string& text, const GradOptions& o) {
    auto checked = frontend::check_text(name, text, o.check);
    REQUIRE(checked.syntax_ok());
    return {std::move(checked.parsed), std::move(checked.plan)};
}

/// The loss sum_o <o, go> of the forward program under `data`.
double loss(const Parsed& fwd, const GradResult& r, const exec::DataOptions& data) {
    exec::LabelTable labels;
    const auto values = exec::evaluate_reference(fwd.parsed.program, fwd.plan, labels, data);
    exec::DataOptions seeds = data;
    seeds.given.clear();
    double l = 0;
    for (const auto& s : r.seeds) {
        const auto& v = values.at(static_cast<std::size_t>(s.forward_statement));
        const auto g = exec::input_values(s.seed, static_cast<std::int64_t>(v.data.size()), seeds);
        for (std::size_t i = 0; i < g.size(); ++i)
            l += v.data[i] * g[i];
    }
    return l;
}

/// Derives the gradients of `text`, runs the derived program on sim ranks (every statement
/// must verify), and compares each gradient with central differences of the loss.
GradResult verify_gradients(const std::string& name, const std::string& text,
                            const std::vector<std::string>& wrt = {}, std::uint64_t seed = 1) {
    const auto o = small_options(wrt);
    const auto r = frontend::derive_gradients(SourceFile(name, text), o);
    INFO(name, "\n", r.text, "\n", diagnostics_text(r));
    REQUIRE(r.errors() == 0);
    REQUIRE(!r.gradients.empty());

    // 1. The derived program's plans verify on ranks.
    const auto full = parse_and_check(name, r.text, o);
    REQUIRE(full.plan.errors() == 0);
    exec::ExecOptions eo;
    eo.f64 = true;
    eo.data.seed = seed;
    const auto report = exec::execute(full.parsed.program, full.plan, eo);
    INFO(exec::format_exec(report, full.plan, false));
    CHECK(report.passed());

    // 2. The derived gradients are the gradients: finite differences of the forward program.
    const auto fwd = parse_and_check(name, text, o);
    exec::LabelTable labels;
    const auto values = exec::evaluate_reference(full.parsed.program, full.plan, labels, eo.data);
    for (const auto& entry : r.gradients) {
        const std::string x = entry.first,
                          g = entry.second; // (clang 14: lambdas capture no bindings)
        int at = -1;
        for (std::size_t i = 0; i < full.plan.statements.size(); ++i)
            if (full.plan.statements[i].target == g) at = static_cast<int>(i);
        std::vector<double> grad;
        if (at >= 0) {
            grad = values[static_cast<std::size_t>(at)].data;
        } else {
            // No statement: the gradient is a seed itself (Z := Z + ...).
            for (const auto& s : r.seeds)
                if (s.seed == g)
                    grad = exec::input_values(
                        g,
                        static_cast<std::int64_t>(
                            values.at(static_cast<std::size_t>(s.forward_statement)).data.size()),
                        eo.data);
            REQUIRE_MESSAGE(!grad.empty(), "no statement stores ", g);
        }
        const auto n = static_cast<std::int64_t>(grad.size());
        const auto base = exec::input_values(x, n, eo.data);
        double scale = 1;
        for (double v : grad)
            scale = std::max(scale, std::abs(v));
        const std::int64_t samples = std::min<std::int64_t>(n, 24);
        double worst = 0;
        std::string where;
        for (std::int64_t k = 0; k < samples; ++k) {
            const auto e = static_cast<std::size_t>(
                k * n / samples + (k * 7) % std::max<std::int64_t>(1, n / samples));
            const double h = 1e-5;
            auto data = eo.data;
            data.given[x] = base;
            data.given[x][e] += h;
            const double up = loss(fwd, r, data);
            data.given[x][e] -= 2 * h;
            const double down = loss(fwd, r, data);
            const double fd = (up - down) / (2 * h);
            const double err = std::abs(fd - grad[e]) / scale;
            if (err > worst) {
                worst = err;
                where = g + "[" + std::to_string(e) + "] = " + std::to_string(grad[e]) +
                        ", finite difference " + std::to_string(fd);
            }
        }
        INFO("gradient of ", x, " (", g, "): worst ", where);
        CHECK(worst < 1e-6);
    }
    return r;
}

} // namespace

// ---- the worked examples -----------------------------------------------------------

TEST_CASE("worked example: the input gradient of y_{sbo_0} = x_{sbi} w_{io_0} all-reduces") {
    const std::string src = "mesh 4\ndim s=8 b=2 i=16 o=4\ny_{sbo_0} = x_{sbi} w_{io_0}\n";
    const auto r = frontend::derive_gradients(SourceFile("t.ein", src));
    INFO(r.text, diagnostics_text(r));
    REQUIRE(r.errors() == 0);
    const auto* gx = derived_for(r, "x");
    REQUIRE(gx);
    CHECK(gx->text == canonical("gx_{sbi} = gy_{sbo_0} w_{io_0}"));
    CHECK(collectives_of(r, *gx) == std::vector<std::string>{"all-reduce(0)"});
    CHECK(r.gradients.at("x") == "gx");
    const auto derived = semantics::derived_text(r);
    CHECK(derived.rfind("# ---- backward", 0) == 0);
    CHECK(derived.find("y_{sbo_0} = x_{sbi} w_{io_0}") == std::string::npos);
    REQUIRE(r.seeds.size() == 1);
    CHECK(r.seeds[0].seed == "gy");
    CHECK(r.seeds[0].output == "y");
}

TEST_CASE("worked example: the weight gradient of y_{sbo_0} = x_{sbi} w_{io_0} is local") {
    const std::string src = "mesh 4\ndim s=8 b=2 i=16 o=4\ny_{sbo_0} = x_{sbi} w_{io_0}\n";
    const auto r = frontend::derive_gradients(SourceFile("t.ein", src));
    REQUIRE(r.errors() == 0);
    const auto* gw = derived_for(r, "w");
    REQUIRE(gw);
    CHECK(gw->text == canonical("gw_{io_0} = x_{sbi} gy_{sbo_0}"));
    CHECK(collectives_of(r, *gw).empty());
    // Both verify against finite differences.
    verify_gradients("t.ein", src);
}

// ---- the backward collectives of the parallelism schemes -----------------------------------

TEST_CASE("Megatron MLP: the input gradient all-reduces, the weight gradients do not") {
    const std::string src = "mesh 4\ndim b=8 s=2048 d=4096 f=4096\n"
                            "z_{bsd} = W^1_{d r_0 f} phi(W^0_{r_0 f d'} x_{bsd'})\n";
    const auto r = frontend::derive_gradients(SourceFile("t.ein", src));
    INFO(r.text, diagnostics_text(r));
    REQUIRE(r.errors() == 0);
    CHECK(collectives_of(r, *derived_for(r, "x")) == std::vector<std::string>{"all-reduce(0)"});
    CHECK(collectives_of(r, *derived_for(r, "W^0")).empty());
    CHECK(collectives_of(r, *derived_for(r, "W^1")).empty());
    CHECK(derived_for(r, "W^1")->text ==
          canonical("gW^1_{d r_0 f} = gz_{bsd} phi(W^0_{r_0 f d'} x_{bsd'})"));
    CHECK(derived_for(r, "x")->text ==
          canonical("gx_{bsd'} = W^0_{r_0 f d'} W^1_{d r_0 f} gz_{bsd} dphi(W^0_{r_0 f d''} "
                    "x_{bsd''})"));
    CHECK(r.text.find("fn dphi elementwise") != std::string::npos);
    verify_gradients("t.ein", src);
}

TEST_CASE("sequence parallelism: the weight gradient all-reduces over the sequence axis") {
    const std::string src = "mesh X=4\ndim batch=8 seq=2048 d=1024 f=4096\n"
                            "y[batch, seq_X, f] = x[batch, seq_X, d] W[d, f]\n";
    const auto r = frontend::derive_gradients(SourceFile("t.ein", src));
    REQUIRE(r.errors() == 0);
    CHECK(derived_for(r, "W")->text ==
          canonical("gW[d, f] = x[batch, seq_X, d] gy[batch, seq_X, f]"));
    CHECK(collectives_of(r, *derived_for(r, "W")) == std::vector<std::string>{"all-reduce(X)"});
    CHECK(collectives_of(r, *derived_for(r, "x")).empty());
    verify_gradients("t.ein", src);
}

TEST_CASE("FSDP: the gradient of a gathered weight stays partial and reduce-scatters") {
    const std::string src = "mesh 2x4\ndim b=16 s=128 m=64 e=32\nsplit m -> g n\n"
                            "W_{t_1 e (g_0 n)} -> W_{t_1 e m}\n"
                            "h_{b_0 s t_1 e} = W_{t_1 e m} x_{b_0 s m}\n";
    const auto r = frontend::derive_gradients(SourceFile("t.ein", src));
    INFO(r.text, diagnostics_text(r));
    REQUIRE(r.errors() == 0);
    const auto* contribution = derived_for(r, "W", 0);
    const auto* chain = derived_for(r, "W", 1);
    REQUIRE(contribution);
    REQUIRE(chain);
    CHECK(contribution->text == canonical("gW_{t_1 e m}{U_0} = gh_{b_0 s t_1 e} x_{b_0 s m}"));
    CHECK(collectives_of(r, *contribution).empty());
    CHECK(chain->text == canonical("gW_{t_1 e m}{U_0} -> gW_{t_1 e (g_0 n)}"));
    CHECK(collectives_of(r, *chain) == std::vector<std::string>{"reduce-scatter(0)"});
    verify_gradients("t.ein", src);
}

TEST_CASE("sequence parallelism with TP: the reversed all-gather of x is a reduce-scatter") {
    const auto r =
        verify_gradients("sp.ein", read_file(SHARDSCOPE_SAMPLES_DIR "/sequence_parallel.ein"));
    bool found = false;
    for (const auto& s : r.statements)
        if (s.text == canonical("gx_{b r t d}{U_0} -> gx_{b r_0 t d}")) {
            found = true;
            CHECK(collectives_of(r, s) == std::vector<std::string>{"reduce-scatter(0)"});
        }
    CHECK(found);
}

// ---- every rule, verified ------------------------------------------------------------------

TEST_CASE("rules: elementwise functions multiply by their derivative") {
    for (const char* f : {"phi", "gelu", "relu", "silu", "sigmoid", "tanh", "exp", "log", "sqrt"}) {
        CAPTURE(f);
        verify_gradients("t.ein", std::string("mesh 2\nz_{i_0 j} = ") + f + "(x_{i_0 k} w_{kj})\n");
    }
}

TEST_CASE("rules: linear functions, negation and scaling by numbers") {
    verify_gradients("t.ein", "mesh 2\nz_{ij} = neg(x_{i k_0} w_{k_0 j})\n");
    verify_gradients("t.ein", "mesh 2\nz_{ij} = scale(x_{i k_0}) w_{k_0 j}\n");
    verify_gradients("t.ein", "mesh 2\nz_{ij} = 3 x_{ij} - 2 * y_{ij}\n");
    verify_gradients("t.ein", "mesh 2\nz_{i_0} = -x_{i_0 j} y_{j}\n");
}

TEST_CASE("rules: a ring step (Permute_{i_k}) is transposed by the steps that finish the ring") {
    // One step forward on a ring of 4 moves the value one block; its transpose moves it back,
    // three steps forward: three permutes in the backward.
    const auto r = verify_gradients("t.ein", "mesh 4\ndim i=8 j=4\n"
                                             "z_{i_0 j} = Permute_{i_0}(x_{i_0 j}) w_{j}\n");
    const auto* d = derived_for(r, "x", 0);
    REQUIRE_MESSAGE(d, r.text);
    const std::vector<std::string> three{"permute(0)", "permute(0)", "permute(0)"};
    CHECK_MESSAGE(collectives_of(r, *d) == three, r.text);
}

TEST_CASE("rules: declared functions (their derivatives are d + name)") {
    const auto r = verify_gradients("t.ein", "mesh 2\nfn swish elementwise\nfn half linear\n"
                                             "z_{i_0 j} = half(swish(x_{i_0 j}) y_{j})\n");
    CHECK(r.text.find("fn dswish elementwise") != std::string::npos);
}

TEST_CASE("rules: sums and broadcasts (+, -, and a reduction's broadcast back)") {
    verify_gradients("t.ein", "mesh 2x2\nz_{m_0 n_1} = a_{m_0} + b_{n_1}\n");
    verify_gradients("t.ein", "mesh 2\nz_{ij} = x_{ij} - y_{j} + x_{ij} y_{j}\n");
    verify_gradients("t.ein", "mesh 2\ns = p_{r_0}\n");
    verify_gradients("t.ein", "mesh 2\nz_{i} = x_{i j_0}\n");
    verify_gradients("t.ein", "mesh 2\nz_{ij} = sum_j(x_{i_0 j}) + y_{ij}\n");
}

TEST_CASE("rules: sum, mean and max reductions") {
    verify_gradients("t.ein", "mesh 2\nz_{i_0} = sum_j(x_{i_0 j} y_{j})\n");
    verify_gradients("t.ein", "mesh 2\nz_{i_0} = mean_j(x_{i_0 j} y_{j})\n");
    verify_gradients("t.ein", "mesh 2\nz_{i} = max_j(x_{i j_0})\n");
    verify_gradients("t.ein", "mesh 2\nz_{i_0} = sum_j(exp(x_{i_0 j}))\n");
}

TEST_CASE("rules: softmax, replicated and along a sharded index") {
    verify_gradients("t.ein", "mesh 2\na_{i_0 j} = softmax_j(x_{i_0 k} w_{kj})\n");
    verify_gradients("t.ein", "mesh 2\na_{i j_0} = softmax_j(x_{i j_0})\n");
    verify_gradients("t.ein", "mesh 2\ny_{id} = softmax_j(q_{id'} k_{jd'}) v_{jd}\n");
}

TEST_CASE("rules: quotients") {
    verify_gradients("t.ein", "mesh 2\nz_{r_0 t d} = N_{r_0 t d} / Z_{r_0 t}\n");
    verify_gradients("t.ein", "mesh 2\nz_{ij} = x_{ij} / (y_{j} y_{j} + 2)\n");
}

TEST_CASE("rules: chains of statements, reshapes, updates and accumulators") {
    verify_gradients("t.ein", "mesh 2\nh_{i j_0} = x_{ik} w_{k j_0}\na_{i j_0} = tanh(h_{i j_0})\n"
                              "z_{i} = a_{i j_0} v_{j_0}\n");
    verify_gradients("t.ein", "mesh 2\nsplit b -> r c\nx_{bd} -> x_{(r c) d} -> x_{r_0 c d}\n"
                              "y_{r_0 c e} = x_{r_0 c d} W_{de}\n");
    verify_gradients("t.ein", "mesh 2\nx_{bd} -> x_{(r c) d} -> x_{r_0 c d}\n"
                              "y_{r_0 c e} = x_{r_0 c d} W_{de}\n");
    verify_gradients("t.ein",
                     "mesh 2\nZ_{r_0 t} := Z_{r_0 t} + sum_u(exp(q_{r_0 t d} k_{r_0 u d}))\n");
    verify_gradients("t.ein", "mesh 2\nacc_{ij} = x_{ik} w_{kj}\nacc_{ij} += x_{ik} v_{kj}\n");
    verify_gradients("t.ein", "mesh 2\nh_{ij} = x_{ij} y_{j}\nh_{ij} := h_{ij} + 2 h_{ij}\n");
    // A tensor used twice: the gradient accumulates.
    verify_gradients("t.ein", "mesh 2\nh_{i j_0} = x_{ik} w_{k j_0}\nz = h_{i j_0} h_{i j_0}\n");
}

TEST_CASE("a chain of products: the backward reverses the moved tensor's chain only") {
    // The notation post's sequence-parallel step: x is all-gathered, W^0 is context.
    const auto r = verify_gradients(
        "t.ein", "mesh 2\ndim b=2 s=8 d=4 e=8\nsplit s -> r t\nsplit e -> r' f\n"
                 "W^0_{r'_0 f d'} x_{b r_0 t d'} \\xrightarrow{all-gather} W^0_{r'_0 f d'} "
                 "x_{b s d'}\n"
                 "y_{b s r'_0 f} = W^0_{r'_0 f d'} x_{b s d'}\n");
    bool found = false;
    for (const auto& s : r.statements) {
        if (s.text.find("->") == std::string::npos) continue;
        CAPTURE(s.text);
        CHECK(s.text.rfind("gx", 0) == 0);
        CHECK(s.text.find("W") == std::string::npos); // the backward chain is of gx alone
        CHECK(collectives_of(r, s) == std::vector<std::string>{"reduce-scatter(0)"});
        found = true;
    }
    CHECK_MESSAGE(found, r.text);
}

TEST_CASE("renamed indices avoid the program's own (a split part keeps its range)") {
    // r is contracted inside tanh; r' is another index (a split part of e) elsewhere.
    const std::string src = "mesh 2\ndim s=8 e=12\nsplit s -> r t\nsplit e -> r' f\n"
                            "z_{t} = w_{t} tanh(x_{r t} y_{r})\nq_{r' f} = v_{r' f}\n";
    const auto r = verify_gradients("t.ein", src);
    CHECK(r.text.find("x_{r't}") == std::string::npos);
    CHECK(r.text.find("dtanh(x_{r''t} y_{r''})") != std::string::npos);
}

TEST_CASE("--wrt keeps only the statements the requested gradients need") {
    const std::string src = "mesh 4\nh_{b r_0 f} = W^0_{r_0 f d} x_{bd}\n"
                            "z_{be} = W^1_{e r_0 f} h_{b r_0 f}\n";
    const auto all = frontend::derive_gradients(SourceFile("t.ein", src), small_options());
    const auto w1 = frontend::derive_gradients(SourceFile("t.ein", src), small_options({"W^1"}));
    REQUIRE(all.errors() == 0);
    REQUIRE(w1.errors() == 0);
    CHECK(all.statements.size() == 4);
    REQUIRE(w1.statements.size() == 1);
    CHECK(w1.statements[0].wrt == "W^1");
    CHECK(w1.gradients.size() == 1);
    verify_gradients("t.ein", src, {"x"});
    const auto bad = frontend::derive_gradients(SourceFile("t.ein", src), small_options({"q"}));
    CHECK(bad.errors() == 1);
}

TEST_CASE("param lines: by default only the trained weights' gradients are derived") {
    const std::string fwd = "mesh 4\nh_{b r_0 f} = W^0_{r_0 f d} x_{bd}\n"
                            "z_{be} = W^1_{e r_0 f} h_{b r_0 f}\n";
    const std::string with_params = "param W^0 W^1\n" + fwd;
    const auto all = frontend::derive_gradients(SourceFile("t.ein", fwd), small_options());
    const auto params =
        frontend::derive_gradients(SourceFile("t.ein", with_params), small_options());
    REQUIRE(all.errors() == 0);
    REQUIRE(params.errors() == 0);
    CHECK(all.gradients.count("x") == 1);
    // The data x is not a weight: its gradient (and the statement that only it needs) is gone.
    CHECK(params.gradients.size() == 2);
    CHECK(params.gradients.count("W^0") == 1);
    CHECK(params.gradients.count("W^1") == 1);
    CHECK(params.gradients.count("x") == 0);
    CHECK(params.statements.size() + 1 == all.statements.size());
    for (const auto& s : params.statements)
        CHECK_MESSAGE(s.wrt != "x", s.text);
    // --wrt still overrides the param lines.
    const auto x =
        frontend::derive_gradients(SourceFile("t.ein", with_params), small_options({"x"}));
    REQUIRE(x.errors() == 0);
    CHECK(x.gradients.size() == 1);
    CHECK(x.gradients.count("x") == 1);
}

TEST_CASE("names: a gradient name that is taken gets another g; the JSON has wrt") {
    const std::string src = "mesh 2\ngx_{ij} = x_{ik} w_{kj}\n";
    const auto r = frontend::derive_gradients(SourceFile("t.ein", src));
    REQUIRE(r.errors() == 0);
    CHECK(r.gradients.at("x") == "ggx");
    CHECK(r.seeds.at(0).seed == "gggx");
    const auto j = semantics::gradients_to_json(r, "t.ein");
    REQUIRE(j["statements"].size() == r.statements.size());
    for (const auto& s : j["statements"])
        CHECK(s.contains("wrt"));
    CHECK(j["gradients"]["x"] == "ggx");
}

TEST_CASE("a value the backward needs after it was redefined is an error (G201)") {
    const std::string src =
        "mesh 2\nh_{ij} = x_{ik} w_{kj}\nz_{ij} = tanh(h_{ij})\nh_{ij} = z_{ij} v_{j}\n";
    const auto r = frontend::derive_gradients(SourceFile("t.ein", src), small_options({"x"}));
    bool g201 = false;
    for (const auto& d : r.diagnostics)
        g201 |= d.code == "G201";
    CHECK(g201);
}

TEST_CASE("property: gradients of random sharded einsum programs verify") {
    std::mt19937 rng(20261121);
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
    int verified = 0;
    for (int p = 0; p < 250; ++p) {
        const int axes = 1 + pick(2);
        std::string src = axes == 1 ? "mesh 2\n" : "mesh 2x2\n";
        const std::string letters = "ijkl";
        // A tensor reference over some letters, each sharded on a free mesh axis or not.
        auto ref = [&](const std::string& name, const std::string& idx) {
            std::string out = name + "_{";
            std::vector<bool> used(static_cast<std::size_t>(axes), false);
            for (char c : idx) {
                out += c;
                const int k = pick(axes + 2); // mostly unsharded
                if (k < axes && !used[static_cast<std::size_t>(k)]) {
                    used[static_cast<std::size_t>(k)] = true;
                    out += "_" + std::to_string(k);
                }
                out += " ";
            }
            out.back() = '}';
            return out;
        };
        auto subset = [&](int lo) {
            std::string out;
            for (char c : letters)
                if (pick(2)) out += c;
            while (static_cast<int>(out.size()) < lo) {
                const char c = letters[static_cast<std::size_t>(pick(4))];
                if (out.find(c) == std::string::npos) out += c;
            }
            return out;
        };
        const int ops = 2 + pick(2);
        std::string all, rhs;
        for (int o = 0; o < ops; ++o) {
            const auto idx = subset(1);
            for (char c : idx)
                if (all.find(c) == std::string::npos) all += c;
            auto r = ref(std::string(1, static_cast<char>('a' + o)), idx);
            if (pick(4) == 0) r = std::string(pick(2) ? "tanh(" : "sigmoid(") + r + ")";
            rhs += (rhs.empty() ? "" : " ") + r;
        }
        std::string lhs_idx;
        for (char c : all)
            if (pick(2)) lhs_idx += c;
        const auto lhs = lhs_idx.empty() ? std::string("z") : ref("z", lhs_idx);
        if (pick(5) == 0) rhs = "exp(" + rhs + ")";
        src += lhs + " = " + rhs + "\n";
        // A second statement reads the first: gradients flow across statements.
        if (pick(2) && !lhs_idx.empty()) src += "y = z_{" + lhs_idx + "} w_{" + lhs_idx + "}\n";
        CAPTURE(src);
        const auto fwd = frontend::derive_gradients(SourceFile("r.ein", src), small_options());
        bool forward_errors = false;
        for (const auto& d : fwd.diagnostics)
            forward_errors |= d.code == "G000";
        if (forward_errors) continue; // the checker refuses the program itself
        verify_gradients("r.ein", src, {}, static_cast<std::uint64_t>(p));
        ++verified;
    }
    CHECK(verified > 150);
}

// ---- every sample ----------------------------------------------------------------------------

TEST_CASE(
    "samples: every sample's gradients verify (plans on ranks, values by finite differences)") {
    int files = 0;
    for (const auto& entry : std::filesystem::directory_iterator(SHARDSCOPE_SAMPLES_DIR)) {
        if (entry.path().extension() != ".ein") continue;
        ++files;
        const auto name = entry.path().filename().string();
        CAPTURE(name);
        const auto text = read_file(entry.path().string());
        std::istringstream lines(text);
        bool has_backward = false;
        for (std::string line; std::getline(lines, line);)
            has_backward = has_backward || (line.rfind("repeat ", 0) == 0 && line.size() > 8 &&
                                            line.compare(line.size() - 8, 8, " reverse") == 0);
        if (has_backward) {
            // A whole training step (megatron_gpt22b.ein: its backward is written already):
            // differentiating it again is refused, G203.
            const auto r = frontend::derive_gradients(SourceFile(name, text), small_options());
            CHECK(std::count_if(r.diagnostics.begin(), r.diagnostics.end(),
                                [](const Diagnostic& d) { return d.code == "G203"; }) >= 1);
            continue;
        }
        // latex_blog.ein collects unrelated displays that reuse x with four shapes: its
        // gradients with respect to every input do not exist (G201/G202); the rest do.
        const std::vector<std::string> wrt =
            name == "latex_blog.ein" ? std::vector<std::string>{"q", "k", "v", "N", "Z", "A", "B"}
                                     : std::vector<std::string>{};
        verify_gradients(name, text, wrt);
    }
    CHECK(files >= 10); // not passing by finding no sample
}

TEST_CASE("samples: latex_blog.ein with respect to every input reports why not") {
    const auto r = frontend::derive_gradients(
        SourceFile("latex_blog.ein", read_file(SHARDSCOPE_SAMPLES_DIR "/latex_blog.ein")),
        small_options());
    bool why = false;
    for (const auto& d : r.diagnostics)
        why |= d.code == "G201" || d.code == "G202";
    CHECK(why);
}

// ---- inputs read twice: check and grad agree -------------------------------------------------

TEST_CASE("inputs read twice: check's verdict equals grad's (S106/S217, issue 20)") {
    struct Case {
        const char* src;
        bool refused;     // an error: check S106, grad no gradients
        const char* code; // check's diagnostic, or "" for none
    };
    const Case cases[] = {
        // Two shapes: refused by both.
        {"mesh 2\ndim i=4 j=8\ny_{i} = x_{i}\nz_{j} = x_{j}\n", true, "S106"},
        {"mesh 2\ndim i=4 j=8\ny_{i} = x_{i}\nz_{ij} = x_{ij}\n", true, "S106"},
        {"mesh 2\ndim i=4 j=8\ny_{ij} = x_{ij}\nz_{ij} = x_{ji}\n", true, "S106"},
        {"mesh 2\ndim i=4 j=8\ny_{i} = x_{ij} w_{j}\nz_{i} = x_{i}\n", true, "S106"},
        // Another shape with the same number of elements, both reads reaching an output.
        {"mesh 2\ndim k=32 r=4 e=8\na = x_{k} y_{k}\nb = x_{r_0 e} y_{r_0 e}\n", true, "S106"},
        // ...where the first read's value is overwritten unread (a teaching file's displays,
        // as latex_blog.ein's): grad derives nothing through it, and exec reads one buffer.
        {"mesh 2\ndim k=32 r=4 e=8\nz = x_{k} y_{k}\nz = x_{r_0 e} y_{r_0 e}\n", false, ""},
        // ...whatever its number of elements.
        {"mesh 2\ndim k=16 r=4 e=8\nz = x_{k} y_{k}\nz = x_{r_0 e} y_{r_0 e}\n", false, ""},
        // One shape under other names: one tensor; a grouping is another shape.
        {"mesh 2\ndim i=4 k=4\ny_{i} = x_{i}\nz_{k} = x_{k}\n", false, ""},
        {"mesh 2\ndim i=4 j=8\ny_{ij} = x_{ij}\nz_{(ij)} = x_{(ij)}\n", true, "S106"},
        // Two placements: a warning, and the gradient sums both uses.
        {"mesh 2\ndim i=4 j=8\ny_{i_0 j} = x_{i_0 j}\nz_{i j_0} = x_{i j_0}\n", false, "S217"},
        {"mesh 2\ndim i=4 j=8\ny_{i_0} = x_{i_0 j} w_{j}\nz_{i} = x_{ij} w_{j}\n", false, "S217"},
        {"mesh 2x2\ndim i=4 j=8\ny_{i_{01} j} = x_{i_{01} j}\nz_{ij} = x_{i_{10} j}\n", false,
         "S217"},
        // A name a statement assigns is no input (S105 covers its uses).
        {"mesh 2\ndim i=4\nx_{i_0} = a_{i_0}\ny_{i} = x_{i}\n", false, ""},
        // ...but reads before the statement that assigns it are reads of the input.
        {"mesh 2\ndim i=4 j=8\ny_{i} = x_{i}\nz_{ij} = x_{ij}\nx_{ij} = a_{ij}\n", true, "S106"},
        {"mesh 2\ndim i=4 j=8\ny_{i_0 j} = x_{i_0 j}\nz_{i j_0} = x_{i j_0}\nx_{ij} = a_{ij}\n",
         false, "S217"},
    };
    for (const auto& c : cases) {
        CAPTURE(c.src);
        SourceFile f("t.ein", c.src);
        const auto checked = frontend::check_text("t.ein", c.src);
        REQUIRE(checked.syntax_ok());
        const auto& plan = checked.plan;
        const auto g = frontend::derive_gradients(f);
        INFO(diagnostics_text(g));
        CHECK((plan.errors() > 0) == c.refused);
        CHECK((g.errors() > 0) == c.refused);
        CHECK(g.gradients.empty() == c.refused);
        int found = 0;
        for (const auto& d : plan.diagnostics)
            if (d.code == c.code) {
                ++found;
                CHECK(d.range.line == 4u);                            // the second read
                CHECK(d.message.find("line 3") != std::string::npos); // names the first
                CHECK(!d.fix.empty());
                CHECK(d.severity == (c.refused ? Severity::Error : Severity::Warning));
            }
        // One diagnostic per input concerned (x and y in the k/r/e programs).
        const int inputs = std::string(c.src).find("y_{k}") != std::string::npos ? 2 : 1;
        CHECK(found == (*c.code ? inputs : 0));
        if (!*c.code) CHECK(plan.diagnostics.empty());
    }
}

TEST_CASE("an input read in two layouts: its gradient sums both uses, and the backward runs") {
    for (const std::string src :
         {"mesh 2\ndim i=4 j=8\ny_{i_0 j} = x_{i_0 j}\nz_{i j_0} = x_{i j_0}\n",
          "mesh 2\ndim i=4 j=8\ny_{i_0} = x_{i_0 j} w_{j}\nz_{i} = x_{ij} w_{j}\n",
          "mesh 2x2\ndim i=4 j=8\ny_{i_{01} j} = x_{i_{01} j}\nz_{ij} = phi(x_{i_{10} j})\n"}) {
        CAPTURE(src);
        const auto r = verify_gradients("t.ein", src);
        int into_gx = 0;
        for (const auto& d : r.statements)
            into_gx += d.wrt == "x";
        CHECK(into_gx >= 2); // one contribution per use
    }
}

// ---- repeated layers (issue 18) --------------------------------------------------------------

namespace {

const char* kRepeated = "mesh 2\n"
                        "dim b=4 d=8 e=16\n"
                        "y_{bd} = x_{bd}\n"
                        "repeat l=3\n"
                        "  a_{bd} = y_{bd}\n"
                        "  u_{b e_0} = a_{bd} W_{d e_0}\n"
                        "  o_{bd} = tanh(u_{b e_0}) U_{e_0 d}\n"
                        "  y_{bd} := a_{bd} + o_{bd}\n"
                        "end\n"
                        "z_{b} = sum_{d}(y_{bd})\n";

} // namespace

TEST_CASE("repeat: the backward of L layers is the body's backward, repeated in reverse") {
    const auto r = frontend::derive_gradients(SourceFile("r.ein", kRepeated), small_options());
    INFO(r.text, "\n", diagnostics_text(r));
    REQUIRE(r.errors() == 0);
    const auto derived = semantics::derived_text(r);
    // One reverse block over the same index and count, holding the body's backward.
    const auto open = derived.find("repeat l=3 reverse\n");
    REQUIRE(open != std::string::npos);
    const auto close = derived.find("\nend\n", open);
    REQUIRE(close != std::string::npos);
    const auto body = derived.substr(open, close - open);
    CHECK(body.find("gW_{d e_0} = ") != std::string::npos);
    CHECK(body.find("gU_{e_0 d} = ") != std::string::npos);
    CHECK(body.find("gy_{bd} = ga_{bd}") != std::string::npos); // the carried gradient
    // z's and the copy of x's backward are outside the block.
    CHECK(derived.find("gy_{bd} = gz_{b} ones(y_{bd})") < open);
    CHECK(derived.find("gx_{bd} = gy_{bd}") > close);
    // The derived program's plans: the block's statements run 3 times (2 at small sizes).
    REQUIRE(r.plan.repeats.size() == 2);
    CHECK(r.plan.repeats[1].reverse);
    CHECK(r.plan.repeats[1].count == 2);
    const auto* gw = derived_for(r, "W");
    REQUIRE(gw);
    CHECK(r.plan.statements[static_cast<std::size_t>(gw->plan_index)].repeat == 2);
}

TEST_CASE("repeat: the derived backward verifies on ranks and equals finite differences") {
    // Through both layers: the gradients of x (before the repeat) and of layer 0's W and U
    // (what the reverse block leaves in gW and gU) against central differences of the
    // two-layer forward program, whose second layer has its own W and U.
    verify_gradients("repeated.ein", kRepeated);
    // Two repeats over the same index (an encoder and a decoder, say): each reverse block
    // reads the layers of its own forward block.
    verify_gradients("two_repeats.ein", "mesh 2\ndim b=4 d=6\ny_{b d_0} = x_{b d_0}\n"
                                        "repeat l=2\n"
                                        "  a_{b d_0} = y_{b d_0}\n"
                                        "  y_{b d_0} := a_{b d_0} + tanh(a_{b d'} W_{d' d_0})\n"
                                        "end\n"
                                        "repeat l=2\n"
                                        "  c_{b d_0} = y_{b d_0}\n"
                                        "  y_{b d_0} := c_{b d_0} sigmoid(c_{b d'} V_{d' d_0})\n"
                                        "end\n"
                                        "z_{b} = sum_{d}(y_{b d_0})\n");
    // Only W: the carried gradient gy is still needed from layer to layer (the body's
    // backward reads it at its top, and its bottom writes it for the layer before).
    const auto w = verify_gradients("repeated_w.ein", kRepeated, {"W"});
    CHECK(semantics::derived_text(w).find("gy_{bd} = ga_{bd}") != std::string::npos);
    CHECK(semantics::derived_text(w).find("gU_{e_0 d}") == std::string::npos);
    // A body that carries with +=, and an output after the repeat that is not a sum.
    verify_gradients("repeated2.ein", "mesh 2\ndim b=4 d=6\ny_{b d_0} = x_{b d_0}\n"
                                      "repeat l=2\n"
                                      "  a_{b d_0} = y_{b d_0}\n"
                                      "  y_{b d_0} += a_{b d_0} sigmoid(a_{b d'} W_{d' d_0})\n"
                                      "end\n"
                                      "z_{b d_0} = exp(y_{b d_0})\n");
}

TEST_CASE(
    "repeat: a tensor all layers read sums their gradients; a carried one starts at its seed") {
    // Q is defined before the block and read by both layers: its gradient is the sum of both
    // layers' (it kept only layer 0's, silently). y is carried and read by nothing after the
    // block: its gradient enters the reverse layers as the seed (it was S151).
    const std::string src = "mesh 2\ndim i=4 j=4\nQ_{i_0 j} = q_{i_0 j}\ny_{i_0 j} = a_{i_0 j}\n"
                            "repeat l=2\nx_{i_0 j} = y_{i_0 j}\ny_{i_0 j} := x_{i_0 j} Q_{i_0 j}\n"
                            "end\n";
    const auto r = verify_gradients("shared.ein", src);
    CHECK_MESSAGE(r.text.find("gQ_{i_0 j} = 0 Q_{i_0 j}") != std::string::npos, r.text);
    CHECK_MESSAGE(r.text.find("gQ_{i_0 j} += ") != std::string::npos, r.text);
    CHECK_MESSAGE(r.text.find("gy_{i_0 j} = gy2_{i_0 j}") != std::string::npos, r.text);
    // The same with a use after the block (the seed is then that use's, before the block).
    verify_gradients("shared_used.ein", src + "z_{i_0 j} = y_{i_0 j}\n");
    // Ring attention's rounds: K and V carried, each round's blocks permuted round the ring.
    verify_gradients("ring.ein",
                     "mesh 4\ndim t=2 u=2 d=2\nZ_{r_0 t} = sum_u(exp(q_{r_0 t d'} k_{r_0 u d'}))\n"
                     "Q_{r_0 t d'} = q_{r_0 t d'}\nK_{r_0 u d'} = k_{r_0 u d'}\n"
                     "repeat i=3\nKn_{r_0 u d'} = Permute_{r_0}(K_{r_0 u d'})\n"
                     "Z_{r_0 t} := Z_{r_0 t} + sum_u(exp(Q_{r_0 t d'} Kn_{r_0 u d'}))\n"
                     "K_{r_0 u d'} := Kn_{r_0 u d'}\nend\n");
}

TEST_CASE("repeat: exec runs the body once per layer, each layer with its own parameters") {
    // Two layers of y := tanh(y W) equal the unrolled program with layer 1's copy of W (the
    // input exec generates as W@1) given to a second tensor V.
    const std::string repeated = "mesh 2\ndim b=4 d=4 d'=4\ny_{b d} = x_{b d}\n"
                                 "repeat l=2\n  y_{b d} := tanh(y_{b d'} W_{d' d_0})\nend\n";
    const std::string unrolled = "mesh 2\ndim b=4 d=4 d'=4\ny_{b d} = x_{b d}\n"
                                 "y_{b d} := tanh(y_{b d'} W_{d' d_0})\n"
                                 "y_{b d} := tanh(y_{b d'} V_{d' d_0})\n";
    const GradOptions o; // the declared sizes: W is 4x4
    const auto a = parse_and_check("a.ein", repeated, o);
    const auto b = parse_and_check("b.ein", unrolled, o);
    REQUIRE(a.plan.errors() == 0);
    REQUIRE(b.plan.errors() == 0);
    exec::ExecOptions eo;
    eo.f64 = true;
    const auto ra = exec::execute(a.parsed.program, a.plan, eo);
    INFO(exec::format_exec(ra, a.plan, false));
    CHECK(ra.passed());
    REQUIRE(ra.statements.size() == 3); // y, then the body twice
    CHECK(ra.statements[1].source.find("(layer 1 of 2)") != std::string::npos);
    CHECK(ra.statements[2].source.find("(layer 2 of 2)") != std::string::npos);
    exec::LabelTable la, lb;
    const auto va = exec::evaluate_reference(a.parsed.program, a.plan, la, eo.data);
    auto data = eo.data;
    data.given["V"] = exec::input_values("W@1", 16, eo.data);
    const auto vb = exec::evaluate_reference(b.parsed.program, b.plan, lb, data);
    REQUIRE(va.size() == 2);
    REQUIRE(vb.size() == 3);
    CHECK(va[1].data == vb[2].data);
    // ...and not the program that reads one W in both layers.
    const auto vw = exec::evaluate_reference(b.parsed.program, b.plan, lb, [&] {
        auto d = eo.data;
        d.given["V"] = exec::input_values("W", 16, eo.data);
        return d;
    }());
    CHECK(va[1].data != vw[2].data);
}

TEST_CASE("training step totals: a forward-only file with train is priced with its backward") {
    // y = x W on dp=4: the backward adds gx = gy W (no weight gradient needed for x: only
    // the param's) and gW = x gy, which contracts the dp-sharded batch, so the weight
    // gradient is all-reduced over dp: the collective data parallelism pays per step.
    const std::string head = "mesh dp=4\ndim b=64 d=128 f=256\n";
    const std::string forward = "y_{b_{dp} f} = x_{b_{dp} d} W_{d f}\n";
    auto totals_of = [](const std::string& text, bool* derived) {
        const auto checked = frontend::check_text("t.ein", text);
        REQUIRE(checked.syntax_ok());
        REQUIRE(checked.plan.errors() == 0);
        const auto t = semantics::step_totals(checked.parsed.program, checked.plan);
        *derived = t.backward_derived;
        return t;
    };
    bool derived = true;
    const auto inference = totals_of(head + forward, &derived);
    CHECK_FALSE(derived); // no train line: the forward is the step
    const auto step = totals_of(head + "param W\ntrain adam\n" + forward, &derived);
    CHECK(derived);
    // Forward 2·(b/4)·d·f per device; gW = x gy is as many again (gx is not needed).
    const double fwd = 2.0 * (64 / 4) * 128 * 256;
    CHECK(inference.flops == doctest::Approx(fwd));
    CHECK(step.flops == doctest::Approx(2 * fwd));
    bool all_reduce = false;
    for (const auto& k : step.bytes_by_kind)
        if (k.kind == semantics::StepKind::AllReduce) {
            all_reduce = true;
            // The f32 gradient of W (d·f elements), one ring all-reduce over 4: 2·(4-1)/4 of it.
            CHECK(k.bytes == doctest::Approx(2.0 * 3 / 4 * 128 * 256 * 4));
        }
    CHECK_MESSAGE(all_reduce, semantics::format_totals(step));
    CHECK(semantics::format_totals(step).find("the backward grad derives") != std::string::npos);
    // A file that writes its backward is priced as written.
    const auto written = totals_of(head + "param W\ntrain adam\n" + forward +
                                       "gW_{d f} = x_{b_{dp} d} gy_{b_{dp} f}\n",
                                   &derived);
    CHECK_FALSE(derived);
    CHECK(written.flops == doctest::Approx(2 * fwd));
}
