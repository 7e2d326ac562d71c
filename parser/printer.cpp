#include "printer.hpp"

#include "functions.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <sstream>
#include <string_view>
#include <utility>

namespace shardscope::parser {

namespace {

bool all_digits(const std::string& s) {
    return !s.empty() &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

using DigitGlyphs = std::array<std::string_view, 10>;
constexpr DigitGlyphs kSubscriptDigits = {"₀", "₁", "₂", "₃", "₄", "₅", "₆", "₇", "₈", "₉"};
constexpr DigitGlyphs kSuperscriptDigits = {"⁰", "¹", "²", "³", "⁴", "⁵", "⁶", "⁷", "⁸", "⁹"};

/// Where the printer writes: bytes gathered in a buffer of its own and appended to the string
/// in blocks. The printer runs once per statement in `fmt` and in every check (the pretty
/// form), and std::string's += was a call per byte, most of the printer's time.
class Writer {
public:
    explicit Writer(std::string& out) : out_(out) {}
    Writer(const Writer&) = delete;
    Writer& operator=(const Writer&) = delete;
    ~Writer() { flush(); }

    Writer& operator+=(char c) {
        if (n_ == sizeof buf_) [[unlikely]]
            flush();
        buf_[n_++] = c;
        return *this;
    }
    Writer& operator+=(std::string_view s) {
        // Names, glyphs and operators are a few bytes: copied here, not by a call to memcpy.
        if (s.size() <= 4 && s.size() <= sizeof buf_ - n_) [[likely]] {
            for (char c : s)
                buf_[n_++] = c;
            return *this;
        }
        if (s.size() > sizeof buf_ - n_) [[unlikely]] {
            flush();
            if (s.size() > sizeof buf_) {
                out_.append(s);
                return *this;
            }
        }
        std::memcpy(buf_ + n_, s.data(), s.size());
        n_ += s.size();
        return *this;
    }
    /// The last byte written (something was).
    char back() const { return n_ > 0 ? buf_[n_ - 1] : out_.back(); }
    void flush() {
        out_.append(buf_, n_);
        n_ = 0;
    }

private:
    std::string& out_;
    char buf_[256];
    std::size_t n_ = 0;
};

/// ASCII digits in Unicode sub- or superscript form.
void put_script_digits(Writer& out, const std::string& digits, const DigitGlyphs& glyphs) {
    for (char c : digits)
        out += glyphs[static_cast<std::size_t>(c - '0')];
}

/// Inline: most lists are one axis, less than the call cost.
[[gnu::always_inline]] inline void put_axes(Writer& out, const std::vector<ast::AxisRef>& axes) {
    for (std::size_t i = 0; i < axes.size(); ++i) {
        if (i) out += ',';
        out += axes[i].name;
    }
}

std::string join_axes(const std::vector<ast::AxisRef>& axes) {
    std::string out;
    {
        Writer w(out);
        put_axes(w, axes);
    }
    return out;
}

bool single_digit_axes(const std::vector<ast::AxisRef>& axes) {
    return std::all_of(axes.begin(), axes.end(), [](const ast::AxisRef& a) {
        return a.name.size() == 1 && a.name[0] >= '0' && a.name[0] <= '9';
    });
}

/// `_0`, `_{0,1}`, `_{tp}` (subscript form) or `_X` (bracket form); `₀₁` in Unicode.
void put_mesh_suffix(Writer& out, const std::vector<ast::AxisRef>& axes, bool bracket,
                     bool unicode) {
    if (axes.empty()) return;
    const bool digits = single_digit_axes(axes);
    if (unicode && digits) {
        for (const auto& a : axes)
            put_script_digits(out, a.name, kSubscriptDigits);
        return;
    }
    if (axes.size() == 1 && (bracket || digits)) {
        out += '_';
        out += axes[0].name;
        return;
    }
    out += "_{";
    put_axes(out, axes);
    out += '}';
}

void put_primes(Writer& out, int n, bool unicode) {
    for (int i = 0; i < n; ++i)
        out += unicode ? "′" : "'";
}

std::string primes(int n, bool unicode) {
    std::string out;
    {
        Writer w(out);
        put_primes(w, n, unicode);
    }
    return out;
}
void put_index(Writer& out, const ast::Index& ix, bool bracket, bool unicode) {
    const bool braced = !bracket && ix.name.size() > 1;
    if (braced) out += '{';
    out += ix.name;
    if (braced) out += '}';
    put_primes(out, ix.primes, unicode);
    if (ix.open) {
        // `f_?` (any axis), `f_{tp?}`, `f_{dp,tp?}`: the same in every form.
        if (ix.open_axes.empty()) {
            out += "_?";
            return;
        }
        out += "_{";
        put_axes(out, ix.open_axes);
        out += "?}";
        return;
    }
    put_mesh_suffix(out, ix.axes, bracket, unicode);
}

/// Inline: the one-index case (all but groups) is a tail call to put_index, and a call of
/// its own cost more than that.
[[gnu::always_inline]] inline void put_dimension(Writer& out, const ast::Dimension& d, bool bracket,
                                                 bool unicode) {
    if (!d.grouped) return put_index(out, d.parts.at(0), bracket, unicode);
    out += '(';
    for (std::size_t i = 0; i < d.parts.size(); ++i) {
        if (i) out += ' ';
        put_index(out, d.parts[i], bracket, unicode);
    }
    out += ')';
}

/// A dimension that prints as its one letter (`s` in `x_{b_0 s d}`, most of them): written
/// inline by the subscript list, as the calls through put_dimension and put_index cost more
/// than the byte. Inline: a test per dimension, which GCC had left a call.
[[gnu::always_inline]] inline const ast::Index* plain_letter(const ast::Dimension& d) {
    if (d.grouped || d.parts.size() != 1) return nullptr;
    const ast::Index& ix = d.parts[0];
    return ix.name.size() == 1 && ix.primes == 0 && !ix.open && ix.axes.empty() ? &ix : nullptr;
}

/// Subscript lists are compact (`x_{bsd'}`) unless an index carries a mesh axis, is longer
/// than one letter, or is a group: then indices are separated by spaces (`W_{d r_0 f}`).
template <typename Dims, typename DimOf>
void put_subscript_list(Writer& out, const Dims& dims, DimOf&& dim_of, bool unicode) {
    bool spaced = false;
    for (const auto& d : dims) {
        // dim_of may return a temporary (call indices): bind it, not a reference into it.
        const auto& dim = dim_of(d);
        const ast::Index& first = dim.parts.at(0);
        spaced =
            spaced || dim.grouped || !first.axes.empty() || first.open || first.name.size() > 1;
    }
    out += "_{";
    bool first = true;
    for (const auto& d : dims) {
        if (!first && spaced) out += ' ';
        first = false;
        const auto& dim = dim_of(d);
        if (const ast::Index* ix = plain_letter(dim))
            out += ix->name[0];
        else
            put_dimension(out, dim, false, unicode);
    }
    out += '}';
}

/// How a label is written in ASCII: `^0` for one character, `^{10}` otherwise. The one rule
/// shared by the printer and `tensor_key`.
std::pair<std::string_view, std::string_view> label_delimiters(std::string_view label) {
    if (label.size() == 1) return {"^", ""};
    return {"^{", "}"};
}

/// Inline: every reference asks, and most have no label or a one-digit one.
[[gnu::always_inline]] inline void put_label(Writer& out, const std::string& label, bool unicode) {
    if (label.empty()) return;
    if (unicode && all_digits(label)) return put_script_digits(out, label, kSuperscriptDigits);
    const auto [open, close] = label_delimiters(label);
    out += open;
    out += label;
    out += close;
}

std::string label_text(const std::string& label, bool unicode) {
    std::string out;
    {
        Writer w(out);
        put_label(w, label, unicode);
    }
    return out;
}

void put_ref(Writer& out, const ast::TensorRef& t, bool unicode) {
    out += t.name;
    put_label(out, t.label, unicode);
    if (t.style == ast::IndexStyle::Subscript) {
        put_subscript_list(
            out, t.dims, [](const ast::Dimension& d) -> const ast::Dimension& { return d; },
            unicode);
    } else if (t.style == ast::IndexStyle::Bracket) {
        out += '[';
        for (std::size_t i = 0; i < t.dims.size(); ++i) {
            if (i) out += ", ";
            put_dimension(out, t.dims[i], true, unicode);
        }
        out += ']';
    }
    if (!t.partial_axes.empty()) {
        const auto& ax = t.partial_axes;
        out += "{U_";
        if (ax.size() == 1) {
            out += ax[0].name;
        } else {
            out += '{';
            put_axes(out, ax);
            out += '}';
        }
        out += '}';
    }
}

std::string ref_text(const ast::TensorRef& t, bool unicode) {
    std::string out;
    {
        Writer w(out);
        put_ref(w, t, unicode);
    }
    return out;
}

class ExprPrinter {
public:
    ExprPrinter(Writer& out, bool unicode) : out_(out), unicode_(unicode) {}

    void put(const ast::Expr& e) const {
        std::visit([&](const auto& n) { put_node(n); }, e.node);
    }

private:
    void put_wrapped(const ast::Expr& e, bool wrap) const {
        if (wrap) out_ += '(';
        put(e);
        if (wrap) out_ += ')';
    }

    void put_node(const ast::Number& n) const { out_ += n.text; }
    void put_node(const ast::TensorRef& r) const { put_ref(out_, r, unicode_); }

    void put_node(const ast::Call& c) const {
        const FunctionInfo* f = unicode_ ? find_builtin_function(c.function) : nullptr;
        if (f && !f->unicode.empty())
            out_ += f->unicode;
        else
            out_ += c.function;
        if (!c.indices.empty()) {
            put_subscript_list(
                out_, c.indices,
                [](const ast::Index& ix) {
                    return ast::Dimension{{ix}, false, {}};
                },
                unicode_);
        }
        out_ += '(';
        put(*c.arg);
        out_ += ')';
    }

    void put_node(const ast::Product& p) const {
        for (std::size_t i = 0; i < p.factors.size(); ++i) {
            const auto& f = p.factors[i];
            const bool wrap = std::holds_alternative<ast::Product>(f.node) ||
                              std::holds_alternative<ast::Sum>(f.node) ||
                              (i > 0 && std::holds_alternative<ast::Quotient>(f.node));
            if (i > 0) {
                // A name right before '(' would read as a call: write the product explicitly
                // (`*` and juxtaposition are the same product).
                const bool after_name = std::isalnum(static_cast<unsigned char>(out_.back()));
                out_ += (wrap && after_name) ? (unicode_ ? " · " : " * ") : " ";
            }
            put_wrapped(f, wrap);
        }
    }

    void put_node(const ast::Quotient& q) const {
        const auto& num = *q.num;
        const auto& den = *q.den;
        put_wrapped(num, std::holds_alternative<ast::Sum>(num.node));
        out_ += " / ";
        put_wrapped(den, std::holds_alternative<ast::Sum>(den.node) ||
                             std::holds_alternative<ast::Product>(den.node) ||
                             std::holds_alternative<ast::Quotient>(den.node));
    }

    void put_node(const ast::Sum& s) const {
        for (std::size_t i = 0; i < s.terms.size(); ++i) {
            const bool neg = s.negated[i];
            if (i == 0)
                out_ += neg ? "-" : "";
            else
                out_ += neg ? " - " : " + ";
            put_wrapped(s.terms[i], std::holds_alternative<ast::Sum>(s.terms[i].node));
        }
    }

    Writer& out_;
    bool unicode_;
};

/// `lhs = rhs` (`:=`, `+=`): into a statement's string, or in place into the program's text
/// (most statements: no string of their own to make, copy and free). Inline: a call cost the
/// checker's print(Statement) a dozen instructions a statement.
[[gnu::always_inline]] inline void put_equation(Writer& out, const ast::Equation& e, bool unicode) {
    const char* op = e.op == ast::AssignOp::Update       ? " := "
                     : e.op == ast::AssignOp::Accumulate ? " += "
                                                         : " = ";
    put_ref(out, e.lhs, unicode);
    out += op;
    ExprPrinter(out, unicode).put(e.rhs);
}

std::string arrow_text(const ast::ChainStep& step, bool unicode) {
    if (step.expect) return "\\xrightarrow{" + print(*step.expect) + "}";
    if (!step.label.empty()) return "\\xrightarrow{" + step.label + "}";
    return unicode ? "→" : "->";
}

struct StatementPrinter {
    bool unicode;

    std::string operator()(const ast::MeshDecl& m) const {
        std::string out = "mesh";
        for (std::size_t i = 0; i < m.axes.size(); ++i) {
            const auto size = std::to_string(m.axes[i].size);
            if (m.named)
                out += " " + m.axes[i].name + "=" + size;
            else
                out += (i ? (unicode ? "×" : "x") : " ") + size;
        }
        if (!m.devices.empty()) {
            out += " devices [";
            for (std::size_t i = 0; i < m.devices.size(); ++i)
                out += (i ? " " : "") + std::to_string(m.devices[i]);
            out += "]";
        }
        return out;
    }
    std::string operator()(const ast::DimDecl& d) const {
        std::string out = "dim";
        for (const auto& b : d.bindings)
            out +=
                " " + b.index.name + primes(b.index.primes, unicode) + "=" + std::to_string(b.size);
        return out;
    }
    std::string operator()(const ast::SplitDecl& s) const {
        std::string out =
            "split " + s.from.name + primes(s.from.primes, unicode) + (unicode ? " →" : " ->");
        for (const auto& p : s.parts)
            out += " " + p.name + primes(p.primes, unicode);
        return out;
    }
    std::string operator()(const ast::DtypeDecl& d) const { return "dtype " + d.dtype; }
    std::string operator()(const ast::TensorDecl& t) const {
        return "tensor " + t.name + label_text(t.label, unicode) + " : " + t.dtype;
    }
    std::string operator()(const ast::HwDecl& h) const { return "hw " + h.preset; }
    std::string operator()(const ast::LinkDecl& l) const {
        std::string out = "link " + l.axis.name + " " + l.bandwidth_text;
        if (!l.latency_text.empty()) out += " " + l.latency_text;
        return out;
    }
    std::string operator()(const ast::FnDecl& f) const {
        return "fn " + f.name + (f.kind == ast::FunctionKind::Linear ? " linear" : " elementwise");
    }
    std::string operator()(const ast::ParamDecl& p) const {
        std::string out = "param";
        for (const auto& t : p.tensors)
            out += " " + t.name + label_text(t.label, unicode);
        return out;
    }
    std::string operator()(const ast::TrainDecl& t) const {
        return "train " + t.optimizer + " master=" + t.master + " recompute=" + t.recompute +
               (t.zero > 0 ? " zero=" + std::to_string(t.zero) : "");
    }
    std::string operator()(const ast::Expect& e) const { return "expect " + print(e); }
    std::string operator()(const ast::RepeatDecl& r) const {
        std::string out = "repeat ";
        {
            Writer w(out);
            put_index(w, r.index, false, unicode);
        }
        out += "=" + std::to_string(r.count);
        if (r.reverse) out += " reverse";
        if (r.microbatches > 0) out += " microbatches=" + std::to_string(r.microbatches);
        if (!r.schedule.empty()) out += " schedule=" + r.schedule;
        return out;
    }
    std::string operator()(const ast::EndDecl&) const { return "end"; }
    std::string operator()(const ast::Equation& e) const {
        std::string out;
        {
            Writer w(out); // the whole statement in one append, most of the time
            put_equation(w, e, unicode);
        }
        return out;
    }
    std::string operator()(const ast::Chain& c) const {
        // A side that is a product prints its factors in written order, one space apart.
        auto side = [&](const ast::TensorRef& moved, const std::vector<ast::TensorRef>& with) {
            std::string text;
            for (const auto* r : ast::chain_side(moved, with, c.moved))
                text += (text.empty() ? "" : " ") + ref_text(*r, unicode);
            return text;
        };
        std::string out = side(c.from, c.with);
        for (const auto& s : c.steps)
            out += " " + arrow_text(s, unicode) + " " + side(s.to, s.with);
        return out;
    }
};

} // namespace

std::string tensor_key(const std::string& name, const std::string& label) {
    if (label.empty()) return name;
    // Not a structured binding: clang 15 cannot capture one in a lambda.
    const auto delimiters = label_delimiters(label);
    const std::string_view open = delimiters.first, close = delimiters.second;
    const std::size_t size = name.size() + open.size() + label.size() + close.size();
    // Most keys (`W^0`, `W12^1`) fit std::string's inline buffer: gathered here and the string
    // made once, as the checker asks for a key per tensor read (appends cost twice this).
    auto write = [&](char* out) {
        for (std::string_view part : {std::string_view(name), open, std::string_view(label), close})
            out = std::copy(part.begin(), part.end(), out);
    };
    char small[15];
    if (size <= sizeof small) {
        write(small);
        return std::string(small, size);
    }
    std::string large(size, '\0');
    write(large.data());
    return large;
}

std::string print(const ast::Expect& e) {
    if (e.collectives.empty()) return "none";
    std::string out;
    for (std::size_t i = 0; i < e.collectives.size(); ++i) {
        const auto& c = e.collectives[i];
        out += (i ? ", " : "") + std::string(collective_name(c.kind));
        if (!c.axes.empty()) out += "(" + join_axes(c.axes) + ")";
    }
    return out;
}

std::string print(const ast::Index& index, PrintOptions o) {
    std::string out;
    {
        Writer w(out);
        put_index(w, index, false, o.unicode);
    }
    return out;
}
std::string print(const ast::TensorRef& ref, PrintOptions o) {
    return ref_text(ref, o.unicode);
}
std::string print(const ast::Expr& expr, PrintOptions o) {
    std::string out;
    {
        Writer w(out);
        ExprPrinter(w, o.unicode).put(expr);
    }
    return out;
}
std::string print(const ast::Statement& s, PrintOptions o) {
    return std::visit(StatementPrinter{o.unicode}, s.node);
}

std::string print(const ast::Program& program, PrintOptions o) {
    std::string out;
    bool body = false; // inside a repeat: indented by two spaces
    for (const auto& item : program.items) {
        const auto* st = std::get_if<ast::Statement>(&item);
        if (st && std::holds_alternative<ast::EndDecl>(st->node)) body = false;
        if (body && !std::holds_alternative<ast::BlankLine>(item)) out += "  ";
        if (st && std::holds_alternative<ast::RepeatDecl>(st->node)) body = true;
        if (const auto* s = std::get_if<ast::Statement>(&item)) {
            if (const auto* eq = std::get_if<ast::Equation>(&s->node)) {
                Writer w(out);
                put_equation(w, *eq, o.unicode);
            } else {
                out += print(*s, o);
            }
            if (!s->comment.empty()) out += "  # " + s->comment;
        } else if (const auto* c = std::get_if<ast::Comment>(&item)) {
            out += c->text.empty() ? "#" : "# " + c->text;
        }
        out += '\n';
    }
    return out;
}

} // namespace shardscope::parser
