// A vector of any values that keeps up to N inline: the plan's layouts and steps hold a few
// shapes, placements and axes each, built by the dozen per statement, and a heap block per
// std::vector was most of what checking a statement allocated.
#pragma once

#include "sequence_access.hpp"

#include <algorithm>
#include <compare>
#include <cstddef>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace shardscope {

/// std::vector's interface (the part the tool uses) with room for N elements inside the
/// object; the N+1st moves them all to the heap. Converts to and from std::vector.
template <typename T, std::size_t N>
class InlineVec : public SequenceAccess<InlineVec<T, N>, T> {
    static_assert(N > 0);

public:
    using size_type = std::size_t;
    using reference = T&;
    using const_reference = const T&;

    InlineVec() = default;
    InlineVec(std::initializer_list<T> items) { append(items.begin(), items.end()); }
    template <typename It, typename = typename std::iterator_traits<It>::iterator_category>
    InlineVec(It first, It last) {
        append(first, last);
    }
    explicit InlineVec(std::size_t n) { resize(n); }
    InlineVec(std::size_t n, const T& x) { resize(n, x); }
    InlineVec(const std::vector<T>& v) { append(v.begin(), v.end()); } // NOLINT: a drop-in
    InlineVec(const InlineVec& o) {
        if constexpr (std::is_trivially_copyable_v<T>)
            if (o.size_ <= N) {
                copy_inline(o);
                return;
            }
        append(o.begin(), o.end());
    }
    InlineVec(InlineVec&& o) noexcept(std::is_nothrow_move_constructible_v<T>) { take(o); }
    InlineVec& operator=(const InlineVec& o) {
        if (this != &o) assign(o.begin(), o.end());
        return *this;
    }
    InlineVec& operator=(InlineVec&& o) noexcept(std::is_nothrow_move_constructible_v<T>) {
        if (this != &o) {
            clear();
            release();
            take(o);
        }
        return *this;
    }
    InlineVec& operator=(const std::vector<T>& v) {
        assign(v.begin(), v.end());
        return *this;
    }
    InlineVec& operator=(std::initializer_list<T> items) {
        assign(items.begin(), items.end());
        return *this;
    }
    ~InlineVec() {
        clear();
        release();
    }

    /// A std::vector copy, for the interfaces that take one. Explicit, so that every copy is
    /// written where it happens (an implicit one hid a copy behind each such call).
    std::vector<T> to_vector() const { return std::vector<T>(this->begin(), this->end()); }

    T* data() { return heap_ ? heap_ : inline_data(); }
    const T* data() const { return heap_ ? heap_ : inline_data(); }
    std::size_t size() const { return size_; }
    std::size_t capacity() const { return capacity_; }

    void reserve(std::size_t n) {
        if (n <= capacity_) return;
        T* block = std::allocator<T>().allocate(n);
        T* from = data();
        for (std::size_t i = 0; i < size_; ++i) {
            ::new (static_cast<void*>(block + i)) T(std::move(from[i]));
            from[i].~T();
        }
        release();
        heap_ = block;
        capacity_ = n;
    }
    void clear() {
        std::destroy_n(data(), size_);
        size_ = 0;
    }
    void push_back(const T& x) { emplace_back(x); }
    void push_back(T&& x) { emplace_back(std::move(x)); }
    template <typename... Args>
    T& emplace_back(Args&&... args) {
        if (size_ == capacity_) {
            T made(std::forward<Args>(args)...); // args may refer to an element
            grow(size_ + 1);
            return *::new (static_cast<void*>(data() + size_++)) T(std::move(made));
        }
        return *::new (static_cast<void*>(data() + size_++)) T(std::forward<Args>(args)...);
    }
    void pop_back() { data()[--size_].~T(); }
    void resize(std::size_t n) {
        shrink_to(n);
        grow(n);
        while (size_ < n)
            ::new (static_cast<void*>(data() + size_++)) T();
    }
    void resize(std::size_t n, const T& x) {
        shrink_to(n);
        if (n > size_) {
            const T copy = x; // x may be an element
            grow(n);
            while (size_ < n)
                ::new (static_cast<void*>(data() + size_++)) T(copy);
        }
    }
    template <typename It, typename = typename std::iterator_traits<It>::iterator_category>
    void assign(It first, It last) {
        clear();
        append(first, last);
    }
    void assign(std::size_t n, const T& x) {
        const T copy = x;
        clear();
        resize(n, copy);
    }
    T* insert(const T* pos, T x) {
        const auto at = static_cast<std::size_t>(pos - data());
        emplace_back(std::move(x));
        std::rotate(data() + at, data() + size_ - 1, data() + size_);
        return data() + at;
    }
    template <typename It, typename = typename std::iterator_traits<It>::iterator_category>
    T* insert(const T* pos, It first, It last) {
        const auto at = static_cast<std::size_t>(pos - data());
        const auto old = size_;
        append(first, last);
        std::rotate(data() + at, data() + old, data() + size_);
        return data() + at;
    }
    T* erase(const T* first, const T* last) {
        T* d = data();
        const auto a = static_cast<std::size_t>(first - d);
        const auto b = static_cast<std::size_t>(last - d);
        std::move(d + b, d + size_, d + a);
        shrink_to(size_ - (b - a));
        return data() + a;
    }
    T* erase(const T* pos) { return erase(pos, pos + 1); }

    friend bool operator==(const InlineVec& a, const InlineVec& b) {
        return a.size_ == b.size_ && std::equal(a.begin(), a.end(), b.begin());
    }
    friend bool operator==(const InlineVec& a, const std::vector<T>& b) {
        return a.size_ == b.size() && std::equal(a.begin(), a.end(), b.begin());
    }
    friend auto operator<=>(const InlineVec& a, const InlineVec& b) {
        return std::lexicographical_compare_three_way(a.begin(), a.end(), b.begin(), b.end());
    }

private:
    T* inline_data() { return std::launder(reinterpret_cast<T*>(inline_)); }
    const T* inline_data() const { return std::launder(reinterpret_cast<const T*>(inline_)); }
    /// Room for n, doubling: appending one at a time stays amortised O(1).
    void grow(std::size_t n) {
        if (n > capacity_) reserve(std::max(n, capacity_ * 2));
    }
    void shrink_to(std::size_t n) {
        while (size_ > n)
            data()[--size_].~T();
    }
    template <typename It>
    void append(It first, It last) {
        if constexpr (std::is_base_of_v<std::forward_iterator_tag,
                                        typename std::iterator_traits<It>::iterator_category>) {
            // Room first, then each element made in place: no capacity test per element.
            grow(size_ + static_cast<std::size_t>(std::distance(first, last)));
            T* d = data();
            for (; first != last; ++first)
                ::new (static_cast<void*>(d + size_++)) T(*first);
        } else {
            for (; first != last; ++first)
                emplace_back(*first);
        }
    }
    /// A copy of `o` (at most N elements) into this empty, inline one: the whole inline room
    /// in one copy of constant size, where a loop over the elements cost a test each.
    void copy_inline(const InlineVec& o) {
        std::memcpy(static_cast<void*>(inline_), static_cast<const void*>(o.data()),
                    o.size_ * sizeof(T));
        size_ = o.size_;
    }
    void take(InlineVec& o) {
        if (o.heap_) {
            heap_ = o.heap_;
            capacity_ = o.capacity_;
            size_ = o.size_;
            o.heap_ = nullptr;
            o.capacity_ = N;
            o.size_ = 0;
            return;
        }
        if constexpr (std::is_trivially_copyable_v<T>) {
            copy_inline(o);
            o.size_ = 0;
            return;
        }
        T* from = o.inline_data();
        for (std::size_t i = 0; i < o.size_; ++i)
            ::new (static_cast<void*>(inline_data() + i)) T(std::move(from[i]));
        size_ = o.size_;
        o.clear();
    }
    void release() {
        if (heap_) std::allocator<T>().deallocate(heap_, capacity_);
        heap_ = nullptr;
        capacity_ = N;
    }

    T* heap_ = nullptr;
    std::size_t size_ = 0;
    std::size_t capacity_ = N;
    alignas(T) unsigned char inline_[N * sizeof(T)];
};

} // namespace shardscope
