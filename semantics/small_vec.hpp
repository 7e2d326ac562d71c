// A vector of trivially copyable values that keeps up to N of them inline: the checker's
// per-index mesh-axis lists and resolved axes are one or two ints, made and dropped by the
// thousand per statement, and a heap block each was a large part of its time.
#pragma once

#include "parser/one_inline.hpp"
#include "parser/sequence_access.hpp"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <initializer_list>
#include <type_traits>
#include <utility>
#include <vector>

namespace shardscope::semantics {

template <typename T, std::size_t N>
class SmallVec : public SequenceAccess<SmallVec<T, N>, T> {
    static_assert(std::is_trivially_copyable_v<T>);

public:
    SmallVec() = default;
    SmallVec(std::initializer_list<T> items) { assign(items.begin(), items.end()); }
    template <typename It>
    SmallVec(It first, It last) {
        assign(first, last);
    }
    explicit SmallVec(const std::vector<T>& v) { assign(v.begin(), v.end()); }
    SmallVec(const SmallVec& o) {
        if (o.size_ <= N) {
            copy_inline(o);
            return;
        }
        assign(o.begin(), o.end());
    }
    SmallVec(SmallVec&& o) noexcept { take(o); }
    SmallVec& operator=(const SmallVec& o) {
        if (this != &o) {
            if (!heap_ && o.size_ <= N) {
                copy_inline(o);
                return *this;
            }
            size_ = 0;
            assign(o.begin(), o.end());
        }
        return *this;
    }
    SmallVec& operator=(SmallVec&& o) noexcept {
        if (this != &o) {
            release();
            take(o);
        }
        return *this;
    }
    ~SmallVec() { release(); }

    T* data() { return heap_ ? heap_ : inline_; }
    const T* data() const { return heap_ ? heap_ : inline_; }
    std::size_t size() const { return size_; }
    std::size_t capacity() const { return capacity_; }
    void clear() { size_ = 0; }

    void reserve(std::size_t n) {
        if (n <= capacity_) return;
        T* block = new T[n];
        if (size_) std::memcpy(block, data(), size_ * sizeof(T));
        delete[] heap_;
        heap_ = block;
        capacity_ = n;
    }
    void push_back(const T& x) {
        if (size_ == capacity_) {
            const T copy = x; // x may live in this vector
            reserve(capacity_ * 2);
            data()[size_++] = copy;
            return;
        }
        data()[size_++] = x;
    }
    T* insert(const T* pos, const T& x) {
        const auto at = static_cast<std::size_t>(pos - data());
        const T copy = x;
        if (size_ == capacity_) reserve(capacity_ * 2);
        T* d = data();
        std::memmove(d + at + 1, d + at, (size_ - at) * sizeof(T));
        d[at] = copy;
        ++size_;
        return d + at;
    }
    T* erase(const T* first, const T* last) {
        T* d = data();
        const auto a = static_cast<std::size_t>(first - d);
        const auto b = static_cast<std::size_t>(last - d);
        std::memmove(d + a, d + b, (size_ - b) * sizeof(T));
        size_ -= b - a;
        return d + a;
    }
    T* erase(const T* pos) { return erase(pos, pos + 1); }
    void resize(std::size_t n, const T& x = T{}) {
        reserve(n);
        for (std::size_t i = size_; i < n; ++i)
            data()[i] = x;
        size_ = n;
    }

    std::vector<T> to_vector() const { return std::vector<T>(this->begin(), this->end()); }

    friend bool operator==(const SmallVec& a, const SmallVec& b) {
        return a.size_ == b.size_ && std::equal(a.begin(), a.end(), b.begin());
    }
    friend bool operator<(const SmallVec& a, const SmallVec& b) {
        return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
    }

private:
    template <typename It>
    void assign(It first, It last) {
        reserve(static_cast<std::size_t>(std::distance(first, last)));
        for (; first != last; ++first)
            data()[size_++] = *first;
    }
    /// Every inline slot copied, used or not: a copy of a constant (small) size is a few
    /// moves, where one of `size_` elements was a loop or a call to memcpy. `o` holds at most
    /// N (on the heap, its block has room for more than N); this one is inline.
    void copy_inline(const SmallVec& o) {
        std::memcpy(static_cast<void*>(inline_), static_cast<const void*>(o.data()),
                    sizeof inline_);
        size_ = o.size_;
    }
    void take(SmallVec& o) {
        size_ = o.size_;
        if (o.heap_) {
            heap_ = o.heap_;
            capacity_ = o.capacity_;
            o.heap_ = nullptr;
            o.capacity_ = N;
        } else {
            std::memcpy(static_cast<void*>(inline_), static_cast<const void*>(o.inline_),
                        sizeof inline_);
        }
        o.size_ = 0;
    }
    void release() {
        if (heap_) delete[] heap_; // most never leave their inline room: no call then
        heap_ = nullptr;
        capacity_ = N;
    }

    T* heap_ = nullptr;
    std::size_t size_ = 0;
    std::size_t capacity_ = N;
    T inline_[N];
};

/// A sequence that keeps one value inline (parser/one_inline.hpp): a dimension of a value
/// is one index but for a group.
using shardscope::OneInline;

} // namespace shardscope::semantics
