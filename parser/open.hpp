// Open shardings (`W_{d f_?}`, `f_{tp?}`; docs/reference.md "Open shardings"): a tensor's
// dimension whose mesh axis the tool chooses. Every open index of one tensor's dimension (the
// same tensor, label and index, in any statement) is one choice: a *variable* named by its key
// ("W^0 f"). These helpers find the variables, report conflicting ones (P241) and rewrite a
// program with a choice per variable, so that no checker ever sees an open index.
#pragma once

#include "ast.hpp"
#include "source.hpp"

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace shardscope::ast {

/// One open dimension of the program (a variable of the search).
struct OpenDimension {
    std::string key;               ///< "W^0 f'": the tensor (with its label) and the index
    std::string tensor;            ///< "W^0"
    std::string index;             ///< "f'"
    std::vector<std::string> axes; ///< the axes it may be sharded over; empty: any axis
    SourceRange at;                ///< its first occurrence
    std::size_t occurrences = 0;   ///< open indices that name it
};

/// The key of an open index of a reference: "W^0 f'".
std::string open_key(const TensorRef& ref, const Index& index);

/// Whether any tensor reference of the program has an open index.
bool has_open(const Program& program);

/// The program's open dimensions, in order of first occurrence.
std::vector<OpenDimension> open_dimensions(const Program& program);

/// P241: an open dimension written with a different list of axes than at its first
/// occurrence (positioned at the later one).
std::vector<Diagnostic> open_marker_conflicts(const Program& program);

/// A tensor reference with open indices: the keys of its open dimensions (one per open
/// index, in written order) and the axes its other dimensions are sharded over (a choice may
/// not reuse them: one axis cannot shard two dimensions of a tensor).
struct OpenRef {
    std::vector<std::string> keys;
    std::vector<std::string> fixed_axes;
};
std::vector<OpenRef> open_refs(const Program& program);

/// Every open index of the program with its key, to be rewritten in place (pointers into
/// `program`: valid while its items are not added or removed).
std::vector<std::pair<std::string, Index*>> open_indices(Program& program);

/// Rewrites every open index in place: its axes become `choice(key)` (empty: replicated) and
/// it is no longer open.
void close_open(Program& program,
                const std::function<std::vector<std::string>(const std::string& key)>& choice);

} // namespace shardscope::ast
