// `check --format github|sarif|junit`: the checked files as CI systems read them (GitHub
// workflow-command annotations, SARIF 2.1.0 for code scanning, JUnit XML), and the program
// totals of `--format json`, and the side-by-side comparison of `check --compare`.
#pragma once

#include "semantics/plan.hpp"
#include "semantics/search.hpp"
#include "semantics/totals.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace shardscope::app {

/// One `expect` line of a file: a JUnit case of its own.
struct CheckedExpect {
    std::uint32_t line = 0;
    std::string text; ///< as written, e.g. "expect all-reduce(X)"
};

/// One file as `check` saw it.
struct CheckedFile {
    std::string path;
    semantics::Plan plan; ///< its diagnostics include the parser's
    std::vector<CheckedExpect> expects;
    double seconds = 0; ///< wall time of parse + check
};

/// Whether the diagnostic fails the run: an error; a warning with `werror`; any diagnostic
/// whose code is in `fail_on`.
bool fails(const Diagnostic& d, bool werror, const std::vector<std::string>& fail_on);

/// The severity a diagnostic is reported with: an error where it fails the run (`fails`),
/// else its own. Every format (and the text summary) reports that one.
Severity reported_severity(const Diagnostic& d, bool werror,
                           const std::vector<std::string>& fail_on);

/// GitHub Actions workflow commands, one line per diagnostic:
/// "::error file=F,line=L,col=C,endLine=L2,endColumn=C2,title=CODE::message" (notes as
/// ::notice; with `werror` warnings, and diagnostics whose code is in `fail_on`, as ::error).
std::string format_github(const std::vector<CheckedFile>& files, bool werror,
                          const std::vector<std::string>& fail_on);

/// A SARIF 2.1.0 log: one run, a rule per diagnostic code, a result per diagnostic (level
/// "error" for those that fail the run).
nlohmann::json format_sarif(const std::vector<CheckedFile>& files, bool werror,
                            const std::vector<std::string>& fail_on);

/// JUnit XML: a test suite per file, a test case per statement and per `expect` line (and
/// one per diagnostic outside them); the diagnostics that fail the run (errors; with
/// `werror`, warnings; codes in `fail_on`) are failures.
std::string format_junit(const std::vector<CheckedFile>& files, bool werror,
                         const std::vector<std::string>& fail_on);

/// A program's totals for `check --format json`: statements, errors, warnings, notes, and the
/// sums over its statements of time, bytes sent and flops per device (and the largest
/// memory per device); then the program totals of semantics/totals.hpp (step time and its
/// breakdown, bytes per collective kind, FLOPs, MFU, peak memory and whether it fits), which
/// count every statement StatementPlan::repeat times.
nlohmann::json plan_totals(const semantics::Plan& plan, const semantics::ProgramTotals& program);

/// One file of `check --format json`: semantics::plan_to_json with its totals (plan_totals),
/// each diagnostic at its reported severity (`reported_severity`), counted at it in the file's
/// and its totals' errors, warnings and notes; a diagnostic so raised keeps its own severity
/// in "own_severity".
nlohmann::json file_json(const semantics::Plan& plan, const std::string& path,
                         const semantics::ProgramTotals& program, bool werror,
                         const std::vector<std::string>& fail_on);

/// The "totals" of a whole run (check --format json, grad --json): the `files` array's
/// per-file totals (plan_totals) summed, the run's wall time and whether it fails.
nlohmann::json run_totals(const nlohmann::json& files, double check_time_s, bool failed);

/// The "program" object of plan_totals: the program totals as JSON (schema v1's
/// program_totals).
nlohmann::json program_totals_json(const semantics::ProgramTotals& t);

/// One file of `check --compare`.
struct ComparedFile {
    std::string path;
    int errors = 0;                  ///< a file with errors is reported but not ranked
    semantics::ProgramTotals totals; ///< semantics::program_totals of its plan
    semantics::Candidate candidate;  ///< its mesh and cost (semantics::candidate_of)
    /// The model: each tensor's global shape (intermediates left out). Files whose tensors
    /// differ are different models: still compared, and the comparison says so.
    std::map<std::string, std::vector<std::int64_t>> tensors;
    int rank = 0;    ///< 1 for the best; 0: not ranked (errors)
    std::string why; ///< rank > 1: why it loses to the best, in one line
};

/// A checked file as `check --compare` compares it.
ComparedFile compared_file(const std::string& path, const ast::Program& program,
                           const semantics::Plan& plan);

/// Several strategies side by side.
struct Comparison {
    std::vector<ComparedFile> files;  ///< in the order given, ranks filled
    std::vector<std::size_t> ranking; ///< indices into files, best first (files with errors out)
    /// "" when every ranked file has the same tensors; else which tensor differs, in words
    std::string models_differ;
};

/// Ranks the files without errors: those that fit in their preset's HBM first, then by step
/// time and memory per device (semantics::ranks_before); each loser's line says why
/// (semantics::explain_loss, the `plan` command's explanation; "does not fit" first when
/// the best fits and it does not).
Comparison compare(std::vector<ComparedFile> files);

/// The side-by-side table of `check --compare` (text), best first, and the loser's lines.
std::string format_compare(const Comparison& c);

/// The same as JSON (the "comparison" object of check --format json, schema v1).
nlohmann::json compare_to_json(const Comparison& c);

} // namespace shardscope::app
