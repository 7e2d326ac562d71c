// The shardscope command line: one subcommand per job.
#include "allocator.hpp"
#include "cli_main.hpp"
#include "commands.hpp"
#include "gui_helper.hpp"
#include "inputs.hpp"

#include "exec/device.hpp"

int main(int argc, char** argv) {
    using namespace shardscope::app;
    remember_command_line(argc, argv);
    CLI::App app{"shardscope: sharded Einstein notation — placements, collectives, costs"};
    namespace ex = shardscope::exec;
    std::string gpu = !ex::cuda_built() ? "none" : ex::nccl_built() ? "cuda, nccl" : "cuda";
    if (ex::cuda_emulated()) gpu += " on the tests' host emulator";
    app.set_version_flag("--version", std::string("shardscope ") + SHARDSCOPE_VERSION +
                                          " (allocator: " + allocator_name() +
                                          "; GPU backends: " + gpu + ")");
    app.require_subcommand(1);
    int exit_code = kExitOk;
    add_fmt_command(app, exit_code);
    add_parse_command(app, exit_code);
    add_check_command(app, exit_code);
    add_exec_command(app, exit_code);
    add_repl_command(app, exit_code);
    add_grad_command(app, exit_code);
    add_export_command(app, exit_code);
    add_render_command(app, exit_code);
    add_gui_command(app, exit_code);
    add_codes_command(app, exit_code);
    add_plan_command(app, exit_code);
    return run_command_line(app, argc, argv, exit_code);
}
