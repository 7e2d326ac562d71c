#include "render/stepthrough.hpp"

namespace shardscope::render {

std::vector<StepFrame> step_frames(const semantics::Plan& plan, const semantics::StatementPlan& s) {
    std::vector<StepFrame> out;
    StepFrame inputs;
    inputs.title = "inputs";
    for (std::size_t v = 0; v < s.values.size(); ++v)
        if (!s.values[v].load.empty()) inputs.before.push_back(static_cast<int>(v));
    inputs.explanation = inputs.before.empty() ? "no tensor is read"
                                               : "the tensors the statement reads, as laid out";
    out.push_back(inputs);
    for (std::size_t i = 0; i < s.steps.size(); ++i) {
        const auto& st = s.steps[i];
        StepFrame f;
        f.step = static_cast<int>(i);
        f.collective = semantics::is_collective(st.kind);
        std::string what = f.collective
                               ? semantics::collective_text(plan.mesh, st.kind, st.mesh_axes)
                               : std::string(semantics::step_kind_name(st.kind));
        if (!st.detail.empty()) what += " " + st.detail;
        f.title =
            std::to_string(i + 1) + ". " + what + (st.tensor.empty() ? "" : " of " + st.tensor);
        f.explanation = st.reason;
        f.before = st.inputs;
        f.after = st.output;
        // Performed inside the next step: show where its data ends up.
        for (std::size_t j = i + 1; f.after < 0 && j < s.steps.size(); ++j)
            f.after = s.steps[j].output;
        out.push_back(f);
    }
    StepFrame result;
    result.title = "result: " + (s.target.empty() ? s.result.tensor : s.target);
    result.explanation = s.assign == semantics::Assign::Accumulate ? "added to the stored tensor"
                         : s.assign == semantics::Assign::Update   ? "stored in place"
                                                                   : "stored";
    result.after = s.result_value;
    out.push_back(result);
    return out;
}

} // namespace shardscope::render
