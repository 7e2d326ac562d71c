// Every diagnostic code shardscope raises, in one table: the code, its usual severity, the
// group it belongs to and a one-line meaning. It generates the `Code` enumeration and what
// `shardscope check --list-codes` prints; docs/reference.md's Diagnostics tables are checked
// against it (tests/docs/check_codes.sh), and every diagnostic the tests produce must carry a
// code listed here (tests/semantics/test_codes.cpp). Parse errors keep their full messages in
// errors.hpp, next to the grammar rules they belong to.
#pragma once

#include "source.hpp"

#include <span>
#include <string>
#include <string_view>

namespace shardscope {

// X(code, usual severity, group, meaning): the meaning is Markdown (code spans in backticks).
// clang-format off
#define SHARDSCOPE_DIAGNOSTIC_CODES(X) \
    X(P100, Error, "Syntax (P1xx)", "not a statement: expected a declaration or a tensor followed by `=`, `:=`, `+=` or `->`") \
    X(P101, Error, "Syntax (P1xx)", "unexpected text after the end of the statement") \
    X(P102, Error, "Syntax (P1xx)", "expected `=`, `:=`, `+=` or an arrow after the tensor") \
    X(P103, Error, "Syntax (P1xx)", "expected an expression after the assignment") \
    X(P104, Error, "Syntax (P1xx)", "expected a term after `+` or `-`") \
    X(P105, Error, "Syntax (P1xx)", "expected a factor after `*` or `/`") \
    X(P106, Error, "Syntax (P1xx)", "expected an expression inside the parentheses") \
    X(P107, Error, "Syntax (P1xx)", "expected `)`") \
    X(P108, Error, "Syntax (P1xx)", "unknown function (a name before `(`); with a \"did you mean\"") \
    X(P109, Error, "Syntax (P1xx)", "expected `(` and an argument after a function name") \
    X(P110, Error, "Syntax (P1xx)", "expected the function's argument") \
    X(P111, Error, "Syntax (P1xx)", "expected the function's index after `_`") \
    X(P112, Error, "Syntax (P1xx)", "expected `{` after `\\frac`") \
    X(P113, Error, "Syntax (P1xx)", "expected the numerator of `\\frac`") \
    X(P114, Error, "Syntax (P1xx)", "expected the denominator of `\\frac`") \
    X(P115, Error, "Syntax (P1xx)", "expected `}`") \
    X(P116, Error, "Syntax (P1xx)", "expected a tensor after the arrow") \
    X(P117, Error, "Syntax (P1xx)", "expected `{` and a label after `\\xrightarrow`") \
    X(P118, Error, "Syntax (P1xx)", "expression nested more than 200 levels deep") \
    X(P119, Error, "Syntax (P1xx)", "unknown LaTeX command") \
    X(P120, Error, "Syntax (P1xx)", "expected an index after `_`") \
    X(P121, Error, "Syntax (P1xx)", "expected an index or `}` in the index list (a longer index goes in braces, `{name}`)") \
    X(P122, Error, "Syntax (P1xx)", "expected an index after `(` in a group") \
    X(P123, Error, "Syntax (P1xx)", "expected an index or `)` to close the group") \
    X(P124, Error, "Syntax (P1xx)", "expected an index, `,` or `]` in the bracket index list") \
    X(P125, Error, "Syntax (P1xx)", "expected an index after `(` in a bracket group") \
    X(P126, Error, "Syntax (P1xx)", "expected a mesh axis after `_`") \
    X(P127, Error, "Syntax (P1xx)", "expected a mesh axis after `_` in the bracket form") \
    X(P128, Error, "Syntax (P1xx)", "expected a mesh axis (a digit or a name)") \
    X(P129, Error, "Syntax (P1xx)", "expected a mesh axis or `}`") \
    X(P130, Error, "Syntax (P1xx)", "expected a superscript label after `^`") \
    X(P131, Error, "Syntax (P1xx)", "expected letters or digits in the superscript label") \
    X(P132, Error, "Syntax (P1xx)", "expected `}` to close the superscript label") \
    X(P133, Error, "Syntax (P1xx)", "expected `}` to close the partial marker `{U_...}`") \
    X(P138, Error, "Syntax (P1xx)", "expected `}` after the open marker `?` (it ends its list of axes: `f_{tp?}`)") \
    X(P140, Error, "Syntax (P1xx)", "expected the mesh shape (`4`, `2x4`, `dp=2 tp=4`)") \
    X(P141, Error, "Syntax (P1xx)", "expected `=` and a size for a named mesh axis") \
    X(P142, Error, "Syntax (P1xx)", "expected a whole-number size") \
    X(P143, Error, "Syntax (P1xx)", "expected `[` and device ids after `devices`") \
    X(P144, Error, "Syntax (P1xx)", "expected an index range such as `b=8` after `dim`") \
    X(P145, Error, "Syntax (P1xx)", "expected the range of the index") \
    X(P146, Error, "Syntax (P1xx)", "expected the index to split after `split`") \
    X(P147, Error, "Syntax (P1xx)", "expected `->` after the index to split") \
    X(P148, Error, "Syntax (P1xx)", "expected the parts of the split") \
    X(P149, Error, "Syntax (P1xx)", "expected an element type") \
    X(P150, Error, "Syntax (P1xx)", "expected a tensor name after `tensor`") \
    X(P151, Error, "Syntax (P1xx)", "expected `:` and an element type after the tensor name") \
    X(P152, Error, "Syntax (P1xx)", "expected a hardware preset name after `hw`") \
    X(P153, Error, "Syntax (P1xx)", "expected a mesh axis after `link`") \
    X(P154, Error, "Syntax (P1xx)", "expected a bandwidth such as `450GB/s`") \
    X(P155, Error, "Syntax (P1xx)", "expected a bandwidth unit") \
    X(P156, Error, "Syntax (P1xx)", "expected a time unit") \
    X(P157, Error, "Syntax (P1xx)", "expected a function name after `fn`") \
    X(P158, Error, "Syntax (P1xx)", "expected `elementwise` or `linear` after the function name") \
    X(P159, Error, "Syntax (P1xx)", "expected the layer index after `repeat` (as in `repeat l=32`)") \
    X(P160, Error, "Syntax (P1xx)", "expected `none` or a list of collectives after `expect`") \
    X(P161, Error, "Syntax (P1xx)", "expected a collective after `,`") \
    X(P162, Error, "Syntax (P1xx)", "expected a mesh axis inside the parentheses") \
    X(P163, Error, "Syntax (P1xx)", "expected `,` or `)` after the mesh axis") \
    X(P164, Error, "Syntax (P1xx)", "expected `)}` to close the inline expectation") \
    X(P165, Error, "Syntax (P1xx)", "expected the number of layers after `repeat l=`") \
    X(P175, Error, "Syntax (P1xx)", "expected a tensor name after `param`") \
    X(P176, Error, "Syntax (P1xx)", "expected an optimizer after `train`: `adam` or `sgd`") \
    X(P177, Error, "Syntax (P1xx)", "expected `=` and a value in a `train` option (`master=f32`)") \
    X(P178, Error, "Syntax (P1xx)", "expected a value after `=` in a `train` option") \
    X(P200, Error, "Declarations and literals (P2xx)", "unknown collective in an expectation") \
    X(P202, Error, "Declarations and literals (P2xx)", "unknown element type") \
    X(P203, Error, "Declarations and literals (P2xx)", "a tensor with two superscript labels") \
    X(P205, Error, "Declarations and literals (P2xx)", "a number too large or too small (a range, a size, more than 2^24 devices)") \
    X(P206, Error, "Declarations and literals (P2xx)", "a function's index list cannot hold a group") \
    X(P207, Error, "Declarations and literals (P2xx)", "a tensor marked partial twice") \
    X(P208, Error, "Declarations and literals (P2xx)", "a mesh axis declared twice") \
    X(P209, Error, "Declarations and literals (P2xx)", "the device list does not name each device exactly once") \
    X(P210, Error, "Declarations and literals (P2xx)", "a split with fewer than two parts") \
    X(P211, Error, "Declarations and literals (P2xx)", "a link names more than one mesh axis") \
    X(P212, Error, "Declarations and literals (P2xx)", "a bandwidth or latency out of range (not positive, not finite)") \
    X(P213, Error, "Declarations and literals (P2xx)", "a built-in function redeclared with `fn`") \
    X(P214, Error, "Declarations and literals (P2xx)", "a `repeat` count of 0") \
    X(P215, Error, "Declarations and literals (P2xx)", "a `repeat` inside a `repeat` (blocks do not nest)") \
    X(P216, Error, "Declarations and literals (P2xx)", "`end` without a `repeat` before it") \
    X(P217, Error, "Declarations and literals (P2xx)", "a declaration inside a `repeat` body (declarations hold for the whole program)") \
    X(P218, Error, "Declarations and literals (P2xx)", "a `repeat` without its `end`") \
    X(P219, Error, "Declarations and literals (P2xx)", "an unknown `repeat` option (`microbatches`, `schedule`), or one given twice") \
    X(P220, Error, "Declarations and literals (P2xx)", "a bad `repeat` option value: `microbatches=` other than a whole number of at least 1, `schedule=` other than `gpipe` or `1f1b`") \
    X(P230, Error, "Declarations and literals (P2xx)", "a weight named twice on one `param` line") \
    X(P231, Error, "Declarations and literals (P2xx)", "an unknown optimizer in `train` (`adam` or `sgd`)") \
    X(P232, Error, "Declarations and literals (P2xx)", "an unknown `train` option (`master`, `recompute`, `zero`)") \
    X(P233, Error, "Declarations and literals (P2xx)", "a `train` option given twice") \
    X(P234, Error, "Declarations and literals (P2xx)", "a bad `train` value: `master=` an unknown element type, `recompute=` other than `none` or `full`, `zero=` other than 0, 1 or 2") \
    X(P240, Error, "Declarations and literals (P2xx)", "an open marker `?` outside a tensor's index (a partial marker, a function's subscript, a `repeat` index)") \
    X(P241, Error, "Declarations and literals (P2xx)", "one tensor's dimension left open with two different lists of axes (an open dimension is one choice for the whole program)") \
    X(P299, Error, "Declarations and literals (P2xx)", "internal error of the parser (please report it)") \
    X(S001, Error, "The program (S0xx)", "a second `mesh` declaration") \
    X(S002, Error, "The program (S0xx)", "an index declared with two different ranges") \
    X(S003, Error, "The program (S0xx)", "unknown hardware preset") \
    X(S004, Error, "The program (S0xx)", "a split whose parts do not multiply out to the whole (or overflow)") \
    X(S005, Error, "The program (S0xx)", "an undeclared index is the device index of axes of different sizes") \
    X(S006, Error, "The program (S0xx)", "an index split twice") \
    X(S007, Error, "The program (S0xx)", "an index split into itself, directly or through other splits (a chain's group included)") \
    X(S008, Error, "The program (S0xx)", "a split that names a part twice") \
    X(S100, Error, "References (S1xx)", "a mesh axis used but no mesh declared") \
    X(S101, Error, "References (S1xx)", "a tensor uses one mesh axis for two dimensions") \
    X(S102, Error, "References (S1xx)", "unknown mesh axis (the fix lists the mesh's axes)") \
    X(S103, Error, "References (S1xx)", "an index twice in one tensor (a diagonal; use a primed index)") \
    X(S104, Error, "References (S1xx)", "a tensor used with another number of dimensions than it was defined with") \
    X(S105, Error, "References (S1xx)", "a dimension used with another range than it was defined with") \
    X(S106, Error, "References (S1xx)", "a program input read with two different shapes") \
    X(S120, Error, "References (S1xx)", "a reduction without its index (`sum_s(x)`)") \
    X(S121, Error, "References (S1xx)", "a reduction over an index its argument does not have") \
    X(S122, Error, "References (S1xx)", "a softmax without its index") \
    X(S123, Error, "References (S1xx)", "an explicit collective without its axes (`AllReduce_{r_0}(x)`)") \
    X(S124, Error, "References (S1xx)", "an explicit collective that does not apply (all-reduce of a non-partial value, all-gather of an unsharded one, reduce-scatter onto an index the value lacks)") \
    X(S125, Error, "References (S1xx)", "`AllToAll` written as a function (use a chain)") \
    X(S130, Error, "References (S1xx)", "an index of the left-hand side that the right-hand side lacks") \
    X(S131, Note, "References (S1xx)", "`:=`/`+=` updates a program input") \
    X(S132, Note, "References (S1xx)", "a tensor read but never defined whose name is close to one that is defined (\"did you mean\")") \
    X(S133, Warning, "References (S1xx)", "a tensor no statement defines, written right before a parenthesis, whose name is one or two edits from a function's: a misspelt function read as a tensor times the parenthesis (\"did you mean\")") \
    X(S140, Error, "References (S1xx)", "a chain step that changes the indices, not only splits, merges or placements") \
    X(S141, Error, "References (S1xx)", "the sides of a chain of products list different tensors (a chain moves tensors; it computes nothing)") \
    X(S142, Error, "References (S1xx)", "a chain of products in which a tensor written twice changes (a chain moves each tensor once; since issue 19 every other factor that changes moves)") \
    X(S150, Error, "References (S1xx)", "a pipelined `repeat l_{pp}=N` whose N layers do not divide into the stages of the mesh axis") \
    X(S151, Error, "References (S1xx)", "a tensor a `repeat` body carries from layer to layer is not defined before the block") \
    X(S152, Error, "References (S1xx)", "a carried tensor leaves the `repeat` body in another layout than it entered with") \
    X(S153, Error, "References (S1xx)", "a `repeat ... reverse` block with no forward `repeat` over the same index and count before it") \
    X(S154, Error, "References (S1xx)", "a pipelined `repeat` whose layer index names more than one mesh axis") \
    X(S155, Error, "References (S1xx)", "a tensor of a pipelined `repeat` body sharded or partial over the pipeline's mesh axis") \
    X(S156, Error, "References (S1xx)", "`microbatches` or `schedule` on a `repeat` whose layer index is not sharded over a mesh axis") \
    X(S200, Error, "Placements (S2xx)", "a sharded value cannot become partial (`S → P`)") \
    X(S201, Error, "Placements (S2xx)", "a partial of one kind cannot become another (`P(sum) → P(max)`)") \
    X(S202, Error, "Placements (S2xx)", "a reduce-scatter or all-to-all onto an index the value does not have") \
    X(S203, Error, "Placements (S2xx)", "`+=` writes another placement than the tensor was stored with") \
    X(S204, Error, "Placements (S2xx)", "no exact redistribution reaches the written placement (redistribute in steps, as a chain)") \
    X(S210, Note, "Placements (S2xx)", "a use asks for another placement than the tensor has: redistributed (an error under `--strict`)") \
    X(S211, Note, "Placements (S2xx)", "a partial operand needs a reduction (an error under `--strict`)") \
    X(S212, Note, "Placements (S2xx)", "rule 3: two indices sharded on one axis, or one index over different axes (an error under `--strict`)") \
    X(S213, Note, "Placements (S2xx)", "softmax along a sharded index needs communication (an error under `--strict`)") \
    X(S214, Warning, "Placements (S2xx)", "a partial value fed to a non-linear function is reduced first (an error under `--strict`)") \
    X(S215, Note, "Placements (S2xx)", "a partial maximum fed to something that is not a maximum (an error under `--strict`)") \
    X(S216, Note, "Placements (S2xx)", "a chain step splits or merges an index whose shards are not whole shards of the next layout (an error under `--strict`)") \
    X(S217, Warning, "Placements (S2xx)", "a program input read in two different layouts") \
    X(S300, Error, "Expectations (S3xx), plans (S4xx), sizes (S5xx)", "an `expect` with no statement before it") \
    X(S301, Error, "Expectations (S3xx), plans (S4xx), sizes (S5xx)", "the plan's collectives differ from the `expect` line") \
    X(S302, Error, "Expectations (S3xx), plans (S4xx), sizes (S5xx)", "a chain step's collectives differ from its arrow's label") \
    X(S400, Note, "Expectations (S3xx), plans (S4xx), sizes (S5xx)", "as written the statement needs these collectives; another plan is cheaper at these sizes") \
    X(S401, Note, "Expectations (S3xx), plans (S4xx), sizes (S5xx)", "not computable as written: the cheapest fix was chosen (the next one named)") \
    X(S402, Note, "Expectations (S3xx), plans (S4xx), sizes (S5xx)", "open shardings (`f_?`) resolved: the cheapest consistent choice for the written mesh, named") \
    X(S403, Error, "Expectations (S3xx), plans (S4xx), sizes (S5xx)", "`plan`: the open dimensions allow more than 65536 assignments per mesh, too many to enumerate") \
    X(S500, Warning, "Expectations (S3xx), plans (S4xx), sizes (S5xx)", "a range does not divide by its shard count: uneven shards") \
    X(S501, Note, "Expectations (S3xx), plans (S4xx), sizes (S5xx)", "indices with no declared range got a default") \
    X(S502, Error, "Expectations (S3xx), plans (S4xx), sizes (S5xx)", "sizes beyond what the cost model can count: a statement's (or the program's) time, FLOPs, bytes or memory per device past 1e300") \
    X(S999, Note, "Expectations (S3xx), plans (S4xx), sizes (S5xx)", "statements, or the whole program, not checked because of syntax errors") \
    X(G000, Note, "Gradients (Gxxx, `shardscope grad`)", "no gradients: the program has syntax or check errors") \
    X(G001, Error, "Gradients (Gxxx, `shardscope grad`)", "`--wrt NAME`: the program has no such tensor") \
    X(G002, Note, "Gradients (Gxxx, `shardscope grad`)", "no gradient reaches the tensor named by `--wrt`") \
    X(G100, Error, "Gradients (Gxxx, `shardscope grad`)", "the checker could not plan every statement") \
    X(G101, Error, "Gradients (Gxxx, `shardscope grad`)", "internal: a plan does not list its tensor occurrences") \
    X(G102, Error, "Gradients (Gxxx, `shardscope grad`)", "a chain of products that moves several tensors (not differentiated: move each in a chain of its own)") \
    X(G110, Warning, "Gradients (Gxxx, `shardscope grad`)", "a contracted split part renamed with primes takes its letter's range") \
    X(G201, Error, "Gradients (Gxxx, `shardscope grad`)", "the backward needs a value that a later statement overwrote (give the new value its own name)") \
    X(G202, Error, "Gradients (Gxxx, `shardscope grad`)", "a tensor used with two shapes: its gradient is not derived through one of the uses") \
    X(G203, Error, "Gradients (Gxxx, `shardscope grad`)", "`grad` of a program that already has a `repeat ... reverse` block") \
    X(G900, Error, "Gradients (Gxxx, `shardscope grad`)", "internal: a derived statement does not read back as printed")
// clang-format on

/// A diagnostic code: `Code::S106`.
enum class Code {
#define SHARDSCOPE_CODE_ENUM(code, severity, group, meaning) code,
    SHARDSCOPE_DIAGNOSTIC_CODES(SHARDSCOPE_CODE_ENUM)
#undef SHARDSCOPE_CODE_ENUM
};

/// One row of the table.
struct CodeInfo {
    Code code;
    std::string_view name;    ///< "S106"
    Severity severity;        ///< the usual one (`--strict` makes some notes errors)
    std::string_view group;   ///< "References (S1xx)"
    std::string_view meaning; ///< one line, Markdown
};

/// Every code, in the table's order (grouped as docs/reference.md lists them).
std::span<const CodeInfo> diagnostic_codes();

/// The row of a code; nullptr for a string that is not one.
const CodeInfo* find_code(std::string_view name);

/// "S106".
std::string_view code_name(Code code);

/// A diagnostic carrying a code of the table (`Diagnostic::code` holds its name).
Diagnostic make_diagnostic(Severity severity, Code code, ast::SourceRange range,
                           std::string message, std::string fix = {});

/// Whether `d` carries `code`.
bool has_code(const Diagnostic& d, Code code);

/// The table as Markdown, one `### group` heading and table per group, as docs/reference.md
/// has it.
std::string codes_markdown();

} // namespace shardscope
