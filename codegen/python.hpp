// What the Python exporters (torch, jax) share: pairing statements with their plans, the
// inputs exec generates, and each statement's data flow as Python code over global arrays.
#pragma once

#include "export.hpp"

#include <string>
#include <vector>

namespace shardscope::codegen::detail {

struct Planned {
    const ast::Statement* statement;
    const semantics::StatementPlan* plan;
};

/// The equations and chains of `program` with their plans, in order (ExportError if the plan
/// does not list every one).
std::vector<Planned> pair_statements(const ast::Program& program, const semantics::Plan& plan);

/// `# ...` lines: what the script is, where it came from.
std::string python_header(const semantics::Plan& plan, const ExportOptions& options,
                          const std::string& what, const std::string& run);

/// input_values(key, count, mode, seed): exec/data.cpp's inputs in numpy (splitmix64 seeded
/// with the seed xor FNV-1a of the key; arange 1..n; small integers), and prod().
std::string python_inputs();

enum class Backend { Torch, Jax };

/// Python statements computing one statement's plan on global arrays, indented by `indent`:
/// reads v<id> for the loaded values, writes v<id> for every step's output, calls
/// `layout(x, id)` after each step (the backend lays the value out as the plan does).
std::string python_steps(const semantics::Plan& plan, const semantics::StatementPlan& sp,
                         Backend backend, const std::string& indent);

/// The values a chain of products stores besides its target (StatementPlan::also_stored: every
/// other factor it moves, each in the layout the chain gives it), in the plan's order;
/// ExportError when one is not a value of the statement.
std::vector<int> moved_factors(const semantics::StatementPlan& sp);

/// A comment line (indented by four spaces) before the stores of a chain of products that
/// moves several factors: what it stores, in exec's order (the other moved factors, then the
/// target); empty when it stores only its target.
std::string moved_factors_comment(const semantics::StatementPlan& sp);

/// The global shape of a value (its atoms' extents), as a Python tuple.
std::string python_shape(const semantics::TensorLayout& t);

/// A Python string literal.
std::string py_str(const std::string& s);

/// The statement as a one-line comment (canonical ASCII).
std::string statement_comment(const ast::Statement& s);

/// The Python expression of the key statement `s` loads input `key` under: in a repeat's body a
/// per-layer parameter is `key` in layer 0 and `key@l` in layer l, as exec generates it
/// (exec::input_key); elsewhere the key itself.
std::string load_key(const semantics::Plan& plan, std::size_t s, const std::string& key);

/// The statements' code (`code[s]`, indented by four spaces, in plan order) as `main`'s body:
/// a repeat block becomes a loop over its layers (`layer`, reversed for a reverse block) with
/// exec's tape: a forward block saves each layer's stored values, and the reverse block that
/// reads it puts layer l's back before running layer l (and the last layer's after it).
std::string python_program(const semantics::Plan& plan, const std::vector<std::string>& code);

} // namespace shardscope::codegen::detail
