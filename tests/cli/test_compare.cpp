// `check --compare` (app/check_formats.hpp): samples/strategy_search.ein written at several
// meshes as files of a temporary folder, checked as `check` checks them, ranked and explained;
// every figure of the table against semantics::program_totals of the same plan.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include "app/check_formats.hpp"
#include "frontend/document.hpp"

#include "semantics/report.hpp"
#include "semantics/search.hpp"
#include "semantics/totals.hpp"

#include "../read_file.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

using namespace shardscope;
namespace fs = std::filesystem;

namespace {

/// The sample with its `mesh` line replaced and its `expect` lines dropped (they describe the
/// written sizes).
std::string at_mesh(const std::string& mesh) {
    const auto text = test::read_file(fs::path(SHARDSCOPE_SAMPLES_DIR) / "strategy_search.ein");
    REQUIRE(!text.empty());
    std::string out, line;
    std::istringstream in(text);
    while (std::getline(in, line)) {
        if (line.rfind("expect ", 0) == 0) continue;
        out += (line.rfind("mesh ", 0) == 0 ? "mesh " + mesh : line) + "\n";
    }
    return out;
}

struct TempDir {
    fs::path path;
    TempDir() {
        std::string t = (fs::temp_directory_path() / "shardscope-compare-XXXXXX").string();
        REQUIRE(mkdtemp(t.data()) != nullptr);
        path = t;
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

/// Writes `text` to dir/name, checks the file as `check` does, and compares it.
struct Checked {
    frontend::CheckedText checked;
    app::ComparedFile file;
};
Checked write_and_check(const fs::path& dir, const std::string& name, const std::string& text) {
    const auto path = (dir / name).string();
    std::ofstream(path) << text;
    auto source = std::make_shared<const SourceFile>(path, test::read_file(path));
    Checked c{frontend::check_source(source), {}};
    c.file = app::compared_file(path, c.checked.parsed.program, c.checked.plan);
    return c;
}

semantics::ProgramTotals totals_of(const frontend::CheckedText& c) {
    return semantics::program_totals(c.plan);
}

bool has(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

} // namespace

TEST_CASE("check --compare: two meshes of one model, ranked by program totals") {
    TempDir tmp;
    // 64 devices: FSDP over 64 against tensor parallelism over 8 within data parallelism
    // over 8.
    auto tp = write_and_check(tmp.path, "tp.ein", at_mesh("dp=8 fsdp=1 tp=8"));
    auto fsdp = write_and_check(tmp.path, "fsdp.ein", at_mesh("dp=1 fsdp=64 tp=1"));
    REQUIRE(tp.checked.plan.errors() == 0);
    REQUIRE(fsdp.checked.plan.errors() == 0);
    const auto t_tp = totals_of(tp.checked), t_fsdp = totals_of(fsdp.checked);
    REQUIRE(t_tp.step_s != t_fsdp.step_s);
    REQUIRE(t_tp.fits);
    REQUIRE(t_fsdp.fits);
    const bool tp_wins = t_tp.step_s < t_fsdp.step_s;

    const auto c = app::compare({tp.file, fsdp.file});
    REQUIRE(c.ranking.size() == 2);
    CHECK(c.models_differ.empty());
    const auto& best = c.files[c.ranking[0]];
    const auto& loser = c.files[c.ranking[1]];
    CHECK(best.path == (tp_wins ? tp.file.path : fsdp.file.path));
    CHECK(best.rank == 1);
    CHECK(loser.rank == 2);
    CHECK(best.why.empty());
    // The figures are the program totals, unchanged.
    const auto& tb = tp_wins ? t_tp : t_fsdp;
    const auto& tl = tp_wins ? t_fsdp : t_tp;
    CHECK(best.totals == tb);
    CHECK(loser.totals == tl);
    CHECK(best.candidate.cost.time_s == doctest::Approx(tb.step_s));
    CHECK(loser.candidate.cost.memory_bytes_per_device == doctest::Approx(tl.memory.total()));
    // Why it loses: the search's explanation (semantics::explain_loss), citing the link.
    CHECK(loser.why == semantics::explain_loss(loser.candidate, best.candidate));
    CHECK(loser.why.rfind("+", 0) == 0);
    CHECK(has(loser.why, " link"));
    CHECK(tp.file.candidate.mesh_text == "dp=8 tp=8");
    CHECK(fsdp.file.candidate.mesh_text == "fsdp=64");

    // The table: best first, each figure as program_totals formats it.
    const auto text = app::format_compare(c);
    const auto first = text.find(best.path), second = text.find(loser.path);
    REQUIRE(first != std::string::npos);
    CHECK(first < second);
    CHECK(has(text, "#1 (best)"));
    CHECK(has(text, semantics::format_seconds(tb.step_s)));
    CHECK(has(text, semantics::format_seconds(tl.exposed_s)));
    CHECK(has(text, semantics::format_bytes(tl.memory.total())));
    CHECK(has(text, semantics::format_bytes(tb.memory.optimizer)));
    CHECK(has(text, "#2 " + loser.path + " loses to #1 " + best.path + ": " + loser.why));
    CHECK(!has(text, "different models"));
    for (const auto& k : tl.bytes_by_kind)
        CHECK(has(text, semantics::format_bytes(k.bytes) + " (" + std::to_string(k.count) + "×)"));

    const auto j = app::compare_to_json(c);
    CHECK(j["best"] == best.path);
    CHECK(j["ranking"][0] == best.path);
    CHECK(j["ranking"][1] == loser.path);
    CHECK(j["same_model"] == true);
    CHECK(j["files"][0]["path"] == tp.file.path);
    CHECK(j["files"][0]["program"]["step_time_s"].get<double>() == t_tp.step_s);
    CHECK(j["files"][1]["program"]["memory"]["total_bytes"].get<double>() == t_fsdp.memory.total());
    CHECK(j[tp_wins ? "files" : "files"][tp_wins ? 1 : 0]["why"] == loser.why);
}

TEST_CASE("check --compare: what does not fit loses first; errors are not ranked") {
    TempDir tmp;
    // A batch of 1024: on one device the activations alone (4 × 60.7 GB) are more than an
    // H100's 80 GB; over 64 devices they fit.
    auto big = [](std::string text) {
        const auto at = text.find("b=256");
        REQUIRE(at != std::string::npos);
        return text.replace(at, 5, "b=1024");
    };
    auto one = write_and_check(tmp.path, "one.ein", big(at_mesh("dp=1 fsdp=1 tp=1")));
    auto many = write_and_check(tmp.path, "many.ein", big(at_mesh("dp=8 fsdp=8 tp=1")));
    auto bad = write_and_check(tmp.path, "bad.ein", at_mesh("dp=2 fsdp=2 tp=2") + "z = q_{\n");
    const auto t_one = totals_of(one.checked), t_many = totals_of(many.checked);
    REQUIRE(!t_one.fits);
    REQUIRE(t_many.fits);
    REQUIRE(bad.file.errors > 0);
    const auto c = app::compare({one.file, bad.file, many.file});
    REQUIRE(c.ranking.size() == 2);
    CHECK(c.files[c.ranking[0]].path == many.file.path);
    CHECK(c.files[c.ranking[1]].path == one.file.path);
    CHECK(c.files[1].rank == 0);
    CHECK(c.files[c.ranking[1]].why.rfind(
              "does not fit: needs " + semantics::format_bytes(t_one.memory.total()), 0) == 0);
    const auto text = app::format_compare(c);
    CHECK(has(text, "not ranked: " + bad.file.path + " has "));
    CHECK(has(text, "NO, of 80 GB"));
    CHECK(c.models_differ.empty());
    const auto j = app::compare_to_json(c);
    CHECK(j["files"][1]["ranked"] == false);
    CHECK(j["files"][1]["rank"].is_null());
    CHECK(j["ranking"].size() == 2);
}

TEST_CASE("check --compare: different models are compared, and the comparison says so") {
    TempDir tmp;
    auto a = write_and_check(tmp.path, "a.ein", at_mesh("dp=2 fsdp=2 tp=2"));
    std::string other = at_mesh("dp=2 fsdp=2 tp=2");
    const auto at = other.find("d=8192");
    REQUIRE(at != std::string::npos);
    other.replace(at, 6, "d=4096");
    auto b = write_and_check(tmp.path, "b.ein", other);
    REQUIRE(b.file.errors == 0);
    const auto c = app::compare({a.file, b.file});
    REQUIRE(c.ranking.size() == 2);
    CHECK(has(c.models_differ, "W^0 is "));
    CHECK(has(c.models_differ, "32768×8192"));
    CHECK(has(app::format_compare(c), "different models"));
    CHECK(app::compare_to_json(c)["same_model"] == false);
}
