#include "json.hpp"

#include "functions.hpp"
#include "printer.hpp"

namespace shardscope::parser {

using nlohmann::json;

namespace {

json axes_json(const std::vector<ast::AxisRef>& axes) {
    json out = json::array();
    for (const auto& a : axes)
        out.push_back(a.name);
    return out;
}

json index_json(const ast::Index& ix) {
    json out = {{"name", ix.name},
                {"primes", ix.primes},
                {"axes", axes_json(ix.axes)},
                {"range", to_json(ix.range)}};
    // An open sharding (`f_?`): "open_axes" are the ones it may choose from (empty: any).
    if (ix.open) {
        out["open"] = true;
        out["open_axes"] = axes_json(ix.open_axes);
    }
    return out;
}

const char* style_name(ast::IndexStyle s) {
    switch (s) {
    case ast::IndexStyle::None:
        return "none";
    case ast::IndexStyle::Subscript:
        return "subscript";
    case ast::IndexStyle::Bracket:
        return "bracket";
    }
    return "none";
}

json expect_json(const ast::Expect& e) {
    json list = json::array();
    for (const auto& c : e.collectives)
        list.push_back({{"kind", collective_name(c.kind)}, {"axes", axes_json(c.axes)}});
    return list;
}

struct StatementJson {
    json operator()(const ast::MeshDecl& m) const {
        json axes = json::array();
        for (const auto& a : m.axes)
            axes.push_back({{"name", a.name}, {"size", a.size}});
        return {{"type", "mesh"}, {"axes", axes}, {"named", m.named}, {"devices", m.devices}};
    }
    json operator()(const ast::DimDecl& d) const {
        json b = json::array();
        for (const auto& x : d.bindings)
            b.push_back({{"index", index_json(x.index)}, {"size", x.size}});
        return {{"type", "dim"}, {"bindings", b}};
    }
    json operator()(const ast::SplitDecl& s) const {
        json parts = json::array();
        for (const auto& p : s.parts)
            parts.push_back(index_json(p));
        return {{"type", "split"}, {"from", index_json(s.from)}, {"parts", parts}};
    }
    json operator()(const ast::DtypeDecl& d) const {
        return {{"type", "dtype"}, {"dtype", d.dtype}};
    }
    json operator()(const ast::TensorDecl& t) const {
        return {{"type", "tensor"}, {"name", t.name}, {"label", t.label}, {"dtype", t.dtype}};
    }
    json operator()(const ast::HwDecl& h) const { return {{"type", "hw"}, {"preset", h.preset}}; }
    json operator()(const ast::LinkDecl& l) const {
        return {{"type", "link"},
                {"axis", l.axis.name},
                {"bytes_per_second", l.bytes_per_second},
                {"latency_seconds", l.latency_seconds}};
    }
    json operator()(const ast::FnDecl& f) const {
        return {{"type", "fn"},
                {"name", f.name},
                {"kind", f.kind == ast::FunctionKind::Linear ? "linear" : "elementwise"}};
    }
    json operator()(const ast::ParamDecl& p) const {
        json tensors = json::array();
        for (const auto& t : p.tensors)
            tensors.push_back({{"name", t.name}, {"label", t.label}});
        return {{"type", "param"}, {"tensors", tensors}};
    }
    json operator()(const ast::TrainDecl& t) const {
        return {{"type", "train"},
                {"optimizer", t.optimizer},
                {"master", t.master},
                {"recompute", t.recompute},
                {"zero", t.zero}};
    }
    json operator()(const ast::Expect& e) const {
        return {{"type", "expect"}, {"collectives", expect_json(e)}};
    }
    json operator()(const ast::RepeatDecl& r) const {
        return {{"type", "repeat"},     {"index", index_json(r.index)},   {"count", r.count},
                {"reverse", r.reverse}, {"microbatches", r.microbatches}, {"schedule", r.schedule}};
    }
    json operator()(const ast::EndDecl&) const { return {{"type", "end"}}; }
    json operator()(const ast::Equation& e) const {
        const char* op = e.op == ast::AssignOp::Update       ? ":="
                         : e.op == ast::AssignOp::Accumulate ? "+="
                                                             : "=";
        return {{"type", "equation"}, {"lhs", to_json(e.lhs)}, {"op", op}, {"rhs", to_json(e.rhs)}};
    }
    json operator()(const ast::Chain& c) const {
        // A chain of products: each side's factors in written order ("product"), and the
        // position of the moved one ("moved"); "from" and "to" are that factor.
        auto side = [&](const ast::TensorRef& moved, const std::vector<ast::TensorRef>& with) {
            json factors = json::array();
            for (const auto* r : ast::chain_side(moved, with, c.moved))
                factors.push_back(to_json(*r));
            return factors;
        };
        json steps = json::array();
        for (const auto& s : c.steps) {
            json step = {{"to", to_json(s.to)}};
            if (c.product()) step["product"] = side(s.to, s.with);
            if (s.expect) step["expect"] = expect_json(*s.expect);
            if (!s.label.empty()) step["label"] = s.label;
            steps.push_back(step);
        }
        json out = {{"type", "chain"}, {"from", to_json(c.from)}, {"steps", steps}};
        if (c.product()) {
            out["product"] = side(c.from, c.with);
            out["moved"] = c.moved;
        }
        return out;
    }
};

struct ExprJson {
    json operator()(const ast::Number& n) const { return {{"kind", "number"}, {"value", n.text}}; }
    json operator()(const ast::TensorRef& r) const {
        json j = to_json(r);
        j["kind"] = "tensor";
        return j;
    }
    json operator()(const ast::Call& c) const {
        json idx = json::array();
        for (const auto& i : c.indices)
            idx.push_back(index_json(i));
        return {
            {"kind", "call"}, {"function", c.function}, {"indices", idx}, {"arg", to_json(*c.arg)}};
    }
    json operator()(const ast::Product& p) const {
        json f = json::array();
        for (const auto& x : p.factors)
            f.push_back(to_json(x));
        return {{"kind", "product"}, {"factors", f}};
    }
    json operator()(const ast::Quotient& q) const {
        return {
            {"kind", "quotient"}, {"numerator", to_json(*q.num)}, {"denominator", to_json(*q.den)}};
    }
    json operator()(const ast::Sum& s) const {
        json t = json::array();
        for (std::size_t i = 0; i < s.terms.size(); ++i)
            t.push_back(
                {{"negated", static_cast<bool>(s.negated[i])}, {"term", to_json(s.terms[i])}});
        return {{"kind", "sum"}, {"terms", t}};
    }
};

} // namespace

json to_json(const ast::SourceRange& r) {
    return {{"line", r.line},         {"column", r.column},
            {"end_line", r.end_line}, {"end_column", r.end_column},
            {"offset", r.offset},     {"length", r.length}};
}

json to_json(const ast::TensorRef& t) {
    json dims = json::array();
    for (const auto& d : t.dims) {
        json parts = json::array();
        for (const auto& p : d.parts)
            parts.push_back(index_json(p));
        dims.push_back({{"grouped", d.grouped}, {"indices", parts}});
    }
    return {{"name", t.name},
            {"label", t.label},
            {"tensor", tensor_key(t.name, t.label)},
            {"style", style_name(t.style)},
            {"dims", dims},
            {"partial", axes_json(t.partial_axes)},
            {"range", to_json(t.range)}};
}

json to_json(const ast::Expr& e) {
    json j = std::visit(ExprJson{}, e.node);
    j["range"] = to_json(e.range);
    return j;
}

json to_json(const ast::Statement& s) {
    json j = std::visit(StatementJson{}, s.node);
    j["range"] = to_json(s.range);
    j["text"] = print(s);
    if (!s.comment.empty()) j["comment"] = s.comment;
    return j;
}

json to_json(const ast::Program& p) {
    json items = json::array();
    for (const auto& item : p.items) {
        if (const auto* s = std::get_if<ast::Statement>(&item))
            items.push_back({{"kind", "statement"}, {"statement", to_json(*s)}});
        else if (const auto* c = std::get_if<ast::Comment>(&item))
            items.push_back({{"kind", "comment"}, {"text", c->text}});
        else
            items.push_back({{"kind", "blank"}});
    }
    return {{"items", items}};
}

json to_json(const Diagnostic& d) {
    return {{"severity", severity_name(d.severity)},
            {"code", d.code},
            {"line", d.range.line},
            {"column", d.range.column},
            {"end_line", d.range.end_line},
            {"end_column", d.range.end_column},
            {"message", d.message},
            {"fix", d.fix}};
}

} // namespace shardscope::parser
