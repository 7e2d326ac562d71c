// The REPL's commands in one table: each command's names, its arguments, what `:help` says of
// it, what Tab completes after it, and the handler that runs it. The dispatch
// (`Session::eval`), `:help` and the front end's completion (cmd_repl.cpp) all read this table.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace shardscope::app {

class Session;
struct Answer;

/// One REPL command.
struct ReplCommand {
    /// What the command accepts after its name (anything else is a usage error).
    enum class Args {
        None,      ///< no arguments
        One,       ///< exactly one word
        AtMostOne, ///< zero or one word
        Text,      ///< the rest of the line, possibly empty, for the command to parse
        Required,  ///< the rest of the line, not empty (a file name may hold spaces)
    };
    /// What Tab completes in its arguments.
    enum class Completes {
        Nothing,
        Tensor,  ///< a tensor of the session, as the first argument
        File,    ///< a file name, any argument
        Choices, ///< one of `choices`, any argument
    };
    using Handler =
        std::function<Answer(Session&, const std::string& rest, const std::vector<std::string>&)>;

    std::vector<std::string> names; ///< the name, then its aliases
    std::string usage;              ///< ":show NAME"
    std::string summary;            ///< what it does; lines after the first are continuations
    Args args = Args::None;
    Completes completes = Completes::Nothing;
    std::vector<std::string> choices; ///< for Completes::Choices
    Handler run;
};

/// Every command, in the order `:help` lists them.
const std::vector<ReplCommand>& repl_commands();

/// The command named `name` (or one of its aliases); nullptr when there is none.
const ReplCommand* find_repl_command(std::string_view name);

} // namespace shardscope::app
