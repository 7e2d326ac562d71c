// `shardscope check`: placements, collectives and costs of notation files, for people and CI.
#include "check_formats.hpp"
#include "commands.hpp"
#include "documents.hpp"
#include "frontend/document.hpp"
#include "frontend/mesh_spec.hpp"
#include "inputs.hpp"

#include "parser/diagnostic_codes.hpp"
#include "parser/json.hpp"
#include "parser/parser.hpp"
#include "parser/suggest.hpp"
#include "semantics/checker.hpp"
#include "semantics/grad.hpp"
#include "semantics/report.hpp"
#include "semantics/search.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <string_view>

namespace shardscope::app {

namespace {

struct CheckOptions {
    std::vector<std::string> files;
    bool json = false;
    std::string format; ///< empty: not given (text, or json with --json)
    bool strict = false;
    bool quiet = false;
    bool werror = false;
    std::vector<std::string> fail_on;
    std::string mesh;
    bool compare = false;
    std::string hbm; ///< --hbm: the memory per device the fit is judged against
};

/// The program totals' HBM fit judged against `hbm` bytes per device instead of the preset's.
void set_hbm(semantics::ProgramTotals& t, std::optional<double> hbm) {
    if (!hbm) return;
    t.hbm_bytes = *hbm;
    t.fits = t.memory.total() <= t.hbm_bytes;
}

/// The `expect` lines of a program, for JUnit's cases.
std::vector<CheckedExpect> expect_lines(const ast::Program& program, const SourceFile& source) {
    std::vector<CheckedExpect> out;
    for (const auto& item : program.items) {
        const auto* st = std::get_if<ast::Statement>(&item);
        if (st == nullptr || !std::holds_alternative<ast::Expect>(st->node)) continue;
        const auto& text = source.text();
        const std::size_t begin = std::min<std::size_t>(st->range.offset, text.size());
        const std::size_t length = std::min<std::size_t>(st->range.length, text.size() - begin);
        out.push_back({st->range.line, text.substr(begin, length)});
    }
    return out;
}

int run_check(const CheckOptions& o) {
    if (!mesh_option_ok(o.mesh, std::cerr)) return kExitUsage;
    auto files = expand_inputs(o.files);
    if (!files) return kExitUsage;
    if (o.json && !o.format.empty() && o.format != "json") {
        std::cerr << "shardscope: error: --json is --format json: it cannot be combined with "
                     "--format "
                  << o.format << "\n";
        return kExitUsage;
    }
    const std::string format = o.json ? "json" : o.format.empty() ? "text" : o.format;
    if (o.compare && format != "text" && format != "json") {
        std::cerr << "shardscope: error: --compare prints a table (text) or JSON, not --format "
                  << format << "\n";
        return kExitUsage;
    }
    if (o.compare && files->size() < 2) {
        std::cerr << "shardscope: error: --compare needs at least two files to compare, got "
                  << files->size() << ": shardscope check --compare a.ein b.ein\n";
        return kExitUsage;
    }
    std::optional<double> hbm;
    if (!o.hbm.empty()) {
        hbm = semantics::parse_byte_size(o.hbm);
        if (!hbm || *hbm <= 0) {
            std::cerr << "shardscope: error: bad --hbm '" << o.hbm
                      << "': give the memory per device, e.g. 80GB, 96GiB or 8e10\n";
            return kExitUsage;
        }
    }
    std::vector<ComparedFile> compared;
    const bool text = format == "text";
    int rc = kExitOk;
    const bool color = stderr_color();
    const bool out_color = terminal_color(1);
    nlohmann::json doc = {{"version", 1}, {"files", nlohmann::json::array()}};
    int total_statements = 0, unplanned = 0; // equations and chains; those without a plan
    // The text summary counts what the run reports: a diagnostic that fails it (--werror,
    // --fail-on) is an error there, as in the CI formats.
    int reported_errors = 0, reported_warnings = 0;
    std::vector<CheckedFile> checked;
    const auto run_start = std::chrono::steady_clock::now();
    for (const auto& path : *files) {
        auto source = load_source(path);
        if (!source) return kExitUsage;
        const auto start = std::chrono::steady_clock::now();
        // Parse, check what parses, merge, sort: as the REPL and the GUI (app/document.cpp).
        semantics::CheckOptions co;
        co.strict = o.strict;
        if (!o.mesh.empty()) co.mesh = frontend::parse_mesh_spec(o.mesh);
        auto result =
            frontend::check_source(std::make_shared<const SourceFile>(std::move(*source)), co);
        const auto& parsed = result.parsed;
        const auto& shown_source = result.source;
        semantics::Plan plan = std::move(result.plan);
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        // Every equation and chain that parsed, and how many of them got no plan (an error
        // stopped them): "0 statements" read as an empty file where all of them failed.
        int written = 0;
        for (const auto& item : parsed.program.items)
            if (const auto* st = std::get_if<ast::Statement>(&item))
                written += std::holds_alternative<ast::Equation>(st->node) ||
                           std::holds_alternative<ast::Chain>(st->node);
        const int planned = static_cast<int>(plan.statements.size());
        total_statements += std::max(written, planned);
        unplanned += std::max(written - planned, 0);
        for (const auto& d : plan.diagnostics) {
            if (fails(d, o.werror, o.fail_on)) rc = kExitInputErrors;
            const Severity reported = reported_severity(d, o.werror, o.fail_on);
            reported_errors += reported == Severity::Error;
            reported_warnings += reported == Severity::Warning;
        }
        if (o.compare) {
            compared.push_back(compared_file(path, parsed.program, plan));
            set_hbm(compared.back().totals, hbm);
        }
        auto step = semantics::step_totals(parsed.program, plan, co);
        set_hbm(step, hbm);
        if (format == "json") {
            auto file = file_json(plan, path, step, o.werror, o.fail_on);
            file["totals"]["check_time_s"] = seconds;
            doc["files"].push_back(std::move(file));
            continue;
        }
        if (!text) {
            checked.push_back(
                {path, std::move(plan), expect_lines(parsed.program, *shown_source), seconds});
            continue;
        }
        // A document's diagnostics quote its own lines (the extracted notation keeps their
        // lines and columns, so the positions hold for both).
        SourceFile shown = *shown_source;
        if (std::string raw; path != "-" && is_document(path) &&
                             read_whole_file(path, raw).empty() && read_as_document(path, raw))
            shown = SourceFile(path, std::move(raw));
        if (!o.quiet) {
            // Named as the diagnostics name it (<stdin> for -).
            std::cout << semantics::format_plan(plan, shown_source->name(), out_color);
            if (!plan.statements.empty()) std::cout << semantics::format_totals(step);
            std::cout << std::flush;
        }
        for (const auto& d : plan.diagnostics) {
            if (o.quiet && d.severity == Severity::Note && !fails(d, o.werror, o.fail_on)) continue;
            Diagnostic reported = d;
            reported.severity = reported_severity(d, o.werror, o.fail_on);
            std::cerr << format_diagnostic(shown, reported, color);
        }
    }
    Comparison comparison;
    if (o.compare) {
        comparison = compare(std::move(compared));
        // A file with errors is left out of the ranking and fails the run (its errors already
        // do, unless they were all parse errors of an empty plan: say it anyway).
        if (comparison.ranking.size() < comparison.files.size()) rc = kExitInputErrors;
    }
    if (format == "json") {
        if (o.compare) doc["comparison"] = compare_to_json(comparison);
        doc["totals"] = run_totals(
            doc["files"],
            std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count(),
            rc != kExitOk);
        std::cout << doc.dump(2) << "\n";
    } else if (format == "github") {
        std::cout << format_github(checked, o.werror, o.fail_on) << std::flush;
    } else if (format == "sarif") {
        std::cout << format_sarif(checked, o.werror, o.fail_on).dump(2) << "\n";
    } else if (format == "junit") {
        std::cout << format_junit(checked, o.werror, o.fail_on) << std::flush;
    } else {
        if (o.compare)
            std::cout << (o.quiet ? "" : "\n") << format_compare(comparison) << std::flush;
        std::cerr << files->size() << (files->size() == 1 ? " file, " : " files, ")
                  << total_statements << (total_statements == 1 ? " statement" : " statements")
                  << (unplanned > 0 ? " (" + std::to_string(unplanned) + " not planned): "
                                    : std::string(": "))
                  << reported_errors << (reported_errors == 1 ? " error, " : " errors, ")
                  << reported_warnings << (reported_warnings == 1 ? " warning\n" : " warnings\n");
    }
    return rc;
}

} // namespace

void add_check_command(CLI::App& app, int& exit_code) {
    auto opts = std::make_shared<CheckOptions>();
    auto* cmd =
        app.add_subcommand("check", "Infer placements, collectives and costs; check expectations");
    cmd->add_option("files", opts->files, "Files or directories (searched for .ein); - for stdin")
        ->required();
    cmd->add_flag("--json", opts->json,
                  "Print one JSON document (schema version 1, docs/check-json-v1.schema.json); "
                  "the same as --format json");
    cmd->add_option("--format", opts->format,
                    "text (default), json, github (workflow-command annotations), sarif (SARIF "
                    "2.1.0, for code scanning) or junit (JUnit XML: a case per statement and "
                    "per expect)")
        ->check(CLI::IsMember({"text", "json", "github", "sarif", "junit"}));
    cmd->add_flag("--werror", opts->werror, "Warnings fail the check too (exit 1)");
    cmd->add_option("--fail-on", opts->fail_on,
                    "Diagnostics with these codes fail the check (exit 1), whatever their "
                    "severity: --fail-on S301 S302, or S301,S302")
        ->delimiter(',')
        ->type_name("CODE")
        ->check([](const std::string& c) -> std::string {
            const bool ok = c.size() >= 2 && std::isupper(static_cast<unsigned char>(c[0])) &&
                            std::all_of(c.begin() + 1, c.end(),
                                        [](unsigned char ch) { return std::isdigit(ch); });
            if (!ok) return "expected a diagnostic code such as S301, not '" + c + "'";
            if (find_code(c) != nullptr) return "";
            // No diagnostic carries it, so a misspelt gate would pass every file.
            std::vector<std::string_view> names;
            for (const auto& k : diagnostic_codes())
                names.push_back(k.name);
            const std::string near = closest_name(c, names);
            return "no diagnostic code '" + c + "'" +
                   (near.empty() ? std::string() : ": did you mean " + near + "?") +
                   " (shardscope codes lists them)";
        });
    cmd->add_flag(
        "--strict", opts->strict,
        "Every implicit redistribution or chosen fix is an error: collectives must follow "
        "from the statement as written, or be written explicitly");
    cmd->add_option("--mesh", opts->mesh, "Override the mesh: 4, 2x4, or dp=2,tp=4")
        ->check([](const std::string& v) { return mesh_value_problem(v); });
    cmd->add_flag("--quiet,-q", opts->quiet, "Print only errors and warnings");
    cmd->add_flag("--compare", opts->compare,
                  "Compare the files as strategies: after checking each, a side-by-side table "
                  "of their program totals (step time, compute, exposed communication, bytes "
                  "per collective kind, FLOPs, MFU, peak memory and its parts, HBM fit), the "
                  "best first and why each other loses; files with errors are left out (exit "
                  "1). With --format json: a \"comparison\" object");
    cmd->add_option("--hbm", opts->hbm,
                    "Memory per device (80GB, 96GiB) that the program totals' fit (and "
                    "--compare's ranking: what fits first) is judged against; default: the "
                    "hardware preset's HBM");
    cmd->callback([opts, &exit_code] { exit_code = run_check(*opts); });
}

} // namespace shardscope::app
