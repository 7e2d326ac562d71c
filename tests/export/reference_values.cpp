// reference_values FILE [random|arange|ints] [SEED]: what `shardscope exec --small --dtype f64`
// computes for every statement of FILE, as the exported scripts print it with --values
// ("VALUES line tensor count v0 v1 ..."). The plan first runs on sim ranks and must verify;
// the values printed are the single-device reference it was compared with.
#include "exec/layout.hpp"
#include "exec/reference.hpp"
#include "exec/run.hpp"
#include "frontend/document.hpp"
#include "parser/parser.hpp"
#include "semantics/checker.hpp"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

using namespace shardscope;

int main(int argc, char** argv) {
    if (argc < 2) {
        std::cerr << "usage: reference_values FILE [random|arange|ints] [SEED]\n";
        return 2;
    }
    std::ifstream in(argv[1]);
    std::stringstream ss;
    ss << in.rdbuf();
    semantics::CheckOptions co;
    co.small_defaults = true;
    co.ignore_dims = true;
    const auto checked = frontend::check_text(argv[1], ss.str(), co);
    if (!checked.syntax_ok()) {
        std::cerr << argv[1] << ": syntax errors\n";
        return 1;
    }
    const auto& parsed = checked.parsed;
    const auto& plan = checked.plan;
    if (plan.errors() > 0) {
        std::cerr << argv[1] << ": check errors\n";
        return 1;
    }
    exec::ExecOptions eo;
    eo.f64 = true;
    const std::string mode = argc > 2 ? argv[2] : "random";
    eo.data.mode = mode == "arange" ? exec::DataMode::Arange
                   : mode == "ints" ? exec::DataMode::Ints
                                    : exec::DataMode::Random;
    eo.data.seed = argc > 3 ? std::stoull(argv[3]) : 0;
    const auto report = exec::execute(parsed.program, plan, eo);
    if (!report.passed()) {
        std::cerr << exec::format_exec(report, plan, false);
        return 1;
    }
    exec::LabelTable labels;
    const auto values = exec::evaluate_reference(parsed.program, plan, labels, eo.data);
    for (std::size_t i = 0; i < values.size(); ++i) {
        const auto& s = plan.statements[i];
        std::printf("VALUES %u %s %zu", s.range.line, s.target.c_str(), values[i].data.size());
        for (double v : values[i].data)
            std::printf(" %.17g", v);
        std::printf("\n");
    }
    return 0;
}
