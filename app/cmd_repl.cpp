// `shardscope repl [FILE]`: the interactive session (repl_session.hpp) behind libedit — history
// in ~/.shardscope_history, tab completion, `\` continuation lines, Ctrl-C cancels the line,
// Ctrl-D leaves. When stdin is not a terminal, lines are read plainly: no prompt, no colour,
// no history, and the exit code is 1 when any input was rejected (like `check`), else 0.
#include "commands.hpp"
#include "inputs.hpp"
#include "repl_session.hpp"

#include <histedit.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

namespace shardscope::app {

namespace {

volatile std::sig_atomic_t interrupted = 0;
volatile std::sig_atomic_t resized = 0;

extern "C" void on_sigint(int) {
    interrupted = 1;
}
extern "C" void on_sigwinch(int) {
    resized = 1;
}

int terminal_width() {
    winsize w{};
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_col > 0) return w.ws_col;
    return 80;
}

void print(const Answer& a) {
    std::cout << a.text << std::flush;
}

// ---- scripted: stdin is not a terminal ------------------------------------------------------

int run_scripted(Session& session, bool failed) {
    std::string line, pending;
    while (std::getline(std::cin, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (Session::continues(line)) {
            pending += line + "\n";
            continue;
        }
        const auto a = session.eval(pending + line);
        pending.clear();
        print(a);
        failed |= a.error;
        if (a.quit) return failed ? kExitInputErrors : kExitOk;
    }
    if (!pending.empty()) {
        const auto a = session.eval(pending);
        print(a);
        failed |= a.error;
    }
    return failed ? kExitInputErrors : kExitOk;
}

// ---- interactive: libedit -------------------------------------------------------------------

struct Editor {
    Session* session = nullptr;
    const char* prompt = "ein> ";
};

extern "C" char* prompt_of(EditLine* el) {
    Editor* ed = nullptr;
    el_get(el, EL_CLIENTDATA, &ed);
    return const_cast<char*>(ed ? ed->prompt : "ein> ");
}

std::vector<std::string> files_matching(const std::string& prefix) {
    namespace fs = std::filesystem;
    const auto slash = prefix.rfind('/');
    const std::string dir = slash == std::string::npos ? "." : prefix.substr(0, slash + 1);
    const std::string base = slash == std::string::npos ? prefix : prefix.substr(slash + 1);
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir.empty() ? "/" : dir, ec)) {
        const auto name = e.path().filename().string();
        if (name.rfind(base, 0) != 0 || (base.empty() && name[0] == '.')) continue;
        const std::string shown = slash == std::string::npos ? name : dir + name;
        out.push_back(shown + (e.is_directory(ec) ? "/" : ""));
    }
    std::sort(out.begin(), out.end());
    return out;
}

/// The candidates for the word before the cursor, and where that word starts.
std::vector<std::string> candidates(const Session& s, const std::string& before,
                                    std::size_t& word_start, bool& add_space) {
    add_space = true;
    const auto first = before.find_first_not_of(" \t");
    if (first != std::string::npos && before[first] == ':') {
        const auto space = before.find_first_of(" \t", first);
        if (space == std::string::npos) {
            word_start = first;
            return Session::commands();
        }
        const std::string cmd = before.substr(first, space - first);
        word_start = before.find_last_of(" \t") + 1;
        const bool first_arg = before.find_first_not_of(" \t", space) >= word_start;
        const auto* c = find_repl_command(cmd);
        if (!c) return {};
        switch (c->completes) {
        case ReplCommand::Completes::Tensor:
            if (first_arg) return s.tensor_names();
            return {};
        case ReplCommand::Completes::Choices:
            return c->choices;
        case ReplCommand::Completes::File: {
            auto files = files_matching(before.substr(word_start));
            if (files.size() == 1 && files[0].back() == '/') add_space = false;
            return files;
        }
        case ReplCommand::Completes::Nothing:
            break;
        }
        return {};
    }
    // Notation: tensors, indices, mesh axes (after `_`), keywords.
    std::size_t b = before.size();
    while (b > 0 && (std::isalnum(static_cast<unsigned char>(before[b - 1])) ||
                     before[b - 1] == '\'' || before[b - 1] == '^'))
        --b;
    word_start = b;
    add_space = false;
    // A mesh axis follows `_` or `_{` inside an index list (`x_{b_t`, `x_{b_{t`); at brace
    // depth 0 the subscript is the tensor's own (`x_{`): indices.
    std::size_t u = b;
    if (u > 0 && before[u - 1] == '{') --u;
    if (u > 0 && before[u - 1] == '_') {
        int depth = 0;
        for (std::size_t i = 0; i + 1 < u; ++i)
            depth += before[i] == '{' ? 1 : before[i] == '}' ? -1 : 0;
        if (depth > 0) return s.axis_names();
    }
    std::vector<std::string> out = s.tensor_names();
    for (const auto& i : s.index_names())
        out.push_back(i);
    if (before.find_first_not_of(" \t") >= b)
        for (const char* k : {"mesh", "dim", "split", "dtype", "fn", "expect", "hw"})
            out.push_back(k);
    return out;
}

extern "C" unsigned char complete(EditLine* el, int) {
    Editor* ed = nullptr;
    el_get(el, EL_CLIENTDATA, &ed);
    const LineInfo* li = el_line(el);
    const std::string before(li->buffer, static_cast<std::size_t>(li->cursor - li->buffer));
    std::size_t start = before.size();
    bool add_space = true;
    auto all = candidates(*ed->session, before, start, add_space);
    const std::string word = before.substr(start);
    std::vector<std::string> match;
    for (const auto& c : all)
        if (c.rfind(word, 0) == 0 && std::find(match.begin(), match.end(), c) == match.end())
            match.push_back(c);
    if (match.empty()) return CC_ERROR;
    std::string common = match[0];
    for (const auto& m : match) {
        std::size_t n = 0;
        while (n < common.size() && n < m.size() && common[n] == m[n])
            ++n;
        common.resize(n);
    }
    if (match.size() == 1) {
        const std::string rest = match[0].substr(word.size()) + (add_space ? " " : "");
        if (!rest.empty()) el_insertstr(el, rest.c_str());
        return CC_REFRESH;
    }
    if (common.size() > word.size()) {
        el_insertstr(el, common.substr(word.size()).c_str());
        return CC_REFRESH;
    }
    std::string list;
    for (const auto& m : match)
        list += (list.empty() ? "" : "  ") + m;
    std::fprintf(stdout, "\n%s\n", list.c_str());
    std::fflush(stdout);
    return CC_REDISPLAY;
}

std::string history_path() {
    const char* home = std::getenv("HOME");
    if (!home || !*home) return "";
    return std::string(home) + "/.shardscope_history";
}

int run_interactive(Session& session) {
    Editor ed;
    ed.session = &session;
    EditLine* el = el_init("shardscope", stdin, stdout, stderr);
    if (!el) {
        std::cerr << "shardscope: error: cannot start line editing (libedit); pipe the input to "
                     "run without it\n";
        return kExitUsage;
    }
    History* hist = history_init();
    HistEvent ev;
    history(hist, &ev, H_SETSIZE, 1000);
    history(hist, &ev, H_SETUNIQUE, 1);
    const auto hpath = history_path();
    if (!hpath.empty()) history(hist, &ev, H_LOAD, hpath.c_str()); // absent at first: fine
    el_set(el, EL_CLIENTDATA, &ed);
    el_set(el, EL_PROMPT, prompt_of);
    el_set(el, EL_EDITOR, "emacs");
    el_set(el, EL_HIST, history, hist);
    // The wide form: el_set's narrow EL_ADDFN copies the name and help into wide strings
    // that el_end never frees.
    el_wset(el, EL_ADDFN, L"shardscope-complete", L"complete a command, tensor, index or axis",
            complete);
    el_set(el, EL_BIND, "^I", "shardscope-complete", nullptr);
    el_source(el, nullptr); // ~/.editrc, as other libedit programs

    // Ctrl-C interrupts the read (no SA_RESTART): the line is dropped, the session goes on.
    struct sigaction sa {};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    struct sigaction old_int {
    }, old_winch{};
    sigaction(SIGINT, &sa, &old_int);
    sa.sa_handler = on_sigwinch;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGWINCH, &sa, &old_winch);

    std::cout << "shardscope " << SHARDSCOPE_VERSION
              << " repl: type notation, or :help; Ctrl-D leaves\n"
              << std::flush;
    std::string pending, joined;
    for (;;) {
        if (resized) {
            resized = 0;
            el_resize(el);
            session.set_width(terminal_width());
        }
        ed.prompt = pending.empty() ? "ein> " : "...> ";
        interrupted = 0;
        int count = 0;
        const char* got = el_gets(el, &count);
        if (interrupted) {
            interrupted = 0;
            pending.clear();
            joined.clear();
            el_reset(el);
            std::cout << "^C\n" << std::flush;
            continue;
        }
        if (!got || count <= 0) {
            if (got == nullptr && count < 0 && errno == EINTR) continue;
            std::cout << "\n" << std::flush;
            break; // Ctrl-D
        }
        std::string line(got);
        while (!line.empty() && (line.back() == '\n' || line.back() == '\r'))
            line.pop_back();
        if (Session::continues(line)) {
            pending += line + "\n";
            std::string part = line.substr(0, line.size() - 1);
            while (!part.empty() && (part.back() == ' ' || part.back() == '\t'))
                part.pop_back();
            joined += part + " ";
            continue;
        }
        const std::string input = pending + line;
        const std::string single = joined + line;
        pending.clear();
        joined.clear();
        if (single.find_first_not_of(" \t") != std::string::npos) {
            history(hist, &ev, H_ENTER, single.c_str());
            if (!hpath.empty()) history(hist, &ev, H_SAVE, hpath.c_str());
        }
        const auto a = session.eval(input);
        print(a);
        if (a.quit) break;
    }
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGWINCH, &old_winch, nullptr);
    history_end(hist);
    el_end(el);
    return kExitOk;
}

} // namespace

void add_repl_command(CLI::App& app, int& exit_code) {
    auto file = std::make_shared<std::string>();
    auto* cmd = app.add_subcommand(
        "repl", "Interactive session: type notation, see placements, collectives and tilings "
                "at once (scripted when stdin is not a terminal)");
    cmd->add_option("file", *file, "A notation file to start from");
    cmd->callback([file, &exit_code] {
        const bool interactive = isatty(STDIN_FILENO) != 0;
        SessionOptions so;
        so.color = interactive && terminal_color(STDOUT_FILENO);
        so.width = interactive ? terminal_width() : 80;
        Session session(so);
        bool failed = false;
        if (!file->empty()) {
            std::string ignored;
            if (const auto why = read_whole_file(*file, ignored); !why.empty()) {
                std::cerr << "shardscope: error: " << why << "\n";
                exit_code = kExitUsage;
                return;
            }
            const auto a = session.load(*file);
            print(a);
            failed = a.error;
        }
        exit_code = interactive ? run_interactive(session) : run_scripted(session, failed);
    });
}

} // namespace shardscope::app
