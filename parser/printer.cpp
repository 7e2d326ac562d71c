#include "printer.hpp"

#include "functions.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <sstream>

namespace shardscope::parser {

namespace {

bool all_digits(const std::string& s) {
    return !s.empty() &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

using DigitGlyphs = std::array<const char*, 10>;
constexpr DigitGlyphs kSubscriptDigits = {"₀", "₁", "₂", "₃", "₄", "₅", "₆", "₇", "₈", "₉"};
constexpr DigitGlyphs kSuperscriptDigits = {"⁰", "¹", "²", "³", "⁴", "⁵", "⁶", "⁷", "⁸", "⁹"};

/// ASCII digits in Unicode sub- or superscript form.
std::string script_digits(const std::string& digits, const DigitGlyphs& glyphs) {
    std::string out;
    for (char c : digits)
        out += glyphs[static_cast<std::size_t>(c - '0')];
    return out;
}

std::string join_axes(const std::vector<ast::AxisRef>& axes) {
    std::string out;
    for (std::size_t i = 0; i < axes.size(); ++i)
        out += (i ? "," : "") + axes[i].name;
    return out;
}

bool single_digit_axes(const std::vector<ast::AxisRef>& axes) {
    return std::all_of(axes.begin(), axes.end(), [](const ast::AxisRef& a) {
        return a.name.size() == 1 && all_digits(a.name);
    });
}

/// `_0`, `_{0,1}`, `_{tp}` (subscript form) or `_X` (bracket form); `₀₁` in Unicode.
std::string mesh_suffix(const std::vector<ast::AxisRef>& axes, bool bracket, bool unicode) {
    if (axes.empty()) return {};
    if (unicode && single_digit_axes(axes)) {
        std::string digits;
        for (const auto& a : axes)
            digits += a.name;
        return script_digits(digits, kSubscriptDigits);
    }
    if (axes.size() == 1 && (bracket || single_digit_axes(axes))) return "_" + axes[0].name;
    return "_{" + join_axes(axes) + "}";
}

std::string primes(int n, bool unicode) {
    std::string out;
    for (int i = 0; i < n; ++i)
        out += unicode ? "′" : "'";
    return out;
}

std::string index_text(const ast::Index& ix, bool bracket, bool unicode) {
    std::string name = ix.name;
    if (!bracket && name.size() > 1) name = "{" + name + "}";
    return name + primes(ix.primes, unicode) + mesh_suffix(ix.axes, bracket, unicode);
}

std::string dimension_text(const ast::Dimension& d, bool bracket, bool unicode) {
    if (!d.grouped) return index_text(d.parts.at(0), bracket, unicode);
    std::string out = "(";
    for (std::size_t i = 0; i < d.parts.size(); ++i)
        out += (i ? " " : "") + index_text(d.parts[i], bracket, unicode);
    return out + ")";
}

/// Subscript lists are compact (`x_{bsd'}`) unless an index carries a mesh axis, is longer
/// than one letter, or is a group: then indices are separated by spaces (`W_{d r_0 f}`).
std::string subscript_list(const std::vector<ast::Dimension>& dims, bool unicode) {
    const bool spaced = std::any_of(dims.begin(), dims.end(), [](const ast::Dimension& d) {
        return d.grouped || !d.parts.at(0).axes.empty() || d.parts.at(0).name.size() > 1;
    });
    std::string out = "_{";
    for (std::size_t i = 0; i < dims.size(); ++i)
        out += (i && spaced ? " " : "") + dimension_text(dims[i], false, unicode);
    return out + "}";
}

std::string label_text(const std::string& label, bool unicode) {
    if (label.empty()) return {};
    if (unicode && all_digits(label)) return script_digits(label, kSuperscriptDigits);
    if (label.size() == 1) return "^" + label;
    return "^{" + label + "}";
}

std::string ref_text(const ast::TensorRef& t, bool unicode) {
    std::string out = t.name + label_text(t.label, unicode);
    if (t.style == ast::IndexStyle::Subscript) {
        out += subscript_list(t.dims, unicode);
    } else if (t.style == ast::IndexStyle::Bracket) {
        out += "[";
        for (std::size_t i = 0; i < t.dims.size(); ++i)
            out += (i ? ", " : "") + dimension_text(t.dims[i], true, unicode);
        out += "]";
    }
    if (!t.partial_axes.empty()) {
        const auto& ax = t.partial_axes;
        out += "{U" + (ax.size() == 1 ? "_" + ax[0].name : "_{" + join_axes(ax) + "}") + "}";
    }
    return out;
}

class ExprPrinter {
public:
    explicit ExprPrinter(bool unicode) : unicode_(unicode) {}

    std::string operator()(const ast::Expr& e) const {
        return std::visit([&](const auto& n) { return print_node(n); }, e.node);
    }

private:
    std::string print_node(const ast::Number& n) const { return n.text; }
    std::string print_node(const ast::TensorRef& r) const { return ref_text(r, unicode_); }

    std::string print_node(const ast::Call& c) const {
        std::string name = c.function;
        if (unicode_)
            if (const auto* f = find_builtin_function(c.function); f && !f->unicode.empty())
                name = std::string(f->unicode);
        std::string out = name;
        if (!c.indices.empty()) {
            std::vector<ast::Dimension> dims;
            for (const auto& ix : c.indices)
                dims.push_back({{ix}, false, {}});
            out += subscript_list(dims, unicode_);
        }
        return out + "(" + (*this)(*c.arg) + ")";
    }

    std::string print_node(const ast::Product& p) const {
        std::string out;
        for (std::size_t i = 0; i < p.factors.size(); ++i) {
            const auto& f = p.factors[i];
            const bool wrap = std::holds_alternative<ast::Product>(f.node) ||
                              std::holds_alternative<ast::Sum>(f.node) ||
                              (i > 0 && std::holds_alternative<ast::Quotient>(f.node));
            if (i > 0) {
                // A name right before '(' would read as a call: write the product explicitly
                // (`*` and juxtaposition are the same product).
                const bool after_name = std::isalnum(static_cast<unsigned char>(out.back()));
                out += (wrap && after_name) ? (unicode_ ? " · " : " * ") : " ";
            }
            out += wrap ? "(" + (*this)(f) + ")" : (*this)(f);
        }
        return out;
    }

    std::string print_node(const ast::Quotient& q) const {
        const auto& num = *q.num;
        const auto& den = *q.den;
        const bool wrap_num = std::holds_alternative<ast::Sum>(num.node);
        const bool wrap_den = std::holds_alternative<ast::Sum>(den.node) ||
                              std::holds_alternative<ast::Product>(den.node) ||
                              std::holds_alternative<ast::Quotient>(den.node);
        return (wrap_num ? "(" + (*this)(num) + ")" : (*this)(num)) + " / " +
               (wrap_den ? "(" + (*this)(den) + ")" : (*this)(den));
    }

    std::string print_node(const ast::Sum& s) const {
        std::string out;
        for (std::size_t i = 0; i < s.terms.size(); ++i) {
            const bool neg = s.negated[i];
            if (i == 0)
                out += neg ? "-" : "";
            else
                out += neg ? " - " : " + ";
            const auto& t = s.terms[i];
            const bool wrap = std::holds_alternative<ast::Sum>(t.node);
            out += wrap ? "(" + (*this)(t) + ")" : (*this)(t);
        }
        return out;
    }

    bool unicode_;
};

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
    std::string operator()(const ast::Expect& e) const { return "expect " + print(e); }
    std::string operator()(const ast::Equation& e) const {
        const char* op = e.op == ast::AssignOp::Update       ? " := "
                         : e.op == ast::AssignOp::Accumulate ? " += "
                                                             : " = ";
        return ref_text(e.lhs, unicode) + op + ExprPrinter(unicode)(e.rhs);
    }
    std::string operator()(const ast::Chain& c) const {
        std::string out = ref_text(c.from, unicode);
        for (const auto& s : c.steps)
            out += " " + arrow_text(s, unicode) + " " + ref_text(s.to, unicode);
        return out;
    }
};

} // namespace

std::string tensor_key(const std::string& name, const std::string& label) {
    return label.empty() ? name : name + label_text(label, false);
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
    return index_text(index, false, o.unicode);
}
std::string print(const ast::TensorRef& ref, PrintOptions o) {
    return ref_text(ref, o.unicode);
}
std::string print(const ast::Expr& expr, PrintOptions o) {
    return ExprPrinter(o.unicode)(expr);
}
std::string print(const ast::Statement& s, PrintOptions o) {
    return std::visit(StatementPrinter{o.unicode}, s.node);
}

std::string print(const ast::Program& program, PrintOptions o) {
    std::string out;
    for (const auto& item : program.items) {
        if (const auto* s = std::get_if<ast::Statement>(&item)) {
            out += print(*s, o);
            if (!s->comment.empty()) out += "  # " + s->comment;
        } else if (const auto* c = std::get_if<ast::Comment>(&item)) {
            out += c->text.empty() ? "#" : "# " + c->text;
        }
        out += '\n';
    }
    return out;
}

} // namespace shardscope::parser
