// `shardscope exec`: run every statement's plan on real ranks and verify it against the
// single-device result.
#include "commands.hpp"
#include "exec_cli.hpp"
#include "frontend/document.hpp"
#include "frontend/mesh_spec.hpp"
#include "inputs.hpp"

#include "exec/backend_plugins.hpp"
#include "exec/comm.hpp"
#include "exec/device.hpp"
#include "exec/kernels.hpp"
#include "exec/run.hpp"
#include "parser/json.hpp"
#include "parser/parser.hpp"
#include "semantics/checker.hpp"
#include "semantics/report.hpp"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <new>
#include <sstream>
#include <system_error>

namespace shardscope::app {

namespace {

/// The program's `expect` lines, standalone and on chain steps.
std::size_t count_expectations(const ast::Program& program) {
    std::size_t n = 0;
    for (const auto& item : program.items) {
        const auto* st = std::get_if<ast::Statement>(&item);
        if (!st) continue;
        if (std::holds_alternative<ast::Expect>(st->node)) ++n;
        if (const auto* ch = std::get_if<ast::Chain>(&st->node))
            for (const auto& step : ch->steps)
                n += step.expect.has_value();
    }
    return n;
}

/// Memory this machine can give a run: MemAvailable from /proc/meminfo (0 if unknown).
double available_bytes() {
    std::ifstream in("/proc/meminfo");
    std::string key;
    double kib = 0;
    std::string unit;
    while (in >> key >> kib >> unit)
        if (key == "MemAvailable:") return kib * 1024;
    return 0;
}

/// The program's tensors, inputs and results, in order of appearance.
std::vector<std::string> program_tensors(const semantics::Plan& plan) {
    std::vector<std::string> names;
    auto add = [&](const std::string& n) {
        if (!n.empty() && n[0] != '%' && std::find(names.begin(), names.end(), n) == names.end())
            names.push_back(n);
    };
    for (const auto& sp : plan.statements) {
        for (const auto& op : sp.operands)
            add(op.tensor);
        add(sp.target);
    }
    return names;
}

/// Whether this process speaks for the run: always, except under mpirun, where rank 0 does
/// (every rank reads the same file and reaches the same verdict).
bool reporting_process(bool mpi) {
    if (!mpi) return true;
    const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
    if (!rank) rank = std::getenv("PMI_RANK");
    return !rank || std::atoi(rank) == 0;
}

/// The exit status of a rank that does not speak, where the run stops before it starts: 0.
/// mpirun aborts the whole job as soon as one rank exits non-zero, so a silent rank that
/// failed first killed rank 0 before it said why (seen under load: exit 2 with no message);
/// the job still exits with rank 0's status.
constexpr int kSilentRankExit = kExitOk;

/// exec --json's document for a program that did not run or did not finish: why, with
/// diagnostics as check --json gives them.
std::string not_run_json(const std::vector<Diagnostic>& diagnostics, const std::string& error) {
    nlohmann::json diags = nlohmann::json::array();
    for (const auto& d : diagnostics)
        if (d.severity != Severity::Note) diags.push_back(parser::to_json(d));
    const nlohmann::json doc = {{"passed", false},
                                {"ran", false},
                                {"statements", nlohmann::json::array()},
                                {"diagnostics", diags},
                                {"error", error}};
    return doc.dump(2) + "\n";
}

/// The message of a "shardscope: error: WHY\n..." text: WHY.
std::string first_line_of_error(const std::string& text) {
    const std::string prefix = "shardscope: error: ";
    std::string line = text.substr(0, text.find('\n'));
    if (line.rfind(prefix, 0) == 0) line.erase(0, prefix.size());
    return line;
}

} // namespace

int exec_source(const SourceFile& source, const ExecCliOptions& o, const ExecOutput& io) {
    std::ostream& out = io.out;
    std::ostream& err = io.err;
    const std::string& file = source.name();
    exec::ExecOptions eo;
    eo.backend = o.backend == "mpi"    ? exec::Backend::Mpi
                 : o.backend == "cuda" ? exec::Backend::Cuda
                 : o.backend == "nccl" ? exec::Backend::Nccl
                                       : exec::Backend::Sim;
    eo.data.mode = o.data == "arange" ? exec::DataMode::Arange
                   : o.data == "ints" ? exec::DataMode::Ints
                                      : exec::DataMode::Random;
    eo.data.seed = o.seed;
    eo.f64 = o.dtype.empty() ? eo.data.mode == exec::DataMode::Ints : o.dtype == "f64";
    eo.show = o.show;
    // One process per rank under mpirun (mpi, nccl).
    const bool mpi = eo.backend == exec::Backend::Mpi || eo.backend == exec::Backend::Nccl;
    const bool speaks = reporting_process(mpi);
    // Nothing runs: why on stderr (one write: under mpirun, other ranks' reports must not land
    // inside it) and, with --json, as the document's error (the guide promises it always).
    const auto refuse = [&](const std::string& why) {
        err << "shardscope: error: " + why + "\n";
        if (o.json && speaks) out << not_run_json({}, why) << std::flush;
        return kExitUsage;
    };
    if (std::ostringstream why; !mesh_option_ok(o.mesh, why)) {
        err << why.str();
        if (o.json && speaks) out << not_run_json({}, first_line_of_error(why.str())) << std::flush;
        return kExitUsage;
    }
    if (eo.backend == exec::Backend::Cuda || eo.backend == exec::Backend::Nccl) {
        const auto gpus = exec::probe_gpus();
        if (gpus.devices == 0)
            return refuse("--backend " + o.backend + " needs an NVIDIA GPU: " + gpus.problem +
                          " (--backend sim runs the ranks as threads on the CPU)");
    }
    auto parsed = parser::parse(source);
    const bool color = io.err_color;
    if (parsed.has_errors()) {
        if (!speaks) return kSilentRankExit;
        for (const auto& d : parsed.diagnostics)
            err << format_diagnostic(source, d, color);
        const std::string why = file + " has syntax errors; nothing ran";
        err << "shardscope: error: " << why << "\n";
        if (o.json) out << not_run_json(parsed.diagnostics, why);
        return kExitInputErrors;
    }
    semantics::CheckOptions co;
    co.text = source.text();
    co.small_defaults = true;
    co.ignore_dims = o.small;
    if (!o.mesh.empty()) co.mesh = frontend::parse_mesh_spec(o.mesh);
    // Open shardings (`f_?`) run as check resolves them (frontend::check_program, note S402).
    const auto plan = frontend::check_program(parsed.program, co);
    if (plan.errors() > 0) {
        if (!speaks) return kSilentRankExit;
        for (const auto& d : plan.diagnostics)
            if (d.severity != Severity::Note) err << format_diagnostic(source, d, color);
        const std::string why = file + " has " + std::to_string(plan.errors()) +
                                (plan.errors() == 1 ? " error" : " errors") +
                                " (shardscope check explains them); nothing ran";
        err << "shardscope: error: " << why << "\n";
        if (o.json) out << not_run_json(plan.diagnostics, why);
        return kExitInputErrors;
    }
    const auto tensors = program_tensors(plan);
    for (const auto& name : o.show)
        if (std::find(tensors.begin(), tensors.end(), name) == tensors.end()) {
            std::string list;
            for (const auto& t : tensors)
                list += (list.empty() ? "" : ", ") + t;
            return refuse("--show " + name + ": " + file + " has no tensor of that name (it has " +
                          list + ")");
        }
    if (plan.mesh.device_count() > 4096)
        return refuse("the mesh has " + std::to_string(plan.mesh.device_count()) +
                      " devices; exec runs at most 4096 ranks");
    if (mpi) {
        // Every rank sees the same numbers, so every rank stops here alike; rank 0 says why.
        const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
        if (!size) size = std::getenv("PMI_SIZE");
        if (size && std::atoll(size) != plan.mesh.device_count()) {
            // One write: mpirun's own report of the other ranks' exits must not land inside it.
            const auto n = std::to_string(plan.mesh.device_count());
            if (!speaks) return kSilentRankExit;
            return refuse("the mesh of " + file + " has " + n + " devices but mpirun started " +
                          size + " ranks: run 'mpirun -np " + n + " shardscope exec --backend " +
                          o.backend + " " + file + "'");
        }
    }
    const double need = exec::estimate_bytes(plan, eo);
    const double have = available_bytes();
    if (have > 0 && need > 0.8 * have)
        return refuse("this run needs about " + semantics::format_bytes(need) + " of memory but " +
                      semantics::format_bytes(have) +
                      " is available; declare smaller ranges with 'dim'");
    // Progress on stderr, for runs longer than a second, when stderr is a terminal.
    const auto start = std::chrono::steady_clock::now();
    bool drew = false;
    if (io.progress && isatty(2)) {
        eo.progress = [&](std::size_t done, std::size_t total) {
            const double s =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            if (s < 1.0 && !drew) return;
            drew = true;
            const int width = 30;
            const int filled = static_cast<int>(width * done / std::max<std::size_t>(total, 1));
            std::fprintf(stderr, "\r[%s%s] %zu/%zu statements, %.1fs",
                         std::string(filled, '#').c_str(), std::string(width - filled, ' ').c_str(),
                         done, total, s);
            std::fflush(stderr);
        };
    }
    try {
        const auto report = exec::execute(parsed.program, plan, eo);
        if (drew) std::fprintf(stderr, "\r%60s\r", "");
        if (mpi) exec::finalize_mpi();
        if (!report.reporting) return kExitOk;
        if (o.json)
            out << exec::exec_to_json(report, plan) << "\n";
        else
            // Under mpirun stdout is a forwarding pseudo-terminal, not the user's.
            out << exec::format_exec(report, plan, io.out_color && !mpi) << std::flush;
        // --small plans at sizes of its own, where the cheapest plan may differ from the
        // declared sizes' one: the expectations hold for those, so check tests them, not this.
        if (const auto expects = count_expectations(parsed.program); o.small && expects > 0)
            err << "shardscope: note: " << expects
                << (expects == 1 ? " expect line was" : " expect lines were")
                << " not checked: --small plans at other sizes than the declared ones; "
                   "`shardscope check "
                << file << "` checks them\n";
        return report.passed() ? kExitOk : kExitInputErrors;
    } catch (const exec::DeviceError& e) {
        // The GPU could not run it (no device, out of memory, a CUDA or NCCL failure).
        if (drew) std::fprintf(stderr, "\n");
        err << "shardscope: error: " << e.what() << "\n";
        if (o.json) out << not_run_json({}, e.what()) << std::flush;
        if (mpi) exec::abort_mpi(kExitUsage);
        return kExitUsage;
    } catch (const exec::ResourceError& e) {
        // The host's limits cannot run it (address space for OpenBLAS under ulimit -v).
        if (drew) std::fprintf(stderr, "\n");
        err << "shardscope: error: " << e.what() << "\n";
        if (o.json) out << not_run_json({}, e.what()) << std::flush;
        if (mpi) exec::abort_mpi(kExitUsage);
        return kExitUsage;
    } catch (const std::system_error& e) {
        // std::thread's EAGAIN: no room for a rank thread's stack (ulimit -v) or too many threads.
        if (drew) std::fprintf(stderr, "\n");
        if (e.code() != std::errc::resource_unavailable_try_again) {
            err << "shardscope: error: " << e.what() << "\n";
            if (o.json) out << not_run_json({}, e.what()) << std::flush;
            if (mpi) exec::abort_mpi(kExitInputErrors);
            return kExitInputErrors;
        }
        const std::string why = std::string("out of memory: cannot start a thread (") + e.what() +
                                "); under a memory limit, raise it with ulimit -v, or run "
                                "fewer ranks";
        err << "shardscope: error: " << why << "\n";
        if (o.json) out << not_run_json({}, why) << std::flush;
        if (mpi) exec::abort_mpi(kExitUsage);
        return kExitUsage;
    } catch (const std::bad_alloc&) {
        if (drew) std::fprintf(stderr, "\n");
        const std::string why = "out of memory (an allocation failed; under a memory limit, "
                                "raise it with ulimit -v, or run smaller sizes)";
        err << "shardscope: error: " << why << "\n";
        if (o.json) out << not_run_json({}, why) << std::flush;
        if (mpi) exec::abort_mpi(kExitUsage);
        return kExitUsage;
    } catch (const std::exception& e) {
        if (drew) std::fprintf(stderr, "\n");
        err << "shardscope: error: " << e.what() << "\n";
        if (o.json) out << not_run_json({}, e.what()) << std::flush;
        if (mpi) exec::abort_mpi(kExitInputErrors);
        return kExitInputErrors;
    }
}

namespace {

int run_exec(const ExecCliOptions& o, const std::string& file) {
    // Nothing runs: why on stderr and, with --json, as the document's error.
    const auto refuse = [&](const std::string& why) {
        std::cerr << "shardscope: error: " << why << "\n";
        if (o.json) std::cout << not_run_json({}, why) << std::flush;
        return kExitUsage;
    };
    const bool per_process = o.backend == "mpi" || o.backend == "nccl";
    if (per_process && !exec::mpi_available())
        return refuse("this shardscope was built without MPI (install libopenmpi-dev and "
                      "rebuild)");
    if (o.backend == "nccl" && !exec::nccl_built())
        return refuse(std::string("this shardscope was built without NCCL") +
                      (exec::cuda_built()
                           ? " (--backend cuda runs the ranks on this process's GPUs)"
                           : " or CUDA (nvcc was not found when it was configured)"));
    if (per_process) {
        // MPI is a plugin, loaded here (exec/backend_plugins.hpp): its libraries may be missing.
        const std::string why = exec::load_mpi_backend();
        if (!why.empty()) return refuse("--backend " + o.backend + ": " + why);
    }
    if (per_process && !exec::launched_by_mpirun())
        return refuse("--backend " + o.backend +
                      " runs one process per rank: start it as 'mpirun -np N shardscope exec "
                      "--backend " +
                      o.backend + " " + file + "'");
    std::string why;
    auto source = load_source(file, &why);
    if (!source) {
        if (o.json) std::cout << not_run_json({}, why) << std::flush;
        return kExitUsage;
    }
    return exec_source(*source, o, {std::cout, std::cerr, terminal_color(1), stderr_color(), true});
}

} // namespace

void add_exec_options(CLI::App& cmd, ExecCliOptions& o) {
    cmd.add_option("--backend", o.backend,
                   "sim (threads, default), mpi (under mpirun), cuda (virtual ranks on this "
                   "process's GPUs) or nccl (one GPU per process, under mpirun)")
        ->check(CLI::IsMember({"sim", "mpi", "cuda", "nccl"}));
    cmd.add_option("--data", o.data,
                   "Inputs: random (seeded, default), arange (1, 2, 3, ... row-major) or ints "
                   "(small integers; linear statements compare exactly)")
        ->check(CLI::IsMember({"random", "arange", "ints"}));
    cmd.add_option("--seed", o.seed, "Seed for random and ints data (default 0)")
        ->check([](const std::string& s) -> std::string {
            // CLI11 would wrap -1 and clamp what overflows: take digits that fit, nothing else.
            std::uint64_t v = 0;
            const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
            if (s.empty() || ec != std::errc() || end != s.data() + s.size())
                return "expected a whole number from 0 to 18446744073709551615, not '" + s + "'";
            return "";
        });
    cmd.add_option("--dtype", o.dtype, "f32 or f64 (default f32; f64 with --data ints)")
        ->check(CLI::IsMember({"f32", "f64"}));
    cmd.add_option("--show", o.show,
                   "Print every rank's local tensor of NAME (an input or a result) and its "
                   "placement; repeat it, or NAME,NAME, for several")
        ->delimiter(',')
        ->type_name("NAME");
    cmd.add_option("--mesh", o.mesh, "Override the mesh: 4, 2x4, or dp=2,tp=4")
        ->check([](const std::string& v) { return mesh_value_problem(v); });
    cmd.add_flag("--small", o.small,
                 "Ignore the dim declarations and run at small ranges that every sharding "
                 "divides (where a plan's choices depend on sizes, they may differ)");
    cmd.add_flag("--json", o.json, "Print a JSON report");
}

void add_exec_command(CLI::App& app, int& exit_code) {
    auto opts = std::make_shared<ExecCliOptions>();
    auto file = std::make_shared<std::string>();
    auto* cmd = app.add_subcommand(
        "exec", "Run each statement's plan on real ranks and verify it against one device");
    cmd->add_option("file", *file, "A notation file (- for stdin)")->required();
    add_exec_options(*cmd, *opts);
    cmd->callback([opts, file, &exit_code] { exit_code = run_exec(*opts, *file); });
}

} // namespace shardscope::app
