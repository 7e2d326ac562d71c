// The Compare panel's table (render::compare_rows, render/gui/panel_compare.cpp): the strategy
// search's candidates in the order `check --compare` ranks files (what fits in HBM first, then
// step time), their figures as the search computed them, and each loser's line from
// semantics::explain_loss.
#include "render/gui/view.hpp"

#include "parser/parser.hpp"
#include "semantics/search.hpp"

#include "tests/read_file.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>

using namespace shardscope;

namespace {

semantics::SearchResult search_sample(std::int64_t devices) {
    const auto path = std::filesystem::path(SHARDSCOPE_SAMPLES_DIR) / "strategy_search.ein";
    SourceFile file(path.string(), test::read_file(path));
    auto parsed = parser::parse(file);
    REQUIRE(!parsed.has_errors());
    semantics::SearchOptions o;
    o.devices = devices;
    o.threads = 1;
    return semantics::search(parsed.program, o);
}

} // namespace

TEST_CASE("compare panel: the search's top candidates, best first, with why each loses") {
    const auto r = search_sample(64);
    REQUIRE(r.ranked.size() >= 3);
    // No memory limit: the search's own order, figures and reasons.
    const auto rows = render::compare_rows(r, 0, 3);
    REQUIRE(rows.size() == 3);
    for (std::size_t k = 0; k < rows.size(); ++k) {
        const auto& c = r.ranked[k];
        CHECK(rows[k].rank == static_cast<int>(k + 1));
        CHECK(rows[k].mesh == c.mesh_text);
        CHECK(rows[k].step_s == c.cost.time_s);
        CHECK(rows[k].compute_s == c.cost.compute_s);
        CHECK(rows[k].exposed_s == c.cost.exposed_s);
        CHECK(rows[k].memory_bytes == c.cost.memory_bytes_per_device);
        CHECK(rows[k].fits);
        CHECK(rows[k].why == (k == 0 ? std::string() : c.reason));
    }
    CHECK(rows[0].step_s <= rows[1].step_s);
    // Every axis in the spec the app re-checks the file with.
    CHECK(rows[0].mesh_spec.find("dp=") == 0);
    CHECK(rows[0].mesh_spec.find(",fsdp=") != std::string::npos);
    CHECK(rows[0].mesh_spec.find(",tp=") != std::string::npos);
    CHECK(render::compare_rows(r, 0, 100).size() == r.ranked.size());
}

TEST_CASE("compare panel: what does not fit in HBM goes after what fits") {
    const auto r = search_sample(64);
    REQUIRE(r.ranked.size() >= 3);
    // A limit between the smallest and the largest memory of the candidates.
    double lo = 1e300, hi = 0;
    for (const auto& c : r.ranked) {
        lo = std::min(lo, c.cost.memory_bytes_per_device);
        hi = std::max(hi, c.cost.memory_bytes_per_device);
    }
    REQUIRE(lo < hi);
    const double hbm = (lo + hi) / 2;
    const auto rows = render::compare_rows(r, hbm, 1000);
    REQUIRE(rows.size() == r.ranked.size());
    bool seen_misfit = false;
    for (const auto& row : rows) {
        CHECK(row.fits == (row.memory_bytes <= hbm));
        if (!row.fits) seen_misfit = true;
        CHECK_FALSE((seen_misfit && row.fits)); // no fitting row after one that does not fit
        if (!row.fits) CHECK(row.why.rfind("does not fit: needs ", 0) == 0);
    }
    CHECK(seen_misfit);
    CHECK(rows.front().fits);
    // Among those that fit, the search's order by step time.
    for (std::size_t k = 1; k < rows.size() && rows[k].fits; ++k)
        CHECK(rows[k - 1].step_s <= rows[k].step_s);
}
