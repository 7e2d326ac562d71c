#include "inputs.hpp"
#include "documents.hpp"
#include "frontend/mesh_spec.hpp"

#include "semantics/checker.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string_view>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace shardscope::app {

namespace fs = std::filesystem;

namespace {

/// A directory's files that hold notation: every .ein file, and the .md and .tex documents
/// whose notation contains_notation() recognises.
bool wanted_in_directory(const std::string& path) {
    if (path.size() >= 4 && path.compare(path.size() - 4, 4, ".ein") == 0) return true;
    if (!is_document(path)) return false;
    std::string text;
    if (!read_whole_file(path, text).empty()) return false;
    return read_as_document(path, text) && contains_notation(extract_notation(path, text));
}

/// Reads `in` to its end into `text`; false (and `text` cut) where it holds more than
/// kMaxInputBytes: a device or pipe may never end.
bool read_capped(std::istream& in, std::string& text) {
    char buf[1 << 16];
    while (in.read(buf, sizeof buf) || in.gcount() > 0) {
        if (text.size() + static_cast<std::size_t>(in.gcount()) > kMaxInputBytes) return false;
        text.append(buf, static_cast<std::size_t>(in.gcount()));
    }
    return true;
}

std::string too_large(const std::string& name) {
    return "'" + name + "' is larger than " + std::to_string(kMaxInputBytes >> 20) +
           " MiB: shardscope reads notation files and documents up to that size";
}

} // namespace

std::optional<std::vector<std::string>> expand_inputs(const std::vector<std::string>& paths) {
    // A second - would read an input already at its end: an empty file counted twice.
    if (std::count(paths.begin(), paths.end(), "-") > 1) {
        std::cerr << "shardscope: error: standard input (-) is named more than once: it can be "
                     "read only once\n";
        return std::nullopt;
    }
    std::vector<std::string> out;
    for (const auto& p : paths) {
        std::error_code ec;
        if (p != "-" && fs::is_directory(p, ec)) {
            std::vector<std::string> found;
            for (auto it = fs::recursive_directory_iterator(p, ec); !ec && it != fs::end(it);
                 it.increment(ec))
                if (it->is_regular_file() && wanted_in_directory(it->path().string()))
                    found.push_back(it->path().string());
            if (ec) {
                std::cerr << "shardscope: error: cannot read directory '" << p
                          << "': " << ec.message() << "\n";
                return std::nullopt;
            }
            if (found.empty()) {
                std::cerr << "shardscope: error: no .ein files (nor .md or .tex documents with "
                             "notation) in directory '"
                          << p << "'\n";
                return std::nullopt;
            }
            std::sort(found.begin(), found.end());
            out.insert(out.end(), found.begin(), found.end());
        } else {
            out.push_back(p);
        }
    }
    return out;
}

std::string read_whole_file(const std::string& path, std::string& text) {
    std::error_code ec;
    if (!fs::exists(path, ec)) return "no such file: '" + path + "'";
    if (fs::is_directory(path, ec)) return "'" + path + "' is a directory";
    std::ifstream in(path, std::ios::binary);
    if (!in) return "cannot open '" + path + "' for reading";
    std::string read;
    if (!read_capped(in, read)) return too_large(path);
    if (in.bad()) return "failed reading '" + path + "'";
    text = std::move(read);
    return {};
}

std::string utf8_problem(const std::string& name, const std::string& text) {
    const auto bad = find_invalid_utf8(text);
    if (!bad) return {};
    SourceFile probe(name, text.substr(0, *bad));
    const auto r = probe.range(*bad, 0);
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned char>(text[*bad]));
    return name + ":" + std::to_string(r.line) + ":" + std::to_string(r.column) +
           ": error: the file is not valid UTF-8 (byte " + hex + ")";
}

void byte_order_marks_as_spaces(std::string& text) {
    static constexpr std::string_view kMark = "\xEF\xBB\xBF";
    std::size_t k = text.find(kMark);
    if (k == std::string::npos) return;
    std::string out;
    out.reserve(text.size());
    std::size_t copied = 0;
    for (; k != std::string::npos; k = text.find(kMark, k + kMark.size())) {
        if (k != 0 && text[k - 1] != '\n') continue; // inside a line: a character like another
        out.append(text, copied, k - copied);
        out += ' ';
        copied = k + kMark.size();
    }
    out.append(text, copied);
    text = std::move(out);
}

std::optional<SourceFile> load_source(const std::string& path, std::string* why) {
    std::string text;
    if (path == "-") {
        if (!read_capped(std::cin, text)) {
            auto problem = too_large("<stdin>");
            std::cerr << "shardscope: error: " << problem << "\n";
            if (why != nullptr) *why = std::move(problem);
            return std::nullopt;
        }
    } else {
        if (auto problem = read_whole_file(path, text); !problem.empty()) {
            std::cerr << "shardscope: error: " << problem << "\n";
            if (why != nullptr) *why = std::move(problem);
            return std::nullopt;
        }
    }
    const std::string name = path == "-" ? "<stdin>" : path;
    if (auto problem = utf8_problem(name, text); !problem.empty()) {
        std::cerr << problem << "\n";
        if (why != nullptr) *why = std::move(problem);
        return std::nullopt;
    }
    // A Markdown or LaTeX document: its notation, at the document's lines and columns. Taken
    // before the marks become spaces, so that check finds the fences fmt finds in the file.
    if (path != "-" && read_as_document(path, text)) text = extract_notation(path, text).text;
    byte_order_marks_as_spaces(text);
    return SourceFile(name, std::move(text));
}

bool terminal_color(int fd) {
    return isatty(fd) && std::getenv("NO_COLOR") == nullptr;
}

namespace {

/// Writes all of `text` to `fd`; false on an error.
bool write_all(int fd, const std::string& text) {
    for (std::size_t done = 0; done < text.size();) {
        const ssize_t n = write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        done += static_cast<std::size_t>(n);
    }
    return true;
}

} // namespace

bool write_file_atomically(const std::string& link_or_path, const std::string& text) {
    // A device or a pipe (`-o /dev/null`, `-o /dev/stdout`, a FIFO) is written in place:
    // renaming a new file over it would replace the device node itself (it replaced /dev/null,
    // 2026-11-27). A directory is no output.
    if (struct stat dev{}; stat(link_or_path.c_str(), &dev) == 0 && !S_ISREG(dev.st_mode)) {
        if (S_ISDIR(dev.st_mode)) return false;
        const int fd = open(link_or_path.c_str(), O_WRONLY);
        if (fd < 0) return false;
        const bool ok = write_all(fd, text);
        return close(fd) == 0 && ok;
    }
    // Through a symbolic link, the file it names is rewritten, not the link replaced.
    std::string path = link_or_path;
    std::error_code ec;
    if (std::filesystem::is_symlink(link_or_path, ec)) {
        const auto target = std::filesystem::weakly_canonical(link_or_path, ec);
        if (ec) return false;
        path = target.string();
    }
    // A unique temporary file next to the target, written and synced, then renamed over it:
    // readers see the old file or the new one, never a part, and a crash loses nothing.
    std::string tmp = path + ".XXXXXX";
    const int fd = mkstemp(tmp.data());
    if (fd < 0) return false;
    // mkstemp creates 0600: give the file the target's mode, or what a new file would get.
    struct stat st {};
    mode_t mode = 0;
    if (stat(path.c_str(), &st) == 0) {
        mode = st.st_mode & 07777;
    } else {
        const mode_t mask = umask(0);
        umask(mask);
        mode = 0666 & ~mask;
    }
    bool ok = fchmod(fd, mode) == 0 && write_all(fd, text);
    ok = ok && fsync(fd) == 0;
    ok = close(fd) == 0 && ok;
    ok = ok && std::rename(tmp.c_str(), path.c_str()) == 0;
    if (!ok) std::remove(tmp.c_str());
    return ok;
}

std::string mesh_value_problem(const std::string& mesh) {
    if (!mesh.empty()) return {};
    // The message mesh_option_ok gives a blank value.
    Diagnostic d;
    frontend::parse_mesh_spec(mesh, &d);
    return "bad --mesh '': " + d.message + (d.code.empty() ? "" : " [" + d.code + "]");
}

bool mesh_option_ok(const std::string& mesh, std::ostream& err) {
    if (mesh.empty()) return true;
    Diagnostic d;
    if (frontend::parse_mesh_spec(mesh, &d)) return true;
    // The parser's diagnostic of the value as a `mesh` line, its caret under the value.
    auto detail = format_diagnostic(SourceFile("--mesh", mesh), d);
    detail.erase(0, detail.find('\n') + 1);
    err << "shardscope: error: bad --mesh '" << mesh << "': " << d.message
        << (d.code.empty() ? "" : " [" + d.code + "]") << "\n"
        << detail
        << "    a mesh is sizes such as 4 or 2x4, or named axes such as dp=2,tp=4, as in a "
           "'mesh' line, with at most 16777216 devices\n";
    return false;
}

} // namespace shardscope::app
