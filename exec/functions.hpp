// What the notation's functions compute when a plan runs: shared by the ranks and the
// single-device reference so both mean the same thing.
#pragma once

#include "exec/tensor.hpp"

#include <cmath>
#include <string>
#include <string_view>
#include <utility>

namespace shardscope::exec {

/// The functions a plan's steps apply elementwise, as one enumeration so that host and
/// device kernels evaluate the same formula (fn_eval).
enum class Fn {
    Relu,
    Gelu,
    Silu,
    Sigmoid,
    Exp,
    Log,
    Sqrt,
    Ones,
    Dmax,
    Drelu,
    Dgelu,
    Dsilu,
    Dsigmoid,
    Dexp,
    Dlog,
    Dsqrt,
    Dtanh,
    Neg,
    Half,
    Tanh
};

/// Every name the executor gives a meaning of its own: the notation's built-in elementwise
/// and linear functions, and the backward's (`ones`, `dmax`, `d` + a function). The
/// exporters' Python tables (codegen/preludes/*_functions.py) list exactly these names, and
/// the parser's built-ins are all here (tests/export checks both).
inline constexpr std::pair<std::string_view, Fn> kNamedFunctions[] = {
    {"relu", Fn::Relu},       {"gelu", Fn::Gelu},         {"phi", Fn::Gelu},    {"silu", Fn::Silu},
    {"sigmoid", Fn::Sigmoid}, {"tanh", Fn::Tanh},         {"exp", Fn::Exp},     {"log", Fn::Log},
    {"sqrt", Fn::Sqrt},       {"neg", Fn::Neg},           {"scale", Fn::Half},  {"ones", Fn::Ones},
    {"dmax", Fn::Dmax},       {"drelu", Fn::Drelu},       {"dgelu", Fn::Dgelu}, {"dphi", Fn::Dgelu},
    {"dsilu", Fn::Dsilu},     {"dsigmoid", Fn::Dsigmoid}, {"dexp", Fn::Dexp},   {"dlog", Fn::Dlog},
    {"dsqrt", Fn::Dsqrt},     {"dtanh", Fn::Dtanh}};

/// What function `name` computes. Conventions (README): phi is GELU; log and sqrt act on |x|
/// so that random data stays in their domain; scale multiplies by 1/2; a function the program
/// declares (`fn f elementwise|linear`) runs as tanh (elementwise) or as scale (linear),
/// stand-ins with the same placement rules. The backward's functions (declared by `shardscope
/// grad`) run as what they stand for: `ones` is 1, `dmax(x)` is 1 where x is 0, and `d` + a
/// function is its derivative (of the stand-in, for a declared one).
inline Fn fn_of(const std::string& name, bool linear) {
    for (const auto& [n, f] : kNamedFunctions)
        if (name == n) return f;
    // The derivative of a declared function's stand-in (tanh) is dtanh.
    if (!linear && name.size() > 1 && name[0] == 'd') return Fn::Dtanh;
    return linear ? Fn::Half : Fn::Tanh;
}

#ifdef __CUDACC__
#define SHARDSCOPE_HD __host__ __device__
#else
#define SHARDSCOPE_HD
#endif

/// f(v), in double (the device kernels call this too).
SHARDSCOPE_HD inline double fn_eval(Fn f, double v) {
    using std::abs, std::erf, std::exp, std::log, std::sqrt, std::tanh;
    switch (f) {
    case Fn::Relu:
        return v > 0 ? v : 0.0;
    case Fn::Gelu:
        return 0.5 * v * (1.0 + erf(v / sqrt(2.0)));
    case Fn::Silu:
        return v / (1.0 + exp(-v));
    case Fn::Sigmoid:
        return 1.0 / (1.0 + exp(-v));
    case Fn::Exp:
    case Fn::Dexp:
        return exp(v);
    case Fn::Log:
        return log(abs(v));
    case Fn::Sqrt:
        return sqrt(abs(v));
    case Fn::Ones:
        return 1.0;
    case Fn::Dmax:
        return v == 0 ? 1.0 : 0.0;
    case Fn::Drelu:
        return v > 0 ? 1.0 : 0.0;
    case Fn::Dgelu:
        return 0.5 * (1.0 + erf(v / sqrt(2.0))) +
               v * exp(-0.5 * v * v) * 0.3989422804014327; // 1/sqrt(2 pi)
    case Fn::Dsilu: {
        const double s = 1.0 / (1.0 + exp(-v));
        return s * (1.0 + v * (1.0 - s));
    }
    case Fn::Dsigmoid: {
        const double s = 1.0 / (1.0 + exp(-v));
        return s * (1.0 - s);
    }
    case Fn::Dlog: // d/dx log|x|
        return 1.0 / v;
    case Fn::Dsqrt: // d/dx sqrt|x|
        return (v < 0 ? -0.5 : 0.5) / sqrt(abs(v));
    case Fn::Dtanh:
        return 1.0 - tanh(v) * tanh(v);
    case Fn::Neg:
        return -v;
    case Fn::Half:
        return 0.5 * v;
    case Fn::Tanh:
        break;
    }
    return tanh(v);
}

/// Applies `f` elementwise, in place, on the host.
template <class T>
void apply_fn(Tensor<T>& x, Fn f) {
    for (auto& v : x.data)
        v = static_cast<T>(fn_eval(f, static_cast<double>(v)));
}

/// Applies function `name` elementwise, in place (fn_of says what it computes).
template <class T>
void apply_function(Tensor<T>& x, const std::string& name, bool linear) {
    apply_fn(x, fn_of(name, linear));
}

} // namespace shardscope::exec
