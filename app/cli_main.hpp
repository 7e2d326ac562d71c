// What both executables (shardscope, shardscope-gui) do with their command line once the
// subcommands are added: parse and run, with usage errors, out of memory and other failures
// as a message and exit 2. Linking it also installs the out-of-memory handling before any
// other static initializer.
#pragma once

#include <CLI/CLI.hpp>

namespace shardscope::app {

/// Parses `argv` into `app` (running the chosen subcommand) and returns the exit code: the
/// subcommand's `exit_code`, 0 for --help and --version, 2 for a usage error or a failure.
int run_command_line(CLI::App& app, int argc, char** argv, const int& exit_code);

} // namespace shardscope::app
