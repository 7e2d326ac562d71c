// Small sorted-vector containers with the std::map / std::set interface the checker uses.
// The checker builds and drops thousands of tiny index sets and shardings per statement;
// node-based containers spent a quarter of its time in malloc.
#pragma once

#include "plan.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace shardscope::semantics {

/// Room made on the first insertion: the checker's sets and maps rarely outgrow it, and
/// growing 1, 2, 4, 8 cost a heap block each time.
inline constexpr std::size_t kFirstCapacity = 8;

/// The containers' order: operator<, except for index ids, which compare their (short) names
/// inline instead of through a call to memcmp, in the same order as IndexId's operator<=>.
template <typename T>
struct FlatOrder {
    static bool less(const T& a, const T& b) { return a < b; }
    static bool equal(const T& a, const T& b) { return a == b; }
};

template <>
struct FlatOrder<IndexId> {
    /// <0, 0, >0 as std::string::compare (bytes as unsigned char, then length).
    static int compare_names(const std::string& a, const std::string& b) {
        const auto n = std::min(a.size(), b.size());
        for (std::size_t c = 0; c < n; ++c) {
            const auto x = static_cast<unsigned char>(a[c]);
            const auto y = static_cast<unsigned char>(b[c]);
            if (x != y) return x < y ? -1 : 1;
        }
        return a.size() < b.size() ? -1 : a.size() > b.size() ? 1 : 0;
    }
    static bool less(const IndexId& a, const IndexId& b) {
        const int c = compare_names(a.name, b.name);
        return c < 0 || (c == 0 && a.primes < b.primes);
    }
    static bool equal(const IndexId& a, const IndexId& b) {
        if (a.primes != b.primes || a.name.size() != b.name.size()) return false;
        const char* x = a.name.data();
        const char* y = b.name.data();
        for (std::size_t c = 0, n = a.name.size(); c < n; ++c)
            if (x[c] != y[c]) return false;
        return true;
    }
};

/// Sets and maps this small are searched from the front: a test for equality fails on the
/// first byte or the length, where a binary search orders whole names.
inline constexpr std::size_t kScanLimit = 8;

template <typename K, typename V>
class FlatMap {
public:
    using value_type = std::pair<K, V>;
    using iterator = typename std::vector<value_type>::iterator;
    using const_iterator = typename std::vector<value_type>::const_iterator;

    iterator begin() { return items_.begin(); }
    iterator end() { return items_.end(); }
    const_iterator begin() const { return items_.begin(); }
    const_iterator end() const { return items_.end(); }
    bool empty() const { return items_.empty(); }
    std::size_t size() const { return items_.size(); }
    void clear() { items_.clear(); }

    iterator find(const K& k) {
        if (items_.size() <= kScanLimit) {
            for (auto it = items_.begin(); it != items_.end(); ++it)
                if (FlatOrder<K>::equal(it->first, k)) return it;
            return items_.end();
        }
        auto it = lower(k);
        return it != items_.end() && FlatOrder<K>::equal(it->first, k) ? it : items_.end();
    }
    const_iterator find(const K& k) const {
        if (items_.size() <= kScanLimit) {
            for (auto it = items_.begin(); it != items_.end(); ++it)
                if (FlatOrder<K>::equal(it->first, k)) return it;
            return items_.end();
        }
        auto it =
            std::lower_bound(items_.begin(), items_.end(), k, [](const value_type& a, const K& b) {
                return FlatOrder<K>::less(a.first, b);
            });
        return it != items_.end() && FlatOrder<K>::equal(it->first, k) ? it : items_.end();
    }
    std::size_t count(const K& k) const { return find(k) != end() ? 1 : 0; }
    V& operator[](const K& k) {
        if (items_.capacity() == 0) items_.reserve(kFirstCapacity);
        auto it = lower(k);
        if (it == items_.end() || !FlatOrder<K>::equal(it->first, k))
            it = items_.insert(it, {k, V{}});
        return it->second;
    }
    const V& at(const K& k) const { return find(k)->second; }
    iterator erase(iterator it) { return items_.erase(it); }
    void erase(const K& k) {
        if (auto it = find(k); it != items_.end()) items_.erase(it);
    }
    bool operator==(const FlatMap&) const = default;

private:
    iterator lower(const K& k) {
        return std::lower_bound(
            items_.begin(), items_.end(), k,
            [](const value_type& a, const K& b) { return FlatOrder<K>::less(a.first, b); });
    }
    std::vector<value_type> items_;
};

/// `Store`: a std::vector, or a SmallVec that keeps the usual few items inline (the
/// checker's index sets: no heap block per set).
template <typename T, typename Store = std::vector<T>>
class FlatSet {
public:
    using const_iterator = typename Store::const_iterator;

    FlatSet() = default;
    FlatSet(std::initializer_list<T> items) {
        for (const auto& x : items)
            insert(x);
    }
    const_iterator begin() const { return items_.begin(); }
    const_iterator end() const { return items_.end(); }
    bool empty() const { return items_.empty(); }
    std::size_t size() const { return items_.size(); }

    std::pair<const_iterator, bool> insert(const T& x) {
        if (items_.capacity() == 0) items_.reserve(kFirstCapacity);
        if (items_.size() <= kScanLimit) {
            // Equality first (cheap, and most inserts of a small set find the item), then
            // the place in order.
            for (auto it = items_.begin(); it != items_.end(); ++it)
                if (FlatOrder<T>::equal(*it, x)) return {it, false};
            auto it = items_.begin();
            while (it != items_.end() && FlatOrder<T>::less(*it, x))
                ++it;
            return {items_.insert(it, x), true};
        }
        auto it = std::lower_bound(items_.begin(), items_.end(), x, FlatOrder<T>::less);
        if (it != items_.end() && FlatOrder<T>::equal(*it, x)) return {it, false};
        return {items_.insert(it, x), true};
    }
    template <typename It>
    void insert(It first, It last) {
        for (; first != last; ++first)
            insert(*first);
    }
    std::size_t count(const T& x) const {
        if (items_.size() <= kScanLimit) {
            for (const auto& y : items_)
                if (FlatOrder<T>::equal(y, x)) return 1;
            return 0;
        }
        return std::binary_search(items_.begin(), items_.end(), x, FlatOrder<T>::less) ? 1 : 0;
    }
    bool operator==(const FlatSet&) const = default;

private:
    Store items_;
};

} // namespace shardscope::semantics
