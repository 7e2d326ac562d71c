// The Plan as text (for people) and as JSON (schema version 1, for tools).
#pragma once

#include "plan.hpp"

#include <nlohmann/json.hpp>

#include <span>
#include <string>

namespace shardscope::semantics {

/// Per statement: the pretty statement, every tensor with its placements and local shape,
/// the steps with costs, the collectives and the alternatives.
std::string format_plan(const Plan& plan, const std::string& path, bool color = false);

/// One tensor line of format_plan: "  operand  W  [a b]  (R, S(0))  local 4×2 of 4×4"; on a
/// mesh with named axes, each placement is labelled by its axis: "(dp:S(0) tp:R)".
std::string format_tensor_line(const TensorLayout& t, const std::string& role,
                               const Mesh* mesh = nullptr);

/// "4×1024", or "scalar".
std::string shape_text(std::span<const std::int64_t> shape);

/// One entry of the `files` array of `check --json`. With `wrt` (one per statement, as for
/// `grad --json`), each statement also carries the tensor whose gradient it computes.
nlohmann::json plan_to_json(const Plan& plan, const std::string& path,
                            const std::vector<std::string>* wrt = nullptr);

/// "R, S(1)" — a placement tuple as DTensor prints it; with a `mesh` whose axes are named
/// (mesh dp=4 tp=8), "dp:R tp:S(1)".
std::string placements_text(std::span<const Placement> placements, const Mesh* mesh = nullptr);

/// An alternative as text that names what each collective moves: "all-gather W^1 over
/// axis 0, all-gather %2 over axis 0" (its collectives where its description says nothing).
std::string alternative_text(const Alternative& a);

/// "1.23 us", "4.5 ms".
std::string format_seconds(double seconds);
/// "12 kB", "3.4 GB".
std::string format_bytes(double bytes);
/// "36 FLOP", "1.2 TFLOP".
std::string format_flops(double flops);
/// "all-reduce(0), all-gather(1)", or "none" for an empty list.
std::string join_or_none(const std::vector<std::string>& items);

} // namespace shardscope::semantics
