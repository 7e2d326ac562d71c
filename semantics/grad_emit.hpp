// Emitting the derivation (grad.cpp): the derived statements as they will be printed, the
// liveness pass that keeps what the requested gradients need, and the text of the derived
// part (a repeat's backward as a reverse repeat, `fn` lines for the derivatives, `expect`
// lines once a first check has planned them).
#pragma once

#include "grad.hpp"

#include "parser/ast.hpp"

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace shardscope::semantics::grad_detail {

/// One emitted statement, before it is printed.
struct Emitted {
    ast::Statement stmt;
    std::string wrt;      ///< forward tensor key
    std::string gradient; ///< written tensor key
    std::set<std::string> reads;
    bool accumulate = false;
    std::uint32_t forward_line = 0;
    std::string comment; ///< printed before it (the forward statement), when first of a group
    bool keep = true;
    int block = -1; ///< the forward repeat whose body it differentiates (Deriver::blocks)
};

/// The calls under `e` whose function is in `of`.
void collect_calls(const ast::Expr& e, const std::set<std::string>& of, std::set<std::string>& out);

/// The derived part of the program text; records each statement's line.
std::string render(const std::vector<Emitted>& em, const std::vector<ast::RepeatDecl>& blocks,
                   const std::set<std::string>& functions, const std::vector<Seed>& seeds,
                   std::uint32_t first_line,
                   const std::map<std::size_t, std::vector<std::string>>* collectives,
                   std::vector<std::uint32_t>& lines);

/// Keeps the statements the requested gradients need (liveness, from the end).
void prune(std::vector<Emitted>& em, std::set<std::string> needed);

} // namespace shardscope::semantics::grad_detail
