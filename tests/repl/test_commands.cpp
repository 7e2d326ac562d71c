// The REPL's command table (app/repl_commands.hpp): every row is listed by `:help`, offered by
// completion and reached by the dispatch, under each of its names.
#include "repl_commands.hpp"
#include "repl_session.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

using namespace shardscope;
using app::Answer;
using app::ReplCommand;
using app::Session;

namespace {

bool has(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

bool takes_no_words(const ReplCommand& c) {
    return c.args == ReplCommand::Args::None || c.args == ReplCommand::Args::AtMostOne ||
           c.args == ReplCommand::Args::Text;
}

} // namespace

TEST_CASE("command table: names are unique commands, found under every alias") {
    const auto& table = app::repl_commands();
    REQUIRE(table.size() >= 16);
    std::set<std::string> seen;
    for (const auto& c : table) {
        REQUIRE_FALSE(c.names.empty());
        CHECK(c.run);
        CHECK_MESSAGE(c.usage.rfind(c.names.front(), 0) == 0, c.usage);
        for (const auto& n : c.names) {
            CHECK_MESSAGE(n.size() > 1, n);
            CHECK_MESSAGE(n[0] == ':', n);
            CHECK_MESSAGE(seen.insert(n).second, n << " names two commands");
            CHECK_MESSAGE(app::find_repl_command(n) == &c, n);
        }
    }
    CHECK(app::find_repl_command(":nope") == nullptr);
    CHECK(app::find_repl_command("help") == nullptr);
}

TEST_CASE("command table: :help lists every command with its usage and summary") {
    Session s;
    const auto h = s.eval(":help").text;
    for (const auto& c : app::repl_commands()) {
        CHECK_MESSAGE(has(h, "\n  " + c.usage), c.usage);
        const auto first = c.summary.substr(0, c.summary.find('\n'));
        CHECK_MESSAGE(has(h, first), first);
    }
}

TEST_CASE("command table: completion offers the first name of every command") {
    const auto& table = app::repl_commands();
    const auto& names = Session::commands();
    REQUIRE(names.size() == table.size());
    for (std::size_t k = 0; k < table.size(); ++k)
        CHECK(names[k] == table[k].names.front());
    const auto* strict = app::find_repl_command(":strict");
    REQUIRE(strict);
    CHECK(strict->completes == ReplCommand::Completes::Choices);
    CHECK(strict->choices == std::vector<std::string>{"on", "off"});
    for (const char* n : {":load", ":save"}) {
        REQUIRE(app::find_repl_command(n));
        CHECK(app::find_repl_command(n)->completes == ReplCommand::Completes::File);
    }
    for (const char* n : {":show", ":viz"}) {
        REQUIRE(app::find_repl_command(n));
        CHECK(app::find_repl_command(n)->completes == ReplCommand::Completes::Tensor);
    }
}

TEST_CASE("command table: the dispatch runs each row's own handler under every name") {
    // On an empty session, each command typed bare answers as its handler does, or with its
    // own usage line where it needs words; the answers of different commands all differ, so
    // a name dispatched to another row's handler would show.
    std::vector<std::string> answers;
    for (const auto& c : app::repl_commands()) {
        Session direct;
        const Answer expected = takes_no_words(c) ? c.run(direct, "", {}) : Answer{};
        for (const auto& n : c.names) {
            Session s;
            const Answer a = s.eval(n);
            CHECK_MESSAGE(!has(a.text, "unknown command"), n);
            if (takes_no_words(c)) {
                CHECK_MESSAGE(a.text == expected.text, n);
                CHECK_MESSAGE(a.error == expected.error, n);
                CHECK_MESSAGE(a.quit == expected.quit, n);
            } else {
                CHECK_MESSAGE(a.error, n);
                CHECK_MESSAGE(a.text.rfind("usage: " + c.usage, 0) == 0, n << ": " << a.text);
            }
        }
        Session s;
        const Answer a = s.eval(c.names.front());
        answers.push_back(a.text + (a.quit ? "[quit]" : ""));
    }
    for (std::size_t i = 0; i < answers.size(); ++i)
        for (std::size_t j = 0; j < i; ++j)
            CHECK_MESSAGE(answers[i] != answers[j], app::repl_commands()[i].names.front()
                                                        << " answers as "
                                                        << app::repl_commands()[j].names.front());
}

TEST_CASE("command table: a command given the wrong number of words is not run") {
    Session s;
    for (const auto& c : app::repl_commands())
        if (c.args == ReplCommand::Args::None) {
            const auto a = s.eval(c.names.front() + " extra");
            CHECK(a.error);
            CHECK(a.text == c.names.front() + " takes no arguments\n");
        }
    CHECK(s.eval(":show a b").text == "usage: :show NAME (:tensors lists them)\n");
    CHECK(s.eval(":plan 1 2").text == "usage: :plan [LINE]\n");
}
