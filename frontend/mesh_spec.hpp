// `--mesh SPEC`: a mesh written on the command line, read by the grammar as a `mesh` line.
#pragma once

#include "semantics/plan.hpp"

#include <optional>
#include <string>

namespace shardscope::frontend {

/// Parses a `--mesh` spec ("4", "2x4", "dp=2,tp=4" or "dp=2 tp=4") as the text of a `mesh`
/// line, with its rules and limits; nullopt if malformed, and then `*problem` (when given)
/// says why, its columns counted in `spec`.
std::optional<semantics::Mesh> parse_mesh_spec(const std::string& spec,
                                               Diagnostic* problem = nullptr);

} // namespace shardscope::frontend
