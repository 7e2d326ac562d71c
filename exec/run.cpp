#include "exec/run.hpp"

#include "exec/device.hpp"
#include "exec/kernels.hpp"
#include "exec/reference.hpp"
#include "semantics/report.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <span>
#include <sstream>

namespace shardscope::exec {

using semantics::OpKind;

bool ExecReport::passed() const {
    return std::all_of(statements.begin(), statements.end(), [](const auto& s) { return s.pass; });
}

namespace {

double elements(std::span<const std::int64_t> shape) {
    double n = 1;
    for (auto e : shape)
        n *= static_cast<double>(e);
    return n;
}

/// A statement compares exactly when integer data goes through linear operations only.
bool linear(const semantics::StatementPlan& sp) {
    for (const auto& st : sp.steps) {
        switch (st.op) {
        case OpKind::Function:
        case OpKind::Softmax:
        case OpKind::Divide:
            return false;
        case OpKind::Reduce:
            if (st.reduce == semantics::ReduceFn::Mean) return false;
            break;
        case OpKind::Linear:
            if (st.function != "neg") return false;
            break;
        default:
            break;
        }
    }
    for (const auto& v : sp.values)
        if (!v.constant.empty() && v.constant.find_first_not_of("0123456789") != std::string::npos)
            return false;
    return true;
}

std::string format_number(double v) {
    // printf writes the sign of a NaN, which differs between the host's and a GPU's NaNs.
    if (std::isnan(v)) return "nan";
    if (v == std::floor(v) && std::abs(v) < 1e15) {
        std::ostringstream o;
        o << static_cast<long long>(v);
        return o.str();
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.5g", v);
    return buf;
}

/// A tensor as text: nested brackets, rows on their own lines (as torch prints).
template <class T>
std::string tensor_text(const Tensor<T>& t, const std::string& indent) {
    if (t.shape.empty()) return format_number(t.data.empty() ? 0 : static_cast<double>(t.data[0]));
    std::vector<std::string> cells;
    std::size_t width = 0;
    for (auto v : t.data) {
        cells.push_back(format_number(static_cast<double>(v)));
        width = std::max(width, cells.back().size());
    }
    std::string out;
    const std::size_t n = t.shape.size();
    std::vector<std::int64_t> idx(n, 0);
    const auto count = static_cast<std::size_t>(t.size());
    if (count == 0) return "[] (empty shard)";
    for (std::size_t e = 0; e < count; ++e) {
        std::size_t opened = 0; // brackets to open before this element
        for (std::size_t d = n; d-- > 0 && idx[d] == 0;)
            ++opened;
        if (e > 0) out += opened > 0 ? ",\n" + indent + std::string(n - opened, ' ') : ", ";
        out += std::string(opened, '[');
        out += std::string(width - cells[e].size(), ' ') + cells[e];
        std::size_t closed = 0;
        for (std::size_t d = n; d-- > 0;) {
            if (++idx[d] < t.shape[d]) break;
            idx[d] = 0;
            ++closed;
        }
        out += std::string(closed, ']');
    }
    return out;
}

std::string placement_text(const semantics::TensorLayout& t) {
    std::string out = "(";
    for (std::size_t k = 0; k < t.placements.size(); ++k)
        out += (k ? ", " : "") + t.placements[k].text();
    return out + ")";
}

std::string coords_text(const std::vector<int>& c) {
    std::string out = "(";
    for (std::size_t k = 0; k < c.size(); ++k)
        out += (k ? "," : "") + std::to_string(c[k]);
    return out + ")";
}

template <class T>
std::vector<char> to_bytes(const Tensor<T>& t) {
    if (t.on_device()) throw ExecError("internal: gathering a tensor that is still on the device");
    std::vector<char> b(t.data.size() * sizeof(T));
    if (!b.empty()) std::memcpy(b.data(), t.data.data(), b.size());
    return b;
}

/// Every rank's local tensor under `layout`, on the root (empty elsewhere).
template <class T>
std::vector<Tensor<T>> gather_locals(Communicator& comm, const Tensor<T>& mine,
                                     const semantics::TensorLayout& layout,
                                     const std::vector<int>& labels, const MeshShape& mesh) {
    auto all = comm.gather_to_root(to_bytes(mine));
    std::vector<Tensor<T>> out;
    for (std::size_t r = 0; r < all.size(); ++r) {
        Tensor<T> t;
        t.labels = labels;
        t.shape = local_shape(layout, mesh, mesh.coords(static_cast<int>(r)));
        t.data.resize(all[r].size() / sizeof(T));
        if (!all[r].empty()) std::memcpy(t.data.data(), all[r].data(), all[r].size());
        out.push_back(std::move(t));
    }
    return out;
}

template <class T>
std::string show_ranks(const std::vector<Tensor<T>>& locals, const semantics::TensorLayout& layout,
                       const std::string& name, const MeshShape& mesh) {
    std::string out;
    for (std::size_t r = 0; r < locals.size(); ++r) {
        const auto c = mesh.coords(static_cast<int>(r));
        std::string head = "  rank " + std::to_string(r) + " " + coords_text(c) + ", " + name +
                           " " + placement_text(layout) + ": ";
        out += head + tensor_text(locals[r], std::string(head.size(), ' ')) + "\n";
    }
    return out;
}

template <class T>
void run_rank(Communicator& comm, const ast::Program&, const semantics::Plan& plan,
              const LabelTable& labels, const ExecOptions& options,
              const std::vector<Tensor<double>>& reference, ExecReport& report,
              LocalCompute<T>* compute = nullptr) {
    RankProgram<T> prog(plan, labels, comm, options.data, compute);
    const auto mesh = mesh_shape(plan.mesh);
    const bool root = comm.rank() == 0;
    const double tolerance = sizeof(T) == 4 ? 1e-4 : 1e-10;
    std::set<std::string> inexact;           // results that are not integers (under --data ints)
    std::map<std::string, double> magnitude; // the largest magnitude of each input or result
    const auto runs = schedule(plan);        // a repeat's body once per layer
    for (std::size_t i = 0; i < runs.size(); ++i) {
        const auto s = runs[i].statement;
        const auto& sp = plan.statements[s];
        const double device_before = compute ? compute->device_seconds() : 0;
        prog.run(runs[i]);
        const auto result_labels = labels.labels_at(sp.result);
        // A pipelined block's layer runs on its stage's ranks only: theirs are the results
        // (each other rank shows the one of its stage's rank at the same other coordinates).
        const auto* block = runs[i].block;
        const bool piped = block && block->pipelined();
        const bool mine = !piped || prog.holds(*block, runs[i].layer);
        const Tensor<T> none;
        auto locals = gather_locals(comm, mine ? prog.stored(sp.target) : none, sp.result,
                                    result_labels, mesh);
        if (piped && root)
            for (std::size_t r = 0; r < locals.size(); ++r) {
                auto c = mesh.coords(static_cast<int>(r));
                auto& at = c.at(static_cast<std::size_t>(block->axis));
                const auto stage = static_cast<int>(block->stage_of(runs[i].layer));
                if (at == stage) continue;
                at = stage;
                locals[r] = locals.at(static_cast<std::size_t>(mesh.device_at(c)));
            }
        std::string shown;
        for (const auto& name : options.show) {
            // Inputs as loaded (the first time they appear), then the result if it is NAME.
            // (Not in a pipelined block, where only some ranks load a layer's inputs.)
            auto it = prog.inputs().find(name);
            const bool has_input = !piped && it != prog.inputs().end();
            // Every rank runs the same plan, so every rank takes this branch alike.
            if (has_input) {
                auto in = gather_locals(comm, it->second.first, it->second.second,
                                        labels.labels_at(it->second.second), mesh);
                if (root) shown += show_ranks(in, it->second.second, name + " (input)", mesh);
            }
            if (sp.target == name && root) shown += show_ranks(locals, sp.result, name, mesh);
        }
        if (!root) continue;
        StatementRun run;
        run.line = sp.range.line;
        run.source = sp.source;
        if (runs[i].block)
            run.source +=
                "   (layer " + std::to_string(runs[i].layer + 1) + " of " +
                std::to_string(runs[i].block->count) +
                (piped ? ", stage " + std::to_string(block->stage_of(runs[i].layer)) + " of " +
                             plan.mesh.axes[static_cast<std::size_t>(block->axis)].name +
                             (prog.microbatches(*block) > 1
                                  ? ", " + std::to_string(prog.microbatches(*block)) +
                                        " micro-batches"
                                  : std::string())
                       : std::string()) +
                ")";
        run.target = sp.target;
        run.collectives = prog.executed();
        if (!mine) {
            // Another stage's layer: its ranks checked that they ran the plan's collectives
            // with its bytes (RankProgram::check_ran_as_planned), so those are reported.
            for (const auto& st : sp.steps)
                if (semantics::is_collective(st.kind))
                    run.collectives.push_back(
                        {st.kind, st.mesh_axes.to_vector(), st.tensor,
                         st.cost.bytes_per_device / std::max(st.cost.elem_bytes, 1) *
                             static_cast<double>(sizeof(T))});
        }
        run.shown = std::move(shown);
        if (compute && std::string(compute->name()) == "cuda")
            run.device_s = compute->device_seconds() - device_before;
        run.computes = std::any_of(sp.steps.begin(), sp.steps.end(), [](const auto& st) {
            return st.kind == semantics::StepKind::Compute;
        });
        const auto got = assemble(locals, sp.result, result_labels, mesh, run.replica_error);
        const auto& want = reference.at(i);
        // Infinities and NaNs (log 0, x / 0 under --data ints) match where the reference has
        // the same; the scale is the largest finite magnitude.
        double scale = 0;
        for (double v : want.data)
            if (std::isfinite(v)) scale = std::max(scale, std::abs(v));
        if (got.data.size() != want.data.size()) {
            run.max_abs_error = INFINITY;
        } else {
            for (std::size_t e = 0; e < want.data.size(); ++e) {
                const double g = static_cast<double>(got.data[e]), w = want.data[e];
                const double d = element_difference(g, w);
                if (d == 0) continue;
                if (!std::isfinite(g) || !std::isfinite(w)) run.overflow = true;
                run.max_abs_error = std::max(run.max_abs_error, d);
            }
        }
        // A result that cancels to below the tolerance times its operands' magnitude is
        // rounding noise on both sides (a saturated softmax's backward, x - mean(x) of a
        // constant): it is compared at its operands' magnitude, since noise cannot be verified
        // relative to itself. Any other result is compared at its own magnitude.
        double operands = 0;
        for (const auto& v : sp.values) {
            if (v.load.empty()) continue;
            if (auto in = prog.inputs().find(v.load); in != prog.inputs().end()) {
                double m = 0;
                for (const auto x : in->second.first.data)
                    if (std::isfinite(static_cast<double>(x)))
                        m = std::max(m, std::abs(static_cast<double>(x)));
                magnitude[v.load] = std::max(magnitude[v.load], m);
            }
            if (auto it = magnitude.find(v.load); it != magnitude.end())
                operands = std::max(operands, it->second);
        }
        // Noise is recorded at the magnitude it is compared at, so that a statement reading it
        // (a copy or a collective of it) compares it there too, not relative to itself.
        if (scale < tolerance * operands) scale = operands;
        magnitude[sp.target] = sp.assign == semantics::Assign::Accumulate
                                   ? std::max(magnitude[sp.target], scale)
                                   : scale;
        run.max_rel_error = run.max_abs_error / std::max(scale, 1e-30);
        run.exact = options.data.mode == DataMode::Ints && linear(sp);
        for (const auto& v : sp.values)
            if (!v.load.empty() && inexact.count(v.load)) run.exact = false;
        // `+=` adds to the stored value, which no value of the plan loads.
        if (sp.assign == semantics::Assign::Accumulate && inexact.count(sp.target))
            run.exact = false;
        if (run.exact)
            inexact.erase(sp.target);
        else
            inexact.insert(sp.target);
        run.tolerance = run.exact ? 0 : tolerance;
        run.pass = run.exact ? run.max_abs_error == 0 && run.replica_error == 0
                             : run.max_rel_error <= tolerance &&
                                   run.replica_error <= tolerance * std::max(scale, 1.0);
        report.statements.push_back(std::move(run));
        if (options.progress) options.progress(i + 1, runs.size());
    }
}

} // namespace

double estimate_bytes(const semantics::Plan& plan, const ExecOptions& options) {
    const double elem = options.f64 ? 8 : 4;
    // The reference keeps every result (f64); each rank keeps its shards of every result and,
    // while a statement runs, all of that statement's values; inputs are generated whole.
    double reference = 0, stored = 0, peak_statement = 0, biggest = 0;
    for (const auto& sp : plan.statements) {
        std::vector<std::int64_t> g;
        for (const auto& a : sp.result.atoms)
            g.push_back(a.extent);
        reference += 8 * elements(g);
        stored += elem * elements(sp.result.local_shape);
        double statement = 0;
        for (const auto& v : sp.values) {
            statement += elem * elements(v.layout.local_shape);
            std::vector<std::int64_t> vg;
            for (const auto& a : v.layout.atoms)
                vg.push_back(a.extent);
            biggest = std::max(biggest, 8 * elements(vg));
        }
        peak_statement = std::max(peak_statement, statement);
    }
    // Every rank of this process (sim; for cuda an upper bound: its shards are in device
    // memory, but each rank's inputs are generated and its results gathered on the host).
    const bool all_here = options.backend == Backend::Sim || options.backend == Backend::Cuda;
    const double ranks = all_here ? static_cast<double>(plan.mesh.device_count()) : 1.0;
    return 2 * reference + ranks * (stored + 2 * peak_statement + biggest);
}

ExecReport execute(const ast::Program& program, const semantics::Plan& plan,
                   const ExecOptions& options) {
    ExecReport report;
    report.backend = backend_name(options.backend);
    report.dtype = options.f64 ? "f64" : "f32";
    report.data = options.data.mode == DataMode::Random   ? "random"
                  : options.data.mode == DataMode::Arange ? "arange"
                                                          : "ints";
    report.ranks = static_cast<int>(plan.mesh.device_count());
    LabelTable labels;
    labels.add(plan);
    const auto mesh = mesh_shape(plan.mesh);
    if (options.backend == Backend::Sim) {
        // Every rank thread may call GEMM at once: room for OpenBLAS's buffer each, checked
        // before the pool is sized (a clear error under a tight ulimit -v, not a hang).
        reserve_blas_callers(report.ranks);
        // The reference interns any index the plan lacks; do it before threads share labels.
        const auto reference = evaluate_runs(program, plan, labels, options.data);
        set_blas_threads(1);
        run_sim(mesh, [&](Communicator& comm) {
            if (options.f64) {
                auto compute =
                    options.sim_compute_f64 ? options.sim_compute_f64(comm.rank()) : nullptr;
                run_rank<double>(comm, program, plan, labels, options, reference, report,
                                 compute.get());
            } else {
                auto compute =
                    options.sim_compute_f32 ? options.sim_compute_f32(comm.rank()) : nullptr;
                run_rank<float>(comm, program, plan, labels, options, reference, report,
                                compute.get());
            }
        });
        return report;
    }
    if (options.backend == Backend::Cuda) {
        // Virtual ranks: a thread per rank, each with its GPU's stream and cuBLAS handle.
        const auto reference = evaluate_runs(program, plan, labels, options.data);
        set_blas_threads(1);
        run_cuda(mesh, [&](Communicator& comm, int device) {
            if (options.f64) {
                auto compute = make_cuda_compute<double>(device);
                run_rank<double>(comm, program, plan, labels, options, reference, report,
                                 compute.get());
            } else {
                auto compute = make_cuda_compute<float>(device);
                run_rank<float>(comm, program, plan, labels, options, reference, report,
                                compute.get());
            }
        });
        return report;
    }
    int device = 0;
    auto comm = options.backend == Backend::Nccl ? make_nccl(mesh, device) : make_mpi(mesh);
    report.reporting = comm->rank() == 0;
    std::vector<Tensor<double>> reference;
    if (report.reporting) reference = evaluate_runs(program, plan, labels, options.data);
    const bool gpu = options.backend == Backend::Nccl;
    if (options.f64) {
        auto compute = gpu ? make_cuda_compute<double>(device, true) : nullptr;
        run_rank<double>(*comm, program, plan, labels, options, reference, report, compute.get());
    } else {
        auto compute = gpu ? make_cuda_compute<float>(device, true) : nullptr;
        run_rank<float>(*comm, program, plan, labels, options, reference, report, compute.get());
    }
    return report;
}

const char* backend_name(Backend b) {
    switch (b) {
    case Backend::Sim:
        return "sim";
    case Backend::Mpi:
        return "mpi";
    case Backend::Cuda:
        return "cuda";
    case Backend::Nccl:
        return "nccl";
    }
    return "?";
}

namespace {
std::string collective_text(const semantics::Plan& plan, const Executed& e) {
    return semantics::collective_text(plan.mesh, e.kind, e.axes);
}
} // namespace

std::string format_exec(const ExecReport& report, const semantics::Plan& plan, bool color) {
    auto paint = [&](const std::string& s, const char* code) {
        return color ? std::string("\033[") + code + "m" + s + "\033[0m" : s;
    };
    std::ostringstream out;
    const bool emulated = (report.backend == "cuda" || report.backend == "nccl") && cuda_emulated();
    out << "exec: " << report.ranks << (report.ranks == 1 ? " rank" : " ranks") << " on "
        << report.backend << (emulated ? " (the tests' host emulator of CUDA)" : "") << ", "
        << report.dtype << ", data " << report.data
        << "; tolerance: relative error <= " << (report.dtype == "f64" ? "1e-10" : "1e-4")
        << (report.data == "ints" ? " (linear statements on integer data: exact)" : "") << "\n";
    int passed = 0;
    for (const auto& s : report.statements) {
        out << "line " << s.line << ": " << s.source << "\n";
        if (s.collectives.empty()) {
            out << "  ran: no collectives\n";
        } else {
            out << "  ran:";
            for (std::size_t i = 0; i < s.collectives.size(); ++i)
                out << (i ? "," : "") << " " << collective_text(plan, s.collectives[i]) << " "
                    << s.collectives[i].tensor << " "
                    << semantics::format_bytes(s.collectives[i].bytes);
            out << " (bytes each device sends; a permute: the most one device sends or receives)\n";
        }
        out << s.shown;
        char buf[160];
        if (s.device_s >= 0 && !s.computes) {
            out << "  no local compute on the GPU: the statement only moves data\n";
        } else if (s.device_s >= 0) {
            std::snprintf(buf, sizeof buf,
                          "  local compute on the GPU: %.3f ms (rank 0, CUDA events)\n",
                          s.device_s * 1e3);
            out << buf;
        }
        std::snprintf(buf, sizeof buf, "  max abs error %.3g, max rel error %.3g", s.max_abs_error,
                      s.max_rel_error);
        out << buf;
        if (s.replica_error > 0) {
            std::snprintf(buf, sizeof buf, ", replicas differ by %.3g", s.replica_error);
            out << buf;
        }
        out << (s.exact ? " (exact)" : "") << "  "
            << (s.pass ? paint("PASS", "32") : paint("FAIL", "1;31")) << "\n";
        if (!s.pass && s.overflow)
            out << "  note: values overflowed to inf or NaN where the run and the reference "
                   "differ: the data is too large for this statement (--data random keeps it "
                   "small)\n";
        passed += s.pass;
    }
    out << passed << " of " << report.statements.size() << " statements verified\n";
    return out.str();
}

std::string exec_to_json(const ExecReport& report, const semantics::Plan& plan) {
    using nlohmann::json;
    json statements = json::array();
    for (const auto& s : report.statements) {
        json cols = json::array();
        for (const auto& c : s.collectives)
            cols.push_back({{"collective", collective_text(plan, c)},
                            {"tensor", c.tensor},
                            {"bytes_per_rank", c.bytes}});
        json j = {{"line", s.line},
                  {"source", s.source},
                  {"tensor", s.target},
                  {"collectives", cols},
                  {"max_abs_error", s.max_abs_error},
                  {"max_rel_error", s.max_rel_error},
                  {"replica_error", s.replica_error},
                  {"tolerance", s.tolerance},
                  {"exact", s.exact},
                  {"pass", s.pass},
                  {"overflow", s.overflow}};
        if (!s.shown.empty()) j["shown"] = s.shown;
        if (s.device_s >= 0) j["device_time_s"] = s.device_s;
        statements.push_back(j);
    }
    json j = {{"backend", report.backend}, {"dtype", report.dtype},     {"data", report.data},
              {"ranks", report.ranks},     {"passed", report.passed()}, {"statements", statements}};
    return j.dump(2);
}

} // namespace shardscope::exec
