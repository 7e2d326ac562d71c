#include "app/gui_helper.hpp"
#include "app/inputs.hpp"

#include "exec/backend_plugins.hpp"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

extern char** environ;

namespace shardscope::app {

namespace {

std::vector<std::string>& command_line() {
    static std::vector<std::string> args;
    return args;
}

const char* const kWithoutGui = "'shardscope render FILE -o OUT.svg' draws the pictures without "
                                "them";

} // namespace

void remember_command_line(int argc, char** argv) {
    command_line().assign(argv, argv + argc);
}

int run_gui_helper() {
    const std::string helper = exec::helper_path("shardscope-gui");
    if (::access(helper.c_str(), X_OK) != 0) {
        std::cerr << "shardscope: error: " << helper
                  << " is missing, which the window and PNG output need (reinstall shardscope); "
                  << kWithoutGui << "\n";
        return kExitUsage;
    }
    std::vector<std::string> args = command_line();
    if (args.empty()) args.emplace_back("shardscope");
    args[0] = helper;
    std::vector<char*> argv;
    for (auto& a : args)
        argv.push_back(a.data());
    argv.push_back(nullptr);
    // As system() does: the terminal's Ctrl-C goes to the window, which decides.
    struct sigaction ignore {
    }, old_int{}, old_quit{};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    sigaction(SIGINT, &ignore, &old_int);
    sigaction(SIGQUIT, &ignore, &old_quit);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t defaults;
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGINT);
    sigaddset(&defaults, SIGQUIT);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);
    pid_t pid = 0;
    const int rc = posix_spawn(&pid, helper.c_str(), nullptr, &attr, argv.data(), environ);
    posix_spawnattr_destroy(&attr);
    int status = 0;
    if (rc == 0)
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGQUIT, &old_quit, nullptr);
    if (rc != 0) {
        std::cerr << "shardscope: error: cannot start " << helper << ": " << std::strerror(rc)
                  << "\n";
        return kExitUsage;
    }
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : kExitUsage;
    if (code == 127) {
        // The dynamic loader could not load its libraries, and said which above.
        std::cerr << "shardscope: error: the window and PNG output need the OpenGL, GLFW and X11 "
                     "libraries, which cannot be loaded here (see the message above); "
                  << kWithoutGui << "\n";
        return kExitUsage;
    }
    return code;
}

} // namespace shardscope::app
