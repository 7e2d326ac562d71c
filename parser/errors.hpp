// The parse error table: for every point of no return in grammar.hpp, a stable code and a
// message saying what was expected. The code is the part before '|'. The parser's control
// refuses to compile a `need<R>` (our `must<R>`) whose R has no entry here.
#pragma once

#include "grammar.hpp"

namespace shardscope::parser {

namespace g = grammar;

template <typename Rule>
inline constexpr const char* error_message = nullptr;

// clang-format off
template <> inline constexpr auto error_message<g::statement_body> = "P100|expected a statement: a declaration (mesh, dim, split, dtype, tensor, hw, link, fn, param, train, expect, repeat, end) or a tensor followed by '=', ':=', '+=' or '->'";
template <> inline constexpr auto error_message<g::end_of_statement> = "P101|unexpected text after the end of the statement";
template <> inline constexpr auto error_message<g::ref_tail> = "P102|expected '=', ':=', '+=' or an arrow '->' after the tensor";
template <> inline constexpr auto error_message<g::rhs> = "P103|expected an expression after the assignment";
template <> inline constexpr auto error_message<g::next_term> = "P104|expected a term after '+' or '-'";
template <> inline constexpr auto error_message<g::operand> = "P105|expected a factor after '*' or '/'";
template <> inline constexpr auto error_message<g::inner_expr> = "P106|expected an expression inside the parentheses";
template <> inline constexpr auto error_message<g::paren_close> = "P107|expected ')' to close the parenthesis";
template <> inline constexpr auto error_message<g::unknown_function> = "P108|unknown function";
template <> inline constexpr auto error_message<g::call_arg> = "P109|expected '(' and an argument after the function name";
template <> inline constexpr auto error_message<g::paren_arg> = "P109|expected '(' after the function name: a function written as a plain name takes its argument in parentheses";
template <> inline constexpr auto error_message<g::arg_expr> = "P110|expected the function's argument";
template <> inline constexpr auto error_message<g::call_index_list> = "P111|expected the function's index after '_' (a letter or '{...}')";
template <> inline constexpr auto error_message<g::frac_open> = "P112|expected '{' after \\frac";
template <> inline constexpr auto error_message<g::frac_num> = "P113|expected the numerator of \\frac";
template <> inline constexpr auto error_message<g::frac_den> = "P114|expected the denominator of \\frac";
template <> inline constexpr auto error_message<g::brace_close> = "P115|expected '}'";
template <> inline constexpr auto error_message<g::chain_target> = "P116|expected a tensor after the arrow";
template <> inline constexpr auto error_message<g::xarrow_open> = "P117|expected '{' and a label after \\xrightarrow";
template <> inline constexpr auto error_message<g::too_deep> = "P118|expression nested too deeply (more than 200 levels)";

template <> inline constexpr auto error_message<g::subscript_body> = "P120|expected an index after '_': a letter, '{' and an index list, or a mesh axis digit";
template <> inline constexpr auto error_message<g::sub_list_close> = "P121|expected an index or '}' in the index list (each index is one letter; write a longer index as {name})";
template <> inline constexpr auto error_message<g::group_first> = "P122|expected an index after '(' in a group";
template <> inline constexpr auto error_message<g::group_close> = "P123|expected an index or ')' to close the group";
template <> inline constexpr auto error_message<g::bracket_close> = "P124|expected an index, ',' or ']' in the bracket index list";
template <> inline constexpr auto error_message<g::bracket_group_first> = "P125|expected an index after '(' in a group";
template <> inline constexpr auto error_message<g::mesh_sub_spec> = "P126|expected a mesh axis after '_': a digit, a letter, or '{' axes '}'";
template <> inline constexpr auto error_message<g::bracket_mesh_spec> = "P127|expected a mesh axis after '_': digits, a name, or '{' axes '}'";
template <> inline constexpr auto error_message<g::axis_first> = "P128|expected a mesh axis (a digit or a name)";
template <> inline constexpr auto error_message<g::axis_list_close> = "P129|expected a mesh axis or '}'";
template <> inline constexpr auto error_message<g::label_spec> = "P130|expected a superscript label after '^' (a digit, a letter, or '{' label '}')";
template <> inline constexpr auto error_message<g::label_text> = "P131|expected letters or digits in the superscript label";
template <> inline constexpr auto error_message<g::label_close> = "P132|expected '}' to close the superscript label";
template <> inline constexpr auto error_message<g::partial_close> = "P133|expected '}' to close the partial marker {U_...}";
template <> inline constexpr auto error_message<g::open_close> = "P138|expected '}' after '?': the open marker '?' ends its list of mesh axes (as in f_{tp?})";

template <> inline constexpr auto error_message<g::mesh_shape> = "P140|expected the mesh shape: sizes such as '4' or '2x4', or named axes such as 'dp=2 tp=4'";
template <> inline constexpr auto error_message<g::mesh_eq> = "P141|expected '=' and a size";
template <> inline constexpr auto error_message<g::mesh_axis_size> = "P142|expected a size (a whole number)";
template <> inline constexpr auto error_message<g::devices_open> = "P143|expected '[' and a list of device ids after 'devices'";
template <> inline constexpr auto error_message<g::dim_first> = "P144|expected an index range such as 'b=8' after 'dim'";
template <> inline constexpr auto error_message<g::dim_size> = "P145|expected the range of the index (a whole number)";
template <> inline constexpr auto error_message<g::split_from> = "P146|expected the index to split after 'split' (as in 'split s -> r t')";
template <> inline constexpr auto error_message<g::split_arrow> = "P147|expected '->' after the index to split";
template <> inline constexpr auto error_message<g::split_parts> = "P148|expected the indices the split produces (as in 'split s -> r t')";
template <> inline constexpr auto error_message<g::dtype_name> = "P149|expected an element type such as f32, bf16, f16, f64";
template <> inline constexpr auto error_message<g::decl_tensor_name> = "P150|expected a tensor name after 'tensor'";
template <> inline constexpr auto error_message<g::colon> = "P151|expected ':' and an element type (as in 'tensor x : bf16')";
template <> inline constexpr auto error_message<g::preset_name> = "P152|expected a hardware preset name such as h100, a100, tpu-v5e";
template <> inline constexpr auto error_message<g::link_axis> = "P153|expected a mesh axis after 'link'";
template <> inline constexpr auto error_message<g::bandwidth> = "P154|expected a bandwidth such as 450GB/s";
template <> inline constexpr auto error_message<g::bw_unit> = "P155|expected a bandwidth unit: TB/s, GB/s, MB/s, KB/s, B/s, TiB/s, GiB/s, MiB/s, Tb/s or Gb/s";
template <> inline constexpr auto error_message<g::time_unit> = "P156|expected a time unit: s, ms, us or ns";
template <> inline constexpr auto error_message<g::fn_decl_name> = "P157|expected a function name after 'fn'";
template <> inline constexpr auto error_message<g::fn_kind> = "P158|expected 'elementwise' or 'linear' after the function name";
template <> inline constexpr auto error_message<g::param_first> = "P175|expected a tensor name after 'param' (as in 'param W^0 W^1')";
template <> inline constexpr auto error_message<g::train_optimizer> = "P176|expected an optimizer after 'train': adam or sgd";
template <> inline constexpr auto error_message<g::train_eq> = "P177|expected '=' and a value (as in 'master=f32' or 'recompute=full')";
template <> inline constexpr auto error_message<g::train_value> = "P178|expected a value after '='";
template <> inline constexpr auto error_message<g::repeat_value> = "P178|expected a value after '='";

template <> inline constexpr auto error_message<g::repeat_index> = "P159|expected the layer index after 'repeat' (as in 'repeat l=32')";
template <> inline constexpr auto error_message<g::repeat_count> = "P165|expected the number of layers (a whole number, as in 'repeat l=32')";
template <> inline constexpr auto error_message<g::expect_list> = "P160|expected 'none' or a list of collectives such as 'all-reduce(0)'";
template <> inline constexpr auto error_message<g::collective_next> = "P161|expected a collective after ','";
template <> inline constexpr auto error_message<g::collective_axis_first> = "P162|expected a mesh axis inside the parentheses";
template <> inline constexpr auto error_message<g::collective_axes_close> = "P163|expected ',' or ')' after the mesh axis";
template <> inline constexpr auto error_message<g::inline_expect_close> = "P164|expected ')}' to close the expectation";
// clang-format on

} // namespace shardscope::parser
