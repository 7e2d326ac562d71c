// The checker's own index id: an `IndexId` (a name and a prime count) as one integer. The
// evaluator compares, copies and looks up index ids thousands of times per statement; as
// `IndexId`s (a std::string each) that was a large part of its time. `IndexId` stays the
// Plan's public type: keys are translated back (`id()`) only where a plan is built.
// Internal to semantics/.
#pragma once

#include "plan.hpp"

#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

namespace shardscope::semantics::detail {

/// An index id in one integer, in the same order as IndexId's (name, then primes), so that
/// sorted sets and maps of keys iterate as those of ids did. A name of up to 7 bytes
/// (without a zero byte) and up to 255 primes is packed: its bytes big-endian from the top
/// byte, zero-padded (a prefix sorts first, as in std::string), the primes in the low byte.
/// Any other id is interned in a process-wide table (its key has a zero top byte and a
/// nonzero middle); keys outlive a check (cached plans keep values), and a given id always
/// has the same key, so equal keys are equal ids.
class IndexKey {
public:
    constexpr IndexKey() = default;
    /// Implicit: code that holds an IndexId may look up, compare or insert it as a key.
    IndexKey(const IndexId& i) : key_(encode(i.name, i.primes)) {} // NOLINT
    IndexKey(std::string_view name, int primes) : key_(encode(name, primes)) {}

    /// The id as the Plan holds it.
    IndexId id() const {
        IndexId out;
        assign_to(out);
        return out;
    }
    /// The same into `out` (a layout's field: no temporary id).
    void assign_to(IndexId& out) const {
        if (is_letter()) { // most indices: one byte, appended in place
            out.primes = 0;
            out.name.clear();
            out.name.push_back(static_cast<char>(key_ >> 56));
            return;
        }
        assign_other_to(out);
    }
    /// `d'`, as IndexId::text.
    std::string text() const {
        if (is_letter()) return std::string(1, static_cast<char>(key_ >> 56));
        return id().text();
    }
    /// One unprimed byte (most indices): its byte, else 0.
    unsigned char letter() const {
        return is_letter() ? static_cast<unsigned char>(key_ >> 56) : 0;
    }
    int primes() const {
        return interned() ? table_at(key_).primes : static_cast<int>(key_ & 0xff);
    }
    std::uint64_t raw() const { return key_; }

    friend bool operator==(IndexKey a, IndexKey b) { return a.key_ == b.key_; }
    friend bool operator<(IndexKey a, IndexKey b) {
        if (!a.interned() && !b.interned()) return a.key_ < b.key_;
        return interned_less(a, b);
    }

private:
    /// assign_to for any other id (kept out of line: the letters' path is inlined).
    [[gnu::noinline]] void assign_other_to(IndexId& out) const {
        if (interned()) {
            out = table_at(key_);
            return;
        }
        out.primes = static_cast<int>(key_ & 0xff);
        // The name's bytes are the key's top bytes, big-endian: swapped, they lie in order.
        const std::uint64_t name = key_ & ~std::uint64_t{0xff};
        const std::size_t n = name ? 8 - static_cast<std::size_t>(__builtin_ctzll(name)) / 8 : 0;
        const std::uint64_t bytes = __builtin_bswap64(name);
        char text[8];
        std::memcpy(text, &bytes, sizeof bytes);
        out.name.clear();
        out.name.append(text, n);
    }

    /// operator< where a key is interned (out of line: the packed keys' test is inlined).
    [[gnu::noinline]] static bool interned_less(IndexKey a, IndexKey b) { return a.id() < b.id(); }

    static constexpr std::uint64_t kMiddle = 0x00ffffffffffff00ull;

    bool interned() const { return (key_ >> 56) == 0 && (key_ & kMiddle) != 0; }
    bool is_letter() const { return (key_ >> 56) != 0 && (key_ & ~(0xffull << 56)) == 0; }

    static std::uint64_t encode(std::string_view name, int primes) {
        if (name.size() <= 7 && primes >= 0 && primes <= 255) {
            std::uint64_t key = static_cast<std::uint64_t>(primes);
            bool zero = false;
            for (std::size_t c = 0; c < name.size(); ++c) {
                const auto b = static_cast<unsigned char>(name[c]);
                zero |= b == 0;
                key |= static_cast<std::uint64_t>(b) << (56 - 8 * c);
            }
            if (!zero) return key;
        }
        return intern(name, primes);
    }

    struct Table {
        std::mutex mutex;
        std::deque<IndexId> ids; ///< by key >> 8, minus one
        std::map<IndexId, std::uint64_t> keys;
    };
    static Table& table() {
        static Table t;
        return t;
    }
    [[gnu::noinline]] static std::uint64_t intern(std::string_view name, int primes) {
        auto& t = table();
        const std::lock_guard lock(t.mutex);
        IndexId id{std::string(name), primes};
        if (auto it = t.keys.find(id); it != t.keys.end()) return it->second;
        const auto key = static_cast<std::uint64_t>(t.ids.size() + 1) << 8;
        t.ids.push_back(id);
        t.keys.emplace(std::move(id), key);
        return key;
    }
    [[gnu::noinline]] static IndexId table_at(std::uint64_t key) {
        auto& t = table();
        const std::lock_guard lock(t.mutex);
        return t.ids[static_cast<std::size_t>((key >> 8) - 1)];
    }

    std::uint64_t key_ = 0; ///< {"", 0}
};

} // namespace shardscope::semantics::detail
