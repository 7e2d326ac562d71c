// semantics/index_key.hpp: the checker's integer index ids translate back to the ids they were
// made from, and sort and compare as those ids do (the checker's sets and maps iterate in that
// order), packed or interned.
#include "semantics/index_key.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using shardscope::semantics::IndexId;
using shardscope::semantics::detail::IndexKey;

namespace {

std::vector<IndexId> sample_ids() {
    return {
        {"", 0},
        {"", 2},
        {"b", 0},
        {"b", 1},
        {"b", 255},
        {"b", 256}, // too many primes to pack
        {"ab", 0},
        {"a", 3},
        {"abcdefg", 0},  // seven bytes: packed
        {"abcdefgh", 0}, // eight: interned
        {"abcdefgh", 1},
        {"abcdefg", 9},
        {"zz", 0},
        {"\xce\xb1", 0},                         // α, two bytes above 0x7f
        {"\xce\xb1\xce\xb2\xce\xb3\xce\xb4", 0}, // αβγδ: interned
        {std::string("a\0b", 3), 0},             // a zero byte: interned
        {"batch", 2},
        {"b", -1}, // negative primes: interned
    };
}

} // namespace

TEST_CASE("IndexKey: an id's key gives the id back, its text and its primes") {
    for (const auto& id : sample_ids()) {
        CAPTURE(id.name);
        CAPTURE(id.primes);
        const IndexKey key(id);
        CHECK(key.id() == id);
        if (id.primes >= 0) CHECK(key.text() == id.text()); // IndexId::text needs primes >= 0
        CHECK(key.primes() == id.primes);
        IndexId into{"something else", 7};
        key.assign_to(into);
        CHECK(into == id);
        CHECK(IndexKey(id.name, id.primes) == key);
        CHECK(key.letter() ==
              (id.name.size() == 1 && id.primes == 0 ? static_cast<unsigned char>(id.name[0]) : 0));
    }
}

TEST_CASE("IndexKey: keys compare and sort as their ids do") {
    const auto ids = sample_ids();
    for (const auto& a : ids)
        for (const auto& b : ids) {
            CAPTURE(a.name);
            CAPTURE(a.primes);
            CAPTURE(b.name);
            CAPTURE(b.primes);
            CHECK((IndexKey(a) == IndexKey(b)) == (a == b));
            CHECK((IndexKey(a) < IndexKey(b)) == (a < b));
        }
}
