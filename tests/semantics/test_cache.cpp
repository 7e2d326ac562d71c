// Re-checking with a CheckCache gives exactly the plan and diagnostics of a fresh check,
// positions included, after every kind of edit.
#include "helpers.hpp"

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

namespace {

using namespace shardscope;

struct Checked {
    semantics::Plan plan;
    std::string text;
};

Checked check_with(const std::string& text, semantics::CheckCache* cache,
                   semantics::CheckOptions options = {}) {
    SourceFile file("test.ein", text);
    auto parsed = parser::parse(file);
    options.text = file.text();
    auto plan = cache ? semantics::check(parsed.program, options, *cache)
                      : semantics::check(parsed.program, options);
    return {std::move(plan), text};
}

std::string where(const ast::SourceRange& r) {
    return std::to_string(r.offset) + "+" + std::to_string(r.length) + " " +
           std::to_string(r.line) + ":" + std::to_string(r.column) + "-" +
           std::to_string(r.end_line) + ":" + std::to_string(r.end_column);
}

/// Plans equal, and every position equal (SourceRange takes no part in ==).
void require_same(const Checked& cached, const Checked& fresh) {
    const auto message = "cached:\n" + test::plan_text(cached.text, cached.plan) + "\nfresh:\n" +
                         test::plan_text(fresh.text, fresh.plan);
    REQUIRE_MESSAGE(cached.plan == fresh.plan, message);
    REQUIRE(cached.plan.diagnostics.size() == fresh.plan.diagnostics.size());
    for (std::size_t i = 0; i < fresh.plan.diagnostics.size(); ++i)
        REQUIRE_MESSAGE(where(cached.plan.diagnostics[i].range) ==
                            where(fresh.plan.diagnostics[i].range),
                        fresh.plan.diagnostics[i].message);
    for (std::size_t i = 0; i < fresh.plan.statements.size(); ++i)
        REQUIRE(where(cached.plan.statements[i].range) == where(fresh.plan.statements[i].range));
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        out.push_back(line);
    return out;
}

std::string join_lines(const std::vector<std::string>& lines) {
    std::string out;
    for (const auto& l : lines)
        out += l + "\n";
    return out;
}

const char* kProgram = R"(mesh 4x2
dim b=8 s=64 d=256 f=512
y_{b s r_0 f} = W^0_{r_0 f d} x_{b_1 s d}
expect none
z_{b s d} = W^1_{d r_0 f} y_{b s r_0 f}
expect all-reduce(0)
bad_{r_0 r'_0} = a_{r_0 r'_0}
u_{bsd} = relu(z_{b s d}{U_0})
)";

} // namespace

TEST_CASE("re-checking an unchanged program reuses every statement") {
    semantics::CheckCache cache;
    const auto first = check_with(kProgram, &cache);
    CHECK(cache.hits() == 0);
    const auto second = check_with(kProgram, &cache);
    CHECK(cache.hits() == 4); // the failing statement is cached too
    require_same(second, check_with(kProgram, nullptr));
    require_same(first, second);
}

TEST_CASE("re-checking follows edits: moved lines, changed sizes, changed placements") {
    semantics::CheckCache cache;
    check_with(kProgram, &cache);
    SUBCASE("a line inserted above moves the diagnostics") {
        const std::string text = std::string("# a comment\n  \n") + kProgram;
        const auto cached = check_with(text, &cache);
        CHECK(cache.hits() == 4);
        require_same(cached, check_with(text, nullptr));
    }
    SUBCASE("statements written further right keep their columns") {
        auto lines = lines_of(kProgram);
        lines[6] = "   " + lines[6];
        const auto text = join_lines(lines);
        const auto cached = check_with(text, &cache);
        CHECK(cache.hits() == 4); // leading blanks are not part of a statement
        require_same(cached, check_with(text, nullptr));
    }
    SUBCASE("a changed range re-plans everything") {
        auto lines = lines_of(kProgram);
        lines[1] = "dim b=8 s=64 d=256 f=1024";
        const auto text = join_lines(lines);
        const auto cached = check_with(text, &cache);
        CHECK(cache.hits() == 0);
        require_same(cached, check_with(text, nullptr));
    }
    SUBCASE("a changed definition re-plans its uses") {
        auto lines = lines_of(kProgram);
        lines[2] = "y_{b_1 s r_0 f} = W^0_{r_0 f d} x_{b_1 s d}";
        const auto text = join_lines(lines);
        const auto cached = check_with(text, &cache);
        CHECK(cache.hits() == 2); // z reads y's new placement; bad and u read nothing new
        require_same(cached, check_with(text, nullptr));
    }
    SUBCASE("options are part of what a plan depends on") {
        semantics::CheckOptions strict;
        strict.strict = true;
        const auto cached = check_with(kProgram, &cache, strict);
        CHECK(cache.hits() == 0);
        require_same(cached, check_with(kProgram, nullptr, strict));
    }
}

TEST_CASE("re-checking the samples under random line edits equals a fresh check") {
    std::vector<std::string> texts;
    for (const auto& e : std::filesystem::directory_iterator(SHARDSCOPE_SAMPLES_DIR)) {
        if (e.path().extension() != ".ein") continue;
        std::ifstream in(e.path());
        std::stringstream ss;
        ss << in.rdbuf();
        texts.push_back(ss.str());
    }
    REQUIRE(texts.size() >= 10);
    std::sort(texts.begin(), texts.end());
    std::mt19937 rng(7);
    std::size_t reused = 0;
    for (const auto& text : texts) {
        semantics::CheckCache cache;
        auto lines = lines_of(text);
        for (int edit = 0; edit < 12 && !lines.empty(); ++edit) {
            const auto at = rng() % lines.size();
            switch (rng() % 4) {
            case 0:
                lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(at));
                break;
            case 1:
                lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(at), lines[at]);
                break;
            case 2:
                lines[at] = " " + lines[at];
                break;
            default:
                lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(at), "# edit");
                break;
            }
            const auto edited = join_lines(lines);
            SourceFile file("edit.ein", edited);
            if (parser::parse(file).has_errors()) continue;
            const auto cached = check_with(edited, &cache);
            reused += cache.hits();
            require_same(cached, check_with(edited, nullptr));
        }
    }
    CHECK(reused > 100); // the cache was really used
}
