#include "app/document.hpp"

#include <algorithm>

namespace shardscope::app {

CheckedText check_text(const std::string& name, const std::string& text,
                       semantics::CheckOptions options, semantics::CheckCache* cache) {
    CheckedText out;
    auto source = std::make_shared<SourceFile>(name, text);
    out.source = source;
    out.parsed = parser::parse(*source);
    if (out.parsed.has_errors()) {
        out.plan.diagnostics = out.parsed.diagnostics;
        out.plan.diagnostics.push_back({Severity::Note,
                                        "S999",
                                        {},
                                        "the checker did not run: fix the syntax errors first",
                                        {}});
    } else {
        options.text = source->text();
        out.plan = cache ? semantics::check(out.parsed.program, options, *cache)
                         : semantics::check(out.parsed.program, options);
        out.plan.diagnostics.insert(out.plan.diagnostics.begin(), out.parsed.diagnostics.begin(),
                                    out.parsed.diagnostics.end());
    }
    std::stable_sort(out.plan.diagnostics.begin(), out.plan.diagnostics.end(),
                     [](const auto& a, const auto& b) { return a.range.line < b.range.line; });
    return out;
}

} // namespace shardscope::app
