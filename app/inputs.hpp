// Loading input files for the commands: directories are searched for .ein files, every file
// must exist, be readable and be UTF-8.
#pragma once

#include "parser/source.hpp"

#include <cstddef>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace shardscope::app {

/// Exit codes shared by every command.
enum ExitCode : int { kExitOk = 0, kExitInputErrors = 1, kExitUsage = 2 };

/// The most an input file (or standard input) may hold: no notation is near it, and reading
/// an endless input (/dev/zero, `yes |`) must end with a message, not exhaust memory.
inline constexpr std::size_t kMaxInputBytes = std::size_t{256} << 20; // 256 MiB

/// Expands directories (recursively, sorted) into their .ein files. On failure, returns
/// nullopt after writing a message to stderr.
std::optional<std::vector<std::string>> expand_inputs(const std::vector<std::string>& paths);

/// Reads the whole file at `path` into `text`. Returns the reason it could not ("no such file:
/// 'P'", "'P' is a directory", "cannot open 'P' for reading", "failed reading 'P'", "'P' is
/// larger than 256 MiB ..." (kMaxInputBytes)), or an empty string.
std::string read_whole_file(const std::string& path, std::string& text);

/// Where `text` (the file `name`) is not UTF-8: "NAME:LINE:COLUMN: error: the file is not
/// valid UTF-8 (byte 0xFF)"; an empty string where it is.
std::string utf8_problem(const std::string& name, const std::string& text);

/// Replaces a UTF-8 byte order mark at the start of each line of `text` by one space: the
/// mark is read as a space (docs/reference.md), one column as in the file.
void byte_order_marks_as_spaces(std::string& text);

/// Reads one file ("-" is standard input). On failure (missing, unreadable, not UTF-8),
/// returns nullopt after writing a positioned message to stderr (and, where `why` is given,
/// the message without its "shardscope: error: " to *why).
std::optional<SourceFile> load_source(const std::string& path, std::string* why = nullptr);

/// Whether output on file descriptor `fd` should be coloured (a terminal, NO_COLOR unset).
bool terminal_color(int fd);
inline bool stderr_color() {
    return terminal_color(2);
}

/// Writes `text` to `path` atomically (temporary file, then rename); where `path` is a symbolic
/// link, to the file it names; a device or pipe (`/dev/null`, a FIFO) is written in place.
bool write_file_atomically(const std::string& path, const std::string& text);

/// Whether a `--mesh` option is empty (not given) or a valid spec; if not, says so on `err`.
bool mesh_option_ok(const std::string& mesh, std::ostream& err);

/// The --mesh options' CLI11 check: an empty value given (`--mesh ''`, an unset variable) is
/// an error, as a blank one is in mesh_option_ok, not "no --mesh". Empty: the value is not
/// empty (mesh_option_ok judges it).
std::string mesh_value_problem(const std::string& mesh);

} // namespace shardscope::app
