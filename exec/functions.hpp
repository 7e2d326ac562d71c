// What the notation's functions compute when a plan runs: shared by the ranks and the
// single-device reference so both mean the same thing.
#pragma once

#include "exec/tensor.hpp"

#include <cmath>
#include <string>

namespace shardscope::exec {

/// Applies function `name` elementwise, in place. Conventions (README): phi is GELU; log and
/// sqrt act on |x| so that random data stays in their domain; scale multiplies by 1/2; a
/// function the program declares (`fn f elementwise|linear`) runs as tanh (elementwise) or
/// as scale (linear), stand-ins with the same placement rules.
template <class T>
void apply_function(Tensor<T>& x, const std::string& name, bool linear) {
    auto each = [&](auto f) {
        for (auto& v : x.data)
            v = static_cast<T>(f(static_cast<double>(v)));
    };
    if (name == "relu")
        each([](double v) { return v > 0 ? v : 0.0; });
    else if (name == "gelu" || name == "phi")
        each([](double v) { return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))); });
    else if (name == "silu")
        each([](double v) { return v / (1.0 + std::exp(-v)); });
    else if (name == "sigmoid")
        each([](double v) { return 1.0 / (1.0 + std::exp(-v)); });
    else if (name == "exp")
        each([](double v) { return std::exp(v); });
    else if (name == "log")
        each([](double v) { return std::log(std::abs(v)); });
    else if (name == "sqrt")
        each([](double v) { return std::sqrt(std::abs(v)); });
    else if (name == "neg")
        each([](double v) { return -v; });
    else if (name == "scale" || linear)
        each([](double v) { return 0.5 * v; });
    else // tanh, and the stand-in for declared elementwise functions
        each([](double v) { return std::tanh(v); });
}

} // namespace shardscope::exec
