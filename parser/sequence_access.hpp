// The read accessors every contiguous sequence of the tool shares (OneInline, InlineVec and
// the checker's SmallVec differ only in where their elements live).
#pragma once

#include <cstddef>
#include <iterator>
#include <stdexcept>

namespace shardscope {

/// Iteration and element access over `Derived::data()` and `Derived::size()` (CRTP).
template <typename Derived, typename T>
class SequenceAccess {
public:
    using value_type = T;
    using iterator = T*;
    using const_iterator = const T*;

    T* begin() { return self().data(); }
    T* end() { return self().data() + self().size(); }
    const T* begin() const { return self().data(); }
    const T* end() const { return self().data() + self().size(); }
    std::reverse_iterator<T*> rbegin() { return std::reverse_iterator<T*>(end()); }
    std::reverse_iterator<T*> rend() { return std::reverse_iterator<T*>(begin()); }
    std::reverse_iterator<const T*> rbegin() const {
        return std::reverse_iterator<const T*>(end());
    }
    std::reverse_iterator<const T*> rend() const {
        return std::reverse_iterator<const T*>(begin());
    }
    bool empty() const { return self().size() == 0; }
    T& operator[](std::size_t i) { return self().data()[i]; }
    const T& operator[](std::size_t i) const { return self().data()[i]; }
    T& front() { return self().data()[0]; }
    const T& front() const { return self().data()[0]; }
    T& back() { return self().data()[self().size() - 1]; }
    const T& back() const { return self().data()[self().size() - 1]; }
    const T& at(std::size_t i) const {
        if (i >= self().size()) throw std::out_of_range("sequence index out of range");
        return self().data()[i];
    }
    T& at(std::size_t i) {
        if (i >= self().size()) throw std::out_of_range("sequence index out of range");
        return self().data()[i];
    }

private:
    Derived& self() { return static_cast<Derived&>(*this); }
    const Derived& self() const { return static_cast<const Derived&>(*this); }
};

} // namespace shardscope
