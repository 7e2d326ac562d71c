// Small sorted-vector containers with the std::map / std::set interface the checker uses.
// The checker builds and drops thousands of tiny index sets and shardings per statement;
// node-based containers spent a quarter of its time in malloc.
#pragma once

#include <algorithm>
#include <utility>
#include <vector>

namespace shardscope::semantics {

/// Room made on the first insertion: the checker's sets and maps rarely outgrow it, and
/// growing 1, 2, 4, 8 cost a heap block each time.
inline constexpr std::size_t kFirstCapacity = 8;

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
        auto it = lower(k);
        return it != items_.end() && it->first == k ? it : items_.end();
    }
    const_iterator find(const K& k) const {
        auto it = std::lower_bound(items_.begin(), items_.end(), k,
                                   [](const value_type& a, const K& b) { return a.first < b; });
        return it != items_.end() && it->first == k ? it : items_.end();
    }
    std::size_t count(const K& k) const { return find(k) != end() ? 1 : 0; }
    V& operator[](const K& k) {
        if (items_.capacity() == 0) items_.reserve(kFirstCapacity);
        auto it = lower(k);
        if (it == items_.end() || !(it->first == k)) it = items_.insert(it, {k, V{}});
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
        return std::lower_bound(items_.begin(), items_.end(), k,
                                [](const value_type& a, const K& b) { return a.first < b; });
    }
    std::vector<value_type> items_;
};

template <typename T>
class FlatSet {
public:
    using const_iterator = typename std::vector<T>::const_iterator;

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
        auto it = std::lower_bound(items_.begin(), items_.end(), x);
        if (it != items_.end() && *it == x) return {it, false};
        return {items_.insert(it, x), true};
    }
    template <typename It>
    void insert(It first, It last) {
        for (; first != last; ++first)
            insert(*first);
    }
    std::size_t count(const T& x) const {
        return std::binary_search(items_.begin(), items_.end(), x) ? 1 : 0;
    }
    bool operator==(const FlatSet&) const = default;

private:
    std::vector<T> items_;
};

} // namespace shardscope::semantics
