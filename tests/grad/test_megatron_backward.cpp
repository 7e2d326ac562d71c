// samples/megatron_gpt22b.ein writes its backward by hand: grad's derivation rewritten as
// Megatron runs it (selective recomputation, one gather per gradient, reduce-scatters). The
// rewrite must not change what it computes: at sizes where no gradient is rounding noise,
// every parameter's gradient equals the one `grad` derives from the sample's forward pass.
#include "exec/data.hpp"
#include "exec/reference.hpp"
#include "frontend/document.hpp"
#include "frontend/gradients.hpp"
#include "parser/parser.hpp"
#include "semantics/checker.hpp"
#include "semantics/grad.hpp"
#include "semantics/report.hpp"

#include "tests/read_file.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

using namespace shardscope;

namespace {

struct Checked {
    parser::ParseResult parsed;
    semantics::Plan plan;
};

Checked parse_and_check(const std::string& name, const std::string& text) {
    auto checked = frontend::check_text(name, text);
    REQUIRE_MESSAGE(checked.syntax_ok(), text);
    Checked c{std::move(checked.parsed), std::move(checked.plan)};
    std::string errors;
    for (const auto& d : c.plan.diagnostics)
        errors += format_diagnostic(*checked.source, d);
    REQUIRE_MESSAGE(c.plan.errors() == 0, errors);
    return c;
}

/// The sample at sizes that run in milliseconds and keep every gradient well above rounding
/// (layer norms over 16 features, not 2), two layers, without its `expect` lines (they
/// describe the plans at the declared sizes).
std::string at_test_sizes(const std::string& sample) {
    std::istringstream in(sample);
    std::string out;
    for (std::string line; std::getline(in, line);) {
        if (line.find("expect ") != std::string::npos &&
            line.find_first_not_of(' ') == line.find("expect "))
            continue;
        if (line.rfind("dim ", 0) == 0) line = "dim b=2 s=8 t=8 d=16 n=8 k=4 f=32 v=16";
        for (std::size_t at; (at = line.find("repeat l=48")) != std::string::npos;)
            line.replace(at, 11, "repeat l=2");
        for (std::size_t at; (at = line.find("/ 6144")) != std::string::npos;)
            line.replace(at, 6, "/ 16");
        out += line + "\n";
    }
    return out;
}

/// The value the last statement that stores `tensor` leaves (empty when none does).
std::vector<double> stored(const Checked& c, const std::vector<exec::Tensor<double>>& values,
                           const std::string& tensor) {
    std::vector<double> out;
    for (std::size_t i = 0; i < c.plan.statements.size(); ++i)
        if (c.plan.statements[i].target == tensor) out = values.at(i).data;
    return out;
}

} // namespace

TEST_CASE("samples: megatron_gpt22b.ein's hand-written backward computes grad's gradients") {
    const auto sample =
        at_test_sizes(test::read_file(SHARDSCOPE_SAMPLES_DIR "/megatron_gpt22b.ein"));
    const auto cut = sample.find("# ---- backward");
    REQUIRE(cut != std::string::npos);
    const std::string forward = sample.substr(0, cut);

    semantics::GradOptions o;
    o.wrt = {"W^q", "W^k", "W^v", "W^o", "W^1", "W^2", "g^1",
             "e^1", "g^2", "e^2", "g^3", "e^3", "U"};
    const auto derived = frontend::derive_gradients(SourceFile("forward.ein", forward), o);
    REQUIRE(derived.errors() == 0);

    const auto ours = parse_and_check("sample.ein", sample);
    const auto theirs = parse_and_check("derived.ein", derived.text);
    exec::DataOptions data; // random inputs, the same for a name in both programs
    data.seed = 3;
    exec::LabelTable labels_ours, labels_theirs;
    const auto v_ours = exec::evaluate_reference(ours.parsed.program, ours.plan, labels_ours, data);
    const auto v_theirs =
        exec::evaluate_reference(theirs.parsed.program, theirs.plan, labels_theirs, data);

    int compared = 0;
    for (const auto& w : o.wrt) {
        CAPTURE(w);
        const auto it = derived.gradients.find(w);
        REQUIRE(it != derived.gradients.end());
        const auto want = stored(theirs, v_theirs, it->second);
        const auto got = stored(ours, v_ours, "g" + w);
        REQUIRE(!want.empty());
        REQUIRE(got.size() == want.size());
        double scale = 0, worst = 0;
        for (std::size_t i = 0; i < want.size(); ++i) {
            scale = std::max(scale, std::abs(want[i]));
            worst = std::max(worst, std::abs(got[i] - want[i]));
        }
        CHECK(scale > 1e-3); // a gradient, not rounding noise
        CHECK(worst <= 1e-10 * scale);
        ++compared;
    }
    CHECK(compared == 13);
}
