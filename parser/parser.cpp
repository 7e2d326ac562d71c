// Drives the PEGTL grammar over each statement and turns the parse tree into ast:: values.
#include "parser.hpp"

#include "open.hpp"

#include "errors.hpp"
#include "flat_tree.hpp"
#include "functions.hpp"
#include "grammar.hpp"
#include "printer.hpp"
#include "splitter.hpp"
#include "suggest.hpp"

#include <tao/pegtl/contrib/analyze.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <set>

namespace shardscope::parser {

namespace pegtl = tao::pegtl;

/// State shared by the statements of one file: the functions declared so far.
struct ParseContext {
    std::set<std::string, std::less<>> functions;
    bool is_function(std::string_view name, bool latex = false) const {
        return (latex ? find_latex_function(name) : find_builtin_function(name)) != nullptr ||
               functions.count(name) > 0;
    }
};

namespace {

const ParseContext* find_context(const ParseContext& c) {
    return &c;
}
template <typename T>
const ParseContext* find_context(const T&) {
    return nullptr;
}
template <typename... States>
const ParseContext* context_of(const States&... st) {
    const ParseContext* found = nullptr;
    ((found = found ? found : find_context(st)), ...);
    return found;
}

/// A function name as written at some position.
struct Spelling {
    std::string_view name; ///< without backslash or font command; empty when none
    bool latex = false;
};

/// ASCII tests, as PEGTL's alpha and alnum (and std::isalpha in the "C" locale the tool runs
/// in), with no call per byte: they run before every factor and on every tensor's name.
constexpr bool is_alpha(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
constexpr bool is_alnum(char c) {
    return is_alpha(c) || (c >= '0' && c <= '9');
}

/// The function spelling at `p` (`phi`, `\phi`, `\texttt{Soft}`, `φ`).
Spelling peek_function_spelling(const char* p, const char* end) {
    auto word = [&](const char* q) {
        const char* e = q;
        if (e < end && is_alpha(*e))
            while (e < end && is_alnum(*e))
                ++e;
        return std::string_view(q, static_cast<std::size_t>(e - q));
    };
    if (p >= end) return {};
    if (*p == '\\') {
        auto cmd = word(p + 1);
        static constexpr std::string_view fonts[] = {"texttt", "mathrm", "operatorname",
                                                     "mathtt", "textrm", "text"};
        if (std::find(std::begin(fonts), std::end(fonts), cmd) != std::end(fonts)) {
            const char* q = p + 1 + cmd.size();
            while (q < end && (*q == ' ' || *q == '\t'))
                ++q;
            if (q < end && *q == '{') {
                ++q;
                while (q < end && (*q == ' ' || *q == '\t'))
                    ++q;
                return {word(q), true};
            }
            return {};
        }
        return {cmd, true};
    }
    if (static_cast<unsigned char>(*p) >= 0x80)
        for (std::string_view u : {"φ", "ϕ", "σ", "Σ"})
            if (static_cast<std::size_t>(end - p) >= u.size() && std::string_view(p, u.size()) == u)
                return {u, false};
    return {word(p), false};
}

} // namespace

} // namespace shardscope::parser

namespace shardscope::parser::grammar {

template <apply_mode A, rewind_mode M, template <typename...> class Action,
          template <typename...> class Control, typename Input, typename... States>
bool known_function::match(Input& in, States&&... st) {
    const auto spelling = peek_function_spelling(in.current(), in.end());
    if (spelling.name.empty()) return false;
    const ParseContext* ctx = context_of(st...);
    return ctx ? ctx->is_function(spelling.name, spelling.latex)
               : ParseContext{}.is_function(spelling.name, spelling.latex);
}

} // namespace shardscope::parser::grammar

namespace shardscope::parser::flat {
/// `sp` is a loop that stops where no whitespace follows: it never fails (see seq_fails_clean).
template <>
inline constexpr bool never_fails<grammar::sp> = true;
} // namespace shardscope::parser::flat

namespace shardscope::parser {

namespace {

namespace g = grammar;

// Parse-tree nodes kept for the conversion; everything else is transparent.
using KeptRules = flat::Kept<
    // indices and references
    g::idx_word, g::primes, g::axes_digits, g::axis_word, g::axes_unicode, g::axis_letter,
    g::label_text, g::label_char, g::label_unicode, g::index, g::bracket_index, g::group_first,
    g::bracket_group_first, g::group, g::bracket_group, g::sub_list, g::bare_index, g::bare_partial,
    g::unicode_partial, g::bracket_list, g::partial_marker, g::tensor_ref, g::chain_target,
    g::chain_factor,
    // expressions
    g::number, g::fn_word, g::latex_fn_word, g::fn_unicode, g::call, g::paren, g::frac, g::frac_num,
    g::frac_den, g::expr, g::rhs, g::arg_expr, g::inner_expr, g::term, g::next_term, g::neg_sign,
    g::mul_op, g::div_op, g::add_op,
    // statements
    g::ref_statement, g::equation, g::assign_op, g::chain_step, g::xrightarrow, g::arrow_label,
    g::plain_arrow, g::mesh_decl, g::mesh_axis_name, g::mesh_axis_size, g::mesh_named_axis,
    g::device_id, g::dim_decl, g::dim_binding, g::dim_first, g::dim_size, g::split_decl,
    g::split_from, g::split_index, g::dtype_decl, g::dtype_name, g::tensor_decl,
    g::decl_tensor_name, g::hw_decl, g::preset_name, g::link_decl, g::link_axis, g::bandwidth,
    g::latency, g::bw_unit, g::time_unit, g::fn_decl, g::fn_decl_name, g::fn_kind, g::expect_decl,
    g::param_decl, g::param_name, g::train_decl, g::train_optimizer, g::train_key, g::train_value,
    g::inline_expect, g::none_kw, g::collective, g::collective_next, g::collective_name,
    g::collective_axis, g::repeat_decl, g::repeat_index, g::repeat_count, g::repeat_reverse,
    g::repeat_key, g::repeat_value, g::end_decl,
    // open shardings (`f_?`, `f_{tp?}`)
    g::open_mark>;
using Node = flat::View<KeptRules>;

/// A syntax error: PEGTL's parse error (the message and position) with its entry's code.
struct CodedParseError : pegtl::parse_error {
    template <typename Input>
    CodedParseError(const SyntaxError& entry, const Input& in)
        : pegtl::parse_error(entry.message, in), code(entry.code) {}
    Code code;
};

/// The error control: need<R> and raise<R> report R's entry in errors.hpp at the current
/// position (need<R> has rewound to where R should have begun).
template <typename Rule>
struct error_control : pegtl::normal<Rule> {
    static constexpr SyntaxError entry = syntax_error<Rule>;

    template <typename Input, typename... States>
    [[noreturn]] static void raise(const Input& in, States&&...) {
        static_assert(entry.message != nullptr,
                      "every must<R> and raise<R> needs an entry in errors.hpp");
        throw CodedParseError(entry, in);
    }
};

template <typename Rule>
using control = flat::builder<KeptRules, error_control>::control<Rule>;

/// The input of one statement. Lazy tracking: a bump only moves a pointer and a marker saves
/// only a pointer (eager tracking counted lines and columns at every byte, a fifth of the
/// match); an error's position is counted once, from the statement's start, when raised. The
/// source name is not copied per statement.
using Input = pegtl::memory_input<pegtl::tracking_mode::lazy, pegtl::eol::lf_crlf, const char*>;

/// A diagnostic raised while converting; aborts the current statement.
struct ConvertError {
    Diagnostic diagnostic;
};

/// The most devices a mesh may have; larger meshes are almost surely a typo.
constexpr std::int64_t kMaxDevices = std::int64_t{1} << 24;

class Converter {
public:
    Converter(const SourceFile& file, ParseContext& ctx) : file_(file), ctx_(ctx) {}

    /// Inline: a statement positions a few dozen nodes, and the call and the copy of its
    /// result cost as much as the arithmetic.
    [[gnu::always_inline]] ast::SourceRange range(const Node& n) const {
        const auto off = offset(n.begin());
        const auto len = static_cast<std::size_t>(n.end() - n.begin());
        // Most nodes lie on the ASCII line of the node before: positioned by arithmetic, as
        // SourceFile::range would (see SourceFile::line_span); inline, the rest out of line.
        if (line_.ascii && line_.start <= off && off + len <= line_.end) [[likely]]
            return on_line(off, len);
        return range_elsewhere(off, len);
    }

    [[noreturn]] void fail(const Node& n, Code code, std::string message,
                           std::string fix = {}) const {
        throw ConvertError{
            make_diagnostic(Severity::Error, code, range(n), std::move(message), std::move(fix))};
    }

    /// The statements a chunk holds (the statement, and an inline expectation if any),
    /// appended to `out`. On a ConvertError the caller drops what was appended.
    void statements(const Node& root, std::vector<ast::Item>& out) {
        for (const auto& c : root.children) {
            auto& s =
                std::get<ast::Statement>(out.emplace_back(std::in_place_type<ast::Statement>));
            if (c->is_type<g::inline_expect>()) {
                s.node = expect(*c);
                s.range = range(*c);
            } else {
                statement(*c, s);
            }
        }
    }

    /// Whether any index read so far was open (`f_?`): without one, no open marker conflicts.
    bool saw_open() const { return saw_open_; }

private:
    std::size_t offset(const char* p) const {
        return static_cast<std::size_t>(p - file_.text().data());
    }

    /// The range of `len` bytes at `off`, on the ASCII line `line_`.
    [[gnu::always_inline]] ast::SourceRange on_line(std::size_t off, std::size_t len) const {
        ast::SourceRange r;
        r.offset = static_cast<std::uint32_t>(off);
        r.length = static_cast<std::uint32_t>(len);
        r.line = r.end_line = line_.line;
        r.column = static_cast<std::uint32_t>(off - line_.start) + 1;
        r.end_column = r.column + static_cast<std::uint32_t>(len);
        return r;
    }
    [[gnu::noinline]] ast::SourceRange range_elsewhere(std::size_t off, std::size_t len) const {
        line_ = file_.line_span(off);
        if (!(line_.ascii && off + len <= line_.end)) return file_.range(off, len);
        return on_line(off, len);
    }

    // ---- leaves -------------------------------------------------------------------------

    /// `s = v`, for a string built in place: clear and append (a short name stays in the
    /// string's own buffer) costs a third of assign's general replace.
    static void set_text(std::string& s, std::string_view v) {
        s.clear();
        if (v.size() == 1) // an index letter, most names: push_back is inline, append a call
            s.push_back(v[0]);
        else
            s.append(v.data(), v.size());
    }

    static int count_primes(std::string_view s) {
        int n = 0;
        for (std::size_t i = 0; i < s.size();) {
            if (s[i] == '\'') {
                ++n;
                ++i;
            } else if (s.substr(i, 3) == "′") {
                n += 1;
                i += 3;
            } else if (s.substr(i, 3) == "″") {
                n += 2;
                i += 3;
            } else if (s.substr(i, 3) == "‴") {
                n += 3;
                i += 3;
            } else {
                ++i;
            }
        }
        return n;
    }

    /// Unicode sub/superscript digits to ASCII digits.
    static std::string script_digits(std::string_view s) {
        std::string out;
        for (std::size_t i = 0; i < s.size();) {
            const auto b0 = static_cast<unsigned char>(s[i]);
            if (b0 == 0xC2 && i + 1 < s.size()) { // ¹ ² ³ (U+00B9, U+00B2, U+00B3)
                const auto b1 = static_cast<unsigned char>(s[i + 1]);
                out += b1 == 0xB9 ? '1' : b1 == 0xB2 ? '2' : '3';
                i += 2;
            } else if (b0 == 0xE2 && i + 2 < s.size()) { // U+2070.. and U+2080..
                const auto b1 = static_cast<unsigned char>(s[i + 1]);
                const auto b2 = static_cast<unsigned char>(s[i + 2]);
                const unsigned cp = 0x2000u | ((b1 & 0x3Fu) << 6) | (b2 & 0x3Fu);
                out += static_cast<char>('0' + (cp >= 0x2080 ? cp - 0x2080 : cp - 0x2070));
                i += 3;
            } else {
                out += s[i++];
            }
        }
        return out;
    }

    std::int64_t integer(const Node& n, std::int64_t min_value = 1) const {
        const auto s = n.string_view();
        std::int64_t v = 0;
        auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (ec != std::errc() || p != s.data() + s.size())
            fail(n, Code::P205, "number '" + std::string(s) + "' is too large");
        if (v < min_value)
            fail(n, Code::P205,
                 "expected a number of at least " + std::to_string(min_value) + ", got " +
                     std::string(s));
        return v;
    }

    /// Axes from one axis node: digits split one axis per digit, a word is one axis.
    void append_axes(const Node& n, std::vector<ast::AxisRef>& axes) const {
        if (n.is_type<g::axes_digits>()) {
            // `_0`, `_{01}` (most axes): the digits read in place and their block reserved
            // (no temporary string, no growing from empty).
            const auto digits = n.string_view();
            const auto r = range(n);
            axes.reserve(axes.size() + digits.size());
            for (char d : digits)
                axes.push_back({std::string(1, d), r});
        } else if (n.is_type<g::axes_unicode>() || n.is_type<g::unicode_partial>()) {
            const auto digits = script_digits(n.string_view());
            const auto r = range(n);
            for (char d : digits)
                axes.push_back({std::string(1, d), r});
        } else if (n.is_type<g::axis_word>() || n.is_type<g::axis_letter>()) {
            // Most indices carry one axis: its block reserved, as growing an empty vector
            // took vector's general (out-of-line) reallocating insert.
            if (axes.empty()) axes.reserve(1);
            auto& a = axes.emplace_back();
            set_text(a.name, n.string_view());
            a.range = range(n);
        } else {
            for (const auto& c : n.children)
                append_axes(*c, axes);
        }
    }

    // ---- indices and references ---------------------------------------------------------

    ast::Index index(const Node& n) const {
        ast::Index ix;
        index(n, ix);
        return ix;
    }
    /// The index `n` into a default-constructed `ix`.
    void index(const Node& n, ast::Index& ix) const {
        ix.range = range(n);
        // A one-letter name (idx_letter, not kept: most indices) is the index's first byte.
        std::string_view name(n.begin(), 1);
        for (const auto& c : n.children) {
            if (c->is_type<g::idx_word>())
                name = c->string_view();
            else if (c->is_type<g::primes>())
                ix.primes += count_primes(c->string_view());
            else if (c->is_type<g::open_mark>())
                ix.open = saw_open_ = true;
            else
                append_axes(*c, ix.axes);
        }
        set_text(ix.name, name);
        if (ix.open) std::swap(ix.axes, ix.open_axes); // the axes to choose from, not a layout
    }

    /// An index that may not be open (a function's subscript, a `repeat` index): P240.
    ast::Index closed_index(const Node& n, const char* where) const {
        ast::Index ix = index(n);
        if (ix.open)
            for (const auto& c : n.children)
                if (c->is_type<g::open_mark>())
                    fail(*c, Code::P240,
                         std::string("an open marker '?' cannot stand on ") + where +
                             ": it leaves a tensor's dimension to the search",
                         "write the mesh axes, or put the marker on a tensor's index (W_{d f_?})");
        return ix;
    }

    /// The dimension `n` into a default-constructed `d`.
    void dimension(const Node& n, ast::Dimension& d) const {
        if (n.is_type<g::group>() || n.is_type<g::bracket_group>()) {
            d.range = range(n);
            d.grouped = true;
            d.parts.reserve(n.children.size());
            for (const auto& c : n.children)
                index(*c, d.parts.emplace_back());
        } else {
            d.parts.reserve(1);
            index(n, d.parts.emplace_back());
            d.range = d.parts.back().range; // the same node
        }
    }

    std::vector<ast::Index> index_list(const Node& n) const {
        std::vector<ast::Index> out;
        if (n.is_type<g::bare_index>()) {
            out.push_back(closed_index(n, "a function's index"));
        } else {
            for (const auto& c : n.children) {
                if (c->is_type<g::group>())
                    fail(*c, Code::P206, "a function's index list cannot hold a group");
                out.push_back(closed_index(*c, "a function's index"));
            }
        }
        return out;
    }

    ast::TensorRef tensor_ref(const Node& n) const {
        ast::TensorRef t;
        tensor_ref(n, t);
        return t;
    }
    /// The reference `n` into a default-constructed `t`.
    void tensor_ref(const Node& n, ast::TensorRef& t) const {
        t.range = range(n);
        // The name (tensor_name, not kept) is the identifier the reference starts with.
        const char* name_end = n.begin() + 1;
        while (name_end < n.end() && is_alnum(*name_end))
            ++name_end;
        set_text(t.name, {n.begin(), static_cast<std::size_t>(name_end - n.begin())});
        bool has_label = false;
        for (const auto& c : n.children) {
            if (c->is_type<g::label_text>() || c->is_type<g::label_char>() ||
                c->is_type<g::label_unicode>()) {
                if (has_label)
                    fail(*c, Code::P203, "tensor '" + t.name + "' has two superscript labels",
                         "keep one label: the label is part of the tensor's name");
                has_label = true;
                if (c->is_type<g::label_unicode>())
                    t.label = script_digits(c->string_view());
                else
                    set_text(t.label, c->string_view()); // no temporary string
            } else if (c->is_type<g::sub_list>()) {
                t.style = ast::IndexStyle::Subscript;
                t.dims.reserve(c->children.size());
                for (const auto& d : c->children)
                    dimension(*d, t.dims.emplace_back());
            } else if (c->is_type<g::bare_index>()) {
                t.style = ast::IndexStyle::Subscript;
                dimension(*c, t.dims.emplace_back());
            } else if (c->is_type<g::bracket_list>()) {
                t.style = ast::IndexStyle::Bracket;
                t.dims.reserve(c->children.size());
                for (const auto& d : c->children)
                    dimension(*d, t.dims.emplace_back());
            } else if (c->is_type<g::bare_partial>() || c->is_type<g::unicode_partial>() ||
                       c->is_type<g::partial_marker>()) {
                if (!t.partial_axes.empty())
                    fail(*c, Code::P207, "tensor '" + t.name + "' is marked partial twice");
                for (const auto& m : c->children)
                    if (m->is_type<g::open_mark>())
                        fail(*m, Code::P240,
                             "an open marker '?' cannot stand in a partial marker: a partial "
                             "sum is over the axes written",
                             "write the axes ({U_tp}), or leave a dimension open (W_{d f_?})");
                append_axes(*c, t.partial_axes);
            }
        }
    }

    // ---- expressions ----------------------------------------------------------------------

    static bool is_expr_node(const Node& n) {
        return n.is_type<g::expr>() || n.is_type<g::rhs>() || n.is_type<g::arg_expr>() ||
               n.is_type<g::inner_expr>() || n.is_type<g::frac_num>() || n.is_type<g::frac_den>();
    }

    ast::Expr expr(const Node& n) const {
        ast::Expr e;
        expr(n, e);
        return e;
    }
    /// The expression `n` into a default-constructed `e`: built where it is stored, since
    /// moving an Expr (a variant holding a TensorRef) into a product and out of a return
    /// value cost more than building it.
    void expr(const Node& n, ast::Expr& e) const {
        if (is_expr_node(n)) {
            // One term without a sign (most expressions): the term itself, no Sum to unwrap.
            std::size_t terms = 0;
            bool plain = true;
            for (const auto& c : n.children) {
                if (c->is_type<g::neg_sign>() || c->is_type<g::add_op>() || terms) {
                    plain = false;
                    break;
                }
                ++terms;
            }
            if (plain && terms == 1) return expr(*n.children.front(), e);
            ast::Sum sum;
            bool negate_next = false;
            bool leading_sign = false;
            for (const auto& c : n.children) {
                if (c->is_type<g::neg_sign>()) {
                    negate_next = true;
                    leading_sign = true;
                } else if (c->is_type<g::add_op>()) {
                    negate_next = c->string_view() == "-";
                } else {
                    sum.terms.push_back(expr(*c));
                    sum.negated.push_back(negate_next);
                    negate_next = false;
                }
            }
            if (sum.terms.size() == 1 && !leading_sign) {
                e = std::move(sum.terms.front());
                return;
            }
            e.node = std::move(sum);
            e.range = range(n);
            return;
        }
        if (n.is_type<g::term>() || n.is_type<g::next_term>()) return term(n, e);
        if (n.is_type<g::number>()) {
            e.node.emplace<ast::Number>().text = n.string();
            e.range = range(n);
            return;
        }
        if (n.is_type<g::tensor_ref>()) {
            auto& t = e.node.emplace<ast::TensorRef>();
            tensor_ref(n, t);
            e.range = t.range; // the same node
            return;
        }
        if (n.is_type<g::paren>()) return expr(*n.children.front(), e);
        if (n.is_type<g::frac>()) {
            e.node = ast::Quotient{expr(*n.children.at(0)), expr(*n.children.at(1))};
            e.range = range(n);
            return;
        }
        if (n.is_type<g::call>()) return call(n, e);
        fail(n, Code::P299, "internal: unexpected " + n.type_name());
    }

    /// Left fold of factors: juxtaposition and `*` extend a product, `/` makes a quotient.
    /// Into a default-constructed `e`.
    void term(const Node& n, ast::Expr& e) const {
        // Without a division (most terms): one factor, or the product of all of them, built
        // at once (the fold below gives the same tree).
        std::size_t factors = 0;
        bool divides = false;
        for (const auto& c : n.children) {
            if (c->is_type<g::div_op>()) divides = true;
            if (!c->is_type<g::mul_op>() && !c->is_type<g::div_op>()) ++factors;
        }
        if (!divides && factors >= 1) {
            if (factors == 1) {
                for (const auto& c : n.children)
                    if (!c->is_type<g::mul_op>()) {
                        expr(*c, e);
                        e.range = range(n);
                        return;
                    }
            }
            auto& p = e.node.emplace<ast::Product>();
            p.factors.reserve(factors);
            for (const auto& c : n.children)
                if (!c->is_type<g::mul_op>()) expr(*c, p.factors.emplace_back());
            e.range = range(n);
            return;
        }
        std::optional<ast::Expr> acc;
        bool acc_is_open_product = false; // a product built here (not one from parentheses)
        bool divide_next = false;
        for (const auto& c : n.children) {
            if (c->is_type<g::mul_op>()) continue;
            if (c->is_type<g::div_op>()) {
                divide_next = true;
                continue;
            }
            auto f = expr(*c);
            if (!acc) {
                acc = std::move(f);
            } else if (divide_next) {
                acc = ast::Expr{ast::Quotient{std::move(*acc), std::move(f)}, range(n)};
                acc_is_open_product = false;
            } else if (acc_is_open_product) {
                std::get<ast::Product>(acc->node).factors.push_back(std::move(f));
            } else {
                ast::Product p;
                p.factors.push_back(std::move(*acc));
                p.factors.push_back(std::move(f));
                acc = ast::Expr{std::move(p), range(n)};
                acc_is_open_product = true;
            }
            divide_next = false;
        }
        acc->range = range(n);
        e = std::move(*acc);
    }

    /// A call into a default-constructed `e`; its argument is built in its box.
    void call(const Node& n, ast::Expr& e) const {
        auto& call = e.node.emplace<ast::Call>(ast::Call{{}, {}, ast::Expr{}});
        std::string_view spelling;
        bool latex = false;
        for (const auto& c : n.children) {
            if (c->is_type<g::fn_word>() || c->is_type<g::fn_unicode>() ||
                c->is_type<g::latex_fn_word>()) {
                spelling = c->string_view();
                latex = c->is_type<g::latex_fn_word>();
            } else if (c->is_type<g::sub_list>() || c->is_type<g::bare_index>())
                call.indices = index_list(*c);
            else
                expr(*c, *call.arg);
        }
        const auto* f = latex ? find_latex_function(spelling) : find_builtin_function(spelling);
        set_text(call.function, f ? f->name : spelling);
        e.range = range(n);
    }

    // ---- statements -----------------------------------------------------------------------

    void statement(const Node& n, ast::Statement& s) {
        s.range = range(n);
        if (n.is_type<g::ref_statement>())
            ref_statement(n, s);
        else if (n.is_type<g::mesh_decl>())
            s.node = mesh(n);
        else if (n.is_type<g::dim_decl>())
            s.node = dim(n);
        else if (n.is_type<g::split_decl>())
            s.node = split(n);
        else if (n.is_type<g::dtype_decl>())
            s.node = ast::DtypeDecl{dtype(*n.children.at(0))};
        else if (n.is_type<g::tensor_decl>())
            s.node = tensor_decl(n);
        else if (n.is_type<g::hw_decl>())
            s.node = ast::HwDecl{n.children.at(0)->string()};
        else if (n.is_type<g::link_decl>())
            s.node = link(n);
        else if (n.is_type<g::fn_decl>())
            s.node = fn(n);
        else if (n.is_type<g::expect_decl>())
            s.node = expect(n);
        else if (n.is_type<g::param_decl>())
            s.node = param(n);
        else if (n.is_type<g::train_decl>())
            s.node = train(n);
        else if (n.is_type<g::repeat_decl>())
            s.node = repeat(n);
        else if (n.is_type<g::end_decl>())
            s.node = ast::EndDecl{};
        else
            fail(n, Code::P299, "internal: unexpected statement " + n.type_name());
    }

    /// An equation or a chain, built in the statement's node.
    void ref_statement(const Node& n, ast::Statement& s) const {
        const Node& tail = *n.children.at(1);
        if (tail.is_type<g::equation>()) {
            auto& eq = s.node.emplace<ast::Equation>();
            tensor_ref(*n.children.at(0), eq.lhs);
            const auto op = tail.children.at(0)->string_view();
            eq.op = op == ":="   ? ast::AssignOp::Update
                    : op == "+=" ? ast::AssignOp::Accumulate
                                 : ast::AssignOp::Define;
            expr(*tail.children.at(1), eq.rhs);
            return;
        }
        s.node = chain(n);
    }

    ast::Chain chain(const Node& n) const {
        auto lhs = tensor_ref(*n.children.at(0));
        // Every side as written: its factors (one, or a product written for context).
        std::vector<std::vector<ast::TensorRef>> sides(1);
        sides[0].push_back(std::move(lhs));
        ast::Chain chain;
        for (std::size_t i = 1; i < n.children.size(); ++i) {
            const Node& c = *n.children[i];
            if (c.is_type<g::chain_factor>()) {
                sides[0].push_back(tensor_ref(c));
                continue;
            }
            ast::ChainStep cs;
            const Node& arrow = *c.children.at(0);
            if (arrow.is_type<g::xrightarrow>()) arrow_label(arrow, cs);
            sides.emplace_back();
            for (std::size_t k = 1; k < c.children.size(); ++k)
                sides.back().push_back(tensor_ref(*c.children[k]));
            chain.steps.push_back(std::move(cs));
        }
        // The moved factor: the first position whose factor changes between two sides (the
        // checker reports sides that differ otherwise).
        std::size_t width = sides[0].size();
        for (const auto& side : sides)
            width = std::min(width, side.size());
        bool found = false;
        for (std::size_t p = 0; p < width && !found; ++p)
            for (std::size_t k = 1; k < sides.size() && !found; ++k)
                if (!(sides[k][p] == sides[k - 1][p])) {
                    chain.moved = p;
                    found = true;
                }
        auto take = [&](std::vector<ast::TensorRef>& side, ast::TensorRef& moved,
                        std::vector<ast::TensorRef>& with) {
            const auto at = static_cast<std::ptrdiff_t>(chain.moved);
            moved = std::move(side[chain.moved]);
            side.erase(side.begin() + at);
            with = std::move(side);
        };
        take(sides[0], chain.from, chain.with);
        for (std::size_t k = 0; k < chain.steps.size(); ++k)
            take(sides[k + 1], chain.steps[k].to, chain.steps[k].with);
        return chain;
    }

    /// `\xrightarrow{\rm all-gather}`: a collective list becomes an expectation; other text
    /// is kept as the label.
    void arrow_label(const Node& arrow, ast::ChainStep& step) const {
        std::string text;
        if (!arrow.children.empty()) {
            // Drop LaTeX wrappers: \rm, \textrm{..}, \text{..}, \mathrm{..}, braces, `\ `.
            const auto raw = arrow.children.front()->string_view();
            for (std::size_t i = 0; i < raw.size();) {
                if (raw[i] == '\\') {
                    std::size_t e = i + 1;
                    while (e < raw.size() && std::isalpha(static_cast<unsigned char>(raw[e])))
                        ++e;
                    if (e == i + 1) {
                        text += ' ';
                        e = std::min(raw.size(), i + 2);
                    }
                    i = e;
                } else if (raw[i] == '{' || raw[i] == '}') {
                    ++i;
                } else {
                    text += raw[i++];
                }
            }
        }
        // Collapse whitespace.
        std::string clean;
        for (char c : text) {
            if (std::isspace(static_cast<unsigned char>(c))) {
                if (!clean.empty() && clean.back() != ' ') clean += ' ';
            } else {
                clean += c;
            }
        }
        while (!clean.empty() && clean.back() == ' ')
            clean.pop_back();
        if (auto e = label_expect(clean, range(arrow)))
            step.expect = std::move(*e);
        else
            step.label = clean;
    }

    /// A label that is an expectation list (`all-gather(0)`, `none`), read by the grammar's own
    /// expect_list; nullopt for any other text (`TP matmul`), which stays a label.
    std::optional<ast::Expect> label_expect(const std::string& text,
                                            const ast::SourceRange& at) const {
        flat::Tree tree;
        Input in(text.data(), text.data() + text.size(), "label");
        tree.reset(text.data());
        try {
            if (!pegtl::parse<g::label_expect, pegtl::nothing, control>(in, ctx_, tree))
                return std::nullopt;
            auto e = expect(Node(&tree, 0));
            for (auto& c : e.collectives) {
                c.range = at; // the label is not in the file as parsed: point at the arrow
                for (auto& a : c.axes)
                    a.range = at;
            }
            return e;
        } catch (const pegtl::parse_error&) {
            return std::nullopt;
        } catch (const ConvertError&) { // an unknown collective name: just a label
            return std::nullopt;
        }
    }

    ast::Expect expect(const Node& n) const {
        ast::Expect e;
        for (const auto& c : n.children) {
            if (!c->is_type<g::collective>() && !c->is_type<g::collective_next>()) continue;
            const Node& name = *c->children.at(0);
            auto kind = parse_collective_name(name.string_view());
            if (!kind)
                fail(name, Code::P200, "unknown collective '" + name.string() + "'",
                     "use all-reduce, all-gather, reduce-scatter, all-to-all or permute");
            ast::ExpectedCollective ec{*kind, {}, range(*c)};
            for (std::size_t i = 1; i < c->children.size(); ++i)
                append_axes(*c->children[i], ec.axes);
            e.collectives.push_back(std::move(ec));
        }
        return e;
    }

    ast::MeshDecl mesh(const Node& n) const {
        ast::MeshDecl m;
        std::int64_t total = 1;
        auto add_axis = [&](std::string name, const Node& name_node, const Node& size_node,
                            ast::SourceRange r) {
            const auto size = integer(size_node);
            for (const auto& a : m.axes)
                if (a.name == name)
                    fail(name_node, Code::P208, "mesh axis '" + name + "' is declared twice");
            if (total > kMaxDevices / size)
                fail(size_node, Code::P205,
                     "the mesh has too many devices (more than " + std::to_string(kMaxDevices) +
                         ")");
            total *= size;
            m.axes.push_back({std::move(name), size, r});
        };
        for (const auto& c : n.children) {
            if (c->is_type<g::mesh_axis_size>()) {
                add_axis(std::to_string(m.axes.size()), *c, *c, range(*c));
            } else if (c->is_type<g::mesh_named_axis>()) {
                m.named = true;
                add_axis(c->children.at(0)->string(), *c->children.at(0), *c->children.at(1),
                         range(*c));
            } else if (c->is_type<g::device_id>()) {
                m.devices.push_back(integer(*c, 0));
            }
        }
        if (!m.devices.empty()) {
            auto sorted = m.devices;
            std::sort(sorted.begin(), sorted.end());
            bool permutation = static_cast<std::int64_t>(sorted.size()) == total;
            for (std::size_t i = 0; permutation && i < sorted.size(); ++i)
                permutation = sorted[i] == static_cast<std::int64_t>(i);
            if (!permutation)
                fail(n, Code::P209,
                     "the device list must name each device 0.." + std::to_string(total - 1) +
                         " exactly once (" + std::to_string(m.devices.size()) + " given)");
        }
        return m;
    }

    ast::DimDecl dim(const Node& n) const {
        ast::DimDecl d;
        // Reserved and built in place: growing the list moved every binding read so far.
        d.bindings.reserve(n.children.size());
        for (const auto& b : n.children) {
            ast::DimBinding& binding = d.bindings.emplace_back();
            ast::Index& ix = binding.index;
            ix.range = range(*b);
            for (const auto& c : b->children) {
                if (c->is_type<g::idx_word>()) set_text(ix.name, c->string_view());
                if (c->is_type<g::primes>()) ix.primes = count_primes(c->string_view());
                if (c->is_type<g::dim_size>()) binding.size = integer(*c);
            }
        }
        return d;
    }

    ast::Index plain_index(const Node& n) const {
        ast::Index ix;
        ix.range = range(n);
        for (const auto& c : n.children) {
            if (c->is_type<g::idx_word>()) ix.name = c->string();
            if (c->is_type<g::primes>()) ix.primes = count_primes(c->string_view());
        }
        return ix;
    }

    ast::SplitDecl split(const Node& n) const {
        ast::SplitDecl s;
        for (const auto& c : n.children) {
            if (c->is_type<g::split_from>())
                s.from = plain_index(*c);
            else if (c->is_type<g::split_index>())
                s.parts.push_back(plain_index(*c));
        }
        if (s.parts.size() < 2)
            fail(n, Code::P210, "a split needs at least two parts (as in 'split s -> r t')");
        return s;
    }

    std::string dtype(const Node& n) const {
        auto name = n.string();
        if (!dtype_size(name))
            fail(n, Code::P202, "unknown element type '" + name + "'",
                 "use one of f64, f32, tf32, bf16, f16, fp8, i64, i32, i8");
        return name;
    }

    ast::TensorDecl tensor_decl(const Node& n) const {
        ast::TensorDecl t;
        for (const auto& c : n.children) {
            if (c->is_type<g::decl_tensor_name>()) t.name = c->string();
            if (c->is_type<g::label_text>() || c->is_type<g::label_char>()) t.label = c->string();
            if (c->is_type<g::label_unicode>()) t.label = script_digits(c->string_view());
            if (c->is_type<g::dtype_name>()) t.dtype = dtype(*c);
        }
        return t;
    }

    double parse_double(const Node& n, const char* what) const {
        const auto s = n.string_view();
        double v = 0;
        const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (ec != std::errc() || !std::isfinite(v))
            fail(n, Code::P212,
                 std::string("the ") + what + " " + std::string(s) + " is out of range");
        return v;
    }

    ast::LinkDecl link(const Node& n) const {
        ast::LinkDecl l;
        std::vector<ast::AxisRef> axes;
        append_axes(*n.children.at(0), axes);
        if (axes.size() != 1)
            fail(*n.children.at(0), Code::P211, "a link names exactly one mesh axis");
        l.axis = axes.front();
        for (const auto& c : n.children) {
            if (c->is_type<g::bandwidth>()) {
                const auto value = parse_double(*c->children.at(0), "bandwidth");
                const auto unit = c->children.at(1)->string_view();
                double scale = 1;
                if (unit == "TB/s")
                    scale = 1e12;
                else if (unit == "GB/s")
                    scale = 1e9;
                else if (unit == "MB/s")
                    scale = 1e6;
                else if (unit == "KB/s")
                    scale = 1e3;
                else if (unit == "TiB/s")
                    scale = 1099511627776.0;
                else if (unit == "GiB/s")
                    scale = 1073741824.0;
                else if (unit == "MiB/s")
                    scale = 1048576.0;
                else if (unit == "Tb/s")
                    scale = 1e12 / 8;
                else if (unit == "Gb/s")
                    scale = 1e9 / 8;
                l.bytes_per_second = value * scale;
                l.bandwidth_text = c->children.at(0)->string() + std::string(unit);
                if (!(l.bytes_per_second > 0) || !std::isfinite(l.bytes_per_second))
                    fail(*c, Code::P212, "the bandwidth must be a positive number");
            } else if (c->is_type<g::latency>()) {
                const auto value = parse_double(*c->children.at(0), "latency");
                const auto unit = c->children.at(1)->string_view();
                double scale = 1;
                if (unit == "ns")
                    scale = 1e-9;
                else if (unit == "us" || unit == "µs" || unit == "μs")
                    scale = 1e-6;
                else if (unit == "ms")
                    scale = 1e-3;
                l.latency_seconds = value * scale;
                l.latency_text = c->children.at(0)->string() +
                                 std::string(unit == "µs" || unit == "μs" ? "us" : unit);
                if (!std::isfinite(l.latency_seconds))
                    fail(*c, Code::P212, "the latency must be a finite number");
            }
        }
        return l;
    }

    ast::RepeatDecl repeat(const Node& n) const {
        ast::RepeatDecl r;
        std::string key; // the option whose value comes next
        for (const auto& c : n.children) {
            if (c->is_type<g::repeat_index>()) r.index = closed_index(*c, "a repeat's layer index");
            if (c->is_type<g::repeat_reverse>()) {
                if (r.reverse) fail(*c, Code::P219, "'reverse' is given twice", "give it once");
                r.reverse = true;
            }
            if (c->is_type<g::repeat_key>()) {
                key = c->string();
                if (key != "microbatches" && key != "schedule")
                    fail(*c, Code::P219, "unknown repeat option '" + key + "'",
                         "use microbatches=M or schedule=gpipe|1f1b (pipeline parallelism)");
                if ((key == "microbatches" && r.microbatches > 0) ||
                    (key == "schedule" && !r.schedule.empty()))
                    fail(*c, Code::P219, "the option '" + key + "' is given twice",
                         "give each option once");
            }
            if (c->is_type<g::repeat_value>()) {
                const auto v = c->string_view();
                if (key == "microbatches") {
                    if (v.find_first_not_of("0123456789") != std::string_view::npos ||
                        v.find_first_not_of('0') == std::string_view::npos)
                        fail(*c, Code::P220,
                             "microbatches=" + std::string(v) +
                                 " is not a whole number of at "
                                 "least 1",
                             "write microbatches=M, M micro-batches per step (e.g. 8)");
                    r.microbatches = integer(*c);
                } else {
                    if (v != "gpipe" && v != "1f1b")
                        fail(*c, Code::P220, "schedule=" + std::string(v) + " is not a schedule",
                             "use schedule=gpipe (all forwards, then all backwards) or "
                             "schedule=1f1b (one forward, one backward)");
                    r.schedule = std::string(v);
                }
            }
            if (c->is_type<g::repeat_count>()) {
                if (c->string_view().find_first_not_of('0') == std::string_view::npos)
                    fail(*c, Code::P214,
                         "a repeat runs its layers at least once: the count must be 1 or more");
                r.count = integer(*c);
            }
        }
        return r;
    }

    ast::FnDecl fn(const Node& n) {
        ast::FnDecl f;
        const Node& name = *n.children.at(0);
        f.name = name.string();
        if (find_builtin_function(f.name))
            fail(name, Code::P213,
                 "'" + f.name + "' is a built-in function and cannot be redeclared");
        f.kind = n.children.at(1)->string_view() == "linear" ? ast::FunctionKind::Linear
                                                             : ast::FunctionKind::Elementwise;
        ctx_.functions.insert(f.name);
        return f;
    }

    ast::ParamDecl param(const Node& n) const {
        ast::ParamDecl p;
        for (const auto& c : n.children) {
            if (c->is_type<g::param_name>()) {
                p.tensors.push_back({c->string(), "", range(*c)});
                continue;
            }
            if (p.tensors.empty()) continue;
            auto& t = p.tensors.back();
            if (c->is_type<g::label_text>() || c->is_type<g::label_char>()) t.label = c->string();
            if (c->is_type<g::label_unicode>()) t.label = script_digits(c->string_view());
            std::size_t end = offset(c->end());
            if (c->is_type<g::label_text>()) { // through the closing brace of `^{up}`
                const auto& text = file_.text();
                while (end < text.size() && (text[end] == ' ' || text[end] == '\t'))
                    ++end;
                if (end < text.size() && text[end] == '}') ++end;
            }
            t.range = file_.range(t.range.offset, end - t.range.offset);
        }
        for (std::size_t i = 0; i < p.tensors.size(); ++i)
            for (std::size_t j = 0; j < i; ++j)
                if (p.tensors[i].name == p.tensors[j].name &&
                    p.tensors[i].label == p.tensors[j].label)
                    throw ConvertError{
                        make_diagnostic(Severity::Error, Code::P230, p.tensors[i].range,
                                        "'" + tensor_key(p.tensors[i].name, p.tensors[i].label) +
                                            "' is already a parameter on this line",
                                        "name each parameter once")};
        return p;
    }

    ast::TrainDecl train(const Node& n) const {
        ast::TrainDecl t;
        std::vector<std::string> seen;
        std::string key;
        bool have_key = false;
        for (const auto& c : n.children) {
            if (c->is_type<g::train_optimizer>()) {
                t.optimizer = c->string();
                if (t.optimizer != "adam" && t.optimizer != "sgd")
                    fail(*c, Code::P231, "unknown optimizer '" + t.optimizer + "'",
                         "use adam (two f32 moments per weight) or sgd (no state)");
            } else if (c->is_type<g::train_key>()) {
                key = c->string();
                have_key = true;
                if (key != "master" && key != "recompute" && key != "zero")
                    fail(*c, Code::P232, "unknown training option '" + key + "'",
                         "use master=f32|none, recompute=none|full or zero=0|1|2");
                if (std::find(seen.begin(), seen.end(), key) != seen.end())
                    fail(*c, Code::P233, "the option '" + key + "' is given twice",
                         "give each option once");
                seen.push_back(key);
            } else if (c->is_type<g::train_value>() && have_key) {
                const std::string v = c->string();
                if (key == "master") {
                    if (v != "none" && !dtype_size(v))
                        fail(*c, Code::P234, "master weights of unknown element type '" + v + "'",
                             "use master=f32 (mixed precision) or master=none");
                    t.master = v;
                } else if (key == "zero") {
                    if (v == "3")
                        fail(*c, Code::P234,
                             "zero=3 is not an option: ZeRO stage 3 is the weights' "
                             "own placement",
                             "shard the weights over the data axes (as in W_{d_{dp} f}); their "
                             "gradients and optimizer state follow");
                    if (v != "0" && v != "1" && v != "2")
                        fail(*c, Code::P234, "zero=" + v + " is not a ZeRO stage",
                             "use zero=1 (optimizer state partitioned) or zero=2 (and gradients)");
                    t.zero = v[0] - '0';
                } else {
                    if (v != "none" && v != "full")
                        fail(*c, Code::P234, "recompute=" + v + " is not a recomputation policy",
                             "use recompute=none (save every activation) or recompute=full");
                    t.recompute = v;
                }
            }
        }
        return t;
    }

    const SourceFile& file_;
    ParseContext& ctx_;
    mutable SourceFile::LineSpan line_; ///< the line of the last node positioned
    mutable bool saw_open_ = false;     ///< an open index (`f_?`) was read
};

/// The word at `p` (a name or LaTeX command) for messages.
std::string word_at(std::string_view text, std::size_t off) {
    std::size_t e = off;
    const bool command = e < text.size() && text[e] == '\\';
    if (command) ++e;
    while (e < text.size() && (command ? std::isalpha(static_cast<unsigned char>(text[e]))
                                       : std::isalnum(static_cast<unsigned char>(text[e]))))
        ++e;
    return std::string(text.substr(off, e - off));
}

/// For an unknown function: the name at `off`, looking inside `\mathrm{...}` and the like.
std::pair<std::size_t, std::string> function_name_at(std::string_view text, std::size_t off) {
    if (off < text.size() && text[off] == '\\') {
        // Only `\font{name}`: the brace must follow the command (and spaces) directly.
        std::size_t brace = off + 1;
        while (brace < text.size() && std::isalpha(static_cast<unsigned char>(text[brace])))
            ++brace;
        while (brace < text.size() && (text[brace] == ' ' || text[brace] == '\t'))
            ++brace;
        if (brace < text.size() && text[brace] == '{') {
            std::size_t b = brace + 1;
            while (b < text.size() && (text[b] == ' ' || text[b] == '\t'))
                ++b;
            return {b, word_at(text, b)};
        }
    }
    return {off, word_at(text, off)};
}

bool is_known_latex_command(std::string_view cmd) {
    static constexpr std::string_view known[] = {
        "left",   "right", "quad",   "qquad",          "nonumber",   "notag",  "displaystyle",
        "limits", "big",   "Big",    "begin",          "end",        "frac",   "dfrac",
        "tfrac",  "cdot",  "times",  "xrightarrow",    "rightarrow", "to",     "mapsto",
        "textrm", "text",  "texttt", "longrightarrow", "mathrm",     "mathtt", "operatorname"};
    return std::find(std::begin(known), std::end(known), cmd) != std::end(known) ||
           find_builtin_function(cmd) != nullptr;
}

/// `repeat` ... `end` pair up, one level deep, with only equations, chains and expectations
/// between them (declarations are program-wide).
/// Whether a statement's text starts with the word `repeat` (a repeat line that failed).
bool starts_repeat(std::string_view chunk) {
    const auto b = chunk.find_first_not_of(" \t\r");
    if (b == std::string_view::npos || chunk.substr(b, 6) != "repeat") return false;
    const auto e = b + 6;
    return e >= chunk.size() ||
           !(std::isalnum(static_cast<unsigned char>(chunk[e])) || chunk[e] == '_');
}

/// `repeat` ... `end` pair up, one level deep, with only equations, chains and expectations
/// between them (declarations are program-wide). `failed` holds the offsets of repeat lines
/// that had errors of their own: they open a block all the same (their `end` is no error).
void check_blocks(ParseResult& result, const std::vector<std::size_t>& failed) {
    struct Open {
        bool is = false; ///< a repeat is being read
        ast::SourceRange range;
        bool failed = false;
        explicit operator bool() const { return is; }
        const Open* operator->() const { return this; }
        void reset() { is = false; }
    };
    Open open;     // the outermost repeat being read
    int depth = 0; // repeats open (more than one is an error)
    std::size_t next_failed = 0;
    auto opens = [&](const ast::SourceRange& r, bool bad) {
        if (!open) open = Open{true, r, bad};
        ++depth;
    };
    for (const auto& item : result.program.items) {
        const auto* s = std::get_if<ast::Statement>(&item);
        if (!s) continue;
        while (next_failed < failed.size() && failed[next_failed] < s->range.offset) {
            ast::SourceRange r;
            r.offset = static_cast<std::uint32_t>(failed[next_failed++]);
            opens(r, true);
        }
        auto error = [&](Code code, std::string message, std::string fix) {
            result.diagnostics.push_back(make_diagnostic(Severity::Error, code, s->range,
                                                         std::move(message), std::move(fix)));
        };
        const auto open_line = open ? std::to_string(open->range.line) : std::string();
        if (std::holds_alternative<ast::RepeatDecl>(s->node)) {
            if (open && !open->failed)
                error(Code::P215,
                      "a repeat inside a repeat (line " + open_line + "): repeats do not nest",
                      "close the repeat of line " + open_line + " with 'end' first");
            opens(s->range, false);
        } else if (std::holds_alternative<ast::EndDecl>(s->node)) {
            if (depth == 0)
                error(Code::P216, "'end' without a 'repeat' before it",
                      "remove it, or open a block with 'repeat l=N'");
            else if (--depth == 0)
                open.reset();
        } else if (open && !open->failed && !std::holds_alternative<ast::Equation>(s->node) &&
                   !std::holds_alternative<ast::Chain>(s->node) &&
                   !std::holds_alternative<ast::Expect>(s->node)) {
            error(Code::P217,
                  "a declaration inside the repeat of line " + open_line +
                      ": declarations hold for the whole program",
                  "move it before the 'repeat'");
        }
    }
    if (open && !open->failed)
        result.diagnostics.push_back(make_diagnostic(Severity::Error, Code::P218, open->range,
                                                     "this repeat has no 'end'",
                                                     "close its body with a line 'end'"));
}

} // namespace

bool ParseResult::has_errors() const {
    return std::any_of(diagnostics.begin(), diagnostics.end(),
                       [](const Diagnostic& d) { return d.severity == Severity::Error; });
}

ParseResult parse(const SourceFile& file, const ParseOptions& options) {
    ParseResult result;
    ParseContext ctx;
    ctx.functions.insert(options.functions.begin(), options.functions.end());
    Converter convert(file, ctx);
    flat::Tree tree; // reused by every statement
    const std::string& text = file.text();

    auto& items = result.program.items;
    constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();
    std::size_t statement_on_line = kNone;   // item index of the last statement on this line
    std::vector<std::size_t> failed_repeats; // offsets of repeat lines with errors
    bool line_has_content = false;

    // An item per statement or comment, mostly (blank lines and inline expectations add a
    // few): reserved, as growing moved every statement built so far.
    const auto pieces = split_statements(text);
    items.reserve(
        static_cast<std::size_t>(std::count_if(pieces.begin(), pieces.end(), [](const Piece& p) {
            return p.kind != Piece::Kind::LineEnd;
        })));
    for (const auto& piece : pieces) {
        switch (piece.kind) {
        case Piece::Kind::LineEnd:
            if (!line_has_content && !items.empty() &&
                !std::holds_alternative<ast::BlankLine>(items.back()))
                items.emplace_back(ast::BlankLine{});
            line_has_content = false;
            statement_on_line = kNone;
            break;
        case Piece::Kind::Comment:
            line_has_content = true;
            if (statement_on_line != kNone &&
                std::get<ast::Statement>(items[statement_on_line]).comment.empty()) {
                std::get<ast::Statement>(items[statement_on_line]).comment = piece.text;
            } else {
                items.emplace_back(
                    ast::Comment{piece.text, file.range(piece.begin, piece.end - piece.begin)});
            }
            break;
        case Piece::Kind::Statement: {
            const std::string_view chunk(text.data() + piece.begin, piece.end - piece.begin);
            if (chunk.find_first_not_of(" \t\r") != std::string_view::npos) line_has_content = true;
            Input in(chunk.data(), chunk.data() + chunk.size(), file.name().c_str(), piece.begin, 1,
                     1);
            const std::size_t before = items.size();
            try {
                tree.reset(chunk.data());
                if (!pegtl::parse<grammar::chunk, pegtl::nothing, control>(in, ctx, tree)) break;
                convert.statements(Node(&tree, 0), items);
                if (items.size() > before) statement_on_line = before;
            } catch (const CodedParseError& e) {
                if (starts_repeat(chunk)) failed_repeats.push_back(piece.begin);
                const auto off = e.positions().front().byte;
                auto d = make_diagnostic(Severity::Error, e.code, file.range(off, 1),
                                         std::string(e.message()));
                const auto word = word_at(text, off);
                if (e.code == Code::P108) {
                    const auto [name_off, name] = function_name_at(text, off);
                    d.message = "unknown function '" + name + "'";
                    d.range = file.range(off, name_off + name.size() - off);
                    std::vector<std::string_view> known;
                    for (const auto& f : builtin_functions())
                        known.push_back(f.name);
                    const std::string near = closest_name(name, known);
                    d.fix = "declare it with 'fn " + name + " elementwise' (or linear)";
                    if (!near.empty()) d.fix = "did you mean '" + near + "'? Or " + d.fix;
                    if (name_off == off) d.fix += ", or write '" + name + " * (...)' for a product";
                } else if (word.size() > 1 && word[0] == '\\' &&
                           !is_known_latex_command(std::string_view(word).substr(1))) {
                    d.code = code_name(Code::P119);
                    d.message = "unknown LaTeX command '" + word + "'";
                    d.range = file.range(off, word.size());
                }
                result.diagnostics.push_back(std::move(d));
                line_has_content = true;
            } catch (const ConvertError& e) {
                // A statement converted before the error (an inline expectation failed) goes.
                items.erase(items.begin() + static_cast<std::ptrdiff_t>(before), items.end());
                if (starts_repeat(chunk)) failed_repeats.push_back(piece.begin);
                result.diagnostics.push_back(e.diagnostic);
                line_has_content = true;
            }
            break;
        }
        }
    }
    while (!items.empty() && std::holds_alternative<ast::BlankLine>(items.back()))
        items.pop_back();
    check_blocks(result, failed_repeats);
    if (convert.saw_open())
        for (auto& d : ast::open_marker_conflicts(result.program))
            result.diagnostics.push_back(std::move(d));
    return result;
}

std::size_t analyze_grammar(bool verbose) {
    return pegtl::analyze<grammar::chunk>(verbose ? 1 : 0);
}

} // namespace shardscope::parser
