// plan_dump FILE: the whole Plan of FILE as JSON on stdout, for the behaviour-preservation
// dump of scripts/plan_dump.sh. Everything `check --format json` prints (without its timings)
// plus what it leaves out: every field of every layout, the data flow (values, each step's
// op, inputs, output, function, index, negations, element size), the stored target and the
// assignment; under three option sets (as written, --strict, the small sizes of exec --small).
#include "frontend/document.hpp"
#include "parser/json.hpp"
#include "semantics/report.hpp"

#include <nlohmann/json.hpp>

#include <fstream>
#include <iostream>
#include <sstream>

using nlohmann::json;
using namespace shardscope;

namespace {

json layout_full(const semantics::TensorLayout& t) {
    json placements = json::array();
    for (const auto& p : t.placements)
        placements.push_back({{"text", p.text()},
                              {"kind", static_cast<int>(p.kind)},
                              {"dim", p.dim},
                              {"index", p.index.text()},
                              {"reduce", static_cast<int>(p.reduce)}});
    json atoms = json::array();
    for (const auto& a : t.atoms)
        atoms.push_back(
            {{"index", a.index.text()}, {"extent", a.extent}, {"axes", a.axes}, {"dim", a.dim}});
    return {{"tensor", t.tensor},           {"indices", t.indices},
            {"placements", placements},     {"global_shape", t.global_shape},
            {"local_shape", t.local_shape}, {"atoms", atoms}};
}

json plan_full(const semantics::Plan& plan, const std::string& path) {
    json j = semantics::plan_to_json(plan, path);
    json diags = json::array();
    for (const auto& d : plan.diagnostics)
        diags.push_back(parser::to_json(d));
    j["diagnostics_full"] = diags;
    json statements = json::array();
    for (const auto& s : plan.statements) {
        json values = json::array();
        for (const auto& v : s.values)
            values.push_back(
                {{"layout", layout_full(v.layout)}, {"load", v.load}, {"constant", v.constant}});
        json steps = json::array();
        for (const auto& st : s.steps) {
            json negated = json::array();
            for (bool b : st.negated)
                negated.push_back(b);
            steps.push_back(
                {{"kind", static_cast<int>(st.kind)},
                 {"elem_bytes", st.cost.elem_bytes},
                 {"op", static_cast<int>(st.op)},
                 {"inputs", st.inputs},
                 {"output", st.output},
                 // Reduce (and a softmax statistic's all-reduce) keep their reduction in
                 // Step::reduce (issue 17); the dump writes it where the string was.
                 {"function",
                  st.reduce ? std::string(semantics::reduce_fn_name(*st.reduce)) : st.function},
                 {"index", st.index.text()},
                 {"negated", negated},
                 {"from_index", st.from_index.text()},
                 {"to_index", st.to_index.text()}});
        }
        json operands = json::array();
        for (const auto& op : s.operands)
            operands.push_back(layout_full(op));
        statements.push_back({{"range", parser::to_json(s.range)},
                              {"result", layout_full(s.result)},
                              {"operands", operands},
                              {"values", values},
                              {"steps", steps},
                              {"result_value", s.result_value},
                              {"target", s.target},
                              {"assign", static_cast<int>(s.assign)}});
    }
    j["statements_full"] = statements;
    json devices = json::array();
    for (auto d : plan.mesh.devices)
        devices.push_back(d);
    j["devices"] = devices;
    return j;
}

} // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::cerr << "usage: plan_dump FILE\n";
        return 2;
    }
    std::ifstream in(argv[1], std::ios::binary);
    if (!in) {
        std::cerr << "plan_dump: cannot read " << argv[1] << "\n";
        return 2;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    json out = json::object();
    struct Mode {
        const char* name;
        bool strict, small;
    };
    for (const Mode m : {Mode{"as_written", false, false}, Mode{"strict", true, false},
                         Mode{"small", false, true}}) {
        semantics::CheckOptions o;
        o.strict = m.strict;
        o.small_defaults = m.small;
        o.ignore_dims = m.small;
        auto r = frontend::check_text(argv[1], text, o);
        out[m.name] = plan_full(r.plan, argv[1]);
        out[m.name]["checked"] = r.checked;
    }
    std::cout << out.dump(1) << "\n";
    return 0;
}
