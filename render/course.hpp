// The samples in course order (samples/COURSE) and teaching mode's quiz: GL-free logic the
// window's sample picker, teaching mode and quiz follow.
#pragma once

#include "semantics/plan.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace shardscope::render {

/// One line of a course index: a sample's file name (relative to the index's folder) and its
/// title.
struct CourseEntry {
    std::string file;
    std::string title;
    std::uint32_t line = 0; ///< 1-based line in the index
};

/// A course index: one sample a line, its file name then (after spaces) its title; `#`
/// starts a comment, blank lines are ignored. `errors`: "COURSE:7: ..." for a line naming a
/// file that does not end in .ein, or naming one twice.
struct Course {
    std::vector<CourseEntry> entries;
    std::vector<std::string> errors;
};
Course parse_course(std::string_view text, std::string_view name = "COURSE");

/// `files` (paths of .ein samples) in course order: those the index lists, in its order,
/// then any it does not list, sorted (so that a sample missing from the index still shows).
/// Index lines naming no file of `files` are skipped.
std::vector<std::string> course_order(const std::vector<std::string>& files, const Course& course);

/// The title the index gives `file` (matched by file name); "" when it has none.
std::string course_title(const Course& course, const std::string& file);

/// A question of teaching mode's quiz about one statement: pick one of `choices`.
struct QuizQuestion {
    std::string prompt;
    std::vector<std::string> choices; ///< sorted, so the answer's place tells nothing
    int answer = 0;                   ///< index into choices
};

/// The quiz of a statement: which collectives its plan runs (the plan's, joined "then"; "no
/// collective"), with distractors from its alternatives and other collectives over the
/// mesh's axes; and how its result is laid out (DTensor placements per mesh axis), with
/// distractors that change one axis. Deterministic; each question has 2 to 4 choices.
std::vector<QuizQuestion> quiz_questions(const semantics::Plan& plan, int statement);

/// The collectives of a statement as the quiz names them: "all-reduce(1) then all-gather(0)",
/// "no collective".
std::string collectives_answer(const semantics::Plan& plan, const semantics::StatementPlan& s);

} // namespace shardscope::render
