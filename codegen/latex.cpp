// The plan as LaTeX: the declarations as notation lines, then one align environment with a
// row per statement: a caption with the DTensor placements of its tensors, the statement with
// every tensor written in the placement the plan gives it (mesh subscripts, {U_k}), and its
// collectives as \textrm{(...)}. shardscope reads the file back to the same plans.
#include "export.hpp"
#include "python.hpp"

#include "parser/functions.hpp"
#include "parser/printer.hpp"
#include "parser/visit.hpp"

#include <algorithm>
#include <functional>
#include <set>

namespace shardscope::codegen {

using namespace detail;

namespace {

/// `r` with its indices' mesh subscripts and partial marker set from layout `t`.
ast::TensorRef with_placement(ast::TensorRef r, const semantics::TensorLayout& t,
                              const semantics::Plan& plan) {
    std::size_t pos = 0;
    for (auto& d : r.dims)
        for (auto& p : d.parts) {
            p.axes.clear();
            if (pos < t.atoms.size())
                for (int k : t.atoms[pos].axes)
                    p.axes.push_back({plan.mesh.axes[static_cast<std::size_t>(k)].name, {}});
            ++pos;
        }
    r.partial_axes.clear();
    for (std::size_t k = 0; k < t.placements.size(); ++k)
        if (t.placements[k].kind == semantics::Placement::Kind::Partial &&
            t.placements[k].reduce == semantics::PartialOp::Sum)
            r.partial_axes.push_back({plan.mesh.axes[k].name, {}});
    if (r.style == ast::IndexStyle::None && !r.dims.empty()) r.style = ast::IndexStyle::Subscript;
    return r;
}

/// Rewrites every tensor occurrence of `e` (in source order) with the next layout.
void place(ast::Expr& e, const std::vector<semantics::TensorLayout>& layouts, std::size_t& next,
           const semantics::Plan& plan) {
    std::visit(
        [&](auto& n) {
            using T = std::decay_t<decltype(n)>;
            if constexpr (std::is_same_v<T, ast::TensorRef>) {
                if (next < layouts.size()) n = with_placement(n, layouts[next], plan);
                ++next;
            } else if constexpr (std::is_same_v<T, ast::Call>) {
                place(*n.arg, layouts, next, plan);
            } else if constexpr (std::is_same_v<T, ast::Product>) {
                for (auto& x : n.factors)
                    place(x, layouts, next, plan);
            } else if constexpr (std::is_same_v<T, ast::Sum>) {
                for (auto& x : n.terms)
                    place(x, layouts, next, plan);
            } else if constexpr (std::is_same_v<T, ast::Quotient>) {
                place(*n.num, layouts, next, plan);
                place(*n.den, layouts, next, plan);
            }
        },
        e.node);
}

std::string latex_function(const std::string& f) {
    if (f == "phi") return "\\phi";
    if (f == "sigmoid") return "\\sigma";
    if (f == "exp" || f == "log" || f == "tanh") return "\\" + f;
    const auto* b = find_builtin_function(f);
    if (b && (b->kind == ast::FunctionKind::Reduction || b->kind == ast::FunctionKind::Softmax ||
              b->kind == ast::FunctionKind::Collective))
        return "\\texttt{" + f + "}";
    return "\\operatorname{" + f + "}";
}

std::string latex(const ast::Expr& e);

bool is_sum(const ast::Expr& e) {
    return std::holds_alternative<ast::Sum>(e.node);
}

std::string latex(const ast::Expr& e) {
    return std::visit(
        [&](const auto& n) -> std::string {
            using T = std::decay_t<decltype(n)>;
            if constexpr (std::is_same_v<T, ast::Number>) {
                return n.text;
            } else if constexpr (std::is_same_v<T, ast::TensorRef>) {
                return parser::print(n);
            } else if constexpr (std::is_same_v<T, ast::Call>) {
                std::string out = latex_function(n.function);
                if (!n.indices.empty()) {
                    std::string subs;
                    for (const auto& i : n.indices)
                        subs += (subs.empty() ? "" : " ") + parser::print(i);
                    out += "_{" + subs + "}";
                }
                return out + "\\left(" + latex(*n.arg) + "\\right)";
            } else if constexpr (std::is_same_v<T, ast::Product>) {
                std::string out;
                for (std::size_t i = 0; i < n.factors.size(); ++i) {
                    const auto& f = n.factors[i];
                    const bool wrap = is_sum(f) || std::holds_alternative<ast::Product>(f.node);
                    std::string t = latex(f);
                    if (wrap) t = "\\left(" + t + "\\right)";
                    if (i > 0) {
                        // A name or number right before a parenthesis or a number reads as a
                        // call or one number: write the product explicitly.
                        const bool explicit_dot =
                            wrap || std::holds_alternative<ast::Number>(f.node) ||
                            std::holds_alternative<ast::Number>(n.factors[i - 1].node);
                        out += explicit_dot ? " \\cdot " : " ";
                    }
                    out += t;
                }
                return out;
            } else if constexpr (std::is_same_v<T, ast::Sum>) {
                std::string out;
                for (std::size_t i = 0; i < n.terms.size(); ++i) {
                    const bool neg = i < n.negated.size() && n.negated[i];
                    out += i == 0 ? (neg ? "-" : "") : (neg ? " - " : " + ");
                    std::string t = latex(n.terms[i]);
                    if (is_sum(n.terms[i])) t = "\\left(" + t + "\\right)";
                    out += t;
                }
                return out;
            } else {
                return "\\frac{" + latex(*n.num) + "}{" + latex(*n.den) + "}";
            }
        },
        e.node);
}

/// `$W^{1}$`: a tensor name for the caption (math inside \textrm).
std::string caption_name(const semantics::TensorLayout& t) {
    const auto caret = t.tensor.find('^');
    if (caret == std::string::npos) return "$" + t.tensor + "$";
    auto label = t.tensor.substr(caret + 1);
    if (!label.empty() && label.front() == '{') label = label.substr(1, label.size() - 2);
    return "$" + t.tensor.substr(0, caret) + "^{" + label + "}$";
}

std::string placement_tuple(const semantics::TensorLayout& t) {
    std::string out;
    for (const auto& p : t.placements)
        out += (out.empty() ? "" : ", ") + p.text();
    return t.placements.size() == 1 ? out : "(" + out + ")";
}

/// A chain as written: every side with all its factors in written order (a chain of products
/// keeps its context factors), each moved factor in the placement the plan gives it on that
/// side, and each arrow with its label. The plan's operands are the moved factors, side by
/// side, each side's in written order (ast::chain_moved_positions).
std::string chain_latex(const ast::Chain& ch, const semantics::StatementPlan& sp,
                        const semantics::Plan& plan) {
    const auto sides = ast::chain_sides(ch);
    const auto moved = ast::chain_moved_positions(ch);
    if (sp.operands.size() != sides.size() * moved.size())
        throw ExportError("line " + std::to_string(sp.range.line) + ": the plan has " +
                          std::to_string(sp.operands.size()) + " operands for a chain of " +
                          std::to_string(sides.size()) + " sides moving " +
                          std::to_string(moved.size()) + " factors each");
    std::string out;
    for (std::size_t s = 0; s < sides.size(); ++s) {
        if (s > 0) {
            const auto& step = ch.steps[s - 1];
            out += step.expect          ? " \\xrightarrow{" + parser::print(*step.expect) + "} "
                   : step.label.empty() ? std::string(" \\longrightarrow ")
                                        : " \\xrightarrow{" + step.label + "} ";
        }
        for (std::size_t p = 0; p < sides[s].size(); ++p) {
            if (p > 0) out += " ";
            const auto m = std::find(moved.begin(), moved.end(), p);
            out += m == moved.end() ? parser::print(*sides[s][p]) // context: as written
                                    : parser::print(with_placement(
                                          *sides[s][p],
                                          sp.operands[s * moved.size() +
                                                      static_cast<std::size_t>(m - moved.begin())],
                                          plan));
        }
    }
    return out;
}

} // namespace

std::string export_latex(const ast::Program& program, const semantics::Plan& plan,
                         const ExportOptions& options) {
    const auto statements = pair_statements(program, plan);
    std::string out =
        "% LaTeX: the statements with their placements and collectives (shardscope)\n";
    if (!options.source.empty()) out += "% Source: " + options.source + "\n";
    if (!options.command.empty()) out += "% Made by: " + options.command + "\n";
    out += "% Every tensor is written in the placement the plan gives it; the caption lists the\n"
           "% DTensor placements (per mesh axis) and \\textrm{(...)} the collectives. The\n"
           "% declarations stay notation lines: shardscope reads this file back.\n";
    // Declarations first (they hold for the whole program).
    for (const auto& item : program.items)
        if (const auto* s = std::get_if<ast::Statement>(&item))
            if (!std::holds_alternative<ast::Equation>(s->node) &&
                !std::holds_alternative<ast::Chain>(s->node) &&
                !std::holds_alternative<ast::Expect>(s->node) &&
                !std::holds_alternative<ast::RepeatDecl>(s->node) &&
                !std::holds_alternative<ast::EndDecl>(s->node))
                out += parser::print(*s) + "\n";
    // A repeat's body is written once (one layer); its count is said in a comment.
    for (const auto& b : plan.repeats) {
        std::string header = b.index;
        if (b.pipelined())
            header += "_{" + plan.mesh.axes.at(static_cast<std::size_t>(b.axis)).name + "}";
        header += "=" + std::to_string(b.count);
        if (b.pipelined())
            header += " microbatches=" + std::to_string(b.microbatches) + " schedule=" + b.schedule;
        out += "% Rows " + std::to_string(b.first + 1) + " to " + std::to_string(b.last) +
               " are one layer of 'repeat " + header + (b.reverse ? " reverse" : "") + "' (line " +
               std::to_string(b.range.line) + "): they run " + std::to_string(b.count) + " times" +
               (b.pipelined() ? ", " + std::to_string(b.layers_per_stage()) + " on each of " +
                                    std::to_string(b.stages) + " pipeline stages"
                              : std::string()) +
               "\n";
    }
    out += "\\begin{align}\n";
    for (std::size_t i = 0; i < statements.size(); ++i) {
        const auto& sp = *statements[i].plan;
        const auto& st = *statements[i].statement;
        std::string body;
        if (const auto* eq = std::get_if<ast::Equation>(&st.node)) {
            auto lhs = with_placement(eq->lhs, sp.result, plan);
            ast::Expr rhs = eq->rhs;
            std::size_t next = 0;
            place(rhs, sp.operands, next, plan);
            const char* op = eq->op == ast::AssignOp::Update       ? " := "
                             : eq->op == ast::AssignOp::Accumulate ? " += "
                                                                   : " = ";
            body = parser::print(lhs) + op + latex(rhs);
        } else {
            body = chain_latex(std::get<ast::Chain>(st.node), sp, plan);
        }
        // Caption: each tensor once, operands then what the statement stores (a chain of
        // products: every factor it moves).
        std::string caption;
        std::set<std::string> seen;
        for (const auto& o : sp.operands)
            if (seen.insert(o.tensor).second)
                caption +=
                    (caption.empty() ? "" : ", ") + caption_name(o) + " " + placement_tuple(o);
        std::string stored;
        for (const auto& [name, layout] : sp.stores())
            stored += (stored.empty() ? "" : ", ") + caption_name(*layout) + " " +
                      placement_tuple(*layout);
        caption += std::string(caption.empty() ? "" : " $\\to$ ") + stored;
        std::string cols;
        for (const auto& c : semantics::collectives_of(plan.mesh, sp))
            cols += (cols.empty() ? "" : ", ") + c;
        out += "\\textrm{" + caption + "}&\\quad " + body + " \\quad \\textrm{(" +
               (cols.empty() ? std::string("none") : cols) + ")}" +
               (i + 1 < statements.size() ? " \\\\" : "") + "\n";
    }
    out += "\\end{align}\n";
    return out;
}

} // namespace shardscope::codegen
