#include "app/check_formats.hpp"

#include "render/canvas.hpp"
#include "semantics/grad.hpp"
#include "semantics/report.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

namespace shardscope::app {

using render::xml_escape;

namespace {

/// Workflow-command escaping: the message (data) and the properties.
std::string escape_data(const std::string& s) {
    std::string out;
    for (char c : s) {
        if (c == '%')
            out += "%25";
        else if (c == '\r')
            out += "%0D";
        else if (c == '\n')
            out += "%0A";
        else
            out += c;
    }
    return out;
}
std::string escape_property(const std::string& s) {
    std::string out;
    for (char c : escape_data(s)) {
        if (c == ':')
            out += "%3A";
        else if (c == ',')
            out += "%2C";
        else
            out += c;
    }
    return out;
}

/// A relative path as a URI reference (RFC 3986): unreserved characters and '/' as they
/// are, the rest percent-encoded.
std::string path_uri(const std::string& path) {
    // An absolute path as a file URI; a relative one stays relative (to the repository root
    // in code scanning).
    std::string out = !path.empty() && path[0] == '/' ? "file://" : "";
    for (unsigned char c : path) {
        if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '/') {
            out += static_cast<char>(c);
        } else {
            char buf[4];
            std::snprintf(buf, sizeof buf, "%%%02X", c);
            out += buf;
        }
    }
    return out;
}

/// An XML attribute value: a parser turns a raw newline, carriage return or tab in one into a
/// space (XML 1.0, attribute-value normalisation), so they go as character references.
std::string xml_attribute(const std::string& s) {
    std::string out;
    for (char c : xml_escape(s)) {
        if (c == '\n')
            out += "&#10;";
        else if (c == '\r')
            out += "&#13;";
        else if (c == '\t')
            out += "&#9;";
        else
            out += c;
    }
    return out;
}

std::string text_with_fix(const Diagnostic& d) {
    return d.fix.empty() ? d.message : d.message + " (fix: " + d.fix + ")";
}

} // namespace

bool fails(const Diagnostic& d, bool werror, const std::vector<std::string>& fail_on) {
    if (d.severity == Severity::Error) return true;
    if (werror && d.severity == Severity::Warning) return true;
    return std::find(fail_on.begin(), fail_on.end(), d.code) != fail_on.end();
}

Severity reported_severity(const Diagnostic& d, bool werror,
                           const std::vector<std::string>& fail_on) {
    return fails(d, werror, fail_on) ? Severity::Error : d.severity;
}

namespace {

// A diagnostic that fails the run is an error in every format, whatever its severity.
const char* level(const Diagnostic& d, bool werror, const std::vector<std::string>& fail_on) {
    switch (reported_severity(d, werror, fail_on)) {
    case Severity::Error:
        return "error";
    case Severity::Warning:
        return "warning";
    case Severity::Note:
        return "note";
    }
    return "note";
}

} // namespace

std::string format_github(const std::vector<CheckedFile>& files, bool werror,
                          const std::vector<std::string>& fail_on) {
    std::string out;
    for (const auto& f : files)
        for (const auto& d : f.plan.diagnostics) {
            const std::string kind = reported_severity(d, werror, fail_on) == Severity::Note
                                         ? "notice"
                                         : level(d, werror, fail_on);
            out += "::" + kind + " file=" + escape_property(f.path);
            if (d.range.line > 0) {
                out += ",line=" + std::to_string(d.range.line);
                if (d.range.column > 0) out += ",col=" + std::to_string(d.range.column);
                if (d.range.end_line > 0) out += ",endLine=" + std::to_string(d.range.end_line);
                if (d.range.end_column > 0 && d.range.end_line == d.range.line)
                    out += ",endColumn=" + std::to_string(d.range.end_column);
            }
            out += ",title=" + escape_property("shardscope " + d.code);
            out += "::" + escape_data("[" + d.code + "] " + text_with_fix(d)) + "\n";
        }
    return out;
}

nlohmann::json format_sarif(const std::vector<CheckedFile>& files, bool werror,
                            const std::vector<std::string>& fail_on) {
    using nlohmann::json;
    std::map<std::string, std::size_t> rule_index;
    json rules = json::array();
    json results = json::array();
    json artifacts = json::array();
    for (std::size_t fi = 0; fi < files.size(); ++fi) {
        const auto& f = files[fi];
        artifacts.push_back({{"location", {{"uri", path_uri(f.path)}}}});
        for (const auto& d : f.plan.diagnostics) {
            auto [it, added] = rule_index.emplace(d.code, rules.size());
            if (added)
                rules.push_back({{"id", d.code},
                                 {"name", d.code},
                                 {"shortDescription", {{"text", "shardscope " + d.code}}}});
            json location = {{"artifactLocation", {{"uri", path_uri(f.path)}, {"index", fi}}}};
            // Code scanning wants a region on every result: a whole-file diagnostic (line 0)
            // points at line 1.
            json region = {{"startLine", std::max<std::uint32_t>(d.range.line, 1)}};
            if (d.range.line > 0 && d.range.column > 0) {
                region["startColumn"] = d.range.column;
                if (d.range.end_line >= d.range.line) region["endLine"] = d.range.end_line;
                if (d.range.end_column > 0 && d.range.end_line >= d.range.line)
                    region["endColumn"] = d.range.end_column;
            }
            location["region"] = region;
            json result = {{"ruleId", d.code},
                           {"ruleIndex", it->second},
                           {"level", level(d, werror, fail_on)},
                           {"message", {{"text", text_with_fix(d)}}},
                           {"locations", json::array({{{"physicalLocation", location}}})}};
            results.push_back(result);
        }
    }
    json driver = {{"name", "shardscope"}, {"version", SHARDSCOPE_VERSION}, {"rules", rules}};
    return {{"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
            {"version", "2.1.0"},
            {"runs", json::array({{{"tool", {{"driver", driver}}},
                                   {"artifacts", artifacts},
                                   {"columnKind", "unicodeCodePoints"},
                                   {"results", results}}})}};
}

std::string format_junit(const std::vector<CheckedFile>& files, bool werror,
                         const std::vector<std::string>& fail_on) {
    struct Case {
        std::string name;
        std::uint32_t first = 0, last = 0;
        std::vector<const Diagnostic*> diags;
    };
    std::ostringstream out;
    std::ostringstream suites;
    int all_tests = 0, all_failures = 0;
    double all_seconds = 0;
    for (const auto& f : files) {
        std::vector<Case> cases;
        for (const auto& s : f.plan.statements)
            cases.push_back({"line " + std::to_string(s.range.line) + ": " + s.source,
                             s.range.line,
                             std::max(s.range.end_line, s.range.line),
                             {}});
        for (const auto& e : f.expects)
            cases.push_back({"line " + std::to_string(e.line) + ": " + e.text, e.line, e.line, {}});
        std::stable_sort(cases.begin(), cases.end(),
                         [](const Case& a, const Case& b) { return a.first < b.first; });
        std::vector<Case> loose; // diagnostics outside every case: one case each
        for (const auto& d : f.plan.diagnostics) {
            Case* home = nullptr;
            for (auto& c : cases)
                if (d.range.line >= c.first && d.range.line <= c.last) home = &c;
            if (home != nullptr) {
                home->diags.push_back(&d);
                continue;
            }
            loose.push_back({(d.range.line > 0 ? "line " + std::to_string(d.range.line) + ": "
                                               : std::string()) +
                                 d.code,
                             d.range.line,
                             d.range.line,
                             {&d}});
        }
        cases.insert(cases.end(), loose.begin(), loose.end());
        int failures = 0;
        std::ostringstream body;
        for (const auto& c : cases) {
            body << "    <testcase classname=\"" << xml_attribute(f.path) << "\" name=\""
                 << xml_attribute(c.name) << "\" file=\"" << xml_attribute(f.path) << "\" line=\""
                 << c.first << "\">\n";
            std::string failure_text, output;
            const Diagnostic* first_failure = nullptr;
            for (const auto* d : c.diags) {
                const std::string line = f.path + ":" + std::to_string(d->range.line) + ":" +
                                         std::to_string(d->range.column) + ": " +
                                         level(*d, werror, fail_on) + ": " + text_with_fix(*d) +
                                         " [" + d->code + "]\n";
                if (fails(*d, werror, fail_on)) {
                    if (first_failure == nullptr) first_failure = d;
                    failure_text += line;
                } else {
                    output += line;
                }
            }
            if (first_failure != nullptr) {
                ++failures;
                body << "      <failure type=\"" << first_failure->code << "\" message=\""
                     << xml_attribute(first_failure->message) << "\">" << xml_escape(failure_text)
                     << "</failure>\n";
            }
            if (!output.empty())
                body << "      <system-out>" << xml_escape(output) << "</system-out>\n";
            body << "    </testcase>\n";
        }
        all_tests += static_cast<int>(cases.size());
        all_failures += failures;
        all_seconds += f.seconds;
        char seconds[32];
        std::snprintf(seconds, sizeof seconds, "%.6f", f.seconds);
        suites << "  <testsuite name=\"" << xml_attribute(f.path) << "\" tests=\"" << cases.size()
               << "\" failures=\"" << failures << "\" errors=\"0\" skipped=\"0\" time=\"" << seconds
               << "\">\n"
               << body.str() << "  </testsuite>\n";
    }
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.6f", all_seconds);
    out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        << "<testsuites name=\"shardscope check\" tests=\"" << all_tests << "\" failures=\""
        << all_failures << "\" errors=\"0\" time=\"" << seconds << "\">\n"
        << suites.str() << "</testsuites>\n";
    return out.str();
}

nlohmann::json run_totals(const nlohmann::json& files, double check_time_s, bool failed) {
    double time = 0, bytes = 0, flops = 0;
    int statements = 0, errors = 0, warnings = 0, notes = 0;
    for (const auto& f : files) {
        const auto& t = f["totals"];
        statements += t["statements"].get<int>();
        errors += t["errors"].get<int>();
        warnings += t["warnings"].get<int>();
        notes += t["notes"].get<int>();
        time += t["time_s"].get<double>();
        bytes += t["comm_bytes_per_device"].get<double>();
        flops += t["flops_per_device"].get<double>();
    }
    return {{"files", files.size()},
            {"statements", statements},
            {"errors", errors},
            {"warnings", warnings},
            {"notes", notes},
            {"time_s", time},
            {"comm_bytes_per_device", bytes},
            {"flops_per_device", flops},
            {"check_time_s", check_time_s},
            {"failed", failed}};
}

nlohmann::json file_json(const semantics::Plan& plan, const std::string& path,
                         const semantics::ProgramTotals& program, bool werror,
                         const std::vector<std::string>& fail_on) {
    nlohmann::json file = semantics::plan_to_json(plan, path);
    file["totals"] = plan_totals(plan, program);
    // The run fails on them, so JSON says error as every other format does (docs/guide.md);
    // own_severity lets a tool still tell a --werror warning from an error of its own.
    int errors = 0, warnings = 0, notes = 0;
    auto& diags = file["diagnostics"];
    for (std::size_t i = 0; i < plan.diagnostics.size(); ++i) {
        const auto& d = plan.diagnostics[i];
        const Severity reported = reported_severity(d, werror, fail_on);
        if (reported != d.severity) {
            diags[i]["severity"] = severity_name(reported);
            diags[i]["own_severity"] = severity_name(d.severity);
        }
        errors += reported == Severity::Error;
        warnings += reported == Severity::Warning;
        notes += reported == Severity::Note;
    }
    file["errors"] = errors;
    file["warnings"] = warnings;
    file["totals"]["errors"] = errors;
    file["totals"]["warnings"] = warnings;
    file["totals"]["notes"] = notes;
    return file;
}

nlohmann::json plan_totals(const semantics::Plan& plan, const semantics::ProgramTotals& t) {
    double time = 0, bytes = 0, flops = 0, memory = 0;
    for (const auto& s : plan.statements) {
        time += s.cost.time_s;
        bytes += s.cost.comm_bytes_per_device;
        flops += s.cost.flops_per_device;
        memory = std::max(memory, s.cost.memory_bytes_per_device);
    }
    int notes = 0;
    for (const auto& d : plan.diagnostics)
        notes += d.severity == Severity::Note ? 1 : 0;
    return {{"statements", plan.statements.size()},
            {"errors", plan.errors()},
            {"warnings", plan.warnings()},
            {"notes", notes},
            {"time_s", time},
            {"comm_bytes_per_device", bytes},
            {"flops_per_device", flops},
            {"max_memory_bytes_per_device", memory},
            {"program", program_totals_json(t)}};
}

nlohmann::json program_totals_json(const semantics::ProgramTotals& t) {
    nlohmann::json by_kind = nlohmann::json::object();
    for (const auto& k : t.bytes_by_kind)
        by_kind[std::string(semantics::step_kind_name(k.kind))] = {{"bytes", k.bytes},
                                                                   {"count", k.count}};
    const auto& m = t.memory;
    auto pipeline_json = [](const semantics::PipelineTotals& pp) -> nlohmann::json {
        return {{"axis", pp.axis},
                {"stages", pp.stages},
                {"microbatches", pp.microbatches},
                {"layers_per_stage", pp.layers_per_stage},
                {"schedule", pp.schedule},
                {"stage_time_s", pp.stage_s},
                {"microbatch_stage_time_s", pp.microbatch_s},
                {"pipeline_time_s", pp.pipeline_s},
                {"bubble_time_s", pp.bubble_s},
                {"bubble_fraction", pp.bubble_fraction},
                {"send_bytes_per_device", pp.send_bytes},
                {"sends", pp.send_count},
                {"microbatches_in_flight", pp.in_flight}};
    };
    nlohmann::json pipeline = nullptr; // not pipelined
    if (t.pipeline.pipelined) pipeline = pipeline_json(t.pipeline);
    nlohmann::json pipelines = nlohmann::json::array();
    for (const auto& p : t.pipelines)
        pipelines.push_back(pipeline_json(p));
    return {{"training", t.training},
            {"backward_derived", t.backward_derived},
            {"hardware", t.hardware},
            {"devices", t.devices},
            {"step_time_s", t.step_s},
            {"compute_time_s", t.compute_s},
            {"recompute_time_s", t.recompute_s},
            {"comm_time_s", t.comm_s},
            {"exposed_comm_time_s", t.exposed_s},
            {"no_overlap_time_s", t.serial_s},
            {"comm_bytes_per_device", t.comm_bytes},
            {"comm_bytes_by_kind", by_kind},
            {"flops_per_device", t.flops},
            {"model_flops_per_device", t.model_flops},
            {"peak_flops_per_s", t.peak_flops},
            {"mfu", t.mfu},
            {"memory",
             {{"weights_bytes", m.weights},
              {"gradients_bytes", m.gradients},
              {"optimizer_bytes", m.optimizer},
              {"activations_bytes", m.activations},
              {"buffers_bytes", m.buffers},
              {"total_bytes", m.total()},
              {"hbm_bytes", t.hbm_bytes},
              {"fits", t.fits}}},
            {"pipeline", pipeline},
            {"pipelines", pipelines}};
}

namespace {

/// "8192×32768", or "a scalar".
std::string shape_words(std::span<const std::int64_t> shape) {
    return shape.empty() ? "a scalar" : semantics::shape_text(shape);
}

/// Width in code points (× and · are two bytes).
std::size_t text_width(const std::string& s) {
    std::size_t n = 0;
    for (unsigned char c : s)
        if ((c & 0xC0) != 0x80) ++n;
    return n;
}

std::string pad_to(const std::string& s, std::size_t width) {
    const std::size_t n = text_width(s);
    return s + std::string(width > n ? width - n : 0, ' ');
}

std::string percent_text(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f%%", 100 * x);
    return buf;
}

/// Which tensor differs between two files' models, in words ("" when none does).
std::string model_difference(const ComparedFile& a, const ComparedFile& b) {
    for (const auto& [name, shape] : a.tensors) {
        const auto it = b.tensors.find(name);
        if (it == b.tensors.end()) return name + " is only in " + a.path;
        if (it->second != shape)
            return name + " is " + shape_words(shape) + " in " + a.path + " and " +
                   shape_words(it->second) + " in " + b.path;
    }
    for (const auto& [name, shape] : b.tensors)
        if (a.tensors.count(name) == 0) return name + " is only in " + b.path;
    return {};
}

} // namespace

ComparedFile compared_file(const std::string& path, const ast::Program& program,
                           const semantics::Plan& plan) {
    ComparedFile f;
    f.path = path;
    f.errors = plan.errors();
    f.totals = semantics::step_totals(program, plan);
    f.candidate = semantics::candidate_of(program, plan);
    // The model: the tensors the program reads and never defines (its inputs and weights),
    // each with its global shape as first written. Intermediates a strategy adds (a gathered
    // weight) do not make another model.
    std::set<std::string> defined;
    for (const auto& s : plan.statements)
        if (!s.target.empty()) defined.insert(s.target);
    for (const auto& s : plan.statements)
        for (const auto& o : s.operands)
            if (!o.tensor.empty() && o.tensor[0] != '%' && defined.count(o.tensor) == 0)
                f.tensors.emplace(o.tensor, o.global_shape.to_vector());
    return f;
}

Comparison compare(std::vector<ComparedFile> files) {
    Comparison c;
    c.files = std::move(files);
    for (std::size_t i = 0; i < c.files.size(); ++i) {
        c.files[i].rank = 0;
        c.files[i].why.clear();
        if (c.files[i].errors == 0) c.ranking.push_back(i);
    }
    std::stable_sort(c.ranking.begin(), c.ranking.end(), [&](std::size_t a, std::size_t b) {
        const auto& fa = c.files[a];
        const auto& fb = c.files[b];
        if (fa.totals.fits != fb.totals.fits) return fa.totals.fits;
        return semantics::ranks_before(fa.candidate, fb.candidate);
    });
    for (std::size_t k = 0; k < c.ranking.size(); ++k)
        c.files[c.ranking[k]].rank = static_cast<int>(k + 1);
    if (c.ranking.empty()) return c;
    const auto& best = c.files[c.ranking.front()];
    for (std::size_t k = 1; k < c.ranking.size(); ++k) {
        auto& f = c.files[c.ranking[k]];
        if (best.totals.fits && !f.totals.fits) {
            f.why = semantics::explain_no_fit(f.totals.memory.total(), f.totals.hbm_bytes);
            if (f.candidate.cost.time_s > best.candidate.cost.time_s)
                f.why += "; and " + semantics::explain_loss(f.candidate, best.candidate);
        } else {
            f.why = semantics::explain_loss(f.candidate, best.candidate);
        }
        if (c.models_differ.empty()) c.models_differ = model_difference(best, f);
    }
    return c;
}

std::string format_compare(const Comparison& c) {
    using semantics::format_bytes;
    using semantics::format_flops;
    using semantics::format_seconds;
    std::string out = "Comparison of " + std::to_string(c.files.size()) +
                      " files, per device and step (the best first: those that fit in HBM, "
                      "then the shortest step time)\n";
    const std::size_t n = c.ranking.size();
    struct Row {
        std::string label;
        std::vector<std::string> cells;
    };
    std::vector<Row> rows;
    auto row = [&](std::string label, auto cell) {
        Row r{std::move(label), {}};
        for (std::size_t k = 0; k < n; ++k)
            r.cells.push_back(cell(c.files[c.ranking[k]]));
        rows.push_back(std::move(r));
    };
    row("", [](const ComparedFile& f) {
        return "#" + std::to_string(f.rank) + (f.rank == 1 ? " (best)" : "");
    });
    row("file", [](const ComparedFile& f) { return f.path; });
    row("mesh", [](const ComparedFile& f) { return f.candidate.mesh_text; });
    row("hardware", [](const ComparedFile& f) { return f.totals.hardware; });
    row("step time", [](const ComparedFile& f) { return format_seconds(f.totals.step_s); });
    row("  compute", [](const ComparedFile& f) { return format_seconds(f.totals.compute_s); });
    row("  exposed communication",
        [](const ComparedFile& f) { return format_seconds(f.totals.exposed_s); });
    row("communication (all)",
        [](const ComparedFile& f) { return format_seconds(f.totals.comm_s); });
    std::set<semantics::StepKind> kinds;
    for (std::size_t k = 0; k < n; ++k)
        for (const auto& b : c.files[c.ranking[k]].totals.bytes_by_kind)
            kinds.insert(b.kind);
    for (const auto kind : kinds)
        row("  " + std::string(semantics::step_kind_name(kind)), [kind](const ComparedFile& f) {
            for (const auto& b : f.totals.bytes_by_kind)
                if (b.kind == kind)
                    return format_bytes(b.bytes) + " (" + std::to_string(b.count) + "×)";
            return std::string("-");
        });
    row("FLOP/device", [](const ComparedFile& f) { return format_flops(f.totals.flops); });
    row("MFU", [](const ComparedFile& f) { return percent_text(f.totals.mfu); });
    row("peak memory", [](const ComparedFile& f) { return format_bytes(f.totals.memory.total()); });
    row("  weights", [](const ComparedFile& f) { return format_bytes(f.totals.memory.weights); });
    row("  gradients",
        [](const ComparedFile& f) { return format_bytes(f.totals.memory.gradients); });
    row("  optimizer",
        [](const ComparedFile& f) { return format_bytes(f.totals.memory.optimizer); });
    row("  activations",
        [](const ComparedFile& f) { return format_bytes(f.totals.memory.activations); });
    row("  buffers", [](const ComparedFile& f) { return format_bytes(f.totals.memory.buffers); });
    row("fits in HBM", [](const ComparedFile& f) {
        return (f.totals.fits ? "yes, of " : "NO, of ") + format_bytes(f.totals.hbm_bytes);
    });
    if (n > 0) {
        std::size_t label_w = 0;
        for (const auto& r : rows)
            label_w = std::max(label_w, text_width(r.label));
        std::vector<std::size_t> col_w(n, 0);
        for (const auto& r : rows)
            for (std::size_t k = 0; k < n; ++k)
                col_w[k] = std::max(col_w[k], text_width(r.cells[k]));
        for (const auto& r : rows) {
            std::string line = "  " + pad_to(r.label, label_w);
            for (std::size_t k = 0; k < n; ++k)
                line += "   " + pad_to(r.cells[k], col_w[k]);
            while (!line.empty() && line.back() == ' ')
                line.pop_back();
            out += line + "\n";
        }
        const auto& best = c.files[c.ranking.front()];
        for (std::size_t k = 1; k < n; ++k) {
            const auto& f = c.files[c.ranking[k]];
            out += "  #" + std::to_string(f.rank) + " " + f.path + " loses to #1 " + best.path +
                   ": " + f.why + "\n";
        }
        if (!best.totals.fits) out += "  none of them fits in HBM\n";
    } else {
        out += "  no file is left to rank: every one has errors\n";
    }
    for (const auto& f : c.files)
        if (f.rank == 0)
            out += "  not ranked: " + f.path + " has " + std::to_string(f.errors) +
                   (f.errors == 1 ? " error" : " errors") + " (reported above)\n";
    if (!c.models_differ.empty())
        out += "  note: these are different models (" + c.models_differ +
               "): the figures compare different work\n";
    return out;
}

nlohmann::json compare_to_json(const Comparison& c) {
    using nlohmann::json;
    json files = json::array();
    for (const auto& f : c.files) {
        files.push_back({{"path", f.path},
                         {"ranked", f.rank > 0},
                         {"rank", f.rank > 0 ? json(f.rank) : json(nullptr)},
                         {"errors", f.errors},
                         {"mesh_text", f.candidate.mesh_text},
                         {"program", program_totals_json(f.totals)},
                         {"why", f.rank > 1 ? json(f.why) : json(nullptr)}});
    }
    json ranking = json::array();
    for (auto i : c.ranking)
        ranking.push_back(c.files[i].path);
    return {{"files", files},
            {"ranking", ranking},
            {"best", c.ranking.empty() ? json(nullptr) : json(c.files[c.ranking.front()].path)},
            {"same_model", c.models_differ.empty()},
            {"models_differ", c.models_differ}};
}

} // namespace shardscope::app
