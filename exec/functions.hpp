// What the notation's functions compute when a plan runs: shared by the ranks and the
// single-device reference so both mean the same thing.
#pragma once

#include "exec/tensor.hpp"

#include <cmath>
#include <string>

namespace shardscope::exec {

/// Names the executor gives a meaning of their own (the rest of the declared functions run as
/// tanh).
inline bool is_builtin_stand_in(const std::string& name) {
    return name == "relu" || name == "gelu" || name == "phi" || name == "silu" ||
           name == "sigmoid" || name == "exp" || name == "log" || name == "sqrt" || name == "neg" ||
           name == "scale" || name == "tanh";
}

/// Applies function `name` elementwise, in place. Conventions (README): phi is GELU; log and
/// sqrt act on |x| so that random data stays in their domain; scale multiplies by 1/2; a
/// function the program declares (`fn f elementwise|linear`) runs as tanh (elementwise) or
/// as scale (linear), stand-ins with the same placement rules. The backward's functions
/// (declared by `shardscope grad`) run as what they stand for: `ones` is 1, `dmax(x)` is 1
/// where x is 0, and `d` + a function is its derivative (of the stand-in, for a declared one).
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
    // The backward's conventions (semantics/grad.hpp): ones, dmax, and dF = F'.
    else if (name == "ones")
        each([](double) { return 1.0; });
    else if (name == "dmax")
        each([](double v) { return v == 0 ? 1.0 : 0.0; });
    else if (name == "drelu")
        each([](double v) { return v > 0 ? 1.0 : 0.0; });
    else if (name == "dgelu" || name == "dphi")
        each([](double v) {
            return 0.5 * (1.0 + std::erf(v / std::sqrt(2.0))) +
                   v * std::exp(-0.5 * v * v) * 0.3989422804014327; // 1/sqrt(2 pi)
        });
    else if (name == "dsilu")
        each([](double v) {
            const double s = 1.0 / (1.0 + std::exp(-v));
            return s * (1.0 + v * (1.0 - s));
        });
    else if (name == "dsigmoid")
        each([](double v) {
            const double s = 1.0 / (1.0 + std::exp(-v));
            return s * (1.0 - s);
        });
    else if (name == "dexp")
        each([](double v) { return std::exp(v); });
    else if (name == "dlog") // d/dx log|x|
        each([](double v) { return 1.0 / v; });
    else if (name == "dsqrt") // d/dx sqrt|x|
        each([](double v) { return (v < 0 ? -0.5 : 0.5) / std::sqrt(std::abs(v)); });
    else if (!linear && name.size() > 1 && name[0] == 'd' && name != "dtanh" &&
             !is_builtin_stand_in(name))
        // The derivative of a declared function's stand-in (tanh), as dtanh below.
        each([](double v) { return 1.0 - std::tanh(v) * std::tanh(v); });
    else if (name == "dtanh")
        each([](double v) { return 1.0 - std::tanh(v) * std::tanh(v); });
    else if (name == "neg")
        each([](double v) { return -v; });
    else if (name == "scale" || linear)
        each([](double v) { return 0.5 * v; });
    else // tanh, and the stand-in for declared elementwise functions
        each([](double v) { return std::tanh(v); });
}

} // namespace shardscope::exec
