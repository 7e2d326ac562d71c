// Differential testing of check against exec: random programs of the notation (NOTATION.md),
// built as a small tree so that a failure can be shrunk; every program `check` accepts must
// PASS `exec` on sim (f64 random data, and integer data where the program is linear).
#pragma once

#include "semantics/plan.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace shardscope::diff {

/// One index of a reference: a letter and the mesh axes it is sharded over (major to minor).
struct Ix {
    char name = 'i';
    std::vector<int> axes;
};

/// A tensor reference `x_{i j_0}{U_1}`; `group` > 0 writes the first `group` indices as one
/// parenthesised dimension (a split's parts).
struct Ref {
    std::string name;
    std::vector<Ix> dims;
    std::vector<int> partial;
    int group = 0;
};

struct Expr {
    enum class Kind { Ref, Num, Prod, Sum, Quot, Call };
    Kind kind = Kind::Num;
    Ref ref;                   ///< Ref
    std::string text;          ///< Num: the number; Call: the function
    std::vector<Ix> sub;       ///< Call: the subscript (reduced index, collective targets)
    std::vector<Expr> kids;    ///< Prod factors, Sum terms, Quot {num, den}, Call {arg}
    std::vector<bool> negated; ///< Sum: per term
};

struct Stmt {
    enum class Kind { Eq, Chain };
    Kind kind = Kind::Eq;
    std::string op = "="; ///< "=", ":=", "+="
    Ref lhs;
    Expr rhs;
    std::vector<Ref> chain; ///< Chain: the references, first to last
};

struct Program {
    std::vector<int> sizes;         ///< mesh axis sizes
    std::vector<std::string> names; ///< named axes (empty: numbered)
    std::vector<int> devices;       ///< explicit device order (empty: none)
    std::map<char, int> ranges;     ///< dim line
    std::vector<std::string> decls; ///< split and fn lines
    std::vector<Stmt> stmts;
};

/// The program as notation text.
std::string print(const Program& p);

/// A random program (seeded by the generator's state).
Program generate(std::mt19937_64& rng);

/// True when the program uses only linear constructs (products, sums, negation, scale,
/// sum_, collectives, chains): integer data must then verify exactly.
bool is_linear(const Program& p);

/// What happened to a program.
struct Outcome {
    enum class Kind { Rejected, Pass, Fail, Threw, CheckThrew };
    Kind kind = Kind::Rejected;
    std::string detail; ///< the failing statement and its errors, or the exception
    /// The first statement whose collectives as exec ran them differ from the plan's (kinds,
    /// axes, order): issue 21's territory, reported but not a failure here.
    std::string mismatch;
    bool failed() const {
        return kind == Kind::Fail || kind == Kind::Threw || kind == Kind::CheckThrew;
    }
};

std::string outcome_name(Outcome::Kind k);

/// Parses and checks `src` in-process (small default ranges, as `shardscope exec`); when the
/// checker accepts it, runs it on sim in f64 with random data and, when `ints`, with integer
/// data (which must verify exactly where exec says the statement is exact).
/// `mutate` edits the plan before it runs (the tests break plans on purpose with it).
Outcome run(const std::string& src, bool ints, std::uint64_t seed = 1,
            const std::function<void(semantics::Plan&)>& mutate = {});

/// Shrinks a failing program while it keeps failing the same way (the same signature) (drops
/// statements, operands, terms, function calls, shardings, partial markers, mesh axes and the
/// device order).
Program minimise(Program p, bool ints, const Outcome& failure);

/// What a failure looks like, for the minimiser: its kind and, for an exception, its message
/// without the words that hold digits (tensor names, ranks, sizes).
std::string signature(const Outcome& o);

/// The same with any failure predicate on the program's text.
Program minimise(Program p, const std::function<bool(const std::string&)>& still_fails);

} // namespace shardscope::diff
