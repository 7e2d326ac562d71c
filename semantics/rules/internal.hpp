// Internal to semantics/: what the rule files (semantics/rules/*.cpp) and the evaluator's
// machinery (semantics/evaluator.cpp) share. The Evaluator is one class; its members are
// defined across those files, one file per rule family of NOTATION.md section 6.
#pragma once

#include "semantics/evaluator.hpp"

#include <string>
#include <string_view>

namespace shardscope::semantics::detail {

/// `i` as written (`d'`); an unprimed index is its name, without building it again.
inline std::string text_of(const IndexId& i) {
    return i.primes == 0 ? i.name : i.text();
}
/// The same for a key.
inline std::string text_of(IndexKey i) {
    return i.text();
}

/// The concatenation of `parts` in one allocation (a chain of `+` makes one per step).
template <class... S>
std::string cat(const S&... parts) {
    std::string out;
    out.reserve((std::string_view(parts).size() + ...));
    (out.append(std::string_view(parts)), ...);
    return out;
}

} // namespace shardscope::semantics::detail
