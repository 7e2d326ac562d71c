// `shardscope plan`: the strategy search (semantics/search.hpp) on the command line.
#include "commands.hpp"
#include "inputs.hpp"

#include "parser/parser.hpp"
#include "semantics/search.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <iostream>
#include <memory>

namespace shardscope::app {

namespace {

struct PlanCliOptions {
    std::string file;
    std::string devices;
    std::string hbm;
    std::string hw;
    std::string axes;
    bool axes_given = false; ///< --axes was given (perhaps empty)
    std::size_t top = 3;
    bool json = false;
};

volatile std::sig_atomic_t interrupted = 0;

extern "C" void on_interrupt(int) {
    interrupted = 1;
}

/// SIGINT stops the search between candidates (what was found so far is printed) while it
/// runs; the previous handler comes back after.
class InterruptScope {
public:
    InterruptScope() {
        interrupted = 0;
        previous_ = std::signal(SIGINT, on_interrupt);
    }
    ~InterruptScope() { std::signal(SIGINT, previous_ == SIG_ERR ? SIG_DFL : previous_); }
    InterruptScope(const InterruptScope&) = delete;
    InterruptScope& operator=(const InterruptScope&) = delete;

private:
    void (*previous_)(int) = SIG_DFL;
};

std::optional<std::int64_t> parse_count(const std::string& s) {
    if (s.empty() || s.size() > 12) return std::nullopt;
    std::int64_t v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return std::nullopt;
        v = v * 10 + (c - '0');
    }
    return v;
}

std::vector<std::string> split_list(const std::string& s) {
    std::vector<std::string> out;
    std::string cur;
    for (char c : s + ",") {
        if (c == ',' || c == ' ') {
            if (!cur.empty()) out.push_back(cur);
            cur.clear();
        } else {
            cur += c;
        }
    }
    return out;
}

int run_plan(const PlanCliOptions& o) {
    const auto devices = parse_count(o.devices);
    if (!devices || *devices < 1 || *devices > (std::int64_t{1} << 24)) {
        std::cerr << "shardscope: error: bad --devices '" << o.devices
                  << "': give a whole number of devices from 1 to 16777216\n";
        return kExitUsage;
    }
    semantics::SearchOptions so;
    so.devices = *devices;
    if (!o.hbm.empty()) {
        so.hbm_bytes = semantics::parse_byte_size(o.hbm);
        if (!so.hbm_bytes) {
            std::cerr << "shardscope: error: bad --hbm '" << o.hbm
                      << "': give the memory per device, e.g. 80GB, 96GiB or 8e10\n";
            return kExitUsage;
        }
    }
    so.hardware = o.hw;
    so.axes = split_list(o.axes);
    // Given, --axes names at least one axis, each once (an empty value would mean every axis,
    // the opposite of what it says).
    if (o.axes_given && so.axes.empty()) {
        std::cerr << "shardscope: error: --axes '" << o.axes
                  << "' names no axis: give mesh axes such as dp,tp, or leave out --axes to "
                     "size every axis\n";
        return kExitUsage;
    }
    for (auto it = so.axes.begin(); it != so.axes.end(); ++it)
        if (std::find(so.axes.begin(), it, *it) != it) {
            std::cerr << "shardscope: error: --axes '" << o.axes << "' names " << *it
                      << " twice: name each axis once\n";
            return kExitUsage;
        }
    if (o.top < 1) {
        std::cerr << "shardscope: error: --top must be at least 1\n";
        return kExitUsage;
    }
    auto source = load_source(o.file);
    if (!source) return kExitUsage;
    const auto parsed = parser::parse(*source);
    if (parsed.has_errors()) {
        const bool color = stderr_color();
        for (const auto& d : parsed.diagnostics)
            std::cerr << format_diagnostic(*source, d, color);
        std::cerr << source->name() << ": error: the file does not parse; nothing was searched\n";
        return kExitInputErrors;
    }
    // A count on stderr where it is a terminal, at most ten times a second.
    const bool tty = isatty(2) != 0;
    auto last = std::chrono::steady_clock::now();
    bool shown = false;
    so.progress = [&](std::size_t done, std::size_t total) {
        if (interrupted) return false;
        if (!tty) return true;
        const auto now = std::chrono::steady_clock::now();
        if (now - last > std::chrono::milliseconds(100) || (shown && done == total)) {
            last = now;
            shown = true;
            std::cerr << "\rplan: " << done << "/" << total << " candidates" << std::flush;
        }
        return true;
    };
    semantics::SearchResult result;
    {
        InterruptScope scope;
        result = semantics::search(parsed.program, so);
    }
    if (shown) std::cerr << "\r\033[K" << std::flush;
    if (!result.problems.empty()) {
        for (const auto& p : result.problems) {
            if (p.range.line > 0)
                std::cerr << format_diagnostic(*source, p, stderr_color());
            else
                std::cerr << source->name() << ": error: " << p.message << "\n";
            if (!p.fix.empty() && p.range.line == 0) std::cerr << "    fix: " << p.fix << "\n";
        }
        // An option naming something the file lacks is a usage error; a file without
        // mesh axes is an input error.
        const bool in_file = std::any_of(result.problems.begin(), result.problems.end(),
                                         [](const auto& p) { return !p.code.empty(); });
        return result.axis_names.empty() || in_file ? kExitInputErrors : kExitUsage;
    }
    if (o.json)
        std::cout << semantics::search_to_json(result, o.file, o.top).dump(2) << "\n";
    else
        std::cout << semantics::format_search(result, source->name(), o.top) << std::flush;
    if (result.interrupted) {
        std::cerr << "shardscope: interrupted after " << result.checked
                  << " checks; the ranking covers those\n";
        return 130;
    }
    if (result.ranked.empty()) {
        const bool all_uneven =
            std::all_of(result.pruned.begin(), result.pruned.end(),
                        [](const auto& p) { return p.pruned == semantics::PruneReason::Uneven; });
        std::string axes;
        for (const auto& a : result.searched_axes)
            axes += (axes.empty() ? "" : ", ") + a;
        if (all_uneven)
            std::cerr << source->name() << ": error: no factorization of " << so.devices
                      << " devices over " << axes
                      << " divides the ranges sharded over them (see above); try another "
                         "device count\n";
        else
            std::cerr << source->name() << ": error: no mesh of " << so.devices
                      << " devices is left: every one was pruned (see above)\n";
        return kExitInputErrors;
    }
    return kExitOk;
}

} // namespace

void add_plan_command(CLI::App& app, int& exit_code) {
    auto opts = std::make_shared<PlanCliOptions>();
    auto* cmd = app.add_subcommand(
        "plan", "Strategy search: size the named mesh axes of a strategy file (mesh dp=1 tp=1 pp=1 "
                "...) for N devices, check every factorization, prune those with errors, uneven "
                "shards or too much memory, and rank the rest by step time");
    cmd->add_option("file", opts->file, "A strategy file (- for stdin)")->required();
    cmd->add_option("--devices,-n", opts->devices, "The number of devices N")->required();
    cmd->add_option("--hbm", opts->hbm,
                    "Memory per device (80GB, 96GiB): prune what does not fit; default: no limit");
    cmd->add_option("--hw", opts->hw,
                    "A hardware preset (a100, a100-40gb, h100, tpu-v5e) instead of the file's");
    cmd->add_option("--top", opts->top, "How many candidates to show side by side (default 3)");
    cmd->add_option("--axes", opts->axes,
                    "Only these axes may be larger than 1 (dp,tp); default: every mesh axis")
        ->each([opts](const std::string&) { opts->axes_given = true; });
    cmd->add_flag("--json", opts->json, "Print the result as JSON");
    cmd->callback([opts, &exit_code] { exit_code = run_plan(*opts); });
}

} // namespace shardscope::app
