// `shardscope exec`: runs every statement's plan on all ranks of a backend, gathers each
// result to its logical form and compares it with the single-device reference.
#pragma once

#include "exec/data.hpp"
#include "exec/interpreter.hpp"
#include "parser/ast.hpp"
#include "semantics/plan.hpp"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace shardscope::exec {

enum class Backend { Sim, Mpi, Cuda, Nccl };

/// The backend's name on the command line and in reports.
const char* backend_name(Backend b);

struct ExecOptions {
    Backend backend = Backend::Sim;
    DataOptions data;
    bool f64 = false;              ///< compute in f64 (default f32; --data ints defaults to f64)
    std::vector<std::string> show; ///< print every rank's local tensor of these tensors
    /// Called on the reporting rank after each statement (done, total): progress display.
    std::function<void(std::size_t, std::size_t)> progress;
    /// sim only: makes rank r's local compute on its thread (unset: the host). Tests run the
    /// interpreter's device path through a host mock device this way.
    std::function<std::unique_ptr<LocalCompute<float>>(int rank)> sim_compute_f32;
    std::function<std::unique_ptr<LocalCompute<double>>(int rank)> sim_compute_f64;
};

/// How one statement ran and compared.
struct StatementRun {
    std::uint32_t line = 0;
    std::string source;
    std::string target;
    double max_abs_error = 0;
    /// relative to the largest magnitude of the reference (of its operands where the reference
    /// cancels below the tolerance times theirs: rounding noise)
    double max_rel_error = 0;
    double replica_error = 0; ///< largest difference between copies that should be equal
    double tolerance = 0;     ///< on the relative error; 0: must be exact
    bool exact = false;       ///< integer data through a linear statement
    bool pass = false;
    /// Where the run and the reference differ, one of them is inf or NaN: the data overflowed
    /// (exp of --data arange, say), and the errors measure that rather than the plan.
    bool overflow = false;
    std::vector<Executed> collectives; ///< as rank 0 ran them
    std::string shown;                 ///< --show: every rank's local tensor
    /// GPU time of rank 0's local compute in this statement (CUDA events, transfers
    /// excluded); < 0 when it did not run on a GPU.
    double device_s = -1;
    /// The plan has a local compute step (a statement that only redistributes has none).
    bool computes = false;
};

struct ExecReport {
    std::string backend;
    std::string dtype;
    std::string data;
    int ranks = 1;
    bool reporting = true; ///< this process holds the report (MPI: rank 0 only)
    std::vector<StatementRun> statements;
    bool passed() const;
};

/// Bytes the run needs at its peak (reference and every rank of this process), estimated
/// from the plan before anything is allocated.
double estimate_bytes(const semantics::Plan& plan, const ExecOptions& options);

/// Runs and verifies the plan. Throws ExecError when it cannot run (an MPI launch with the
/// wrong number of ranks, an internal inconsistency of the plan).
ExecReport execute(const ast::Program& program, const semantics::Plan& plan,
                   const ExecOptions& options);

/// Text report: per statement the collectives that ran, the errors and PASS/FAIL.
std::string format_exec(const ExecReport& report, const semantics::Plan& plan, bool color);
/// JSON report.
std::string exec_to_json(const ExecReport& report, const semantics::Plan& plan);

} // namespace shardscope::exec
