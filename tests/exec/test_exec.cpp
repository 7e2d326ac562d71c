// The executor end to end: programs are parsed, checked (small default ranges) and run on sim
// ranks; every statement's gathered result must match the single-device reference. The
// DTensor walkthrough's numbers, a property test over random einsums on random meshes, plans
// broken on purpose (which must fail), every construct of NOTATION.md, the data modes and
// errors.
#include "exec/comm.hpp"
#include "exec/data.hpp"
#include "exec/interpreter.hpp"
#include "exec/layout.hpp"
#include "exec/reference.hpp"
#include "exec/run.hpp"
#include "frontend/document.hpp"
#include "parser/parser.hpp"
#include "semantics/checker.hpp"
#include "semantics/report.hpp"
#include "tests/exec/mock_device.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using namespace shardscope;
using exec::DataMode;
using exec::ExecOptions;
using semantics::OpKind;
using semantics::StepKind;

namespace {

/// A program text, parsed and checked (with small default ranges, as `shardscope exec`).
struct Checked {
    std::string src;
    parser::ParseResult parsed;
    semantics::Plan plan;
    std::string diagnostics; ///< parse and check diagnostics, formatted

    bool ok() const { return !parsed.has_errors() && plan.errors() == 0; }
    std::string text() const {
        return "program:\n" + src + "\nplan:\n" + semantics::format_plan(plan, "test.ein") +
               diagnostics;
    }
};

Checked check_src(const std::string& src, bool ignore_dims = false) {
    semantics::CheckOptions options;
    options.small_defaults = true;
    options.ignore_dims = ignore_dims;
    auto checked = frontend::check_text("test.ein", src, options);
    const SourceFile& file = *checked.source;
    Checked c;
    c.src = src;
    c.parsed = std::move(checked.parsed);
    if (c.parsed.has_errors()) { // the parse errors only, no plan
        for (const auto& d : c.parsed.diagnostics)
            c.diagnostics += format_diagnostic(file, d);
        return c;
    }
    c.plan = std::move(checked.plan);
    for (const auto& d : c.plan.diagnostics)
        c.diagnostics += format_diagnostic(file, d);
    return c;
}

/// Options for a data mode; integer data computes in f64 (as `shardscope exec --data ints`).
ExecOptions options_for(DataMode mode, std::uint64_t seed = 0) {
    ExecOptions o;
    o.data.mode = mode;
    o.data.seed = seed;
    o.f64 = mode == DataMode::Ints;
    return o;
}

/// A checked program and how it ran.
struct Ran {
    Checked c;
    exec::ExecReport report;
    std::string error; ///< the ExecError's message, when the run threw

    std::string text() const {
        std::string out = c.text() + "exec:\n";
        out += error.empty() ? exec::format_exec(report, c.plan, false) : "threw: " + error;
        return out + "\n";
    }
    const exec::StatementRun& statement(std::size_t s) const {
        REQUIRE_MESSAGE(s < report.statements.size(), text());
        return report.statements[s];
    }
};

/// Runs `plan` with `options`; an ExecError is kept in `error`, not thrown.
exec::ExecReport execute_plan(const Checked& c, const ExecOptions& options, std::string& error) {
    try {
        return exec::execute(c.parsed.program, c.plan, options);
    } catch (const exec::ExecError& e) {
        error = e.what();
        if (error.empty()) error = "(an ExecError without a message)";
    }
    return {};
}

/// The factors a chain of products moves besides its result, which exec compares with their
/// input's block (RankProgram::store_moved_factors): the last value of each, no step reads
/// it, a program input (no earlier statement stores it), not partial.
long moved_factors(const semantics::Plan& plan, std::size_t s) {
    const auto& sp = plan.statements.at(s);
    long n = 0;
    for (std::size_t v = 0; v < sp.values.size(); ++v) {
        const auto& key = sp.values[v].layout.tensor;
        bool read = static_cast<int>(v) == sp.result_value || key == sp.target;
        for (const auto& st : sp.steps)
            read = read || std::count(st.inputs.begin(), st.inputs.end(), static_cast<int>(v));
        for (std::size_t e = 0; e < s; ++e)
            read = read || plan.statements[e].target == key;
        for (const auto& p : sp.values[v].layout.placements)
            read = read || p.kind == semantics::Placement::Kind::Partial;
        const bool loaded = std::any_of(sp.values.begin(), sp.values.end(), [&](const auto& w) {
            return !w.load.empty() && w.layout.tensor == key;
        });
        if (!read && loaded) ++n;
    }
    return n;
}

/// The same run with every rank's tensors on a mock device (tests/exec/mock_device.hpp) must
/// give the same report, and move data to the host only for each statement's result: the
/// interpreter's device path reaches elements only through its LocalCompute.
void check_on_mock_device(const Ran& host, ExecOptions options) {
    exec::testing::MockCounts counts;
    options.sim_compute_f32 = [&](int) {
        return std::make_unique<exec::testing::MockDevice<float>>(counts);
    };
    options.sim_compute_f64 = [&](int) {
        return std::make_unique<exec::testing::MockDevice<double>>(counts);
    };
    options.progress = {};
    std::string error;
    const auto dev = execute_plan(host.c, options, error);
    // The same error, whichever rank threw first.
    const std::regex rank("rank [0-9]+");
    CHECK_MESSAGE(std::regex_replace(error, rank, "rank ?") ==
                      std::regex_replace(host.error, rank, "rank ?"),
                  "on the mock device: " << error << "\n"
                                         << host.text());
    REQUIRE_MESSAGE(dev.statements.size() == host.report.statements.size(), host.text());
    for (std::size_t s = 0; s < dev.statements.size(); ++s) {
        const auto& a = host.report.statements[s];
        const auto& b = dev.statements[s];
        CHECK_MESSAGE(a.max_abs_error == b.max_abs_error, "on the mock device: " << b.source);
        CHECK(a.replica_error == b.replica_error);
        CHECK(a.pass == b.pass);
        CHECK(a.collectives.size() == b.collectives.size());
        CHECK(a.shown == b.shown);
    }
    // One download per run per rank that runs it (a pipelined layer: its stage's ranks), and
    // one per further factor a chain of products moves (compared with its input's block).
    long want = 0;
    for (const auto& run : exec::schedule(host.c.plan))
        want += (run.block && run.block->pipelined()
                     ? host.report.ranks / static_cast<long>(run.block->stages)
                     : host.report.ranks) *
                (1 + moved_factors(host.c.plan, run.statement));
    if (host.error.empty()) CHECK_MESSAGE(counts.downloads == want, host.text());
}

/// Runs a checked program (its plan may have been edited); an ExecError is kept, not thrown.
/// A sim run is repeated on the mock device and must agree.
Ran execute(Checked c, const ExecOptions& options = {}) {
    Ran r{std::move(c), {}, {}};
    r.report = execute_plan(r.c, options, r.error);
    if (options.backend == exec::Backend::Sim) check_on_mock_device(r, options);
    return r;
}

/// Parses, checks (REQUIREs no errors) and runs `src`.
Ran run_src(const std::string& src, const ExecOptions& options = {}, bool ignore_dims = false) {
    auto c = check_src(src, ignore_dims);
    REQUIRE_MESSAGE(c.ok(), c.text());
    return execute(std::move(c), options);
}

/// Every statement of the program ran and verified.
void check_all_pass(const Ran& r) {
    REQUIRE_MESSAGE(r.error.empty(), r.text());
    // One report entry per run: a repeat's body once per layer.
    REQUIRE_MESSAGE(r.report.statements.size() == exec::schedule(r.c.plan).size(), r.text());
    for (const auto& s : r.report.statements)
        CHECK_MESSAGE(s.pass, "statement: " << s.source << "\n" << r.text());
    CHECK_MESSAGE(r.report.passed(), r.text());
}

/// Runs `src` with random f32 data and with integer f64 data; everything must pass, and the
/// integer run of a linear statement must be exact.
Ran run_both(const std::string& src, bool ignore_dims = false) {
    const auto ints = run_src(src, options_for(DataMode::Ints, 7), ignore_dims);
    check_all_pass(ints);
    for (const auto& s : ints.report.statements)
        if (s.exact) CHECK_MESSAGE(s.max_abs_error == 0, s.source << "\n" << ints.text());
    auto random = run_src(src, options_for(DataMode::Random, 3), ignore_dims);
    check_all_pass(random);
    return random;
}

/// The collectives a statement ran, as "all-reduce(0), all-gather(1)" ("none").
std::string ran(const exec::StatementRun& s) {
    std::string out;
    for (const auto& e : s.collectives) {
        std::string axes;
        for (int k : e.axes)
            axes += (axes.empty() ? "" : ",") + std::to_string(k);
        out += (out.empty() ? "" : ", ") + std::string(semantics::step_kind_name(e.kind)) + "(" +
               axes + ")";
    }
    return out.empty() ? "none" : out;
}

/// Runs a checked program rank by rank on sim (RankProgram directly) and returns every rank's
/// local tensor of `key` after the last statement, indexed by rank.
template <class T>
std::vector<exec::Tensor<T>> locals_of(const Checked& c, const std::string& key,
                                       const exec::DataOptions& data) {
    exec::LabelTable labels;
    labels.add(c.plan);
    const auto mesh = exec::mesh_shape(c.plan.mesh);
    const auto n = static_cast<std::size_t>(mesh.device_count());
    std::vector<exec::Tensor<T>> out(n), on_mock(n);
    exec::testing::MockCounts counts;
    for (bool mock : {false, true})
        exec::run_sim(mesh, [&](exec::Communicator& comm) {
            exec::testing::MockDevice<T> device(counts);
            exec::RankProgram<T> prog(c.plan, labels, comm, data, mock ? &device : nullptr);
            for (std::size_t s = 0; s < c.plan.statements.size(); ++s)
                prog.run(s);
            (mock ? on_mock : out)[static_cast<std::size_t>(comm.rank())] = prog.stored(key);
        });
    // The same per-rank tensors with the shards on the mock device.
    for (std::size_t r = 0; r < n; ++r) {
        CHECK(on_mock[r].shape == out[r].shape);
        CHECK(on_mock[r].data == out[r].data);
        CHECK(!on_mock[r].on_device());
    }
    return out;
}

std::vector<double> as_doubles(const exec::Tensor<double>& t) {
    return t.data;
}

std::string numbers(const std::vector<double>& v) {
    std::string out;
    for (double x : v)
        out += (out.empty() ? "" : " ") + std::to_string(static_cast<long long>(x));
    return out;
}

std::vector<double> flat(const std::vector<std::vector<double>>& rows) {
    std::vector<double> out;
    for (const auto& r : rows)
        out.insert(out.end(), r.begin(), r.end());
    return out;
}

} // namespace

// =============================================================================================
// 1. The DTensor matmul walkthrough (references/dtensor-matmul-walkthrough.txt): x and y are
// arange(1, 25) as 4x6 and 6x4, on two ranks.

TEST_CASE("DTensor walkthrough: Shard(1) x Shard(0) kept partial, each rank's local numbers") {
    const std::string src = "mesh 2\ndim i=4 k=6 j=4\nz_{ij}{U_0} = x_{i k_0} y_{k_0 j}\n";
    const auto c = check_src(src);
    REQUIRE_MESSAGE(c.ok(), c.text());
    const auto locals = locals_of<double>(c, "z", {DataMode::Arange, 0});
    REQUIRE(locals.size() == 2);
    const auto rank0 =
        flat({{38, 44, 50, 56}, {128, 152, 176, 200}, {218, 260, 302, 344}, {308, 368, 428, 488}});
    const auto rank1 = flat({{263, 278, 293, 308},
                             {569, 602, 635, 668},
                             {875, 926, 977, 1028},
                             {1181, 1250, 1319, 1388}});
    CHECK(locals[0].shape == (std::vector<std::int64_t>{4, 4}));
    CHECK(locals[1].shape == (std::vector<std::int64_t>{4, 4}));
    CHECK_MESSAGE(as_doubles(locals[0]) == rank0, numbers(locals[0].data));
    CHECK_MESSAGE(as_doubles(locals[1]) == rank1, numbers(locals[1].data));

    // The same through execute(): no collective, Partial(sum), exact, and --show prints them.
    auto options = options_for(DataMode::Arange);
    options.show = {"z"};
    const auto r = execute(check_src(src), options);
    check_all_pass(r);
    const auto& s = r.statement(0);
    CHECK_MESSAGE(ran(s) == "none", r.text());
    CHECK_MESSAGE(s.max_abs_error == 0, r.text());
    CHECK_MESSAGE(s.shown.find("rank 0") != std::string::npos, r.text());
    CHECK_MESSAGE(s.shown.find("P(sum)") != std::string::npos, r.text());
    CHECK_MESSAGE(s.shown.find("1388") != std::string::npos, r.text());
    CHECK_MESSAGE(s.shown.find("38") < s.shown.find("263"), r.text());
}

TEST_CASE("DTensor walkthrough: Shard x Shard into a replicated result all-reduces") {
    const std::string src = "mesh 2\ndim i=4 k=6 j=4\nz_{ij} = x_{i k_0} y_{k_0 j}\n";
    const auto c = check_src(src);
    REQUIRE_MESSAGE(c.ok(), c.text());
    const auto full = flat({{301, 322, 343, 364},
                            {697, 754, 811, 868},
                            {1093, 1186, 1279, 1372},
                            {1489, 1618, 1747, 1876}});
    for (const bool f64 : {false, true}) {
        CAPTURE(f64);
        if (f64) {
            const auto locals = locals_of<double>(c, "z", {DataMode::Arange, 0});
            for (const auto& t : locals)
                CHECK_MESSAGE(as_doubles(t) == full, numbers(t.data));
        } else {
            const auto locals = locals_of<float>(c, "z", {DataMode::Arange, 0});
            for (const auto& t : locals)
                CHECK_MESSAGE(std::vector<double>(t.data.begin(), t.data.end()) == full,
                              "f32 rank differs");
        }
    }
    const auto r = execute(check_src(src), options_for(DataMode::Arange));
    check_all_pass(r);
    CHECK_MESSAGE(ran(r.statement(0)) == "all-reduce(0)", r.text());
    CHECK_MESSAGE(r.statement(0).max_abs_error == 0, r.text());
    CHECK_MESSAGE(r.statement(0).replica_error == 0, r.text());
}

TEST_CASE("DTensor walkthrough: Replicate x Shard(1) gives column blocks, no traffic") {
    const std::string src = "mesh 2\ndim i=4 k=6 j=4\nz_{i j_0} = x_{ik} y_{k j_0}\n";
    const auto c = check_src(src);
    REQUIRE_MESSAGE(c.ok(), c.text());
    const auto locals = locals_of<double>(c, "z", {DataMode::Arange, 0});
    REQUIRE(locals.size() == 2);
    CHECK(locals[0].shape == (std::vector<std::int64_t>{4, 2}));
    CHECK_MESSAGE(as_doubles(locals[0]) ==
                      flat({{301, 322}, {697, 754}, {1093, 1186}, {1489, 1618}}),
                  numbers(locals[0].data));
    CHECK_MESSAGE(as_doubles(locals[1]) ==
                      flat({{343, 364}, {811, 868}, {1279, 1372}, {1747, 1876}}),
                  numbers(locals[1].data));
    const auto r = execute(check_src(src), options_for(DataMode::Arange));
    check_all_pass(r);
    CHECK_MESSAGE(ran(r.statement(0)) == "none", r.text());
}

TEST_CASE("DTensor walkthrough: the sample file's statements all verify, with their collectives") {
    const std::string src = "mesh 2\ndim i=4 k=6 j=4\n"
                            "zRR_{ij} = x_{ik} y_{kj}\n"
                            "zRS_{i j_0} = x_{ik} y_{k j_0}\n"
                            "zSR_{i_0 j} = x_{i_0 k} y_{kj}\n"
                            "zSR_{i_0 j} -> zSR_{ij}\n"
                            "zP_{ij}{U_0} = x_{i k_0} y_{k_0 j}\n"
                            "z_{ij} = x_{i k_0} y_{k_0 j}\n"
                            "xT_{k i_0} = x_{i_0 k}\n"
                            "x_{i_0 k} -> x_{i k_0}\n";
    for (const auto mode : {DataMode::Arange, DataMode::Ints, DataMode::Random}) {
        const auto r = run_src(src, options_for(mode));
        check_all_pass(r);
        REQUIRE(r.report.statements.size() == 8);
        const std::vector<std::string> want = {"none", "none",          "none", "all-gather(0)",
                                               "none", "all-reduce(0)", "none", "all-to-all(0)"};
        for (std::size_t s = 0; s < want.size(); ++s)
            CHECK_MESSAGE(ran(r.statement(s)) == want[s], r.text());
    }
}

// =============================================================================================
// 2. Property test: random einsums with random shardings on random meshes.

namespace {

/// Generates random programs: a 1-, 2- or 3-D mesh (axis sizes 1-3, at most 8 devices),
/// random ranges (uneven ones included), and einsums of 2-3 operands with random mesh
/// subscripts, random left-hand sides, partial markers and multi-statement data flow.
class ProgramGen {
public:
    explicit ProgramGen(std::uint32_t seed) : rng_(seed) {}

    std::string program() {
        mesh_header();
        std::string out = header_;
        const int kind = uni(0, 9);
        if (kind < 6) {
            out += statement("Z", rhs_tensors({"A", "B", "C"}, uni(2, 3)));
        } else {
            // Y from inputs; Z uses Y (inheriting its placement, or asking for another).
            std::vector<std::string> y_idx;
            auto ops = rhs_tensors({"A", "B"}, 2);
            out += statement("Y", ops, &y_idx);
            std::string y_use = "Y";
            if (!y_idx.empty()) {
                std::set<int> used;
                y_use += "_{";
                for (std::size_t n = 0; n < y_idx.size(); ++n) {
                    const bool subs = uni(0, 2) == 0;
                    y_use += (n ? " " : "") + index_text(y_idx[n][0], subs ? pick(used) : none_);
                }
                y_use += "}";
            }
            Operand y{y_use, {}};
            for (const auto& i : y_idx)
                y.indices.push_back(i[0]);
            auto more = rhs_tensors({"C"}, 1);
            more.insert(more.begin() + uni(0, 1), y);
            std::vector<std::string> z_idx;
            out += statement("Z", more, &z_idx);
            if (kind >= 8) {
                // Update (:=) or accumulate into (+=) Z with another product of its indices.
                std::string lhs = last_lhs_;
                auto acc = rhs_tensors({"D", "E"}, 2);
                // Make sure every index of Z appears on the right.
                std::set<char> have;
                for (const auto& o : acc)
                    have.insert(o.indices.begin(), o.indices.end());
                std::string extra;
                for (const auto& i : z_idx)
                    if (!have.count(i[0])) extra += i[0];
                if (!extra.empty()) acc.push_back({"F_{" + extra + "}", {}});
                out += lhs + (uni(0, 1) ? " += " : " := ");
                for (std::size_t o = 0; o < acc.size(); ++o)
                    out += (o ? " " : "") + acc[o].text;
                out += "\n";
            }
        }
        return out;
    }

private:
    struct Operand {
        std::string text;
        std::vector<char> indices;
    };

    int uni(int a, int b) { return std::uniform_int_distribution<int>(a, b)(rng_); }

    void mesh_header() {
        const int dims = uni(1, 3);
        sizes_.clear();
        devices_ = 1;
        for (int k = 0; k < dims; ++k) {
            int s = uni(1, 3);
            while (devices_ * s > 8)
                --s;
            sizes_.push_back(s);
            devices_ *= s;
        }
        named_ = uni(0, 3) == 0;
        header_ = "mesh ";
        static const char* names[] = {"dp", "tp", "pp"};
        for (int k = 0; k < dims; ++k) {
            if (named_)
                header_ += (k ? " " : "") + std::string(names[k]) + "=" + std::to_string(sizes_[k]);
            else
                header_ += (k ? "x" : "") + std::to_string(sizes_[k]);
        }
        header_ += "\ndim";
        for (char c : alphabet_)
            header_ += std::string(" ") + c + "=" + std::to_string(uni(1, 6));
        header_ += "\n";
    }

    /// None, one or (rarely) two mesh axes not in `used`, which takes them.
    std::vector<int> pick(std::set<int>& used) {
        std::vector<int> free;
        for (int k = 0; k < static_cast<int>(sizes_.size()); ++k)
            if (!used.count(k)) free.push_back(k);
        std::shuffle(free.begin(), free.end(), rng_);
        const int roll = uni(0, 99);
        const std::size_t n = roll < 50 ? 0 : roll < 90 ? 1 : 2;
        std::vector<int> out(free.begin(),
                             free.begin() + static_cast<long>(std::min(n, free.size())));
        used.insert(out.begin(), out.end());
        return out;
    }

    std::string axis_text(int k) const {
        static const char* names[] = {"dp", "tp", "pp"};
        return named_ ? names[k] : std::to_string(k);
    }

    std::string index_text(char c, const std::vector<int>& axes) const {
        std::string out(1, c);
        if (axes.empty()) return out;
        out += "_{";
        for (std::size_t n = 0; n < axes.size(); ++n)
            out += (n && named_ ? "," : "") + axis_text(axes[n]);
        return out + "}";
    }

    std::string partial_text(std::set<int>& used) {
        std::vector<int> free;
        for (int k = 0; k < static_cast<int>(sizes_.size()); ++k)
            if (!used.count(k)) free.push_back(k);
        if (free.empty()) return "";
        const int k = free[static_cast<std::size_t>(uni(0, static_cast<int>(free.size()) - 1))];
        used.insert(k);
        return "{U_" + (named_ ? "{" + axis_text(k) + "}" : axis_text(k)) + "}";
    }

    std::vector<Operand> rhs_tensors(const std::vector<std::string>& names, int count) {
        std::vector<Operand> out;
        for (int t = 0; t < count; ++t) {
            std::string idx = alphabet_;
            std::shuffle(idx.begin(), idx.end(), rng_);
            idx.resize(static_cast<std::size_t>(uni(1, 3)));
            std::set<int> used;
            Operand o;
            o.text = names[static_cast<std::size_t>(t)] + "_{";
            for (std::size_t n = 0; n < idx.size(); ++n) {
                o.text += (n ? " " : "") + index_text(idx[n], pick(used));
                o.indices.push_back(idx[n]);
            }
            o.text += "}";
            if (uni(0, 9) == 0) o.text += partial_text(used);
            out.push_back(o);
        }
        return out;
    }

    /// `NAME_{lhs} = ops...`: a random subset of the operands' indices in random order.
    std::string statement(const std::string& name, const std::vector<Operand>& ops,
                          std::vector<std::string>* lhs_indices = nullptr) {
        std::vector<char> all;
        for (const auto& o : ops)
            for (char c : o.indices)
                if (std::find(all.begin(), all.end(), c) == all.end()) all.push_back(c);
        std::shuffle(all.begin(), all.end(), rng_);
        const std::string softmax_index = all.empty() ? "" : std::string(1, all.front());
        all.resize(static_cast<std::size_t>(uni(0, static_cast<int>(all.size()))));
        std::set<int> used;
        std::string lhs = name;
        if (!all.empty()) {
            lhs += "_{";
            for (std::size_t n = 0; n < all.size(); ++n) {
                lhs += (n ? " " : "") + index_text(all[n], pick(used));
                if (lhs_indices) lhs_indices->push_back(std::string(1, all[n]));
            }
            lhs += "}";
        }
        if (uni(0, 3) == 0) lhs += partial_text(used);
        last_lhs_ = lhs;
        std::string rhs;
        for (const auto& o : ops)
            rhs += (rhs.empty() ? "" : " ") + o.text;
        // Sometimes a function of the product: non-linear ones reduce a partial input first.
        const int roll = uni(0, 99);
        if (roll >= 96 && !softmax_index.empty())
            rhs = std::string("softmax_") + softmax_index + "(" + rhs + ")";
        else if (roll >= 92)
            rhs = "neg(" + rhs + ")";
        else if (roll >= 87)
            rhs = "tanh(" + rhs + ")";
        else if (roll >= 80)
            rhs = "relu(" + rhs + ")";
        return lhs + " = " + rhs + "\n";
    }

    std::mt19937 rng_;
    std::vector<int> sizes_;
    int devices_ = 1;
    bool named_ = false;
    std::string header_;
    std::string last_lhs_;
    const std::string alphabet_ = "ijklm";
    const std::vector<int> none_;
};

} // namespace

TEST_CASE("property: random einsums on random meshes verify (random f32 and exact integer f64)") {
    // Deterministic; SHARDSCOPE_PROPERTY_SEED and SHARDSCOPE_PROPERTY_PROGRAMS explore further.
    const char* seed_env = std::getenv("SHARDSCOPE_PROPERTY_SEED");
    const char* count_env = std::getenv("SHARDSCOPE_PROPERTY_PROGRAMS");
    ProgramGen gen(seed_env ? static_cast<std::uint32_t>(std::strtoul(seed_env, nullptr, 10))
                            : 20261121u);
    int ran_count = 0, skipped = 0, statements = 0, exact = 0, with_collectives = 0;
    std::set<std::string> kinds;
    const int programs = count_env ? std::atoi(count_env) : 300;
    for (int p = 0; p < programs; ++p) {
        const auto src = gen.program();
        auto c = check_src(src);
        if (!c.ok()) {
            ++skipped;
            continue;
        }
        ++ran_count;
        // Alternate data modes and element types.
        const int variant = p % 4;
        ExecOptions options = options_for(variant % 2 ? DataMode::Ints : DataMode::Random,
                                          static_cast<std::uint64_t>(p));
        options.f64 = variant == 1 || variant == 2;
        const auto r = execute(std::move(c), options);
        CAPTURE(p);
        CHECK_MESSAGE(r.error.empty(), r.text());
        if (!r.error.empty()) continue;
        // One report entry per run: a repeat's body once per layer.
        REQUIRE_MESSAGE(r.report.statements.size() == exec::schedule(r.c.plan).size(), r.text());
        const bool nonlinear = src.find("relu") != std::string::npos ||
                               src.find("tanh") != std::string::npos ||
                               src.find("softmax") != std::string::npos;
        for (const auto& s : r.report.statements) {
            ++statements;
            CHECK_MESSAGE(s.pass, "statement: " << s.source << "\n" << r.text());
            if (options.data.mode == DataMode::Ints) {
                // Einsums, negation, sums and accumulations of integers are linear: exact.
                if (!nonlinear) CHECK_MESSAGE(s.exact, r.text());
                if (s.exact) CHECK_MESSAGE(s.max_abs_error == 0, r.text());
                exact += s.exact;
            }
            if (!s.collectives.empty()) ++with_collectives;
            for (const auto& e : s.collectives)
                kinds.insert(std::string(semantics::step_kind_name(e.kind)));
        }
    }
    MESSAGE("random programs: " << ran_count << " ran, " << skipped << " skipped (checker errors); "
                                << statements << " statements, " << exact << " exact, "
                                << with_collectives << " with collectives");
    CHECK(ran_count >= programs * 6 / 10);
    CHECK(statements > ran_count);
    CHECK(exact > 0);
    CHECK(with_collectives > statements / 5);
    // The generator reaches every collective the checker plans for einsums.
    for (const char* k : {"all-reduce", "all-gather", "reduce-scatter", "all-to-all"})
        CHECK_MESSAGE(kinds.count(k) == 1, k);
}

TEST_CASE("property: random redistribution chains verify") {
    // x_{...} -> x_{...} -> ...: every step moves one tensor between random placements (shards
    // over one or two axes, partial sums, replicas) on random meshes with uneven ranges.
    std::mt19937 rng(7);
    auto uni = [&](int a, int b) { return std::uniform_int_distribution<int>(a, b)(rng); };
    int ran_count = 0, skipped = 0;
    std::set<std::string> kinds;
    for (int p = 0; p < 150; ++p) {
        std::vector<int> sizes;
        int devices = 1;
        for (int k = 0, dims = uni(1, 3); k < dims; ++k) {
            int n = uni(1, 3);
            while (devices * n > 8)
                --n;
            sizes.push_back(n);
            devices *= n;
        }
        std::string src = "mesh ";
        for (std::size_t k = 0; k < sizes.size(); ++k)
            src += (k ? "x" : "") + std::to_string(sizes[k]);
        const std::string letters = "ijk";
        const auto rank = static_cast<std::size_t>(uni(1, 3));
        src += "\ndim";
        for (std::size_t n = 0; n < rank; ++n)
            src += std::string(" ") + letters[n] + "=" + std::to_string(uni(1, 7));
        src += "\n";
        auto layout = [&](bool allow_partial) {
            std::vector<int> free;
            for (int k = 0; k < static_cast<int>(sizes.size()); ++k)
                free.push_back(k);
            std::shuffle(free.begin(), free.end(), rng);
            std::string out = "x_{";
            for (std::size_t n = 0; n < rank; ++n) {
                out += (n ? " " : "") + std::string(1, letters[n]);
                const int take =
                    std::min(static_cast<int>(free.size()), uni(0, 3) == 0 ? 2 : uni(0, 1));
                if (take == 0) continue;
                out += "_{";
                for (int t = 0; t < take; ++t) {
                    out += std::to_string(free.back());
                    free.pop_back();
                }
                out += "}";
            }
            out += "}";
            if (allow_partial && !free.empty() && uni(0, 2) == 0)
                out += "{U_" + std::to_string(free.front()) + "}";
            return out;
        };
        src += layout(true);
        for (int step = 0, steps = uni(1, 3); step < steps; ++step)
            src += " -> " + layout(uni(0, 4) == 0);
        src += "\n";
        auto c = check_src(src);
        if (!c.ok()) {
            ++skipped;
            continue;
        }
        ++ran_count;
        const auto mode = p % 2 ? DataMode::Ints : DataMode::Random;
        const auto r = execute(std::move(c), options_for(mode, static_cast<std::uint64_t>(p)));
        CAPTURE(p);
        CHECK_MESSAGE(r.error.empty(), r.text());
        if (!r.error.empty()) continue;
        for (const auto& s : r.report.statements) {
            CHECK_MESSAGE(s.pass, r.text());
            if (mode == DataMode::Ints) CHECK_MESSAGE(s.max_abs_error == 0, r.text());
            for (const auto& e : s.collectives)
                kinds.insert(std::string(semantics::step_kind_name(e.kind)));
        }
    }
    MESSAGE("random chains: " << ran_count << " ran, " << skipped << " skipped");
    CHECK(ran_count >= 100);
    for (const char* k : {"all-reduce", "all-gather", "reduce-scatter", "all-to-all"})
        CHECK_MESSAGE(kinds.count(k) == 1, k);
}

// =============================================================================================
// 3. Plans broken on purpose must fail.

namespace {

/// Removes the first step of `kind` from statement `s`: every later use of its output reads
/// its input instead, and that value takes the layout of the removed step's output (so the
/// interpreter stores it as if the collective had run).
void remove_step(semantics::Plan& plan, std::size_t s, StepKind kind) {
    auto& sp = plan.statements.at(s);
    auto it = std::find_if(sp.steps.begin(), sp.steps.end(),
                           [&](const auto& st) { return st.kind == kind; });
    REQUIRE(it != sp.steps.end());
    const int in = it->inputs.at(0), out = it->output;
    sp.values.at(static_cast<std::size_t>(in)).layout.placements =
        sp.values.at(static_cast<std::size_t>(out)).layout.placements;
    sp.steps.erase(it);
    for (auto& st : sp.steps)
        for (auto& i : st.inputs)
            if (i == out) i = in;
    if (sp.result_value == out) sp.result_value = in;
}

} // namespace

TEST_CASE("broken plan: without its all-reduce, partial sums stored as replicated FAIL") {
    const std::string src = "mesh 4\ndim i=4 k=8 j=4\nz_{ij} = x_{i k_0} y_{k_0 j}\n";
    // Intact, it passes.
    check_all_pass(run_src(src));
    for (const auto mode : {DataMode::Random, DataMode::Ints, DataMode::Arange}) {
        CAPTURE(static_cast<int>(mode));
        auto c = check_src(src);
        REQUIRE_MESSAGE(c.ok(), c.text());
        remove_step(c.plan, 0, StepKind::AllReduce);
        const auto r = execute(std::move(c), options_for(mode));
        REQUIRE_MESSAGE(r.error.empty(), r.text()); // it runs to the end...
        const auto& s = r.statement(0);
        CHECK_MESSAGE(!s.pass, r.text()); // ...and the comparison catches it
        CHECK_MESSAGE(s.max_abs_error > 0, r.text());
        CHECK_MESSAGE(s.replica_error > 0, r.text()); // the ranks' "replicas" differ too
        CHECK_MESSAGE(ran(s) == "none", r.text());
        CHECK_MESSAGE(!r.report.passed(), r.text());
    }
}

TEST_CASE("broken plan: an all-reduce over the wrong mesh axis is refused") {
    const std::string src = "mesh 2x2\ndim i=4 k=8 j=4\nz_{ij} = x_{i k_0} y_{k_0 j}\n";
    auto c = check_src(src);
    REQUIRE_MESSAGE(c.ok(), c.text());
    bool changed = false;
    for (auto& st : c.plan.statements.at(0).steps)
        if (st.kind == StepKind::AllReduce && st.mesh_axes == std::vector<int>{0}) {
            st.mesh_axes = {1};
            changed = true;
        }
    REQUIRE_MESSAGE(changed, c.text());
    // The value is not partial over axis 1: the step cannot run as planned, and the executor
    // says so instead of running something else.
    const auto r = execute(std::move(c));
    CHECK_MESSAGE(r.error.find("cannot run as planned") != std::string::npos, r.text());
    CHECK_MESSAGE(r.error.find("all-reduce(1)") != std::string::npos, r.text());
}

// =============================================================================================
// The plan printed is the plan run (issue 21): redistributions over several mesh axes, each
// step an exact block movement; exec runs exactly the plan's collectives (RankProgram refuses
// a run whose collectives differ from the plan's in kind, axes, order or bytes).

namespace {

/// The plan's collectives of statement `s`, as `ran` writes exec's.
std::string planned(const semantics::Plan& plan, std::size_t s) {
    std::string out;
    for (const auto& st : plan.statements.at(s).steps) {
        if (!semantics::is_collective(st.kind)) continue;
        std::string axes;
        for (int k : st.mesh_axes)
            axes += (axes.empty() ? "" : ",") + std::to_string(k);
        out += (out.empty() ? "" : ", ") + std::string(semantics::step_kind_name(st.kind)) + "(" +
               axes + ")";
    }
    return out.empty() ? "none" : out;
}

} // namespace

TEST_CASE("plan as run: the multi-axis redistributions of issue 21 verify with their own plans") {
    struct Case {
        std::string src, plan;
    };
    const std::vector<Case> cases = {
        {"mesh 2x2\ndim i=8 j=8\nx_{i_0 j_1} -> x_{i_1 j_0}\n", "permute(0,1)"},
        {"mesh 2x2x2\ndim a=8 b=8 c=8\nx_{a_0 b_1 c_2} -> x_{a_2 b_1 c_0}\n", "permute(0,2)"},
        // Each new block from two devices: one sparse exchange (256 B, 2 peers) instead of
        // two all-to-alls (the same bytes, one more collective); with a slow axis 1 the
        // all-to-alls again.
        {"mesh 2x2x2\ndim a=8 b=8 c=8\nx_{a_{01} b_2 c} -> x_{a_0 b_1 c_2}\n", "permute(1,2)"},
        {"mesh 2x2x2\nlink 1 450GB/s 10us\ndim a=8 b=8 c=8\nx_{a_{01} b_2 c} -> x_{a_0 b_1 c_2}\n",
         "all-to-all(2), all-to-all(1)"},
        // The issue's block swap on axes of different sizes: one exchange (each device's new
        // block from two devices), even and uneven.
        {"mesh 2x4\ndim i=64 j=64\nx_{i_0 j_1} -> x_{i_1 j_0}\n", "permute(0,1)"},
        {"mesh 2x4\ndim i=9 j=5\nx_{i_0 j_1} -> x_{i_1 j_0}\n", ""},
        {"mesh 4x2\ndim i=12 j=6\nx_{i_0 j_1} -> x_{i_1 j_0}\n", ""},
        {"mesh 2x4 devices [7 5 3 1 6 4 2 0]\ndim i=64 j=64\nx_{i_0 j_1} -> x_{i_1 j_0}\n",
         "permute(0,1)"},
        {"mesh 2x2x2\ndim a=8 b=8 c=8\nx_{a_{012} b c} -> x_{a b_{012} c}\n", ""},
        {"mesh 2x2\ndim a=8 b=8\nx_{a_{01} b} -> x_{a_{10} b}\n", "permute(0,1)"},
        {"mesh 4x1\ndim i=8 j=8\nx_{i_0 j}{U_1} -> x_{i_0 j}\nexpect none\n", "none"},
        {"mesh 2x4\ndim i=512 j=512\nx_{i_0 j} -> x_{i_1 j}\n", "permute(0,1)"},
        // Growing blocks that are no gather of the old ones: a shard moved to a smaller axis,
        // each device collecting its larger block from the devices that hold its parts (one
        // exchange; XLA permutes and gathers, the same bytes in two collectives), even,
        // uneven and under a device order.
        {"mesh 2x4\ndim i=2048 j=8\nx_{i_1 j} -> x_{i_0 j}\n", "permute(0,1)"},
        {"mesh 2x4\ndim i=1024 j=8\nx_{i_{01} j} -> x_{i_1 j}\n", "permute(0,1)"},
        {"mesh 2x4\ndim i=11 j=3\nx_{i_1 j} -> x_{i_0 j}\n", ""},
        {"mesh 2x4 devices [7 5 3 1 6 4 2 0]\ndim i=2048 j=8\nx_{i_1 j} -> x_{i_0 j}\n",
         "permute(0,1)"},
        // Dropping minor-most axes stays an all-gather.
        {"mesh 2x4\ndim i=1024 j=8\nx_{i_{01} j} -> x_{i_0 j}\n", "all-gather(1)"},
        // Uneven ranges and empty shards through a permute and all-to-alls.
        {"mesh 2x2\ndim i=5 j=3\nx_{i_0 j_1} -> x_{i_1 j_0}\n", ""},
        {"mesh 2x4\ndim i=7 j=3\nx_{i_0 j} -> x_{i_1 j}\n", ""},
        {"mesh 2x2x2\ndim a=5 b=3 c=7\nx_{a_{01} b_2 c} -> x_{a_0 b_1 c_2}\n", ""},
        // An explicit device order: pairs name devices, not coordinates.
        {"mesh 2x2 devices [3 1 2 0]\ndim i=8 j=8\nx_{i_0 j_1} -> x_{i_1 j_0}\n", "permute(0,1)"},
    };
    for (const auto& k : cases) {
        CAPTURE(k.src);
        auto c = check_src(k.src);
        REQUIRE_MESSAGE(c.ok(), c.text());
        if (!k.plan.empty()) CHECK_MESSAGE(planned(c.plan, 0) == k.plan, c.text());
        for (const auto mode : {DataMode::Ints, DataMode::Arange}) {
            const auto r = execute(c, options_for(mode, 5));
            check_all_pass(r);
            if (r.error.empty()) CHECK_MESSAGE(ran(r.statement(0)) == planned(c.plan, 0), r.text());
        }
    }
}

TEST_CASE("plan as run: the bytes exec reports are the plan's, step by step") {
    for (const std::string src :
         {"mesh 2x2\ndim i=8 j=8\nx_{i_0 j_1} -> x_{i_1 j_0}\n",
          "mesh 2x2x2\ndim a=8 b=6 c=8\nx_{a_{01} b_2 c} -> x_{a_0 b_1 c_2}\n",
          "mesh 2x4\ndim i=2048 j=4\nx_{i_1 j} -> x_{i_0 j}\n",
          "mesh 4\ndim i=6 k=8 j=4\nz_{ij} = x_{i k_0} y_{k_0 j}\n",
          "mesh 2x2\ndim s=8 v=6\np_{s v_{01}} = softmax_v(z_{s v_{01}})\n"}) {
        CAPTURE(src);
        auto c = check_src(src);
        REQUIRE_MESSAGE(c.ok(), c.text());
        const auto r = execute(c, options_for(DataMode::Random, 1));
        check_all_pass(r);
        std::vector<double> want;
        for (const auto& st : c.plan.statements.at(0).steps)
            if (semantics::is_collective(st.kind)) want.push_back(st.cost.bytes_per_device);
        std::vector<double> got;
        for (const auto& e : r.statement(0).collectives)
            got.push_back(e.bytes);
        CHECK_MESSAGE(got == want, r.text());
    }
}

TEST_CASE("plan as run: collectives over groups of mesh axes verify, even and uneven") {
    // Links without latency: one collective over the group sends no more bytes than the
    // per-axis sequence and is one step, so the planner takes it.
    const std::string links = "link 0 450GB/s 0us\nlink 1 450GB/s 0us\n";
    struct Case {
        std::string src, plan;
    };
    const std::vector<Case> cases = {
        {"mesh 2x4\n" + links + "dim i=16 j=16 k=8\nC_{ik} = A_{i j_{01}} B_{j_{01} k}\n",
         "all-reduce(0,1)"},
        {"mesh 2x4\n" + links + "dim i=16 j=16\nx_{i_{01} j} -> x_{i j_{01}}\n", "all-to-all(0,1)"},
        {"mesh 2x4\n" + links + "dim i=16 j=16\ny_{i_{10} j} -> y_{i j}\n", "all-gather(1,0)"},
        {"mesh 2x4\n" + links + "dim i=16 j=16 k=8\nD_{i_{01} k} = A_{i j_{01}} B_{j_{01} k}\n",
         "reduce-scatter(0,1)"},
        {"mesh 2x4\n" + links + "dim i=16 j=16 k=8\nD_{i_{10} k} = A_{i j_{01}} B_{j_{01} k}\n",
         "reduce-scatter(1,0)"},
        // Uneven: nested torch.chunk over the group's axes, empty shards included.
        // (Uneven, devices 3 and 7 hold nothing of i: an exchange of exactly the parts that
        // move, 80 B, beats the all-to-all's padded blocks, 112 B.)
        {"mesh 2x4\n" + links + "dim i=10 j=12\nx_{i_{01} j} -> x_{i j_{01}}\n", "permute(0,1)"},
        {"mesh 2x4\n" + links + "dim i=5 j=12 k=6\nD_{i_{01} k} = A_{i j_{01}} B_{j_{01} k}\n",
         "reduce-scatter(0,1)"},
        // A non-linear function, a softmax or a max of a value partial over both axes.
        {"mesh 2x4\n" + links + "dim i=16 j=16 k=8\nC_{ik} = gelu(A_{i j_{01}} B_{j_{01} k})\n",
         "all-reduce(0,1)"},
        {"mesh 2x4\n" + links +
             "dim i=16 j=16 k=8\nC_{ik} = softmax_k(A_{i j_{01}} B_{j_{01} k})\n",
         "all-reduce(0,1)"},
        {"mesh 2x4\n" + links + "dim i=16 j=16 k=8\nC_{i} = max_k(A_{i j_{01}} B_{j_{01} k})\n",
         "all-reduce(0,1)"},
        // Priced by ring steps alone (tpu-v5e), the hierarchical all-reduce: scatter, reduce
        // the rest, gather (on NVLink one all-reduce over the group wins: one fixed latency).
        {"mesh 2x4\nhw tpu-v5e\ndim i=64 j=64 k=64\nC_{ik} = gelu(A_{i j_{01}} B_{j_{01} k})\n",
         "reduce-scatter(1), all-reduce(0), all-gather(1)"},
        {"mesh 2x4\ndim i=64 j=64 k=64\nC_{ik} = gelu(A_{i j_{01}} B_{j_{01} k})\n",
         "all-reduce(0,1)"},
        // Three axes, two of them in a group.
        {"mesh 2x2x2\nlink 1 450GB/s 0us\nlink 2 450GB/s 0us\ndim i=8 j=8 k=8\n"
         "C_{i_0 k} = A_{i_0 j_{12}} B_{j_{12} k}\n",
         "all-reduce(1,2)"},
        // The same without a function after it.
        {"mesh 2x4\nhw tpu-v5e\ndim i=64 j=64 k=64\nC_{ik} = A_{i j_{01}} B_{j_{01} k}\n",
         "reduce-scatter(1), all-reduce(0), all-gather(1)"},
    };
    for (const auto& k : cases) {
        CAPTURE(k.src);
        auto c = check_src(k.src);
        REQUIRE_MESSAGE(c.ok(), c.text());
        if (!k.plan.empty()) CHECK_MESSAGE(planned(c.plan, 0) == k.plan, c.text());
        for (const auto mode : {DataMode::Ints, DataMode::Random}) {
            const auto r = execute(c, options_for(mode, 3));
            check_all_pass(r);
            if (r.error.empty()) CHECK_MESSAGE(ran(r.statement(0)) == planned(c.plan, 0), r.text());
        }
    }
}

TEST_CASE("plan as run: explicit collectives over several axes are one collective over the group") {
    const auto c = check_src("mesh 2x4\ndim i=8 j=16 k=8\n"
                             "a_{ik} = AllReduce_{j_{01}}(x_{i j_{01}} y_{j_{01} k})\n"
                             "expect all-reduce(0,1)\n"
                             "b_{ij} = AllGather_{i_{01}}(x_{i_{01} j})\n"
                             "expect all-gather(0,1)\n"
                             "c_{i_{01} k} = ReduceScatter_{i_{01}}(p_{ik}{U_{01}})\n"
                             "expect reduce-scatter(0,1)\n");
    REQUIRE_MESSAGE(c.ok(), c.text());
    for (const auto mode : {DataMode::Ints, DataMode::Random}) {
        const auto r = execute(c, options_for(mode, 2));
        check_all_pass(r);
        for (std::size_t s = 0; s < 3 && r.error.empty(); ++s)
            CHECK_MESSAGE(ran(r.statement(s)) == planned(c.plan, s), r.text());
    }
}

TEST_CASE("broken plan: a group collective over the wrong axes, or in the wrong order, fails") {
    const std::string src = "mesh 2x4\nlink 0 450GB/s 0us\nlink 1 450GB/s 0us\ndim i=16 j=16\n"
                            "x_{i_{01} j} -> x_{i j_{01}}\n";
    auto failed = [](const Ran& r) { return !r.error.empty() || !r.report.passed(); };
    for (const auto& axes : {std::vector<int>{1, 0}, std::vector<int>{0}, std::vector<int>{0, 0}}) {
        auto c = check_src(src);
        REQUIRE_MESSAGE(c.ok(), c.text());
        bool changed = false;
        for (auto& st : c.plan.statements.at(0).steps)
            if (st.kind == StepKind::AllToAll) {
                st.mesh_axes = axes;
                changed = true;
            }
        REQUIRE_MESSAGE(changed, c.text());
        const auto r = execute(std::move(c));
        CHECK_MESSAGE(failed(r), r.text());
        CHECK_MESSAGE(r.error.find("cannot run as planned") != std::string::npos, r.text());
    }
}

TEST_CASE(
    "broken plan: steps swapped, an axis changed or a permute misdirected is refused or FAILS") {
    // A slow axis 1 keeps the two all-to-alls (else one exchange is cheaper).
    const std::string src =
        "mesh 2x2x2\nlink 1 450GB/s 10us\ndim a=8 b=8 c=8\nx_{a_{01} b_2 c} -> x_{a_0 b_1 c_2}\n";
    check_all_pass(run_src(src));
    auto failed = [](const Ran& r) { return !r.error.empty() || !r.report.passed(); };
    SUBCASE("the two all-to-alls in the other order") {
        auto c = check_src(src);
        auto& steps = c.plan.statements.at(0).steps;
        std::vector<std::size_t> at;
        for (std::size_t i = 0; i < steps.size(); ++i)
            if (steps[i].kind == StepKind::AllToAll) at.push_back(i);
        REQUIRE_MESSAGE(at.size() == 2, c.text());
        std::swap(steps[at[0]].mesh_axes, steps[at[1]].mesh_axes);
        std::swap(steps[at[0]].from_index, steps[at[1]].from_index);
        std::swap(steps[at[0]].to_index, steps[at[1]].to_index);
        const auto r = execute(std::move(c));
        CHECK_MESSAGE(failed(r), r.text());
        CHECK_MESSAGE(r.error.find("cannot run as planned") != std::string::npos, r.text());
    }
    SUBCASE("the steps themselves swapped") {
        auto c = check_src(src);
        auto& steps = c.plan.statements.at(0).steps;
        REQUIRE(steps.size() >= 2);
        std::swap(steps[0], steps[1]);
        const auto r = execute(std::move(c));
        CHECK_MESSAGE(failed(r), r.text());
    }
    SUBCASE("an axis changed") {
        auto c = check_src(src);
        for (auto& st : c.plan.statements.at(0).steps)
            if (st.kind == StepKind::AllToAll) {
                st.mesh_axes = {0};
                break;
            }
        const auto r = execute(std::move(c));
        CHECK_MESSAGE(failed(r), r.text());
    }
    SUBCASE("a permute to the wrong device") {
        auto c = check_src("mesh 2x4\ndim i=16 j=4\nx_{i_0 j} -> x_{i_1 j}\n");
        REQUIRE_MESSAGE(c.ok(), c.text());
        bool changed = false;
        for (auto& st : c.plan.statements.at(0).steps)
            if (st.kind == StepKind::Permute && st.pairs.size() >= 2) {
                // The first and last senders hold different halves of i.
                std::swap(st.pairs.front().second, st.pairs.back().second);
                changed = true;
            }
        REQUIRE_MESSAGE(changed, c.text());
        const auto r = execute(std::move(c));
        CHECK_MESSAGE(failed(r), r.text());
    }
    SUBCASE("an exchange (several sources per device) with a part from the wrong device") {
        auto c = check_src("mesh 2x4\ndim i=16 j=16\nx_{i_0 j_1} -> x_{i_1 j_0}\n");
        REQUIRE_MESSAGE(c.ok(), c.text());
        bool changed = false;
        for (auto& st : c.plan.statements.at(0).steps)
            if (st.kind == StepKind::Permute && st.pairs.size() >= 2) {
                // A receiver's first part now comes from the device after its sender.
                auto& p = st.pairs.front();
                p.first = (p.first + 1) % 8 == p.second ? (p.first + 2) % 8 : (p.first + 1) % 8;
                changed = true;
            }
        REQUIRE_MESSAGE(changed, c.text());
        const auto r = execute(std::move(c));
        CHECK_MESSAGE(failed(r), r.text());
    }
    SUBCASE("an exchange missing one of a device's parts is refused") {
        auto c = check_src("mesh 2x4\ndim i=16 j=16\nx_{i_0 j_1} -> x_{i_1 j_0}\n");
        REQUIRE_MESSAGE(c.ok(), c.text());
        bool changed = false;
        for (auto& st : c.plan.statements.at(0).steps)
            if (st.kind == StepKind::Permute && !st.pairs.empty()) {
                st.pairs.pop_back();
                changed = true;
            }
        REQUIRE_MESSAGE(changed, c.text());
        const auto r = execute(std::move(c));
        CHECK_MESSAGE(failed(r), r.text());
        CHECK_MESSAGE(r.error.find("unfilled") != std::string::npos, r.text());
    }
    SUBCASE("a collective the plan states but the executor does not run") {
        auto c = check_src(src);
        auto& sp = c.plan.statements.at(0);
        // A stated all-to-all whose layouts say nothing moves.
        for (auto& st : sp.steps)
            if (st.kind == StepKind::AllToAll) {
                sp.values.at(static_cast<std::size_t>(st.output)).layout =
                    sp.values.at(static_cast<std::size_t>(st.inputs.at(0))).layout;
                break;
            }
        const auto r = execute(std::move(c));
        CHECK_MESSAGE(failed(r), r.text());
    }
}

TEST_CASE("broken plan: without its all-gather the run fails (a FAIL or an ExecError)") {
    for (const std::string src : {"mesh 4\ndim i=8 j=4 k=4\nz_{ik} = x_{i_0 j} y_{jk}\n",
                                  "mesh 4\ndim i=8 j=4\nx_{i_0 j} -> x_{ij}\n",
                                  "mesh 4\ndim i=8 j=4 k=4\nW_{jk} x_{i_0 j} -> W_{jk} x_{ij}\n"}) {
        CAPTURE(src);
        check_all_pass(run_src(src));
        auto c = check_src(src);
        REQUIRE_MESSAGE(c.ok(), c.text());
        remove_step(c.plan, 0, StepKind::AllGather);
        const auto r = execute(std::move(c));
        const bool failed = !r.error.empty() || !r.report.passed();
        CHECK_MESSAGE(failed, r.text());
        if (!r.error.empty()) CHECK_MESSAGE(r.error.size() > 10, r.text());
    }
}

TEST_CASE("broken plan: a wrong local operation FAILS (relu instead of gelu, sum instead of max)") {
    SUBCASE("function") {
        auto c = check_src("mesh 2\ndim i=4 k=4\ny_{i_0 k} = gelu(x_{i_0 k})\n");
        REQUIRE_MESSAGE(c.ok(), c.text());
        for (auto& st : c.plan.statements.at(0).steps)
            if (st.op == OpKind::Function) st.function = "relu";
        const auto r = execute(std::move(c));
        REQUIRE_MESSAGE(r.error.empty(), r.text());
        CHECK_MESSAGE(!r.statement(0).pass, r.text());
    }
    SUBCASE("reduction") {
        auto c = check_src("mesh 2\ndim i=4 j=6\ny_{i} = max_j(x_{i j_0})\n");
        REQUIRE_MESSAGE(c.ok(), c.text());
        bool changed = false;
        for (auto& st : c.plan.statements.at(0).steps)
            if (st.op == OpKind::Reduce) {
                st.reduce = semantics::ReduceFn::Sum;
                changed = true;
            }
        REQUIRE_MESSAGE(changed, c.text());
        const auto r = execute(std::move(c));
        REQUIRE_MESSAGE(r.error.empty(), r.text());
        CHECK_MESSAGE(!r.statement(0).pass, r.text());
    }
    SUBCASE("a replicated operand not sliced: the wrong rows") {
        // z_{i_0 j} = x_{i_0 j} + c_{i}: c is sliced locally; dropping the slice adds c's first
        // rows on every rank (or fails on shapes).
        auto c = check_src("mesh 2\ndim i=4 j=3\nz_{i_0 j} = x_{i_0 j} + c_{i}\n");
        REQUIRE_MESSAGE(c.ok(), c.text());
        auto& sp = c.plan.statements.at(0);
        auto it = std::find_if(sp.steps.begin(), sp.steps.end(),
                               [](const auto& st) { return st.kind == StepKind::Slice; });
        REQUIRE_MESSAGE(it != sp.steps.end(), c.text());
        remove_step(c.plan, 0, StepKind::Slice);
        const auto r = execute(std::move(c));
        CHECK_MESSAGE((!r.error.empty() || !r.report.passed()), r.text());
    }
}

// =============================================================================================
// 4. Every construct of NOTATION.md executes and verifies.

TEST_CASE("constructs: elementwise functions on sharded inputs") {
    for (const std::string f :
         {"relu", "gelu", "phi", "silu", "sigmoid", "tanh", "exp", "log", "sqrt", "neg", "scale"}) {
        CAPTURE(f);
        const auto r = run_both("mesh 2x2\ndim i=5 k=4\ny_{i_0 k_1} = " + f + "(x_{i_0 k_1})\n");
        CHECK_MESSAGE(ran(r.statement(0)) == "none", r.text());
    }
    SUBCASE("LaTeX spellings") {
        run_both("mesh 2\ndim i=4 k=4\ny_{i_0 k} = \\phi(x_{i_0 k}) + \\sigma(x_{i_0 k}) + "
                 "\\exp(x_{i_0 k})\n");
    }
}

TEST_CASE("constructs: a replicated product into a sharded result computes only the kept block") {
    // The left-hand side keeps a block of b: the operands holding b are sliced before the
    // compute (a quarter of the work, as XLA compiles it), and the run verifies.
    for (const std::string src :
         {"mesh 4\ndim b=8 d=4 e=4\ny_{b_0 e} = x_{b d} W_{d e}\n",
          "mesh 2x2\ndim b=6 d=4 e=4\ny_{b_{01} e} = relu(x_{b d} W_{d e}) + x_{b e}\n",
          "mesh 2x2\ndim b=8 d=4 e=4\ny_{b_1 e_0} = x_{b d} W_{d e_0}\n"}) {
        CAPTURE(src);
        const auto r = run_both(src);
        CHECK_MESSAGE(ran(r.statement(0)) == "none", r.text());
        const auto& steps = r.c.plan.statements.at(0).steps;
        REQUIRE_MESSAGE(!steps.empty(), r.text());
        CHECK_MESSAGE(steps.front().kind == StepKind::Slice, r.text());
    }
}

TEST_CASE("constructs: declared functions, fn NAME elementwise and fn NAME linear") {
    const auto r = run_both("mesh 4\ndim i=4 k=8\nfn f elementwise\nfn g linear\n"
                            "a_{i_0 k} = f(x_{i_0 k})\n"
                            "b_{ik}{U_0} = g(p_{ik}{U_0})\n"
                            "c_{ik} = g(p_{ik}{U_0})\n"
                            "d_{ik} = f(p_{ik}{U_0})\n");
    CHECK_MESSAGE(ran(r.statement(0)) == "none", r.text());
    CHECK_MESSAGE(ran(r.statement(1)) == "none", r.text()); // linear: P passes through
    CHECK_MESSAGE(ran(r.statement(2)) == "all-reduce(0)", r.text());
    CHECK_MESSAGE(ran(r.statement(3)) == "all-reduce(0)", r.text()); // reduced first
}

TEST_CASE("constructs: the non-linearity on a partial input implies an all-reduce") {
    const auto r = run_both("mesh 4\ndim i=4 k=8\ny_{i} = relu(x_{i k_0} w_{k_0})\n"
                            "y2_{i} = relu(p_{i}{U_0})\n");
    CHECK_MESSAGE(ran(r.statement(0)) == "all-reduce(0)", r.text());
    CHECK_MESSAGE(ran(r.statement(1)) == "all-reduce(0)", r.text());
}

TEST_CASE("constructs: softmax along a replicated and along a sharded index") {
    SUBCASE("along an unsharded index: local") {
        const auto r = run_both("mesh 4\ndim s=8 v=6\np_{s_0 v} = softmax_v(z_{s_0 v})\n");
        CHECK_MESSAGE(ran(r.statement(0)) == "none", r.text());
    }
    SUBCASE("along a sharded index, long rows: the row statistics are all-reduced") {
        const auto r =
            run_both("mesh 4\ndim s=2 v=64\nlink 0 1GB/s 0us\np_{s v_0} = softmax_v(z_{s v_0})\n");
        CHECK_MESSAGE(ran(r.statement(0)) == "all-reduce(0), all-reduce(0)", r.text());
        const auto& cs = r.statement(0).collectives;
        REQUIRE(cs.size() == 2);
        CHECK_MESSAGE(cs[0].tensor.find(".max") != std::string::npos, r.text());
        CHECK_MESSAGE(cs[1].tensor.find(".sum") != std::string::npos, r.text());
    }
    SUBCASE("along a sharded index, short rows: an all-gather") {
        const auto r = run_both("mesh 4\ndim s=8 v=8\np_{s v_0} = softmax_v(z_{s v_0})\n");
        CHECK_MESSAGE(ran(r.statement(0)).find("all-gather(0)") != std::string::npos, r.text());
    }
    SUBCASE("along an index sharded over two axes, uneven") {
        run_both("mesh 2x3\ndim s=3 v=4099\np_{s v_{01}} = softmax_v(z_{s v_{01}})\n");
    }
    SUBCASE("Soft spelling, and softmax of a partial input") {
        const auto r = run_both("mesh 2\ndim s=4 v=6\np_{sv} = \\texttt{Soft}_{v}(z_{sv})\n"
                                "q_{sv} = softmax_v(w_{sv}{U_0})\n");
        CHECK_MESSAGE(ran(r.statement(1)) == "all-reduce(0)", r.text());
    }
}

TEST_CASE("constructs: sum, max and mean reductions over sharded and unsharded indices") {
    const auto r = run_both("mesh 4\ndim i=6 j=10\n"
                            "a_{i} = sum_j(x_{i j_0})\n"
                            "b_{i}{U_0} = sum_j(x_{i j_0})\n"
                            "c_{i} = max_j(x_{i j_0})\n"
                            "d_{i} = mean_j(x_{i j_0})\n"
                            "e_{i_0} = sum_j(x_{i_0 j})\n"
                            "f_{i_0} = max_j(x_{i_0 j})\n"
                            "g_{i_0} = mean_j(x_{i_0 j})\n"
                            "h = \\texttt{sum}_{j}(x_{i j_0})\n"
                            "m_{i} = max_j(p_{ij}{U_0})\n");
    const std::vector<std::string> want = {"all-reduce(0)", "none",          "all-reduce(0)",
                                           "all-reduce(0)", "none",          "none",
                                           "none",          "all-reduce(0)", "all-reduce(0)"};
    REQUIRE(r.report.statements.size() == want.size());
    for (std::size_t s = 0; s < want.size(); ++s)
        CHECK_MESSAGE(ran(r.statement(s)) == want[s], r.text());
}

TEST_CASE("constructs: + - / \\frac, numbers and negation") {
    const auto r = run_both("mesh 2x2\ndim i=4 j=6\n"
                            "a_{i_0 j} = x_{i_0 j} + y_{i_0 j}\n"
                            "b_{i_0 j} = x_{i_0 j} - w_{j}\n"
                            "c_{i_0 j} = x_{i_0 j} + v_{i}\n"
                            "d_{ij}{U_1} = p_{ij}{U_1} + q_{ij}{U_1}\n"
                            "e_{ij} = p_{ij}{U_1} - q_{ij}{U_1}\n"
                            "f_{ij} = p_{ij}{U_1} + x_{ij}\n"
                            "g_{i_0 j} = x_{i_0 j} / (2 + exp(y_{i_0 j}))\n"
                            "h_{ij}{U_0} = \\frac{p_{ij}{U_0}}{2 + exp(w_{j})}\n"
                            "k_{i j_1} = 2 x_{i j_1}\n"
                            "l_{i j_1} = -x_{i j_1} + 3 * y_{i j_1}\n"
                            "m_{i_0 j_1} = 0.5 x_{i_0 j_1} \\cdot y_{i_0 j_1}\n"
                            "n_{m_0 j_1} = u_{m_0} + o_{j_1}\n");
    const std::vector<std::string> want = {"none",          "none",          "none", "none",
                                           "all-reduce(1)", "all-reduce(1)", "none", "none",
                                           "none",          "none",          "none", "none"};
    REQUIRE(r.report.statements.size() == want.size());
    for (std::size_t s = 0; s < want.size(); ++s)
        CHECK_MESSAGE(ran(r.statement(s)) == want[s], r.text());
}

TEST_CASE("constructs: chains (redistributions, splits and groups)") {
    SUBCASE("every row of the left-hand-side table as a chain") {
        const auto r = run_both("mesh 4\ndim i=8 j=4\n"
                                "a_{ij} -> a_{i_0 j}\n"
                                "b_{i_0 j} -> b_{ij}\n"
                                "c_{i_0 j} -> c_{i j_0}\n"
                                "d_{ij}{U_0} -> d_{ij}\n"
                                "e_{ij}{U_0} -> e_{i j_0}\n"
                                "f_{ij}{U_0} -> f_{ij}{U_0}\n"
                                "g_{ij} -> g_{ij}{U_0}\n");
        const std::vector<std::string> want = {
            "none", "all-gather(0)", "all-to-all(0)", "all-reduce(0)", "reduce-scatter(0)",
            "none", "none"};
        REQUIRE(r.report.statements.size() == want.size());
        for (std::size_t s = 0; s < want.size(); ++s)
            CHECK_MESSAGE(ran(r.statement(s)) == want[s], r.text());
    }
    SUBCASE("uneven all-to-all and all-gather") {
        const auto r = run_both("mesh 3\ndim i=5 j=7\nx_{i_0 j} -> x_{i j_0} -> x_{ij}\n");
        CHECK_MESSAGE(ran(r.statement(0)) == "all-to-all(0), all-gather(0)", r.text());
    }
    SUBCASE("split b -> r c, group (r_0 c), DDP layout") {
        const auto r = run_both("mesh 4\ndim b=8 s=3 d=2\nsplit b -> r c\n"
                                "x_{bsd} -> x_{(r c) s d} -> x_{r_0 c s d}\n"
                                "y_{r_0 c s e} = W_{de} x_{r_0 c s d}\n"
                                "g_{de} = x_{r_0 c s d} y_{r_0 c s e}\n");
        CHECK_MESSAGE(ran(r.statement(0)) == "none", r.text());
        CHECK_MESSAGE(ran(r.statement(1)) == "none", r.text());
        CHECK_MESSAGE(ran(r.statement(2)) == "all-reduce(0)", r.text());
    }
    SUBCASE("a chain of products: the notation post's sequence-parallel step moves x only") {
        const auto r = run_both("mesh 2\ndim b=2 s=8 d=4 e=8\nsplit s -> r t\nsplit e -> r' f\n"
                                "W^0_{r'_0 f d'} x_{b r_0 t d'} \\xrightarrow{all-gather} "
                                "W^0_{r'_0 f d'} x_{b s d'}\n"
                                "y_{b s r'_0 f} = W^0_{r'_0 f d'} x_{b s d'}\n");
        CHECK_MESSAGE(ran(r.statement(0)) == "all-gather(0)", r.text());
        CHECK_MESSAGE(ran(r.statement(1)) == "none", r.text());
        CHECK_MESSAGE(r.statement(0).target == "x", r.text());
    }
    SUBCASE("a chain of products over two arrows, the moved tensor first") {
        const auto r = run_both("mesh 2x2\ndim i=8 j=4 k=6\n"
                                "x_{i_0 j_1} W_{jk} -> x_{i j_1} W_{jk} -> x_{i_1 j} W_{jk}\n"
                                "z_{i_1 k} = x_{i_1 j} W_{jk}\n");
        CHECK_MESSAGE(r.statement(0).target == "x", r.text());
        CHECK_MESSAGE(ran(r.statement(1)) == "none", r.text());
    }
    SUBCASE("a sharded group unsharded: FSDP weight gather on a 2-D mesh") {
        const auto r = run_both("mesh 2x4\ndim d=8 m=4\nsplit d -> t e\nsplit m -> g n\n"
                                "W_{t_1 e (g_0 n)} -> W_{t_1 e m}\n"
                                "h_{f_0 c s t_1 e} = W_{t_1 e m} x_{f_0 c s m}\n"
                                "y_{f_0 c s m} = V_{m t_1 e} h_{f_0 c s t_1 e}\n");
        CHECK_MESSAGE(ran(r.statement(0)) == "all-gather(0)", r.text());
        CHECK_MESSAGE(ran(r.statement(1)) == "none", r.text());
        CHECK_MESSAGE(ran(r.statement(2)) == "all-reduce(1)", r.text());
    }
}

// Issue 19: a chain of products moves every factor whose layout changes.
TEST_CASE("constructs: a chain of products that moves two tensors") {
    SUBCASE("both gathered, each over its own axis; the stored one is read after") {
        const auto r = run_both("mesh 2x2\ndim i=8 j=4 k=6\n"
                                "A_{i_0 j} B_{j k_1} -> A_{i j} B_{j k}\n"
                                "z_{i k} = A_{i j} W_{j k}\n");
        CHECK_MESSAGE(ran(r.statement(0)) == "all-gather(0), all-gather(1)", r.text());
        CHECK_MESSAGE(r.statement(0).target == "A", r.text());
        CHECK_MESSAGE(ran(r.statement(1)) == "none", r.text());
    }
    SUBCASE("the second tensor, defined before, is stored moved and read after") {
        const auto r = run_both("mesh 2x2\ndim i=8 j=4 k=6\nB_{j k_1} = E_{j k_1}\n"
                                "A_{i_0 j} B_{j k_1} -> A_{i j} B_{j k}\n"
                                "z_{i k} = A_{i j} B_{j k}\n"
                                "u_{j k} = relu(B_{j k})\n");
        CHECK_MESSAGE(ran(r.statement(1)) == "all-gather(0), all-gather(1)", r.text());
        CHECK_MESSAGE(ran(r.statement(2)) == "none", r.text());
        CHECK_MESSAGE(ran(r.statement(3)) == "none", r.text());
    }
    SUBCASE("uneven shards, an all-to-all and a gather, over two arrows") {
        const auto r =
            run_both("mesh 3\ndim i=5 j=7 k=4\n"
                     "A_{i_0 j} B_{j_0 k} -> A_{i j_0} B_{j_0 k} -> A_{i j_0} B_{j k}\n");
        CHECK_MESSAGE(ran(r.statement(0)) == "all-to-all(0), all-gather(0)", r.text());
    }
    SUBCASE("a permute of the second tensor") {
        const auto r = run_both("mesh 2x4\ndim i=16 j=16 k=4\n"
                                "A_{i_0 j} B_{k j_0} -> A_{i j} B_{k j_1}\n");
        CHECK_MESSAGE(ran(r.statement(0)).find("permute") != std::string::npos, r.text());
    }
}

TEST_CASE("broken plan: the second tensor of a chain of products moved wrongly is refused") {
    auto failed = [](const Ran& r) { return !r.error.empty() || !r.report.passed(); };
    SUBCASE("its all-gather over the wrong axis") {
        auto c = check_src("mesh 2x2\ndim i=8 j=4 k=6\nA_{i_0 j} B_{j k_1} -> A_{i j} B_{j k}\n");
        REQUIRE_MESSAGE(c.ok(), c.text());
        bool changed = false;
        for (auto& st : c.plan.statements.at(0).steps)
            if (st.kind == StepKind::AllGather && st.tensor == "B") {
                REQUIRE(st.mesh_axes == std::vector<int>{1});
                st.mesh_axes = {0};
                changed = true;
            }
        REQUIRE_MESSAGE(changed, c.text());
        const auto r = execute(std::move(c));
        CHECK_MESSAGE(failed(r), r.text());
        CHECK_MESSAGE(r.error.find("cannot run as planned") != std::string::npos, r.text());
    }
    SUBCASE("its last step left out: the step before it claims the final layout") {
        // B: all-to-all, then all-gather. Without the gather, the all-to-all's shards of k are
        // stored as the whole B: the rank's block is not B's.
        auto c = check_src("mesh 4\ndim i=8 j=8 k=8\n"
                           "A_{i_0 j} B_{j_0 k} -> A_{i j} B_{j k_0} -> A_{ij} B_{jk}\n");
        REQUIRE_MESSAGE(c.ok(), c.text());
        auto& sp = c.plan.statements.at(0);
        auto it = std::find_if(sp.steps.begin(), sp.steps.end(), [](const auto& st) {
            return st.kind == StepKind::AllGather && st.tensor == "B";
        });
        REQUIRE_MESSAGE(it != sp.steps.end(), c.text());
        const int in = it->inputs.at(0), out = it->output;
        REQUIRE_MESSAGE(sp.values.at(static_cast<std::size_t>(in)).load.empty(), c.text());
        sp.values.at(static_cast<std::size_t>(in)).layout =
            sp.values.at(static_cast<std::size_t>(out)).layout;
        sp.steps.erase(it);
        const auto r = execute(std::move(c));
        CHECK_MESSAGE(failed(r), r.text());
        CHECK_MESSAGE(r.error.find("(all-to-all(0) of B) cannot run as planned") !=
                          std::string::npos,
                      r.text());
    }
    SUBCASE("it is loaded from another tensor: its steps run, its data is not B's") {
        auto c = check_src("mesh 4\ndim i=8 j=8 k=8\nA_{i_0 j} B_{j_0 k} -> A_{ij} B_{jk}\n");
        REQUIRE_MESSAGE(c.ok(), c.text());
        bool changed = false;
        for (auto& v : c.plan.statements.at(0).values)
            if (v.load == "B") {
                v.load = "A"; // same shape: A's numbers in B's place
                changed = true;
            }
        REQUIRE_MESSAGE(changed, c.text());
        for (const auto mode : {DataMode::Random, DataMode::Ints}) {
            auto broken = c;
            const auto r = execute(std::move(broken), options_for(mode));
            CHECK_MESSAGE(failed(r), r.text());
            CHECK_MESSAGE(r.error.find("line 3: B, moved by the chain, differs on rank") !=
                              std::string::npos,
                          r.text());
        }
    }
    SUBCASE("the plan stores a value that does not exist") {
        auto c = check_src("mesh 4\ndim i=8 j=8 k=8\nA_{i_0 j} B_{j_0 k} -> A_{ij} B_{jk}\n");
        REQUIRE_MESSAGE(c.ok(), c.text());
        auto& sp = c.plan.statements.at(0);
        REQUIRE_MESSAGE(sp.also_stored.size() == 1u, c.text());
        CHECK(sp.values.at(static_cast<std::size_t>(sp.also_stored[0])).layout.tensor == "B");
        sp.also_stored[0] = static_cast<int>(sp.values.size());
        const auto r = execute(std::move(c));
        CHECK_MESSAGE(failed(r), r.text());
        CHECK_MESSAGE(r.error.find("line 3: the plan stores a value no step computes") !=
                          std::string::npos,
                      r.text());
    }
    SUBCASE("its permute to the wrong devices: a block the sender does not hold") {
        auto c =
            check_src("mesh 2x4\ndim i=16 j=16 k=4\nA_{i_0 j} B_{k j_0} -> A_{i j} B_{k j_1}\n");
        REQUIRE_MESSAGE(c.ok(), c.text());
        bool changed = false;
        for (auto& st : c.plan.statements.at(0).steps)
            if (st.kind == StepKind::Permute && st.tensor == "B" && st.pairs.size() >= 2) {
                std::swap(st.pairs.front().second, st.pairs.back().second);
                changed = true;
            }
        REQUIRE_MESSAGE(changed, c.text());
        for (const auto mode : {DataMode::Random, DataMode::Ints}) {
            auto broken = c;
            const auto r = execute(std::move(broken), options_for(mode));
            CHECK_MESSAGE(failed(r), r.text());
            // The executor refuses to send a block the sender does not hold.
            CHECK_MESSAGE(r.error.find("(permute(0,1) of B) cannot run as planned") !=
                              std::string::npos,
                          r.text());
        }
    }
}

TEST_CASE("constructs: := and += on a defined tensor and on a program input") {
    const auto r = run_both("mesh 4\ndim t=3 u=5 d=2\n"
                            "Z_{r_0 t} = sum_u(exp(q_{r_0 t d} k_{r_0 u d}))\n"
                            "Z_{r_0 t} := Z_{r_0 t} + sum_u(exp(q_{r_0 t d} k_{r_0 u d}))\n"
                            "Z_{r_0 t} += sum_u(q_{r_0 t d} k_{r_0 u d})\n"
                            "A_{r_0 t} += q_{r_0 t d} w_{d}\n"
                            "B_{ij} := B_{ij} + x_{i k_0} y_{k_0 j}\n"
                            "z_{r_0 t} = Z_{r_0 t} / A_{r_0 t}\n");
    CHECK_MESSAGE(ran(r.statement(3)) == "none", r.text());
    CHECK_MESSAGE(ran(r.statement(4)) == "all-reduce(0)", r.text());
    // An accumulation into an input is exact with integer data (the input is loaded).
    const auto ints =
        run_src("mesh 2\ndim i=3 j=2\nA_{i_0 j} += x_{i_0 j}\nA_{i_0 j} += A_{i_0 j}\n",
                options_for(DataMode::Ints));
    check_all_pass(ints);
    CHECK_MESSAGE(ints.statement(1).exact, ints.text());
}

TEST_CASE("constructs: explicit collectives AllReduce, AllGather, ReduceScatter") {
    const auto r = run_both("mesh 4\ndim i=8 j=4 c=3\n"
                            "a_{ij} = AllReduce_{k_0}(x_{i k_0} y_{k_0 j})\n"
                            "b_{ij} = AllGather_{i_0}(x_{i_0 j})\n"
                            "c_{i_0 j} = ReduceScatter_{i_0}(p_{ij}{U_0})\n"
                            "d = AllReduce_{r_0}(u_{r_0 c})\n"
                            "e = AllReduce_{r}(u_{r_0 c})\n");
    CHECK_MESSAGE(ran(r.statement(0)) == "all-reduce(0)", r.text());
    CHECK_MESSAGE(ran(r.statement(1)) == "all-gather(0)", r.text());
    CHECK_MESSAGE(ran(r.statement(2)) == "reduce-scatter(0)", r.text());
    CHECK_MESSAGE(ran(r.statement(3)).find("all-reduce(0)") != std::string::npos, r.text());
}

/// Ring attention as a ring (samples/ring_attention.ein at small sizes): the key and value
/// blocks travel one device per round (Permute_{r_0}); the query block stays.
const std::string kRingAttention =
    "mesh 4\ndim t=8 u=8 d=4\n"
    "Q_{r_0 t d'} = q_{r_0 t d'}\nK_{r_0 u d'} = k_{r_0 u d'}\nV_{r_0 u d} = v_{r_0 u d}\n"
    "Z_{r_0 t} = sum_u(exp(Q_{r_0 t d'} K_{r_0 u d'}))\n"
    "N_{r_0 t d} = exp(Q_{r_0 t d'} K_{r_0 u d'}) V_{r_0 u d}\n"
    "repeat i=3\n"
    "K_{r_0 u d'} := Permute_{r_0}(K_{r_0 u d'})\nV_{r_0 u d} := Permute_{r_0}(V_{r_0 u d})\n"
    "Z_{r_0 t} := Z_{r_0 t} + sum_u(exp(Q_{r_0 t d'} K_{r_0 u d'}))\n"
    "N_{r_0 t d} := N_{r_0 t d} + exp(Q_{r_0 t d'} K_{r_0 u d'}) V_{r_0 u d}\n"
    "end\n"
    "z_{r_0 t d} = N_{r_0 t d} / Z_{r_0 t}\n";

TEST_CASE("constructs: Permute_{i_k}, one step round a ring, runs the plan's messages") {
    SUBCASE("ring attention: every round's permute runs and verifies") {
        const auto r = run_both(kRingAttention);
        int permutes = 0;
        for (const auto& s : r.report.statements)
            if (ran(s) == "permute(0)") ++permutes;
        CHECK_MESSAGE(permutes == 6, r.text()); // K and V, three rounds
    }
    SUBCASE("ring attention equals attention over the whole sequence") {
        // The reference of the ring (rolls, round by round) against one statement per step
        // over all key blocks at once: the same inputs (same names and sizes), the same z.
        const auto ring = check_src(kRingAttention);
        const auto whole =
            check_src("mesh 4\ndim t=8 u=8 d=4\nS_{r t r' u} = q_{r t d'} k_{r' u d'}\n"
                      "E_{r t r' u} = exp(S_{r t r' u})\n"
                      "z_{r_0 t d} = E_{r t r' u} v_{r' u d} / sum_{r' u}(E_{r t r' u})\n");
        REQUIRE_MESSAGE(ring.ok(), ring.text());
        REQUIRE_MESSAGE(whole.ok(), whole.text());
        exec::DataOptions data;
        data.mode = DataMode::Random;
        data.seed = 5;
        exec::LabelTable la, lb;
        const auto a = exec::evaluate_reference(ring.parsed.program, ring.plan, la, data);
        const auto b = exec::evaluate_reference(whole.parsed.program, whole.plan, lb, data);
        REQUIRE(a.back().data.size() == b.back().data.size());
        double worst = 0;
        for (std::size_t e = 0; e < a.back().data.size(); ++e)
            worst = std::max(worst, std::abs(a.back().data[e] - b.back().data[e]));
        CHECK_MESSAGE(worst < 1e-12, "max difference " << worst);
    }
    SUBCASE("rings over two axes, over the minor axis, and under a device order") {
        const auto r = run_both("mesh 2x4 devices [5 0 7 2 1 6 3 4]\ndim i=16 j=8 k=6\n"
                                "a_{i_{01} j} = Permute_{i_{01}}(x_{i_{01} j})\n"
                                "b_{i_0 j_1} = Permute_{j_1}(y_{i_0 j_1})\n"
                                "c_{(r_1 k) j_0} = Permute_{r_1}(w_{(r_1 k) j_0})\n");
        CHECK_MESSAGE(ran(r.statement(0)) == "permute(0,1)", r.text());
        CHECK_MESSAGE(ran(r.statement(1)) == "permute(1)", r.text());
        CHECK_MESSAGE(ran(r.statement(2)) == "permute(1)", r.text());
    }
    auto failed = [](const Ran& r) { return !r.error.empty() || !r.report.passed(); };
    SUBCASE("broken plan: the ring run backwards FAILS") {
        auto c = check_src("mesh 4\ndim i=16 j=8\ny_{i_0 j} = Permute_{i_0}(x_{i_0 j})\n");
        REQUIRE_MESSAGE(c.ok(), c.text());
        auto& st = c.plan.statements.at(0).steps.back();
        REQUIRE(st.kind == StepKind::Permute);
        for (auto& [from, to] : st.pairs)
            std::swap(from, to);
        const auto r = execute(std::move(c));
        CHECK_MESSAGE(failed(r), r.text());
    }
    SUBCASE("broken plan: a ring step without its shift is refused") {
        auto c = check_src("mesh 4\ndim i=16 j=8\ny_{i_0 j} = Permute_{i_0}(x_{i_0 j})\n");
        REQUIRE_MESSAGE(c.ok(), c.text());
        c.plan.statements.at(0).steps.back().shift = 0;
        const auto r = execute(std::move(c));
        CHECK_MESSAGE(failed(r), r.text());
    }
}

TEST_CASE("constructs: partial inputs are per-rank shares that sum to the value") {
    const std::string src =
        "mesh 2x2\ndim i=3 j=2\nz_{ij} = x_{ij}{U_0}\nw_{ij}{U_1} = x2_{ij}{U_1}\n";
    const auto r = run_both(src);
    CHECK_MESSAGE(ran(r.statement(0)) == "all-reduce(0)", r.text());
    CHECK_MESSAGE(ran(r.statement(1)) == "none", r.text());
    // The shares differ between ranks along the partial axis and are integers off rank 0.
    const auto c = check_src("mesh 2\ndim i=3 j=2\nz_{ij}{U_0} = x_{ij}{U_0}\n");
    REQUIRE_MESSAGE(c.ok(), c.text());
    const auto locals = locals_of<double>(c, "z", {DataMode::Random, 1});
    REQUIRE(locals.size() == 2);
    CHECK(locals[0].data != locals[1].data);
    const auto logical = exec::input_values("x", 6, {DataMode::Random, 1});
    for (std::size_t e = 0; e < 6; ++e) {
        CHECK(locals[1].data[e] == std::round(locals[1].data[e]));
        CHECK(locals[0].data[e] + locals[1].data[e] == doctest::Approx(logical[e]));
    }
}

TEST_CASE("constructs: 2-D and 3-D meshes, named axes, an explicit device order") {
    SUBCASE("2-D: TP inside FSDP groups") {
        const auto r = run_both("mesh 2x2\ndim b=4 d=6 e=4\n"
                                "y_{b_0 e_1} = x_{b_0 d} W_{d e_1}\n"
                                "z_{b_0 d} = y_{b_0 e_1} V_{e_1 d}\n"
                                "g_{e d} = y_{b_0 e} x_{b_0 d}\n");
        CHECK_MESSAGE(ran(r.statement(1)) == "all-reduce(1)", r.text());
    }
    SUBCASE("3-D, an index over two axes, uneven") {
        const auto r = run_both("mesh 2x2x2\ndim i=5 j=3 k=7\n"
                                "z_{i_{01} j} = x_{i_{01} k_2} y_{k_2 j}\n"
                                "w_{i j_{12}} = z_{i_{01} j}\n");
        CHECK_MESSAGE(ran(r.statement(0)) == "all-reduce(2)", r.text());
    }
    SUBCASE("named axes") {
        const auto r = run_both("mesh dp=2 tp=2\ndim b=4 d=6 f=4\n"
                                "h_{b_{dp} f_{tp}} = x_{b_{dp} d} W_{d f_{tp}}\n"
                                "y_{b_{dp} d} = V_{f_{tp} d} h_{b_{dp} f_{tp}}\n"
                                "C[I, K_tp]{U_dp} = A[I, J_dp] B[J_dp, K_tp]\n");
        CHECK_MESSAGE(ran(r.statement(1)) == "all-reduce(1)", r.text());
        CHECK_MESSAGE(ran(r.statement(2)) == "none", r.text());
    }
    SUBCASE("an index over two named axes, partial over two axes") {
        // tpu-v5e: priced by ring steps alone, so per-axis collectives (run here) win over
        // one over the group (on NVLink the group wins: one collective's fixed latency).
        const auto r = run_both("mesh dp=2 tp=2\nhw tpu-v5e\ndim b=5 d=3\n"
                                "y_{b_{dp,tp} d} = x_{b_{dp,tp} d}\n"
                                "z_{b d} = y_{b d}\n"
                                "w_{b_{tp,dp} d} = x_{b d}\n"
                                "v{U_{dp,tp}} = x_{b d} u_{b d}\n"
                                "s = v\n"
                                "q_{b_{tp}}{U_{dp}} = p_{b}{U_{dp,tp}}\n");
        CHECK_MESSAGE(ran(r.statement(1)) == "all-gather(1), all-gather(0)", r.text());
        CHECK_MESSAGE(ran(r.statement(3)) == "none", r.text()); // keep one copy
        CHECK_MESSAGE(ran(r.statement(4)) == "all-reduce(0), all-reduce(1)", r.text());
        CHECK_MESSAGE(ran(r.statement(5)) == "reduce-scatter(1)", r.text());
    }
    SUBCASE("explicit device order: the shards land on the listed devices") {
        const std::string src = "mesh 2x2 devices [3 1 2 0]\ndim i=4 j=4 k=4\n"
                                "z_{i_0 j_1} = x_{i_0 k} y_{k j_1}\n"
                                "w_{ij} = x_{i k_0} y_{k_0 j_1}\n"
                                "v_{i_0 j} -> v_{i j_0}\n";
        const auto r = run_both(src);
        CHECK_MESSAGE(ran(r.statement(1)) == "all-reduce(0), all-gather(1)", r.text());
        // Device 3 is at coordinate (0, 0): it holds rows 0-1 and columns 0-1 of x arange.
        const auto c =
            check_src("mesh 2x2 devices [3 1 2 0]\ndim i=4 j=4\nz_{i_0 j_1} = x_{i_0 j_1}\n");
        REQUIRE_MESSAGE(c.ok(), c.text());
        const auto locals = locals_of<double>(c, "z", {DataMode::Arange, 0});
        REQUIRE(locals.size() == 4);
        CHECK_MESSAGE(locals[3].data == (std::vector<double>{1, 2, 5, 6}), numbers(locals[3].data));
        CHECK_MESSAGE(locals[1].data == (std::vector<double>{3, 4, 7, 8}), numbers(locals[1].data));
        CHECK_MESSAGE(locals[2].data == (std::vector<double>{9, 10, 13, 14}),
                      numbers(locals[2].data));
        CHECK_MESSAGE(locals[0].data == (std::vector<double>{11, 12, 15, 16}),
                      numbers(locals[0].data));
    }
}

TEST_CASE("constructs: uneven shards follow torch.chunk, including empty shards") {
    SUBCASE("5 over 2: local shapes 3 and 2") {
        const auto c = check_src("mesh 2\ndim i=5 j=2\nz_{i_0 j} = x_{i_0 j}\n");
        REQUIRE_MESSAGE(c.ok(), c.text());
        const auto locals = locals_of<double>(c, "z", {DataMode::Arange, 0});
        CHECK(locals[0].data == (std::vector<double>{1, 2, 3, 4, 5, 6}));
        CHECK(locals[1].data == (std::vector<double>{7, 8, 9, 10}));
    }
    SUBCASE("every collective on uneven shards") {
        const auto r = run_both("mesh 3\ndim i=5 k=7 j=4\n"
                                "a_{ij} = x_{i k_0} y_{k_0 j}\n"
                                "b_{i_0 j} = x_{i k_0} y_{k_0 j}\n"
                                "c_{ij} = x_{i_0 k} y_{kj}\n"
                                "d_{i j_0} = x_{i_0 k} y_{kj}\n");
        CHECK_MESSAGE(ran(r.statement(0)) == "all-reduce(0)", r.text());
        CHECK_MESSAGE(ran(r.statement(1)) == "reduce-scatter(0)", r.text());
        CHECK_MESSAGE(ran(r.statement(2)) == "all-gather(0)", r.text());
        CHECK_MESSAGE(ran(r.statement(3)) == "all-to-all(0)", r.text());
    }
    SUBCASE("empty shards: 2 over 3, 1 over 2x2") {
        run_both("mesh 3\ndim i=2 k=2 j=3\n"
                 "a_{ij} = x_{i k_0} y_{k_0 j}\nb_{i_0 j} = x_{i k_0} y_{k_0 j}\n"
                 "c_{i_0 j} -> c_{i j_0} -> c_{ij}\n");
        run_both("mesh 2x2\ndim i=1 j=3\nz_{i_{01} j} = x_{i_{01} j} + 1\nw = z_{i_{01} j}\n");
    }
}

TEST_CASE("constructs: NOTATION.md section 9 and the sequence-parallel MLP at small sizes") {
    struct Row {
        std::string program;
        std::string collectives; // of the last statement
    };
    for (const Row& row : {
             Row{"mesh 4\ndim e=3\nz = x_{r_0 e} y_{r_0 e}\n", "all-reduce(0)"},
             Row{"mesh 4\ndim d=3 f=2\nz_{d} = W_{d r_0 f} x_{r_0 f}\n", "all-reduce(0)"},
             Row{"mesh 4\ndim c=2 f=3\nz_{r_0 c} = W_{r c r'_0 f} x_{r'_0 f}\n",
                 "reduce-scatter(0)"},
             Row{"mesh 4\ndim b=2 s=3 d=2 f=2\n"
                 "z_{bsd} = W^1_{d r_0 f} phi(W^0_{r_0 f d'} x_{bsd'})\n",
                 "all-reduce(0)"},
             Row{"mesh 4\ndim c=3\nz_{r_0} = x_{r_0 c} y_{r_0 c}\ns = z_{r_0}\n", "all-reduce(0)"},
             Row{"mesh 4\ndim i=4 j=5\nx_{i_0 j} -> x_{i j}\n", "all-gather(0)"},
             Row{"mesh 4\ndim i=4 j=5\nx_{i_0 j} -> x_{i j_0}\n", "all-to-all(0)"},
             Row{"mesh X=4\ndim I=3 J=8 K=2\nC[I, K]{U_X} = A[I, J_X] B[J_X, K]\n", "none"},
             Row{"mesh 4\ndim i=3 k=8\ny_{i} = relu(x_{i k_0} w_{k_0})\n", "all-reduce(0)"},
             Row{"mesh 2x2\ndim m=3 n=5\nz_{m_0 n_1} = a_{m_0} + b_{n_1}\n", "none"},
             // Sequence parallelism: rule 3 resolved by gathering x (small b*s) ...
             Row{"mesh 2\ndim b=1 s=4 d=16 e=32\nsplit s -> r t\nsplit e -> r' f\n"
                 "z_{b r_0 t d} = W^1_{d r'_0 f} phi(W^0_{r'_0 f d'} x_{b r_0 t d'})\n",
                 "all-gather(0), reduce-scatter(0)"},
             // ... or both weights (large b*s).
             Row{"mesh 2\ndim b=8 s=64 d=2 e=4\nsplit s -> r t\nsplit e -> r' f\n"
                 "z_{b r_0 t d} = W^1_{d r'_0 f} phi(W^0_{r'_0 f d'} x_{b r_0 t d'})\n",
                 "all-gather(0), all-gather(0)"},
         }) {
        CAPTURE(row.program);
        const auto r = run_both(row.program);
        REQUIRE(!r.report.statements.empty());
        CHECK_MESSAGE(ran(r.report.statements.back()) == row.collectives, r.text());
    }
}

TEST_CASE("constructs: declarations the executor does not need are accepted") {
    const auto r = run_both("mesh tp=2\ndim b=2 d=4 f=6\ndtype bf16\ntensor x : f32\nhw a100\n"
                            "link tp 100GB/s 2us\nfn swish elementwise\n"
                            "y_{b f_{tp}} = swish(x_{bd} W_{d f_{tp}})\n"
                            "expect none\n"
                            "z_{bd} = V_{f_{tp} d} y_{b f_{tp}} \\quad \\textrm{(all-reduce)}\n");
    CHECK_MESSAGE(ran(r.statement(1)) == "all-reduce(0)", r.text());
    CHECK_MESSAGE(r.report.dtype == "f32", r.text()); // dtype sizes the cost model only
}

TEST_CASE("constructs: every sample verifies at small sizes (random f32 and integer f64)") {
    namespace fs = std::filesystem;
    const fs::path dir = SHARDSCOPE_SAMPLES_DIR;
    REQUIRE_MESSAGE(fs::is_directory(dir), dir.string());
    int files = 0;
    for (const auto& entry : fs::directory_iterator(dir)) {
        if (entry.path().extension() != ".ein") continue;
        ++files;
        std::ifstream in(entry.path());
        std::stringstream text;
        text << in.rdbuf();
        CAPTURE(entry.path().string());
        run_both(text.str(), /*ignore_dims=*/true);
    }
    CHECK(files >= 10);
}

// =============================================================================================
// 5. Data modes.

TEST_CASE("data: arange is 1..n row-major, ints are integers in [-4, 4], seeds") {
    SUBCASE("arange") {
        const auto v = exec::input_values("x", 6, {DataMode::Arange, 42});
        CHECK(v == (std::vector<double>{1, 2, 3, 4, 5, 6}));
        // As the ranks hold it: rows of a 2x3 over 2 ranks.
        const auto c = check_src("mesh 2\ndim i=2 j=3\nz_{i_0 j} = x_{i_0 j}\n");
        REQUIRE_MESSAGE(c.ok(), c.text());
        const auto locals = locals_of<double>(c, "z", {DataMode::Arange, 0});
        CHECK(locals[0].data == (std::vector<double>{1, 2, 3}));
        CHECK(locals[1].data == (std::vector<double>{4, 5, 6}));
        auto options = options_for(DataMode::Arange);
        options.show = {"x"};
        const auto r = execute(check_src("mesh 2\ndim i=2 j=3\nz_{i_0 j} = x_{i_0 j}\n"), options);
        check_all_pass(r);
        CHECK_MESSAGE(r.statement(0).shown.find("x (input)") != std::string::npos, r.text());
        CHECK_MESSAGE(r.report.data == "arange", r.text());
    }
    SUBCASE("ints") {
        const auto v = exec::input_values("x", 2000, {DataMode::Ints, 5});
        std::set<double> seen(v.begin(), v.end());
        for (double x : v)
            CHECK(x == std::round(x));
        CHECK(*seen.begin() == -4);
        CHECK(*seen.rbegin() == 4);
        CHECK(seen.size() == 9);
    }
    SUBCASE("random: in [-1, 1), not constant") {
        const auto v = exec::input_values("x", 1000, {DataMode::Random, 5});
        std::set<double> seen(v.begin(), v.end());
        CHECK(seen.size() > 990);
        CHECK(*seen.begin() >= -1);
        CHECK(*seen.rbegin() < 1);
    }
    SUBCASE("the same seed gives the same data, another seed or name other data") {
        for (const auto mode : {DataMode::Random, DataMode::Ints}) {
            const auto a = exec::input_values("x", 64, {mode, 1});
            CHECK(a == exec::input_values("x", 64, {mode, 1}));
            CHECK(a != exec::input_values("x", 64, {mode, 2}));
            CHECK(a != exec::input_values("y", 64, {mode, 1}));
        }
        // End to end: the same seed runs the same numbers on the ranks.
        const auto c = check_src("mesh 2\ndim i=4 j=3\nz_{i_0 j} = x_{i_0 j}\n");
        REQUIRE_MESSAGE(c.ok(), c.text());
        const auto a = locals_of<double>(c, "z", {DataMode::Random, 9});
        const auto b = locals_of<double>(c, "z", {DataMode::Random, 9});
        const auto d = locals_of<double>(c, "z", {DataMode::Random, 10});
        CHECK(a[0].data == b[0].data);
        CHECK(a[1].data == b[1].data);
        CHECK(a[0].data != d[0].data);
    }
}

TEST_CASE("data: tolerances: f32 1e-4, f64 1e-10, integer data through linear statements exact") {
    const std::string src = "mesh 2\ndim i=4 k=6 j=3\nz_{ij} = x_{i k_0} y_{k_0 j}\n"
                            "r_{ij} = relu(z_{ij})\n"
                            "s_{ij} = z_{ij} + r_{ij}\n"
                            "t_{ij} = 2 z_{ij} - z_{ij}\n";
    SUBCASE("random f32") {
        const auto r = run_src(src, options_for(DataMode::Random));
        check_all_pass(r);
        CHECK(r.report.dtype == "f32");
        for (const auto& s : r.report.statements) {
            CHECK(s.tolerance == 1e-4);
            CHECK(!s.exact);
        }
    }
    SUBCASE("random f64") {
        auto options = options_for(DataMode::Random);
        options.f64 = true;
        const auto r = run_src(src, options);
        check_all_pass(r);
        CHECK(r.report.dtype == "f64");
        for (const auto& s : r.report.statements) {
            CHECK(s.tolerance == 1e-10);
            CHECK(s.max_rel_error <= 1e-10);
        }
    }
    SUBCASE("ints f64: linear statements exact, relu is not, and neither is what uses it") {
        const auto r = run_src(src, options_for(DataMode::Ints));
        check_all_pass(r);
        CHECK(r.report.data == "ints");
        CHECK_MESSAGE(r.statement(0).exact, r.text());
        CHECK(r.statement(0).tolerance == 0);
        CHECK(r.statement(0).max_abs_error == 0);
        CHECK_MESSAGE(!r.statement(1).exact, r.text());
        CHECK(r.statement(1).tolerance == 1e-10);
        CHECK_MESSAGE(!r.statement(2).exact, r.text()); // reads r
        CHECK_MESSAGE(r.statement(3).exact, r.text());  // integer constant: still linear
        CHECK(r.statement(3).max_abs_error == 0);
    }
    SUBCASE("ints f32: exact too (small integers are exact in f32)") {
        auto options = options_for(DataMode::Ints);
        options.f64 = false;
        const auto r = run_src(src, options);
        check_all_pass(r);
        CHECK(r.statement(0).exact);
        CHECK(r.statement(0).max_abs_error == 0);
    }
    SUBCASE("a fractional constant or a mean is not exact") {
        const auto r =
            run_src("mesh 2\ndim i=4 j=6\na_{ij} = 0.5 x_{ij}\nb_{i} = mean_j(x_{i j_0})\n"
                    "c_{i} = sum_j(x_{i j_0})\nd_{ij} = neg(x_{ij})\n",
                    options_for(DataMode::Ints));
        check_all_pass(r);
        CHECK(!r.statement(0).exact);
        CHECK(!r.statement(1).exact);
        CHECK(r.statement(2).exact);
        CHECK(r.statement(3).exact);
    }
}

// =============================================================================================
// 6. Errors: runs that cannot happen throw ExecError with a message, never crash.

TEST_CASE("errors: a plan that reads a value no step computes throws ExecError") {
    auto c = check_src("mesh 2\ndim i=4 k=6 j=4\nz_{ij} = x_{i k_0} y_{k_0 j}\n");
    REQUIRE_MESSAGE(c.ok(), c.text());
    auto& sp = c.plan.statements.at(0);
    // Drop the product: the all-reduce then reads a value nothing wrote.
    auto it = std::find_if(sp.steps.begin(), sp.steps.end(),
                           [](const auto& st) { return st.op == OpKind::Einsum; });
    REQUIRE_MESSAGE(it != sp.steps.end(), c.text());
    sp.steps.erase(it);
    const auto r = execute(std::move(c));
    CHECK_MESSAGE(!r.error.empty(), r.text());
    CHECK_MESSAGE(r.error.find("value") != std::string::npos, r.text());
}

TEST_CASE("errors: a stored value whose layout differs from the left-hand side throws") {
    auto c = check_src("mesh 2\ndim i=4 j=4\nz_{i_0 j} = x_{i_0 j}\n");
    REQUIRE_MESSAGE(c.ok(), c.text());
    // Claim the result is sharded on j: the stored value is not laid out that way.
    auto& res = c.plan.statements.at(0).result;
    std::swap(res.atoms[0].axes, res.atoms[1].axes);
    const auto r = execute(std::move(c));
    CHECK_MESSAGE(!r.error.empty(), r.text());
}

TEST_CASE("errors: regroupings of unevenly sharded indices are gathered by the plan first") {
    // They once reached exec, which refused them (exec/README.md): n = 6 over 2 is 3 + 3, but
    // (a b) sharded on a = 3 over 2 is 4 + 2. The checker now gathers n before the reshape.
    for (const std::string src : {
             "mesh 2\ndim n=6 a=3 b=2\nsplit n -> a b\nx_{n_0} -> x_{(a b)}\n",
             "mesh 2\ndim n=6 a=3 b=2\nsplit n -> a b\nx_{(a_0 b)} -> x_{n}\n",
             "mesh 4\ndim s=8 r=2\nsplit s -> r t\nx_{s_0} -> x_{(r t)}\n",
             "mesh 4\ndim s=8 r=2\nsplit s -> r t\nx_{(r t_0)} -> x_{s}\n",
         }) {
        CAPTURE(src);
        const auto r = run_both(src);
        CHECK_MESSAGE(ran(r.statement(0)) == "all-gather(0)", r.text());
        CHECK_MESSAGE(r.c.diagnostics.find("S216") != std::string::npos, r.text());
    }
    // The same regrouping on even shards reshapes locally first (the gather is the chain's).
    const auto even = run_both("mesh 2\ndim n=8 a=4 b=2\nsplit n -> a b\nx_{n_0} -> x_{(a_0 b)}\n"
                               "y_{(a_0 b)} -> y_{n_0}\n");
    CHECK_MESSAGE(ran(even.statement(0)) == "none", even.text());
    CHECK_MESSAGE(ran(even.statement(1)) == "none", even.text());
    CHECK_MESSAGE(even.c.diagnostics.find("S216") == std::string::npos, even.text());
}

// =============================================================================================
// Regressions: inputs that once failed (found by the property test).

TEST_CASE("regression: gathering an index over its major axis before contracting it") {
    // l is sharded over axes 1 then 0 in B. The plan contracts l, and gathering it over the
    // major axis 1 first gathers the minor axis 0 too: the product is then whole on axis 0,
    // and the left-hand side's P(sum) on axis 0 needs the keep-one step. The checker used to
    // label the product P(sum) on axis 0 anyway, every rank along it kept the whole sum, and
    // the result came out twice too large.
    const std::string src =
        "mesh 2x3x1\nhw tpu-v5e\ndim j=6 l=6 m=3\nY{U_0} = A_{m j}{U_2} B_{l_{10} j}{U_2}\n";
    const auto r = run_both(src);
    const auto c = check_src(src);
    REQUIRE_MESSAGE(c.ok(), c.text());
    const auto& sp = c.plan.statements.at(0);
    bool keep_one = false;
    for (const auto& st : sp.steps)
        keep_one |= st.op == OpKind::KeepOne && st.mesh_axes == std::vector<int>{0};
    CHECK_MESSAGE(keep_one, c.text());
    // Every plan the checker lists for it is consistent: gathered axes are not partial.
    for (const auto& v : sp.values)
        for (std::size_t k = 0; k < v.layout.placements.size(); ++k)
            if (v.layout.placements[k].kind == semantics::Placement::Kind::Partial)
                for (const auto& a : v.layout.atoms)
                    CHECK_MESSAGE(std::count(a.axes.begin(), a.axes.end(), static_cast<int>(k)) ==
                                      0,
                                  c.text());
}

TEST_CASE("regression: collectives over empty shards (an index smaller than its axis)") {
    // j = 1 over 3 devices: two ranks hold nothing of B, yet take part in the all-gather with
    // as many elements as the others (the padding was computed from the local size, 0).
    run_both("mesh 1x3x1\ndim j=1\nY = A_{j_0} B_{j_1}\n");
    run_both("mesh 3\ndim i=1 j=4\nx_{i_0 j} -> x_{i j_0}\ny_{i j_0} -> y_{i_0 j}\n");
    run_both("mesh 2x3\ndim i=1 j=2 k=3\nz_{i_{01} j} = x_{i_0 k_1} y_{k_1 j}\n");
}

TEST_CASE("regression: integer data through log and division by zero") {
    // Integer inputs contain zeros: log 0 and x / 0 are infinite (or NaN) in the reference and
    // on the ranks alike, which used to count as an infinite error.
    const auto x = exec::input_values("x", 24, {DataMode::Ints, 0});
    const auto w = exec::input_values("w", 24, {DataMode::Ints, 0});
    REQUIRE(std::count(x.begin(), x.end(), 0.0) > 0);
    REQUIRE(std::count(w.begin(), w.end(), 0.0) > 0);
    for (const bool f64 : {true, false}) {
        CAPTURE(f64);
        auto options = options_for(DataMode::Ints);
        options.f64 = f64;
        const auto r = run_src("mesh 2\ndim i=4 k=6\ny_{i_0 k} = log(x_{i_0 k})\n"
                               "z_{i_0 k} = x_{i_0 k} / w_{i_0 k}\n"
                               "q_{ik} = w_{i_0 k} / w_{i_0 k}\n",
                               options);
        check_all_pass(r);
        for (const auto& s : r.report.statements)
            CHECK_MESSAGE(std::isfinite(s.max_abs_error), r.text());
    }
    // A broken plan is still caught where the results are finite.
    auto c = check_src("mesh 2\ndim i=4 k=6 j=4\nz_{ij} = log(x_{i k_0} y_{k_0 j})\n");
    REQUIRE_MESSAGE(c.ok(), c.text());
    remove_step(c.plan, 0, StepKind::AllReduce);
    const auto r = execute(std::move(c), options_for(DataMode::Ints));
    CHECK_MESSAGE((!r.error.empty() || !r.report.passed()), r.text());
}

TEST_CASE("regression: += onto an inexact value is not compared exactly") {
    // Z holds a tanh (not integers); adding an integer product to it keeps it inexact. Redefining Z
    // with integers makes it exact again.
    const auto r = run_src("mesh 2\ndim l=3 k=4\nZ_{l} = tanh(A_{l k_0} B_{k_0})\n"
                           "Z_{l} += D_{l k} E_{k}\n"
                           "Z_{l} = D_{l k_0} E_{k_0}\n"
                           "Z_{l} += D_{l k} E_{k}\n",
                           options_for(DataMode::Ints));
    check_all_pass(r);
    CHECK_MESSAGE(!r.statement(0).exact, r.text());
    CHECK_MESSAGE(!r.statement(1).exact, r.text());
    CHECK_MESSAGE(r.statement(2).exact, r.text());
    CHECK_MESSAGE(r.statement(3).exact, r.text());
}

TEST_CASE("regression: a NaN replica next to a number is a replica error") {
    // Two ranks on one axis hold a replicated 2-vector: copies must agree, NaN included.
    semantics::TensorLayout t;
    t.tensor = "x";
    t.placements = {semantics::Placement{}};
    t.atoms = {semantics::AtomLayout{{"i", 0}, 2, {}}};
    exec::MeshShape mesh;
    mesh.sizes = {2};
    auto make = [](double a, double b) {
        exec::Tensor<double> x;
        x.shape = {2};
        x.labels = {0};
        x.data = {a, b};
        return x;
    };
    double err = -1;
    exec::assemble<double>({make(1, INFINITY), make(1, INFINITY)}, t, {0}, mesh, err);
    CHECK(err == 0);
    exec::assemble<double>({make(NAN, 2), make(NAN, 2)}, t, {0}, mesh, err);
    CHECK(err == 0);
    exec::assemble<double>({make(1, 2), make(NAN, 2)}, t, {0}, mesh, err);
    CHECK(std::isinf(err));
    exec::assemble<double>({make(1, 2), make(1, 2.5)}, t, {0}, mesh, err);
    CHECK(err == 0.5);
}

// =============================================================================================
// Issue 22: plans check accepted that computed the wrong numbers. Each now PASSes (or is
// refused by the checker: the "issue 22" tests of tests/semantics/rules/).

TEST_CASE("issue 22: partial maxes are reduced before a sum, a negation or a product") {
    const auto r = run_both("mesh 2\ndim i=4 h=4\n"
                            "z_{i} = max_{h}(x_{i h_0}) + max_{h}(y_{i h_0})\n"
                            "a_{i} = neg(max_{h}(x_{i h_0}))\n"
                            "b_{i} = -max_{h}(x_{i h_0})\n"
                            "c_{i} = max_{h}(x_{i h_0}) - v_{i}\n"
                            "d_{i} = max_{h}(x_{i h_0}) w_{i}\n"
                            "e = max_{h}(x_{i h_0})\n"
                            "f_{i} = 2 max_{h}(x_{i h_0})\n"
                            "g_{i} = scale(max_{h}(x_{i h_0}))\n");
    const std::vector<std::string> want = {"all-reduce(0), all-reduce(0)",
                                           "all-reduce(0)",
                                           "all-reduce(0)",
                                           "all-reduce(0)",
                                           "all-reduce(0)",
                                           "all-reduce(0)",
                                           "all-reduce(0)",
                                           "all-reduce(0)"};
    REQUIRE(r.report.statements.size() == want.size());
    for (std::size_t s = 0; s < want.size(); ++s)
        CHECK_MESSAGE(ran(r.statement(s)) == want[s], r.text());
}

TEST_CASE("issue 22: elementwise operands over different mesh axes or axis orders verify") {
    run_both("mesh 2x2\ndim b=4\nz_{b_0} = x_{b_1} + y_{b_0}\n");
    run_both("mesh 2x2\ndim k=4\nz_{k} = q_{k_{10}} - w_{k}\n");
    run_both("mesh 2x2\ndim k=4 h=2\nx6_{k h} = h1 / Q3_{h k_{10}} - y4 h2_{h k} / A5_{k}\n");
    run_both("mesh 2x2x2\ndim b=8 c=4\nz_{b c} = x_{b_{01} c} + y_{b_{10} c_2} - u_{b_2}\n");
    // Operands that agree need nothing but local slices.
    const auto r = run_both("mesh 2x2\ndim b=4 c=4\nz_{b_{01} c} = x_{b_{01} c} + y_{b_0 c}\n");
    CHECK_MESSAGE(ran(r.statement(0)) == "none", r.text());
}

TEST_CASE("issue 22: += onto a tensor stored with another layout adds into it as stored") {
    const auto r = run_both("mesh 2\ndim j=4\nW_{j_0} = x_{j_0}\nW_{j} += z_{j}\n"
                            "V_{j} = x_{j}\nV_{j} += z_{j_0}\n");
    CHECK_MESSAGE(ran(r.statement(1)) == "none", r.text());
    CHECK_MESSAGE(ran(r.statement(3)) == "all-gather(0)", r.text());
    // Written with another placement than stored: refused by check, never reaching exec.
    const auto c = check_src("mesh 2\ndim j=4\nW_{j} = x_{j}\nW_{j_0} += z_{j_0}\n");
    CHECK_MESSAGE(!c.ok(), c.text());
    CHECK_MESSAGE(c.diagnostics.find("S203") != std::string::npos, c.text());
}

// ---- pipeline parallelism (repeat l_{pp}=N) --------------------------------------------------

namespace {

const char* kPipeline = "mesh dp=2 pp=2\n"
                        "dim b=4 d=4 e=4\n"
                        "y_{b_{dp} d} = x_{b_{dp} d}\n"
                        "repeat l_{pp}=4 microbatches=2\n"
                        "  a_{b_{dp} e} = y_{b_{dp} e}\n"
                        "  y_{b_{dp} d} := tanh(a_{b_{dp} e} W_{e d})\n"
                        "end\n"
                        "z_{b_{dp}} = sum_d(y_{b_{dp} d})\n";

} // namespace

TEST_CASE("pipeline: stages as ranks along pp verify against the unsharded run") {
    const auto r = run_both(kPipeline);
    // Every layer's two statements, on the ranks of its stage.
    REQUIRE(r.report.statements.size() == 1 + 4 * 2 + 1);
    // b=4 over dp=2: two rows per rank, cut into the block's 2 micro-batches of one row.
    CHECK(r.report.statements[1].source.find("(layer 1 of 4, stage 0 of pp, 2 micro-batches)") !=
          std::string::npos);
    CHECK(r.report.statements[8].source.find("(layer 4 of 4, stage 1 of pp, 2 micro-batches)") !=
          std::string::npos);
    // A reverse block (a backward) over the same layers verifies too.
    const std::string back = std::string(kPipeline) +
                             "g_{b_{dp} d} = y_{b_{dp} d}\n"
                             "repeat l_{pp}=4 reverse microbatches=2\n"
                             "  g_{b_{dp} d} := g_{b_{dp} d} a_{b_{dp} d}\n"
                             "end\n"
                             "w_{b_{dp}} = sum_d(g_{b_{dp} d} y_{b_{dp} d})\n";
    run_both(back);
    // At small sizes: one layer per stage.
    const auto small = run_src(kPipeline, options_for(DataMode::Random, 1), true);
    check_all_pass(small);
    CHECK(small.report.statements.size() == 1 + 2 * 2 + 1);
}

TEST_CASE("pipeline: micro-batches through the stages, as many as cut the batch evenly") {
    auto piped = [](const std::string& head, const std::string& repeat, const std::string& body) {
        return head + "y_{b_{dp} d} = x_{b_{dp} d}\n" + repeat + "\n" + body +
               "end\nz_{b_{dp}} = sum_d(y_{b_{dp} d})\n";
    };
    const std::string mlp = "  a_{b_{dp} e} = y_{b_{dp} e}\n"
                            "  y_{b_{dp} d} := tanh(a_{b_{dp} e} W_{e d})\n";
    auto micro = [](const Ran& r) {
        const auto& s = r.report.statements.at(1).source;
        const auto at = s.find(" micro-batches)");
        if (at == std::string::npos) return std::string("whole");
        return s.substr(s.rfind(", ", at) + 2, at - s.rfind(", ", at) - 2);
    };
    // b=8 over dp=2: 4 rows per rank; M=4 cuts them into rows of one.
    const auto four = run_both(piped("mesh dp=2 pp=2\ndim b=8 d=4 e=4\n",
                                     "repeat l_{pp}=4 microbatches=4 schedule=gpipe", mlp));
    CHECK_MESSAGE(micro(four) == "4", four.text());
    // M=3 does not cut 4 rows: the largest count below it that does, 2.
    const auto three =
        run_both(piped("mesh dp=2 pp=2\ndim b=8 d=4 e=4\n", "repeat l_{pp}=4 microbatches=3", mlp));
    CHECK_MESSAGE(micro(three) == "2", three.text());
    // 3 rows per rank and M=2: no count above 1 cuts them, the whole batch at once.
    const auto odd =
        run_both(piped("mesh dp=2 pp=2\ndim b=6 d=4 e=4\n", "repeat l_{pp}=4 microbatches=2", mlp));
    CHECK_MESSAGE(micro(odd) == "whole", odd.text());
    // Tensor parallelism inside the block: each micro-batch all-reduces its own part (the
    // plan's bytes, per micro-batch 1/M of them, checked on every run), and the report's
    // collective carries the step's whole bytes.
    const auto tp =
        run_both(piped("mesh dp=2 tp=2 pp=2\ndim b=8 d=4 f=8\n", "repeat l_{pp}=2 microbatches=2",
                       "  u_{b_{dp} f_{tp}} = y_{b_{dp} d} A_{d f_{tp}}\n"
                       "  y_{b_{dp} d} := tanh(u_{b_{dp} f_{tp}}) B_{f_{tp} d}\n"));
    CHECK_MESSAGE(micro(tp) == "2", tp.text());
    REQUIRE(tp.report.statements.at(2).collectives.size() == 1);
    double planned = 0;
    for (const auto& st : tp.c.plan.statements.at(2).steps)
        if (semantics::is_collective(st.kind))
            planned = st.cost.bytes_per_device / st.cost.elem_bytes * 4;
    CHECK(planned > 0);
    CHECK(tp.report.statements.at(2).collectives[0].bytes == doctest::Approx(planned));
    // A block that reduces over the batch (its softmax along b) runs on the whole batch.
    const auto reduce =
        run_both(piped("mesh dp=2 pp=2\ndim b=8 d=4 e=4\n", "repeat l_{pp}=2 microbatches=2",
                       "  a_{b e} = softmax_b(y_{b e})\n"
                       "  y_{b_{dp} d} := a_{b_{dp} e} W_{e d}\n"));
    CHECK_MESSAGE(micro(reduce) == "whole", reduce.text());
}

TEST_CASE("pipeline: a chain of products in the block stores every factor it moves") {
    auto micro = [](const Ran& r, std::size_t s) {
        return r.report.statements.at(s).source.find("2 micro-batches") != std::string::npos;
    };
    // Both factors carry the batch: micro-batched; g, the chain's second factor, is stored in
    // the chain's layout per micro-batch and put together on the whole batch afterwards (it
    // was not stored under micro-batches: line 7 read it in its old layout and failed).
    const auto both =
        run_both("mesh dp=2 tp=2 pp=2\ndim b=8 j=8 k=8\n"
                 "h_{b_{dp} j_{tp}} = X_{b_{dp} j_{tp}}\n"
                 "g_{b_{dp} k} = G_{b_{dp} k}\n"
                 "repeat l_{pp}=2 microbatches=2\n"
                 "  h_{b_{dp} j_{tp}} g_{b_{dp} k} -> h_{b_{dp} j} g_{b_{dp} k_{tp}}\n"
                 "  y_{b_{dp} k} = relu(g_{b_{dp} k_{tp}})\n"
                 "  h_{b_{dp} j} g_{b_{dp} k_{tp}} -> h_{b_{dp} j_{tp}} g_{b_{dp} k}\n"
                 "  g_{b_{dp} k} := y_{b_{dp} k} + g_{b_{dp} k}\n"
                 "end\n"
                 "w_{bk} = relu(g_{bk})\n");
    CHECK_MESSAGE(micro(both, 2), both.text());
    // D, carried from stage to stage by the chain but without the batch, is no micro-batch's:
    // the block runs whole, D's sends as planned (exec could not find D among the block's
    // stores: "the pipeline sends D, which its block does not store").
    const auto weight = run_both("mesh dp=2 tp=2 pp=2\ndim b=8 j=8 k=8\n"
                                 "h_{b_{dp} j_{tp}} = X_{b_{dp} j_{tp}}\n"
                                 "D_{j k_{tp}} = Y_{j k_{tp}}\n"
                                 "repeat l_{pp}=2 microbatches=2\n"
                                 "  h_{b_{dp} j_{tp}} D_{j k_{tp}} -> h_{b_{dp} j} D_{j_{tp} k}\n"
                                 "  y_{b_{dp} k} = h_{b_{dp} j} D_{j k}\n"
                                 "  u_{j k} = relu(D_{j_{tp} k})\n"
                                 "  h_{b_{dp} j} D_{j_{tp} k} -> h_{b_{dp} j_{tp}} D_{j k_{tp}}\n"
                                 "  h_{b_{dp} j_{tp}} := y_{b_{dp} k} u_{j_{tp} k}\n"
                                 "end\n"
                                 "w_{jk} = relu(D_{jk})\n");
    CHECK_MESSAGE(!micro(weight, 2), weight.text());
}

TEST_CASE("broken plan: a pipeline send to the wrong stage, or no send, FAILS") {
    const std::string src = "mesh pp=4\n"
                            "dim b=4 d=4 e=4\n"
                            "y_{b d} = x_{b d}\n"
                            "repeat l_{pp}=4\n"
                            "  a_{b e} = y_{b e}\n"
                            "  y_{b d} := tanh(a_{b e} W_{e d})\n"
                            "end\n";
    check_all_pass(run_src(src, options_for(DataMode::Random, 5)));
    {
        auto c = check_src(src);
        REQUIRE(c.ok());
        auto& pairs = c.plan.repeats.at(0).sends.at(0).pairs;
        REQUIRE(pairs ==
                std::vector<std::pair<std::int64_t, std::int64_t>>{{0, 1}, {1, 2}, {2, 3}});
        pairs[0].second = 2; // stage 0 sends to stage 2
        const auto r = execute(std::move(c), options_for(DataMode::Random, 5));
        REQUIRE_MESSAGE(r.error.empty(), r.text());       // it runs to the end...
        CHECK_FALSE_MESSAGE(r.report.passed(), r.text()); // ...and the comparison catches it
        // Layer 1 (stage 0) is right; layer 2 (stage 1) read a y that never arrived.
        CHECK(r.report.statements.at(2).pass);
        CHECK_FALSE(r.report.statements.at(4).pass);
    }
    // The same in micro-batches (b=4, M=2: two rows each).
    const auto src2 =
        std::string(src).replace(src.find("repeat l_{pp}=4"), 15, "repeat l_{pp}=4 microbatches=2");
    check_all_pass(run_src(src2, options_for(DataMode::Random, 5)));
    {
        auto c = check_src(src2);
        REQUIRE(c.ok());
        c.plan.repeats.at(0).sends.at(0).pairs[1].second = 3; // stage 1 sends to stage 3
        const auto r = execute(std::move(c), options_for(DataMode::Random, 5));
        REQUIRE_MESSAGE(r.error.empty(), r.text());
        CHECK_MESSAGE(r.report.statements.at(2).source.find("2 micro-batches") != std::string::npos,
                      r.text());
        CHECK_FALSE_MESSAGE(r.report.passed(), r.text());
        CHECK(r.report.statements.at(4).pass);       // stage 1 got its y
        CHECK_FALSE(r.report.statements.at(6).pass); // stage 2 did not
    }
    {
        auto c = check_src(src2);
        REQUIRE(c.ok());
        c.plan.repeats.at(0).sends.at(0).pairs.pop_back(); // stage 2 sends nothing
        const auto r = execute(std::move(c), options_for(DataMode::Random, 5));
        REQUIRE_MESSAGE(r.error.empty(), r.text());
        CHECK_FALSE_MESSAGE(r.report.passed(), r.text());
        CHECK(r.report.statements.at(6).pass);
        CHECK_FALSE(r.report.statements.at(8).pass);
    }
    {
        auto c = check_src(src);
        REQUIRE(c.ok());
        c.plan.repeats.at(0).sends.clear(); // nothing crosses the boundaries
        const auto r = execute(std::move(c), options_for(DataMode::Random, 5));
        REQUIRE_MESSAGE(r.error.empty(), r.text());
        CHECK_FALSE_MESSAGE(r.report.passed(), r.text());
        CHECK_FALSE(r.report.statements.at(4).pass);
    }
}
