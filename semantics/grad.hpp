// Reverse-mode differentiation of a program, in the notation itself: the backward statements
// of every equation and chain, written as text that goes back through the parser and the
// checker, so their plans show the backward collectives (README.md, "Gradients").
#pragma once

#include "checker.hpp"
#include "plan.hpp"
#include "totals.hpp"

#include "parser/source.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace shardscope::semantics {

struct GradOptions {
    /// The tensors to differentiate with respect to (`x`, `W^0`): program inputs, or tensors
    /// a statement defines (the gradient of their first definition). Empty: the tensors
    /// of the program's `param` lines, or every input where it has none.
    std::vector<std::string> wrt;
    /// How the forward program and the derived program are checked (mesh override, small
    /// ranges for exec). `text` is ignored: the derivation sets it.
    CheckOptions check;
    /// Write `expect` lines with the checked collectives after each derived statement.
    bool expectations = true;
};

/// One derived statement.
struct DerivedStatement {
    std::string text;               ///< canonical ASCII form
    std::string wrt;                ///< the forward tensor whose gradient it computes (`W^0`)
    std::string gradient;           ///< the tensor it writes (`gW^0`)
    std::uint32_t line = 0;         ///< its line in GradResult::text
    std::uint32_t forward_line = 0; ///< the forward statement it differentiates
    int plan_index = -1;            ///< its plan in GradResult::plan.statements (-1: none)
};

/// The gradient a program output receives: a seed, an input of the derived program.
struct Seed {
    std::string output;    ///< the forward tensor (`z`)
    std::string seed;      ///< the seed tensor (`gz`)
    int forward_statement; ///< the forward statement that stores this output (plan order)
    std::uint32_t forward_line = 0;
};

struct GradResult {
    /// The forward program followed by the derived statements (with `expect` lines): a
    /// complete program, as `shardscope grad` prints it.
    std::string text;
    std::uint32_t backward_line = 0; ///< the first line of the derived part in `text`
    std::vector<DerivedStatement> statements;
    std::vector<Seed> seeds;
    /// Per differentiated tensor, the tensor that holds its gradient at the end.
    std::map<std::string, std::string> gradients;
    /// The check of `text`: forward statements first, then the derived ones.
    Plan plan;
    /// Problems of the derivation (codes G...), then the checker's about the derived part.
    std::vector<Diagnostic> diagnostics;
    int errors() const;
};

/// The backward statements of a checked forward program, derived in the notation. The text
/// goes back through the parser and the checker, which is the front door's work
/// (frontend/gradients.hpp `derive_gradients`): semantics reads ASTs, never text.
/// `forward` and `forward_plan` must outlive the Derivation.
class Derivation {
public:
    Derivation(const ast::Program& forward, const Plan& forward_plan,
               const GradOptions& options = {});
    ~Derivation();
    Derivation(const Derivation&) = delete;
    Derivation& operator=(const Derivation&) = delete;
    /// False: nothing was derived; failed() has the diagnostics that say why.
    bool ok() const;
    GradResult failed() const;
    /// The derived part of the program text, its first line numbered `first_line`; with
    /// `checked` (the check of the previous text), each statement followed by an `expect` line
    /// naming the collectives that check planned for it.
    std::string text(std::uint32_t first_line, const Plan* checked = nullptr);
    /// `forward` followed by the derived statements, as trees: what text() writes, read back
    /// without the text round trip (the program totals of a training step, the search).
    ast::Program program(const ast::Program& forward);
    /// The result, from the whole program `text` (forward + the last text()) read back:
    /// `program` and `plan` its parse and check, `syntax_errors` the parser's errors (none
    /// unless the printer is wrong).
    GradResult finish(std::string text, std::uint32_t first_line, const ast::Program& program,
                      Plan plan, const std::vector<Diagnostic>& syntax_errors);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

/// A training step's plan. `plan` itself (the check of `program`), unless `program` declares
/// `train` but writes only its forward pass (no reverse repeat, no statement writing a
/// `param`'s gradient `gW`): then the plan of `program` followed by the backward `grad`
/// derives for its `param` tensors (Derivation::program), checked with `options`, so that a
/// training step's totals hold the backward's compute and the gradients' collectives (data
/// parallelism's all-reduce, FSDP's reduce-scatter) and saved activations. `*derived` says
/// whether the backward was added (false also when its derivation or check fails).
Plan training_step_plan(const ast::Program& program, const Plan& plan, const CheckOptions& options,
                        bool* derived = nullptr);

/// The program totals of a training step (totals.hpp): program_totals of training_step_plan,
/// with ProgramTotals::backward_derived set. What check, compare, the GUI and the search show.
ProgramTotals step_totals(const ast::Program& program, const Plan& plan,
                          const CheckOptions& options = {});

/// The derived part of GradResult::text only (from backward_line): what the REPL's `:grad`
/// shows after the program it already has.
std::string derived_text(const GradResult& result);
/// The summary of a derivation: "2 derived statements (gW of W, gx of x)", the gradients
/// named up to `named` of them and then counted ("..., and 392 more"): a product of hundreds
/// of factors has hundreds of gradients.
std::string derived_summary(const GradResult& result, std::size_t named = 8);
/// The derived statements' plans as one Plan (the forward's mesh and settings, the gradient
/// run's diagnostics); each statement's `wrt` appended to `wrt` when given.
Plan backward_plan(const GradResult& r, std::vector<std::string>* wrt = nullptr);

/// The derived statements' plans as text (format_plan of the derived part).
std::string format_gradient_plans(const GradResult& result, const std::string& path,
                                  bool color = false);

/// One entry of the `files` array of `grad --json`: check --json's schema for the derived
/// statements, each with a `wrt` field, and the seeds and gradients.
nlohmann::json gradients_to_json(const GradResult& result, const std::string& path);

/// Convention names (README.md): the gradient of tensor `name` is `g` + name (more `g`s
/// while that is taken); `d` + f is the derivative of elementwise function f; `ones(x)` is 1
/// with x's indices (a broadcast).
std::string derivative_name(const std::string& function);

} // namespace shardscope::semantics
