// The subcommands of the shardscope executable, one file each.
#pragma once

#include <CLI/CLI.hpp>

namespace shardscope::app {

/// Each registers its subcommand; the callback stores the exit code in `exit_code`.
void add_fmt_command(CLI::App& app, int& exit_code);
void add_parse_command(CLI::App& app, int& exit_code);
void add_check_command(CLI::App& app, int& exit_code);
void add_exec_command(CLI::App& app, int& exit_code);
void add_repl_command(CLI::App& app, int& exit_code);
void add_grad_command(CLI::App& app, int& exit_code);
void add_export_command(CLI::App& app, int& exit_code);
void add_render_command(CLI::App& app, int& exit_code);
void add_gui_command(CLI::App& app, int& exit_code);
void add_codes_command(CLI::App& app, int& exit_code);
void add_plan_command(CLI::App& app, int& exit_code);

} // namespace shardscope::app
