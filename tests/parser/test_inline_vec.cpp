// InlineVec (parser/inline_vec.hpp): std::vector's behaviour with the first N elements inside
// the object, for values that own memory (strings) as much as for ints.
#include "parser/inline_vec.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using shardscope::InlineVec;

namespace {

/// Counts live objects, so that a leak or a double destruction shows.
struct Tracked {
    static inline int live = 0;
    std::string text;
    Tracked() { ++live; }
    explicit Tracked(std::string t) : text(std::move(t)) { ++live; }
    Tracked(const Tracked& o) : text(o.text) { ++live; }
    Tracked(Tracked&& o) noexcept : text(std::move(o.text)) { ++live; }
    Tracked& operator=(const Tracked&) = default;
    Tracked& operator=(Tracked&&) noexcept = default;
    ~Tracked() { --live; }
    bool operator==(const Tracked& o) const { return text == o.text; }
};

/// Long enough that std::string keeps it on the heap: a bad move or copy would show as a
/// wrong value, a leak or a double free (under the sanitizers).
std::string long_text(int i) {
    return "a string longer than the small-string buffer #" + std::to_string(i);
}

std::vector<std::string> texts_of(const InlineVec<Tracked, 2>& v) {
    std::vector<std::string> out;
    for (const auto& t : v)
        out.push_back(t.text);
    return out;
}

} // namespace

TEST_CASE("InlineVec keeps N inline and moves to the heap past them") {
    Tracked::live = 0;
    {
        InlineVec<Tracked, 2> v;
        CHECK(v.empty());
        CHECK(v.capacity() == 2);
        v.emplace_back(long_text(0));
        v.push_back(Tracked(long_text(1)));
        CHECK(v.capacity() == 2);
        v.emplace_back(long_text(2)); // spills
        CHECK(v.size() == 3);
        CHECK(v.capacity() >= 3);
        CHECK(texts_of(v) == std::vector<std::string>{long_text(0), long_text(1), long_text(2)});
        CHECK(Tracked::live == 3);
        SUBCASE("an element appended to itself when full") {
            InlineVec<Tracked, 2> w;
            w.emplace_back(long_text(7));
            w.emplace_back(long_text(8));
            w.push_back(w[0]); // the argument lives in the block that grows
            CHECK(texts_of(w) ==
                  std::vector<std::string>{long_text(7), long_text(8), long_text(7)});
        }
        SUBCASE("copy and move, inline and on the heap") {
            InlineVec<Tracked, 2> copy = v;
            CHECK(copy == v);
            InlineVec<Tracked, 2> moved = std::move(copy);
            CHECK(moved == v);
            CHECK(copy.empty()); // NOLINT: moved-from is empty, as documented
            InlineVec<Tracked, 2> small;
            small.emplace_back(long_text(5));
            InlineVec<Tracked, 2> small_moved = std::move(small);
            CHECK(texts_of(small_moved) == std::vector<std::string>{long_text(5)});
            small_moved = v; // inline to heap by copy
            CHECK(small_moved == v);
            moved = InlineVec<Tracked, 2>{Tracked(long_text(9))}; // heap to inline by move
            CHECK(texts_of(moved) == std::vector<std::string>{long_text(9)});
        }
        SUBCASE("erase, insert, resize, pop_back") {
            v.erase(v.begin());
            CHECK(texts_of(v) == std::vector<std::string>{long_text(1), long_text(2)});
            v.insert(v.begin() + 1, Tracked(long_text(4)));
            CHECK(texts_of(v) ==
                  std::vector<std::string>{long_text(1), long_text(4), long_text(2)});
            v.resize(5);
            CHECK(v.size() == 5);
            CHECK(v[4].text.empty());
            v.resize(1);
            CHECK(texts_of(v) == std::vector<std::string>{long_text(1)});
            v.pop_back();
            CHECK(v.empty());
        }
    }
    CHECK(Tracked::live == 0);
}

TEST_CASE("InlineVec converts to and from std::vector and compares like one") {
    const std::vector<long> from{3, 1, 4, 1, 5};
    InlineVec<long, 4> v = from; // more than fit inline
    CHECK(v.size() == 5);
    CHECK(v == from);
    CHECK(v.to_vector() == from);
    InlineVec<long, 4> shorter{3, 1, 4};
    CHECK(shorter < v);
    CHECK_FALSE(v < shorter);
    CHECK(shorter != v);
    v.assign(2, 7);
    CHECK(v == std::vector<long>{7, 7});
    v = {1, 2};
    CHECK(v == InlineVec<long, 4>{1, 2});
    CHECK(v.at(1) == 2);
    CHECK_THROWS_AS(v.at(2), std::out_of_range);
    v.insert(v.end(), from.begin(), from.begin() + 2);
    CHECK(v == std::vector<long>{1, 2, 3, 1});
    CHECK(v.front() == 1);
    CHECK(v.back() == 1);
}
