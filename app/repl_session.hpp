// The REPL's model, without a terminal: the session (every statement accepted so far, the
// strict flag, an undo stack) and the answer to each input line. cmd_repl.cpp is the front end
// (libedit, or plain lines when stdin is not a terminal). The session's state and the checking
// of each input are repl_session.cpp; the commands are one table (repl_commands.*) whose
// handlers are below; the views of the session (:mesh, :dims, :tensors, :show, :plan, :viz)
// are repl_display.cpp.
//
// The session is a notation file being written: its text is the accepted entries one after
// another, exactly what `:save` writes, and each new input is checked by re-checking the whole
// text with it appended (the checker is fast enough for sessions of any typed size). An input
// whose parse or check adds an error is not added; diagnostics name the session `repl` with
// the line numbers of the saved file, so the caret falls under the typed line's column.
#pragma once

#include "parser/ast.hpp"
#include "repl_commands.hpp"
#include "semantics/checker.hpp"
#include "semantics/plan.hpp"

#include <string>
#include <vector>

namespace shardscope::app {

struct SessionOptions {
    bool color = false; ///< ANSI colours in answers (a terminal)
    int width = 80;     ///< terminal columns, for `:viz`
};

/// What the front end prints after one input.
struct Answer {
    std::string text;   ///< the answer (every line ends in '\n'; may be empty)
    bool error = false; ///< the input was rejected or the command failed
    bool quit = false;  ///< `:quit`
};

class Session {
public:
    explicit Session(SessionOptions options = {});

    /// One input: a command (a line starting with `:`), or notation text (a statement, which
    /// may go on over lines ending in `\`, a declaration or a comment). Blank input: nothing.
    Answer eval(const std::string& input);

    /// `:load FILE`: appends a file's statements as one entry (one `:undo` removes them).
    Answer load(const std::string& path);

    /// The session as a notation file (what `:save` writes; `check` accepts it).
    std::string text() const;
    const semantics::Plan& plan() const { return plan_; }
    /// The terminal was resized.
    void set_width(int width) { options_.width = width; }
    bool strict() const { return strict_; }

    /// For completion: tensor names (as the plan names them, `W^0`), index names (`d'`,
    /// `batch`: without the braces a longer name takes in a subscript), mesh axis names, and
    /// the commands (`:help`...: the first name of each row of `repl_commands()`).
    std::vector<std::string> tensor_names() const;
    std::vector<std::string> index_names() const;
    std::vector<std::string> axis_names() const;
    static const std::vector<std::string>& commands();

    /// True when `line` ends in a `\` that continues the statement on the next line (as the
    /// parser's splitter reads it: not `\\`, not inside a comment).
    static bool continues(const std::string& line);

private:
    struct Entry {
        std::string text;   ///< ends in '\n'
        std::string origin; ///< empty: typed; else the file it was loaded from
    };
    struct State {
        std::vector<Entry> entries;
        bool strict = false;
    };
    /// The result of checking a candidate text.
    struct Checked {
        std::string text;
        semantics::Plan plan; ///< with the parser's diagnostics
        ast::Program program;
        bool parsed = true;
    };

    Checked check_text(const std::string& text, bool strict) const;
    /// Appends `entry` if it adds no error; the answer shows the new statements' plans and the
    /// new diagnostics.
    Answer add(Entry entry);
    /// Makes `s` the session (the previous state goes on the undo stack when `undoable`).
    void commit(State s, Checked checked, bool undoable = true);
    std::string diagnostics_text(const Checked& c, const std::vector<Diagnostic>& ds) const;
    std::string diagnostic_text(const std::string& text, const std::vector<Entry>& entries,
                                const Diagnostic& d) const;
    /// The layout of a tensor as the session leaves it (nullptr if it never appears).
    const semantics::TensorLayout* layout_of(const std::string& name) const;

    // The commands (repl_commands.cpp): the table's handlers call the members below.
    friend const std::vector<ReplCommand>& repl_commands();
    Answer command(const std::string& line);
    Answer help() const;
    // The views of the session (repl_display.cpp).
    Answer show_mesh() const;
    Answer show_dims() const;
    Answer show_tensors() const;
    Answer show(const std::string& name) const;
    Answer show_plan(const std::string& arg) const;
    Answer viz(const std::vector<std::string>& args) const;
    // What runs on the session's text (repl_commands.cpp).
    Answer exec(const std::string& args) const;
    Answer grad(const std::vector<std::string>& wrt) const;
    Answer export_to(const std::vector<std::string>& args) const;
    Answer save(const std::string& path) const;
    // What changes the session (repl_session.cpp).
    Answer set_strict(const std::string& arg);
    Answer undo();
    Answer reset();

    SessionOptions options_;
    std::vector<Entry> entries_;
    bool strict_ = false;
    std::vector<State> undo_;
    semantics::Plan plan_; ///< of text()
    ast::Program program_; ///< text() parsed
    /// Plans of the statements already checked: each line re-checks only what it changes.
    mutable semantics::CheckCache cache_;
};

} // namespace shardscope::app
