// `check --format github|sarif|junit`: the checked files as CI systems read them (GitHub
// workflow-command annotations, SARIF 2.1.0 for code scanning, JUnit XML), and the program
// totals of `--format json`.
#pragma once

#include "semantics/plan.hpp"
#include "semantics/totals.hpp"

#include <nlohmann/json.hpp>

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

/// GitHub Actions workflow commands, one line per diagnostic:
/// "::error file=F,line=L,col=C,endLine=L2,endColumn=C2,title=CODE::message" (notes as
/// ::notice; with `werror`, warnings as ::error).
std::string format_github(const std::vector<CheckedFile>& files, bool werror);

/// A SARIF 2.1.0 log: one run, a rule per diagnostic code, a result per diagnostic.
nlohmann::json format_sarif(const std::vector<CheckedFile>& files, bool werror);

/// JUnit XML: a test suite per file, a test case per statement and per `expect` line (and
/// one per diagnostic outside them); errors (and, with `werror`, warnings) are failures.
std::string format_junit(const std::vector<CheckedFile>& files, bool werror);

/// A program's totals for `check --format json`: statements, errors, warnings, notes, and the
/// sums over its statements of time, bytes sent and flops per device (and the largest
/// memory per device); then the program totals of semantics/totals.hpp (step time and its
/// breakdown, bytes per collective kind, FLOPs, MFU, peak memory and whether it fits), which
/// count every statement StatementPlan::repeat times.
nlohmann::json plan_totals(const semantics::Plan& plan, const semantics::Training& training = {});

} // namespace shardscope::app
