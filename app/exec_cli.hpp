// The options of `shardscope exec`, shared with the REPL's `:exec`, and the run of one source
// text with them.
#pragma once

#include "parser/source.hpp"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <ostream>
#include <string>

namespace shardscope::app {

struct ExecCliOptions {
    std::string backend = "sim";
    std::string data = "random";
    std::uint64_t seed = 0;
    std::string dtype;
    std::vector<std::string> show;
    std::string mesh;
    bool json = false;
    bool small = false;
};

/// Registers every option of `exec` but its file on `cmd`.
void add_exec_options(CLI::App& cmd, ExecCliOptions& o);

/// Where a run writes: its report, its diagnostics, whether each is coloured, and whether a
/// progress bar may be drawn on a terminal's stderr.
struct ExecOutput {
    std::ostream& out;
    std::ostream& err;
    bool out_color = false;
    bool err_color = false;
    bool progress = false;
};

/// Parses, checks (small default ranges), runs and verifies `source` with `o`; returns the
/// exit code (kExitOk when every statement passed). The caller has checked that the backend
/// can run here (MPI: built with it, started by mpirun).
int exec_source(const SourceFile& source, const ExecCliOptions& o, const ExecOutput& io);

} // namespace shardscope::app
