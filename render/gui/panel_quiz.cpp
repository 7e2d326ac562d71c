// Teaching mode's quiz: the current statement's placements and collectives stay hidden (the
// tiling, mesh, plan and step-through panels, the narration's `expect` lines) until the
// student has picked an answer to each of its questions; then the answers are revealed with
// right or wrong.
#include "render/course.hpp"
#include "render/gui/view.hpp"

#include <imgui.h>

#include <algorithm>

namespace shardscope::render {

bool MainView::quiz_hidden(const semantics::Plan& plan, int statement) const {
    if (!quiz_ || statement < 0 || statement >= static_cast<int>(plan.statements.size()))
        return false;
    const auto it = quiz_chosen_.find(plan.statements[static_cast<std::size_t>(statement)].pretty);
    if (it == quiz_chosen_.end()) return true;
    return std::any_of(it->second.begin(), it->second.end(), [](int c) { return c < 0; });
}

std::string MainView::quiz_status(const semantics::Plan& plan) const {
    if (!quiz_) return "off";
    if (quiz_hidden(plan, sel_.statement)) return "hidden";
    const auto qs = quiz_questions(plan, sel_.statement);
    const auto it =
        quiz_chosen_.find(plan.statements[static_cast<std::size_t>(sel_.statement)].pretty);
    int right = 0;
    for (std::size_t q = 0; q < qs.size() && it != quiz_chosen_.end(); ++q)
        right += q < it->second.size() && it->second[q] == qs[q].answer;
    return "revealed, " + std::to_string(right) + " of " + std::to_string(qs.size()) + " right";
}

void MainView::quiz_panel(const semantics::Plan& plan, const Script& script) {
    const int n = static_cast<int>(plan.statements.size());
    if (n == 0 || sel_.statement < 0 || sel_.statement >= n) return;
    const auto qs = quiz_questions(plan, sel_.statement);
    if (qs.empty()) return;
    auto& chosen = quiz_chosen_[plan.statements[static_cast<std::size_t>(sel_.statement)].pretty];
    chosen.resize(qs.size(), -1);
    if (script.choose_question >= 0 && script.choose_question < static_cast<int>(qs.size()) &&
        script.choose_choice >= 0 &&
        script.choose_choice <
            static_cast<int>(qs[static_cast<std::size_t>(script.choose_question)].choices.size()))
        chosen[static_cast<std::size_t>(script.choose_question)] = script.choose_choice;
    const bool hidden = quiz_hidden(plan, sel_.statement);
    const ImVec4 green{0.16f, 0.6f, 0.24f, 1}, red{0.86f, 0.16f, 0.16f, 1};
    if (hidden) {
        ImGui::TextUnformatted("Quiz: guess, then the pictures show the answer.");
        for (std::size_t q = 0; q < qs.size(); ++q) {
            ImGui::PushID(static_cast<int>(q));
            ImGui::TextWrapped("%s", qs[q].prompt.c_str());
            ImGui::Indent();
            for (std::size_t c = 0; c < qs[q].choices.size(); ++c) {
                const bool picked = chosen[q] == static_cast<int>(c);
                if (ImGui::RadioButton((qs[q].choices[c] + "##" + std::to_string(c)).c_str(),
                                       picked))
                    chosen[q] = static_cast<int>(c);
            }
            ImGui::Unindent();
            ImGui::PopID();
        }
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
        ImGui::TextWrapped(
            "the placements and collectives are hidden until every question is answered");
        ImGui::PopStyleColor();
        return;
    }
    // Revealed: each answer, right or wrong, on one line each.
    for (std::size_t q = 0; q < qs.size(); ++q) {
        const auto& right = qs[q].choices[static_cast<std::size_t>(qs[q].answer)];
        if (chosen[q] == qs[q].answer) {
            ImGui::TextColored(green, "right: %s", right.c_str());
        } else {
            const auto& said = qs[q].choices[static_cast<std::size_t>(chosen[q])];
            ImGui::TextColored(red, "wrong: you said %s; it is %s", said.c_str(), right.c_str());
        }
    }
    ImGui::SameLine();
    if (ImGui::SmallButton("ask again"))
        quiz_chosen_.erase(plan.statements[static_cast<std::size_t>(sel_.statement)].pretty);
}

} // namespace shardscope::render
