// A sequence that keeps its first value inline, shared by the AST and the checker (both hold
// one index per written dimension but for a group).
#pragma once

#include "sequence_access.hpp"

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <utility>
#include <vector>

namespace shardscope {

/// A sequence of any values that keeps one inline and moves to the heap from the second: a
/// written dimension (the AST's, and a checker value's) is one index but for a group
/// (`(r c)`), and a vector per dimension cost a heap block for every dimension built or copied.
template <typename T>
class OneInline : public SequenceAccess<OneInline<T>, T> {
public:
    OneInline() = default;
    OneInline(std::initializer_list<T> items) {
        reserve(items.size());
        for (const auto& x : items)
            push_back(x);
    }

    T* data() { return size_ <= 1 ? &one_ : many_.data(); }
    const T* data() const { return size_ <= 1 ? &one_ : many_.data(); }
    std::size_t size() const { return size_; }
    void reserve(std::size_t n) {
        if (n > 1) many_.reserve(n);
    }
    void push_back(const T& x) {
        if (size_ == 0) {
            one_ = x;
            ++size_;
        } else {
            push_back(T(x)); // a copy first: x may be one of the elements
        }
    }
    /// Appends a value made from `args` (a default one for none) and returns it.
    template <typename... Args>
    T& emplace_back(Args&&... args) {
        // Empty, the inline value is still a default one (nothing shrinks a OneInline): a
        // default value needs no move into it.
        if constexpr (sizeof...(Args) == 0)
            if (size_ == 0) {
                ++size_;
                return one_;
            }
        push_back(T(std::forward<Args>(args)...));
        return this->back();
    }
    void push_back(T&& x) {
        if (size_ == 0) {
            one_ = std::move(x);
        } else if (size_ == 1) {
            T second = std::move(x); // before one_ moves: x may be one_ itself
            many_.push_back(std::move(one_));
            many_.push_back(std::move(second));
        } else {
            many_.push_back(std::move(x));
        }
        ++size_;
    }
    friend bool operator==(const OneInline& a, const OneInline& b) {
        return a.size_ == b.size_ && std::equal(a.begin(), a.end(), b.begin());
    }

private:
    T one_{};             ///< the only element while size_ <= 1
    std::vector<T> many_; ///< every element from the second on (one_ is then unused)
    std::size_t size_ = 0;
};

} // namespace shardscope
