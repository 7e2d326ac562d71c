// The parse error table: for every point of no return in grammar.hpp, a stable code (a row of
// diagnostic_codes.hpp) and a message saying what was expected. The parser's control refuses to
// compile a `need<R>` (our `must<R>`) or `raise<R>` whose R has no entry here.
#pragma once

#include "diagnostic_codes.hpp"
#include "grammar.hpp"

namespace shardscope::parser {

namespace g = grammar;

/// One entry of the table: the code the parse error carries and its message.
struct SyntaxError {
    Code code = Code::P100;
    const char* message = nullptr; ///< nullptr: the rule has no entry
};

template <typename Rule>
inline constexpr SyntaxError syntax_error{};

// clang-format off
template <> inline constexpr SyntaxError syntax_error<g::statement_body>{Code::P100, "expected a statement: a declaration (mesh, dim, split, dtype, tensor, hw, link, fn, param, train, expect, repeat, end) or a tensor followed by '=', ':=', '+=' or '->'"};
template <> inline constexpr SyntaxError syntax_error<g::end_of_statement>{Code::P101, "unexpected text after the end of the statement"};
template <> inline constexpr SyntaxError syntax_error<g::ref_tail>{Code::P102, "expected '=', ':=', '+=' or an arrow '->' after the tensor"};
template <> inline constexpr SyntaxError syntax_error<g::rhs>{Code::P103, "expected an expression after the assignment"};
template <> inline constexpr SyntaxError syntax_error<g::next_term>{Code::P104, "expected a term after '+' or '-'"};
template <> inline constexpr SyntaxError syntax_error<g::operand>{Code::P105, "expected a factor after '*' or '/'"};
template <> inline constexpr SyntaxError syntax_error<g::inner_expr>{Code::P106, "expected an expression inside the parentheses"};
template <> inline constexpr SyntaxError syntax_error<g::paren_close>{Code::P107, "expected ')' to close the parenthesis"};
template <> inline constexpr SyntaxError syntax_error<g::unknown_function>{Code::P108, "unknown function"};
template <> inline constexpr SyntaxError syntax_error<g::call_arg>{Code::P109, "expected '(' and an argument after the function name"};
template <> inline constexpr SyntaxError syntax_error<g::paren_arg>{Code::P109, "expected '(' after the function name: a function written as a plain name takes its argument in parentheses"};
template <> inline constexpr SyntaxError syntax_error<g::arg_expr>{Code::P110, "expected the function's argument"};
template <> inline constexpr SyntaxError syntax_error<g::call_index_list>{Code::P111, "expected the function's index after '_' (a letter or '{...}')"};
template <> inline constexpr SyntaxError syntax_error<g::frac_open>{Code::P112, "expected '{' after \\frac"};
template <> inline constexpr SyntaxError syntax_error<g::frac_num>{Code::P113, "expected the numerator of \\frac"};
template <> inline constexpr SyntaxError syntax_error<g::frac_den>{Code::P114, "expected the denominator of \\frac"};
template <> inline constexpr SyntaxError syntax_error<g::brace_close>{Code::P115, "expected '}'"};
template <> inline constexpr SyntaxError syntax_error<g::chain_target>{Code::P116, "expected a tensor after the arrow"};
template <> inline constexpr SyntaxError syntax_error<g::xarrow_open>{Code::P117, "expected '{' and a label after \\xrightarrow"};
template <> inline constexpr SyntaxError syntax_error<g::too_deep>{Code::P118, "expression nested too deeply (more than 200 levels)"};

template <> inline constexpr SyntaxError syntax_error<g::subscript_body>{Code::P120, "expected an index after '_': a letter, '{' and an index list, or a mesh axis digit"};
template <> inline constexpr SyntaxError syntax_error<g::sub_list_close>{Code::P121, "expected an index or '}' in the index list (each index is one letter; write a longer index as {name})"};
template <> inline constexpr SyntaxError syntax_error<g::group_first>{Code::P122, "expected an index after '(' in a group"};
template <> inline constexpr SyntaxError syntax_error<g::group_close>{Code::P123, "expected an index or ')' to close the group"};
template <> inline constexpr SyntaxError syntax_error<g::bracket_close>{Code::P124, "expected an index, ',' or ']' in the bracket index list"};
template <> inline constexpr SyntaxError syntax_error<g::bracket_group_first>{Code::P125, "expected an index after '(' in a group"};
template <> inline constexpr SyntaxError syntax_error<g::mesh_sub_spec>{Code::P126, "expected a mesh axis after '_': a digit, a letter, or '{' axes '}'"};
template <> inline constexpr SyntaxError syntax_error<g::bracket_mesh_spec>{Code::P127, "expected a mesh axis after '_': digits, a name, or '{' axes '}'"};
template <> inline constexpr SyntaxError syntax_error<g::axis_first>{Code::P128, "expected a mesh axis (a digit or a name)"};
template <> inline constexpr SyntaxError syntax_error<g::axis_list_close>{Code::P129, "expected a mesh axis or '}'"};
template <> inline constexpr SyntaxError syntax_error<g::label_spec>{Code::P130, "expected a superscript label after '^' (a digit, a letter, or '{' label '}')"};
template <> inline constexpr SyntaxError syntax_error<g::label_text>{Code::P131, "expected letters or digits in the superscript label"};
template <> inline constexpr SyntaxError syntax_error<g::label_close>{Code::P132, "expected '}' to close the superscript label"};
template <> inline constexpr SyntaxError syntax_error<g::partial_close>{Code::P133, "expected '}' to close the partial marker {U_...}"};
template <> inline constexpr SyntaxError syntax_error<g::open_close>{Code::P138, "expected '}' after '?': the open marker '?' ends its list of mesh axes (as in f_{tp?})"};

template <> inline constexpr SyntaxError syntax_error<g::mesh_shape>{Code::P140, "expected the mesh shape: sizes such as '4' or '2x4', or named axes such as 'dp=2 tp=4'"};
template <> inline constexpr SyntaxError syntax_error<g::mesh_eq>{Code::P141, "expected '=' and a size"};
template <> inline constexpr SyntaxError syntax_error<g::mesh_axis_size>{Code::P142, "expected a size (a whole number)"};
template <> inline constexpr SyntaxError syntax_error<g::devices_open>{Code::P143, "expected '[' and a list of device ids after 'devices'"};
template <> inline constexpr SyntaxError syntax_error<g::dim_first>{Code::P144, "expected an index range such as 'b=8' after 'dim'"};
template <> inline constexpr SyntaxError syntax_error<g::dim_size>{Code::P145, "expected the range of the index (a whole number)"};
template <> inline constexpr SyntaxError syntax_error<g::split_from>{Code::P146, "expected the index to split after 'split' (as in 'split s -> r t')"};
template <> inline constexpr SyntaxError syntax_error<g::split_arrow>{Code::P147, "expected '->' after the index to split"};
template <> inline constexpr SyntaxError syntax_error<g::split_parts>{Code::P148, "expected the indices the split produces (as in 'split s -> r t')"};
template <> inline constexpr SyntaxError syntax_error<g::dtype_name>{Code::P149, "expected an element type such as f32, bf16, f16, f64"};
template <> inline constexpr SyntaxError syntax_error<g::decl_tensor_name>{Code::P150, "expected a tensor name after 'tensor'"};
template <> inline constexpr SyntaxError syntax_error<g::colon>{Code::P151, "expected ':' and an element type (as in 'tensor x : bf16')"};
template <> inline constexpr SyntaxError syntax_error<g::preset_name>{Code::P152, "expected a hardware preset name such as h100, a100, tpu-v5e"};
template <> inline constexpr SyntaxError syntax_error<g::link_axis>{Code::P153, "expected a mesh axis after 'link'"};
template <> inline constexpr SyntaxError syntax_error<g::bandwidth>{Code::P154, "expected a bandwidth such as 450GB/s"};
template <> inline constexpr SyntaxError syntax_error<g::bw_unit>{Code::P155, "expected a bandwidth unit: TB/s, GB/s, MB/s, KB/s, B/s, TiB/s, GiB/s, MiB/s, Tb/s or Gb/s"};
template <> inline constexpr SyntaxError syntax_error<g::time_unit>{Code::P156, "expected a time unit: s, ms, us or ns"};
template <> inline constexpr SyntaxError syntax_error<g::fn_decl_name>{Code::P157, "expected a function name after 'fn'"};
template <> inline constexpr SyntaxError syntax_error<g::fn_kind>{Code::P158, "expected 'elementwise' or 'linear' after the function name"};
template <> inline constexpr SyntaxError syntax_error<g::param_first>{Code::P175, "expected a tensor name after 'param' (as in 'param W^0 W^1')"};
template <> inline constexpr SyntaxError syntax_error<g::train_optimizer>{Code::P176, "expected an optimizer after 'train': adam or sgd"};
template <> inline constexpr SyntaxError syntax_error<g::train_eq>{Code::P177, "expected '=' and a value (as in 'master=f32' or 'recompute=full')"};
template <> inline constexpr SyntaxError syntax_error<g::train_value>{Code::P178, "expected a value after '='"};
template <> inline constexpr SyntaxError syntax_error<g::repeat_value>{Code::P178, "expected a value after '='"};

template <> inline constexpr SyntaxError syntax_error<g::repeat_index>{Code::P159, "expected the layer index after 'repeat' (as in 'repeat l=32')"};
template <> inline constexpr SyntaxError syntax_error<g::repeat_count>{Code::P165, "expected the number of layers (a whole number, as in 'repeat l=32')"};
template <> inline constexpr SyntaxError syntax_error<g::expect_list>{Code::P160, "expected 'none' or a list of collectives such as 'all-reduce(0)'"};
template <> inline constexpr SyntaxError syntax_error<g::collective_next>{Code::P161, "expected a collective after ','"};
template <> inline constexpr SyntaxError syntax_error<g::collective_axis_first>{Code::P162, "expected a mesh axis inside the parentheses"};
template <> inline constexpr SyntaxError syntax_error<g::collective_axes_close>{Code::P163, "expected ',' or ')' after the mesh axis"};
template <> inline constexpr SyntaxError syntax_error<g::inline_expect_close>{Code::P164, "expected ')}' to close the expectation"};
// clang-format on

} // namespace shardscope::parser
