// Random programs of the notation: the tree, its text and the generator.
#include "tests/diff/program.hpp"

#include <algorithm>
#include <functional>
#include <set>

namespace shardscope::diff {

namespace {

std::string axis_text(const Program& p, const std::vector<int>& axes) {
    std::string out;
    if (p.names.empty()) {
        for (int k : axes)
            out += std::to_string(k);
        return axes.size() == 1 ? out : "{" + out + "}";
    }
    for (int k : axes)
        out += (out.empty() ? "" : ",") + p.names[static_cast<std::size_t>(k)];
    return "{" + out + "}";
}

std::string ix_text(const Program& p, const Ix& i) {
    std::string out(1, i.name);
    if (!i.axes.empty()) out += "_" + axis_text(p, i.axes);
    return out;
}

std::string ref_text(const Program& p, const Ref& r) {
    std::string out = r.name;
    if (!r.dims.empty()) {
        out += "_{";
        for (std::size_t d = 0; d < r.dims.size(); ++d) {
            if (d) out += ' ';
            if (r.group > 1 && d == 0) out += '(';
            out += ix_text(p, r.dims[d]);
            if (r.group > 1 && static_cast<int>(d) == r.group - 1) out += ')';
        }
        out += "}";
    }
    if (!r.partial.empty()) {
        std::string axes;
        for (int k : r.partial)
            axes += (axes.empty() ? "" : ",") +
                    (p.names.empty() ? std::to_string(k) : p.names[static_cast<std::size_t>(k)]);
        out += "{U_{" + axes + "}}";
    }
    return out;
}

std::string expr_text(const Program& p, const Expr& e) {
    auto wrapped = [&](const Expr& x, bool paren) {
        const auto t = expr_text(p, x);
        return paren ? "(" + t + ")" : t;
    };
    switch (e.kind) {
    case Expr::Kind::Ref:
        return ref_text(p, e.ref);
    case Expr::Kind::Num:
        return e.text;
    case Expr::Kind::Prod: {
        std::string out;
        for (const auto& f : e.kids) {
            if (!out.empty()) out += ' ';
            out += wrapped(f, f.kind == Expr::Kind::Sum || f.kind == Expr::Kind::Quot ||
                                  f.kind == Expr::Kind::Prod);
        }
        return out;
    }
    case Expr::Kind::Sum: {
        std::string out;
        for (std::size_t t = 0; t < e.kids.size(); ++t) {
            const bool neg = t < e.negated.size() && e.negated[t];
            if (t)
                out += neg ? " - " : " + ";
            else if (neg)
                out += "-";
            out += wrapped(e.kids[t], e.kids[t].kind == Expr::Kind::Sum);
        }
        return out;
    }
    case Expr::Kind::Quot:
        return wrapped(e.kids[0],
                       e.kids[0].kind == Expr::Kind::Sum || e.kids[0].kind == Expr::Kind::Quot) +
               " / " +
               wrapped(e.kids[1], e.kids[1].kind != Expr::Kind::Ref &&
                                      e.kids[1].kind != Expr::Kind::Num &&
                                      e.kids[1].kind != Expr::Kind::Call);
    case Expr::Kind::Call: {
        std::string out = e.text;
        if (!e.sub.empty()) {
            out += "_{";
            for (std::size_t s = 0; s < e.sub.size(); ++s)
                out += (s ? " " : "") + ix_text(p, e.sub[s]);
            out += "}";
        }
        return out + "(" + expr_text(p, e.kids.at(0)) + ")";
    }
    }
    return {};
}

const std::vector<std::string> kElementwise = {"relu", "gelu", "silu", "sigmoid", "tanh",
                                               "exp",  "log",  "sqrt", "phi"};

struct Gen {
    Gen(std::mt19937_64& r, Program& prog) : rng(r), p(prog) {}
    std::mt19937_64& rng;
    Program& p;
    int inputs = 0;
    int outputs = 0;
    std::vector<Ref> defined; ///< earlier left-hand sides, unsharded
    std::vector<char> letters;
    bool declared_fns = false;

    int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }
    bool coin(double p_true = 0.5) { return std::bernoulli_distribution(p_true)(rng); }
    template <class T>
    const T& pick(const std::vector<T>& v) {
        return v[static_cast<std::size_t>(uniform(0, static_cast<int>(v.size()) - 1))];
    }
    int axes() const { return static_cast<int>(p.sizes.size()); }

    /// Random shardings (and, when allowed, partial markers) on free mesh axes.
    void shard(Ref& r, double density, bool allow_partial) {
        std::vector<int> order(static_cast<std::size_t>(axes()));
        for (int k = 0; k < axes(); ++k)
            order[static_cast<std::size_t>(k)] = k;
        std::shuffle(order.begin(), order.end(), rng);
        for (int k : order) {
            if (!r.dims.empty() && coin(density))
                r.dims[static_cast<std::size_t>(uniform(0, static_cast<int>(r.dims.size()) - 1))]
                    .axes.push_back(k);
            else if (allow_partial && coin(0.12))
                r.partial.push_back(k);
        }
    }

    /// Other index names, by position (the same ranges or not: check must refuse those
    /// whose extents differ, S105).
    void rename(Ref& r) {
        auto ls = letters;
        std::shuffle(ls.begin(), ls.end(), rng);
        for (std::size_t d = 0; d < r.dims.size() && d < ls.size(); ++d)
            if (r.group == 0) r.dims[d].name = ls[d];
    }

    Ref fresh_input(std::vector<char> ls) {
        std::shuffle(ls.begin(), ls.end(), rng);
        Ref r;
        r.name = std::string(1, "xyzwuv"[inputs % 6]) + std::to_string(inputs);
        ++inputs;
        for (char c : ls)
            r.dims.push_back({c, {}});
        shard(r, 0.45, true);
        return r;
    }

    Expr leaf(const std::vector<char>& want) {
        Expr e;
        e.kind = Expr::Kind::Ref;
        // A use of an earlier definition: inherited (no subscripts) or asked for.
        if (!defined.empty() && coin(0.35)) {
            Ref r = pick(defined);
            if (coin(0.25)) rename(r);
            if (coin(0.5)) shard(r, 0.4, false);
            e.ref = r;
            return e;
        }
        auto ls = want;
        if (coin(0.2)) ls.push_back(pick(letters)); // an extra index, summed later
        std::sort(ls.begin(), ls.end());
        ls.erase(std::unique(ls.begin(), ls.end()), ls.end());
        e.ref = fresh_input(ls);
        return e;
    }

    std::vector<char> not_in(const std::vector<char>& want) {
        std::vector<char> out;
        for (char c : letters)
            if (std::find(want.begin(), want.end(), c) == want.end()) out.push_back(c);
        return out;
    }

    std::vector<char> subset(const std::vector<char>& v) {
        std::vector<char> out;
        for (char c : v)
            if (coin(0.6)) out.push_back(c);
        return out;
    }

    Expr call(std::string fn, Expr arg, std::vector<Ix> sub = {}) {
        Expr e;
        e.kind = Expr::Kind::Call;
        e.text = std::move(fn);
        e.sub = std::move(sub);
        e.kids.push_back(std::move(arg));
        return e;
    }

    Expr expr(int depth, const std::vector<char>& want) {
        if (depth <= 0) return leaf(want);
        const int what = uniform(0, 11);
        const auto others = not_in(want);
        switch (what) {
        case 0:
        case 1: { // an einsum, contracting an index when one is free
            Expr e;
            e.kind = Expr::Kind::Prod;
            std::vector<char> a, b;
            for (char c : want)
                (coin() ? a : b).push_back(c);
            if (!others.empty() && coin(0.8)) {
                const char c = pick(others);
                a.push_back(c);
                b.push_back(c);
            }
            if (coin(0.3) && !want.empty()) b.push_back(pick(want)); // a batch index
            std::sort(b.begin(), b.end());
            b.erase(std::unique(b.begin(), b.end()), b.end());
            if (coin(0.15)) {
                Expr n;
                n.kind = Expr::Kind::Num;
                n.text = coin() ? "2" : "0.5";
                e.kids.push_back(n);
            }
            e.kids.push_back(expr(depth - 1, a));
            e.kids.push_back(expr(depth - 1, b));
            return e;
        }
        case 2:
        case 3: { // + and -, with broadcasting terms
            Expr e;
            e.kind = Expr::Kind::Sum;
            const int n = uniform(1, 3);
            for (int t = 0; t < n; ++t) {
                e.kids.push_back(expr(depth - 1, t == 0 || coin(0.7) ? want : subset(want)));
                e.negated.push_back(coin(0.35));
            }
            return e;
        }
        case 4: { // a quotient, the denominator on fewer indices
            Expr e;
            e.kind = Expr::Kind::Quot;
            e.kids.push_back(expr(depth - 1, want));
            e.kids.push_back(expr(depth - 1, subset(want)));
            return e;
        }
        case 5: { // an elementwise function
            std::string fn = pick(kElementwise);
            if (declared_fns && coin(0.3)) fn = "swish";
            return call(fn, expr(depth - 1, want));
        }
        case 6: { // a linear function
            std::string fn = coin() ? "neg" : "scale";
            if (declared_fns && coin(0.3)) fn = "lin";
            return call(fn, expr(depth - 1, want));
        }
        case 7:
        case 8: { // a reduction over an index the argument has
            if (others.empty()) return leaf(want);
            const char c = pick(others);
            auto inner = want;
            inner.push_back(c);
            const char* fns[] = {"sum", "max", "mean"};
            return call(fns[uniform(0, 2)], expr(depth - 1, inner), {Ix{c, {}}});
        }
        case 9: { // softmax along one of the kept indices
            if (want.empty()) return leaf(want);
            return call("softmax", expr(depth - 1, want), {Ix{pick(want), {}}});
        }
        case 10: { // explicit collectives
            const int k = uniform(0, axes() - 1);
            const int form = uniform(0, 2);
            // Sometimes over two axes, in either order: AllGather_{i_{01}}, partial over both.
            std::vector<int> ks{k};
            if (axes() >= 2 && coin(0.35)) {
                int k2 = uniform(0, axes() - 2);
                if (k2 >= k) ++k2;
                ks.push_back(k2);
            }
            if (form == 0 && !others.empty()) {
                // AllReduce_{c_k}(a_{.. c_k} b_{c_k ..})
                const char c = pick(others);
                Expr prod;
                prod.kind = Expr::Kind::Prod;
                std::vector<char> a = subset(want), b = want;
                a.push_back(c);
                b.push_back(c);
                for (auto* ls : {&a, &b}) {
                    Expr f;
                    f.kind = Expr::Kind::Ref;
                    f.ref = fresh_input({});
                    f.ref.dims.clear();
                    f.ref.partial.clear();
                    for (char l : *ls)
                        f.ref.dims.push_back({l, l == c ? ks : std::vector<int>{}});
                    prod.kids.push_back(f);
                }
                return call("AllReduce", prod, {Ix{c, ks}});
            }
            if (form == 1 && !want.empty()) {
                const char w = pick(want);
                Expr f;
                f.kind = Expr::Kind::Ref;
                f.ref = fresh_input({});
                f.ref.partial.clear();
                for (char l : want)
                    f.ref.dims.push_back({l, l == w ? ks : std::vector<int>{}});
                return call("AllGather", f, {Ix{w, ks}});
            }
            if (!want.empty()) {
                const char w = pick(want);
                Expr f;
                f.kind = Expr::Kind::Ref;
                f.ref = fresh_input({});
                for (char l : want)
                    f.ref.dims.push_back({l, {}});
                f.ref.partial = ks;
                return call("ReduceScatter", f, {Ix{w, ks}});
            }
            return leaf(want);
        }
        default: { // a number times something, or a bare operand
            if (coin(0.3)) {
                Expr e;
                e.kind = Expr::Kind::Prod;
                Expr n;
                n.kind = Expr::Kind::Num;
                n.text = "3";
                e.kids.push_back(n);
                e.kids.push_back(expr(depth - 1, want));
                return e;
            }
            return leaf(want);
        }
        }
    }

    std::vector<char> some_letters(int lo, int hi) {
        auto ls = letters;
        std::shuffle(ls.begin(), ls.end(), rng);
        ls.resize(
            static_cast<std::size_t>(std::min<int>(uniform(lo, hi), static_cast<int>(ls.size()))));
        return ls;
    }

    Stmt statement() {
        Stmt s;
        const int what = uniform(0, 9);
        if (what == 0) {
            // A chain of placements for one tensor (an input or an earlier definition).
            Ref r;
            if (!defined.empty() && coin(0.4)) {
                r = pick(defined);
            } else {
                r = fresh_input(some_letters(1, 3));
                r.partial.clear();
                for (auto& d : r.dims)
                    d.axes.clear();
                shard(r, 0.5, true);
            }
            s.kind = Stmt::Kind::Chain;
            s.chain.push_back(r);
            const int steps = uniform(1, 3);
            for (int t = 0; t < steps; ++t) {
                Ref next = r;
                next.partial.clear();
                for (auto& d : next.dims)
                    d.axes.clear();
                shard(next, 0.5, false);
                s.chain.push_back(next);
            }
            return s;
        }
        if (what == 1 && std::find(letters.begin(), letters.end(), 's') != letters.end()) {
            // A split: x_{s j} -> x_{(r t) j} with placements on the parts.
            s.kind = Stmt::Kind::Chain;
            Ref r = fresh_input({});
            r.dims = {{'s', {}}};
            if (coin()) r.dims.push_back({'i', {}});
            shard(r, 0.4, false);
            s.chain.push_back(r);
            Ref g = r;
            g.dims.erase(g.dims.begin());
            g.dims.insert(g.dims.begin(), {{'r', {}}, {'t', {}}});
            for (auto& d : g.dims)
                d.axes.clear();
            g.group = 2;
            shard(g, 0.5, false);
            s.chain.push_back(g);
            if (coin(0.4)) {
                Ref back = r;
                for (auto& d : back.dims)
                    d.axes.clear();
                shard(back, 0.4, false);
                s.chain.push_back(back);
            }
            return s;
        }
        if ((what == 2 || what == 3) && (!defined.empty() || coin(0.3))) {
            // := and += onto an earlier definition (or a program input).
            Ref target;
            if (!defined.empty()) {
                target = pick(defined);
                if (coin(0.2)) rename(target);
            } else {
                target = fresh_input(some_letters(0, 2));
                target.partial.clear();
            }
            s.op = what == 2 ? ":=" : "+=";
            s.lhs = target;
            for (auto& d : s.lhs.dims)
                d.axes.clear();
            if (coin(0.5)) shard(s.lhs, 0.4, false);
            std::vector<char> want;
            for (const auto& d : target.dims)
                want.push_back(d.name);
            s.rhs = expr(uniform(1, 2), want);
            if (s.op == ":=" && coin(0.5)) {
                Expr sum;
                sum.kind = Expr::Kind::Sum;
                Expr self;
                self.kind = Expr::Kind::Ref;
                self.ref = target;
                for (auto& d : self.ref.dims)
                    d.axes.clear();
                sum.kids = {self, s.rhs};
                sum.negated = {false, coin(0.3)};
                s.rhs = sum;
            }
            return s;
        }
        s.lhs.name = std::string(1, "ABCDEFGH"[outputs % 8]) + std::to_string(outputs);
        ++outputs;
        for (char c : some_letters(0, 3))
            s.lhs.dims.push_back({c, {}});
        shard(s.lhs, 0.4, true);
        std::vector<char> want;
        for (const auto& d : s.lhs.dims)
            want.push_back(d.name);
        if (coin(0.25)) want.push_back(pick(letters)); // summed away by the left-hand side
        std::sort(want.begin(), want.end());
        want.erase(std::unique(want.begin(), want.end()), want.end());
        s.rhs = expr(uniform(1, 3), want);
        Ref def = s.lhs;
        for (auto& d : def.dims)
            d.axes.clear();
        def.partial.clear();
        defined.push_back(def);
        return s;
    }
};

void visit(const Expr& e, const std::function<void(const Expr&)>& f) {
    f(e);
    for (const auto& k : e.kids)
        visit(k, f);
}

} // namespace

std::string print(const Program& p) {
    std::string out = "mesh";
    for (std::size_t k = 0; k < p.sizes.size(); ++k) {
        if (p.names.empty())
            out += (k ? "x" : " ") + std::to_string(p.sizes[k]);
        else
            out += " " + p.names[k] + "=" + std::to_string(p.sizes[k]);
    }
    if (!p.devices.empty()) {
        out += " devices [";
        for (std::size_t d = 0; d < p.devices.size(); ++d)
            out += (d ? " " : "") + std::to_string(p.devices[d]);
        out += "]";
    }
    out += "\n";
    if (!p.ranges.empty()) {
        out += "dim";
        for (const auto& [c, n] : p.ranges)
            out += " " + std::string(1, c) + "=" + std::to_string(n);
        out += "\n";
    }
    for (const auto& d : p.decls)
        out += d + "\n";
    for (const auto& s : p.stmts) {
        if (s.kind == Stmt::Kind::Chain) {
            for (std::size_t r = 0; r < s.chain.size(); ++r)
                out += (r ? " -> " : "") + ref_text(p, s.chain[r]);
        } else {
            out += ref_text(p, s.lhs) + " " + s.op + " " + expr_text(p, s.rhs);
        }
        out += "\n";
    }
    return out;
}

Program generate(std::mt19937_64& rng) {
    Program p;
    Gen g(rng, p);
    // A mesh of 1 to 3 axes, at most 8 devices; sometimes named, sometimes in another order.
    const int axes = g.uniform(1, 3);
    int devices = 1;
    for (int k = 0; k < axes; ++k) {
        const int most = 8 / devices;
        int size = most >= 4 && g.coin(0.2) ? 4 : most >= 2 ? 2 : 1;
        if (g.coin(0.08)) size = 1;
        if (most >= 3 && axes == 1 && g.coin(0.15)) size = 3;
        p.sizes.push_back(size);
        devices *= size;
    }
    if (g.coin(0.3)) {
        const char* names[] = {"dp", "tp", "pp"};
        for (int k = 0; k < axes; ++k)
            p.names.push_back(names[k]);
    }
    if (g.coin(0.25)) {
        for (int d = 0; d < devices; ++d)
            p.devices.push_back(d);
        std::shuffle(p.devices.begin(), p.devices.end(), rng);
    }
    g.letters = {'i', 'j', 'k', 'l'};
    const int sizes[] = {4, 8, 8, 6, 2, 3, 5};
    for (char c : g.letters)
        p.ranges[c] = sizes[g.uniform(0, 6)];
    if (g.coin(0.2)) {
        p.ranges['s'] = 8;
        p.ranges['r'] = 2;
        p.decls.push_back("split s -> r t");
        g.letters.push_back('s');
    }
    if (g.coin(0.2)) {
        g.declared_fns = true;
        p.decls.push_back("fn swish elementwise");
        p.decls.push_back("fn lin linear");
    }
    const int n = g.uniform(1, 5);
    for (int s = 0; s < n; ++s)
        p.stmts.push_back(g.statement());
    return p;
}

bool is_linear(const Program& p) {
    bool linear = true;
    auto check = [&](const Expr& e) {
        if (e.kind == Expr::Kind::Quot) linear = false;
        if (e.kind == Expr::Kind::Call && e.text != "neg" && e.text != "scale" && e.text != "sum" &&
            e.text != "lin" && e.text != "AllReduce" && e.text != "AllGather" &&
            e.text != "ReduceScatter")
            linear = false;
    };
    for (const auto& s : p.stmts)
        if (s.kind == Stmt::Kind::Eq) visit(s.rhs, check);
    return linear;
}

} // namespace shardscope::diff
