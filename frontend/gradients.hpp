// `shardscope grad`'s work from text to text: the forward program parsed and checked, its
// backward derived in the notation (semantics/grad.hpp), the program with the derived
// statements parsed back and checked, twice: the second time with `expect` lines naming the
// collectives of the first.
#pragma once

#include "semantics/grad.hpp"

#include "parser/source.hpp"

namespace shardscope::frontend {

/// Derives the backward statements of the program in `forward` and checks them.
semantics::GradResult derive_gradients(const SourceFile& forward,
                                       const semantics::GradOptions& options = {});

} // namespace shardscope::frontend
