#include "render/course.hpp"

#include "semantics/report.hpp"

#include <algorithm>
#include <filesystem>
#include <set>
#include <span>

namespace shardscope::render {

namespace {

std::string trim(std::string_view s) {
    const auto b = s.find_first_not_of(" \t\r");
    if (b == std::string_view::npos) return {};
    const auto e = s.find_last_not_of(" \t\r");
    return std::string(s.substr(b, e - b + 1));
}

std::string file_name(const std::string& path) {
    return std::filesystem::path(path).filename().string();
}

} // namespace

Course parse_course(std::string_view text, std::string_view name) {
    Course out;
    std::set<std::string> seen;
    std::uint32_t line_no = 0;
    std::size_t from = 0;
    while (from <= text.size()) {
        auto to = text.find('\n', from);
        if (to == std::string_view::npos) to = text.size();
        std::string_view raw = text.substr(from, to - from);
        ++line_no;
        from = to + 1;
        if (const auto hash = raw.find('#'); hash != std::string_view::npos)
            raw = raw.substr(0, hash);
        const std::string line = trim(raw);
        if (line.empty()) continue;
        const auto space = line.find_first_of(" \t");
        CourseEntry e;
        e.file = line.substr(0, space);
        e.title = space == std::string::npos ? std::string() : trim(line.substr(space));
        e.line = line_no;
        const std::string where = std::string(name) + ":" + std::to_string(line_no) + ": ";
        if (e.file.size() < 5 || e.file.compare(e.file.size() - 4, 4, ".ein") != 0) {
            out.errors.push_back(where + "'" + e.file + "' is not a sample (a .ein file name)");
            continue;
        }
        if (!seen.insert(e.file).second) {
            out.errors.push_back(where + e.file + " is listed twice");
            continue;
        }
        out.entries.push_back(std::move(e));
    }
    return out;
}

std::vector<std::string> course_order(const std::vector<std::string>& files, const Course& course) {
    std::vector<std::string> out;
    std::vector<bool> used(files.size(), false);
    for (const auto& e : course.entries)
        for (std::size_t i = 0; i < files.size(); ++i)
            if (!used[i] && file_name(files[i]) == e.file) {
                out.push_back(files[i]);
                used[i] = true;
                break;
            }
    std::vector<std::string> rest;
    for (std::size_t i = 0; i < files.size(); ++i)
        if (!used[i]) rest.push_back(files[i]);
    std::sort(rest.begin(), rest.end());
    out.insert(out.end(), rest.begin(), rest.end());
    return out;
}

std::string course_title(const Course& course, const std::string& file) {
    const std::string n = file_name(file);
    for (const auto& e : course.entries)
        if (e.file == n) return e.title;
    return {};
}

std::string collectives_answer(const semantics::Plan& plan, const semantics::StatementPlan& s) {
    std::string out;
    for (const auto& st : s.steps)
        if (semantics::is_collective(st.kind))
            out += (out.empty() ? "" : " then ") +
                   semantics::collective_text(plan.mesh, st.kind, st.mesh_axes);
    return out.empty() ? "no collective" : out;
}

namespace {

/// `correct` first, then up to `extra` distractors from `candidates` (in order, distinct);
/// sorted, with the answer's index.
QuizQuestion make_question(std::string prompt, const std::string& correct,
                           const std::vector<std::string>& candidates, std::size_t extra) {
    QuizQuestion q;
    q.prompt = std::move(prompt);
    q.choices.push_back(correct);
    for (const auto& c : candidates) {
        if (q.choices.size() > extra) break;
        if (std::find(q.choices.begin(), q.choices.end(), c) == q.choices.end())
            q.choices.push_back(c);
    }
    std::sort(q.choices.begin(), q.choices.end());
    q.answer = static_cast<int>(std::find(q.choices.begin(), q.choices.end(), correct) -
                                q.choices.begin());
    return q;
}

} // namespace

std::vector<QuizQuestion> quiz_questions(const semantics::Plan& plan, int statement) {
    std::vector<QuizQuestion> out;
    if (statement < 0 || statement >= static_cast<int>(plan.statements.size())) return out;
    const auto& s = plan.statements[static_cast<std::size_t>(statement)];
    using K = semantics::StepKind;
    const std::size_t axes = plan.mesh.axes.size();

    // 1. The collectives.
    const std::string correct = collectives_answer(plan, s);
    std::vector<std::string> candidates;
    for (const auto& a : s.alternatives) {
        std::string alt;
        for (const auto& c : a.collectives)
            alt += (alt.empty() ? "" : " then ") + c;
        candidates.push_back(alt.empty() ? "no collective" : alt);
    }
    // The plan's collectives with another kind or over another axis, then single collectives
    // over each axis, then none.
    const K kinds[] = {K::AllReduce, K::AllGather, K::ReduceScatter, K::AllToAll};
    for (const auto& st : s.steps) {
        if (!semantics::is_collective(st.kind)) continue;
        for (K k : kinds)
            if (k != st.kind)
                candidates.push_back(semantics::collective_text(plan.mesh, k, st.mesh_axes));
        for (std::size_t a = 0; a < axes; ++a) {
            const int axis[] = {static_cast<int>(a)};
            candidates.push_back(semantics::collective_text(plan.mesh, st.kind, axis));
        }
    }
    for (K k : kinds)
        for (std::size_t a = 0; a < axes; ++a) {
            const int axis[] = {static_cast<int>(a)};
            candidates.push_back(semantics::collective_text(plan.mesh, k, axis));
        }
    candidates.insert(candidates.begin() + static_cast<std::ptrdiff_t>(std::min<std::size_t>(
                                               candidates.size(), s.alternatives.size() + 1)),
                      "no collective");
    out.push_back(make_question("Which collectives does statement " +
                                    std::to_string(statement + 1) + " need?",
                                correct, candidates, 3));

    // 2. The result's placements.
    const auto& placements = s.result.placements;
    if (!placements.empty()) {
        auto text = [&](std::span<const semantics::Placement> p) {
            return "[" + semantics::placements_text(p, &plan.mesh) + "]";
        };
        const int rank = static_cast<int>(s.result.indices.size());
        std::vector<std::string> wrong;
        for (std::size_t k = 0; k < placements.size(); ++k) {
            std::vector<semantics::Placement> options;
            semantics::Placement r; // Replicate
            options.push_back(r);
            semantics::Placement p;
            p.kind = semantics::Placement::Kind::Partial;
            options.push_back(p);
            for (int d = 0; d < rank; ++d) {
                semantics::Placement sh;
                sh.kind = semantics::Placement::Kind::Shard;
                sh.dim = d;
                options.push_back(sh);
            }
            for (const auto& o : options) {
                auto changed = placements;
                changed[k] = o;
                wrong.push_back(text(changed));
            }
        }
        out.push_back(make_question("How is the result " +
                                        (s.target.empty() ? s.result.tensor : s.target) +
                                        " laid out over the mesh (a placement per mesh axis)?",
                                    text(placements), wrong, 3));
    }
    return out;
}

} // namespace shardscope::render
