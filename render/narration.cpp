#include "render/narration.hpp"

namespace shardscope::render {

namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
        s.remove_suffix(1);
    return s;
}

} // namespace

std::vector<Narration> narration(std::string_view text) {
    std::vector<Narration> out;
    Narration cur;
    bool in_statement = false;
    bool in_source = false; // in a "Source:" line's continuation lines
    auto flush = [&] {
        while (!cur.comment.empty() && cur.comment.back() == '\n')
            cur.comment.pop_back();
        if (!cur.comment.empty() || !cur.statement.empty()) out.push_back(cur);
        cur = {};
        in_statement = false;
    };
    std::uint32_t line_no = 0;
    std::size_t pos = 0;
    while (pos <= text.size()) {
        const std::size_t nl = text.find('\n', pos);
        const std::string_view raw =
            text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
        ++line_no;
        const std::string_view line = trim(raw);
        if (!line.empty() && line.front() == '#') {
            if (in_statement) flush();
            std::string_view body = line.substr(1);
            if (!body.empty() && body.front() == ' ') body.remove_prefix(1);
            // A "Source:" line and its indented continuation lines are for the file's reader,
            // not the class: left out of the narration.
            const bool continued = !body.empty() && (body.front() == ' ' || body.front() == '\t');
            if (trim(body).starts_with("Source:") || (in_source && continued)) {
                in_source = true;
            } else if (in_source = false; body.empty() || trim(body).empty())
                cur.comment += "\n\n";
            else if (cur.comment.empty() || cur.comment.back() == '\n')
                cur.comment += std::string(trim(body));
            else
                cur.comment += " " + std::string(trim(body));
        } else if (line.empty()) {
            in_source = false;
            if (in_statement) flush();
        } else {
            in_source = false;
            if (!in_statement && cur.line == 0) cur.line = line_no;
            cur.statement += (cur.statement.empty() ? "" : "\n") + std::string(line);
            in_statement = true;
        }
        if (nl == std::string_view::npos) break;
        pos = nl + 1;
    }
    flush();
    return out;
}

} // namespace shardscope::render
