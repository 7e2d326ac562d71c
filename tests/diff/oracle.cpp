// The oracle (check, then exec on sim) and the minimiser.
#include "exec/run.hpp"
#include "exec/tensor.hpp"
#include "frontend/document.hpp"
#include "parser/parser.hpp"
#include "semantics/checker.hpp"
#include "tests/diff/program.hpp"

#include <algorithm>
#include <exception>
#include <functional>

namespace shardscope::diff {

std::string outcome_name(Outcome::Kind k) {
    switch (k) {
    case Outcome::Kind::Rejected:
        return "rejected";
    case Outcome::Kind::Pass:
        return "PASS";
    case Outcome::Kind::Fail:
        return "FAIL";
    case Outcome::Kind::Threw:
        return "exec threw";
    case Outcome::Kind::CheckThrew:
        return "check threw";
    }
    return "?";
}

namespace {

/// One exec run of an accepted plan; Pass, Fail or Threw.
Outcome exec_once(const ast::Program& program, const semantics::Plan& plan, exec::DataMode mode,
                  std::uint64_t seed) {
    exec::ExecOptions options;
    options.data.mode = mode;
    options.data.seed = seed;
    options.f64 = true;
    Outcome out;
    exec::ExecReport report;
    try {
        report = exec::execute(program, plan, options);
    } catch (const std::exception& e) {
        out.kind = Outcome::Kind::Threw;
        out.detail = std::string(e.what()) + "\n";
        return out;
    }
    out.kind = Outcome::Kind::Pass;
    // The collectives exec ran against those the plan prints (issue 21): the caller fails a
    // difference.
    for (std::size_t n = 0; n < report.statements.size() && n < plan.statements.size(); ++n) {
        std::string planned, ran;
        for (const auto& c : semantics::collectives_of(plan.mesh, plan.statements[n]))
            planned += (planned.empty() ? "" : ", ") + c;
        for (const auto& e : report.statements[n].collectives)
            ran +=
                (ran.empty() ? "" : ", ") + semantics::collective_text(plan.mesh, e.kind, e.axes);
        if (planned == ran) continue;
        out.mismatch = "line " + std::to_string(report.statements[n].line) + ": " +
                       report.statements[n].source + ": planned " +
                       (planned.empty() ? "none" : planned) + ", ran " +
                       (ran.empty() ? "none" : ran);
        break;
    }
    for (const auto& s : report.statements) {
        // Integer data through a statement exec calls exact must match exactly.
        // A wrong plan is off by far more than kNoise, both absolutely (inputs are in [-1, 1))
        // and relative to the result. Below it, random data met an ill-conditioned statement:
        // exp of a quotient by a number near 0 (huge values, tiny relative error), or a result
        // that cancels to about 0 (x - x, log of a softmax's sum: tiny absolute error).
        constexpr double kNoise = 1e-6;
        const double scale =
            s.max_rel_error > 0 ? std::max(1.0, s.max_abs_error / s.max_rel_error) : 1.0;
        const bool wrong = (s.max_rel_error > kNoise && s.max_abs_error > kNoise) ||
                           s.replica_error > kNoise * scale;
        const bool bad =
            (!s.pass && wrong) || (mode == exec::DataMode::Ints && s.exact && s.max_abs_error != 0);
        if (!bad || s.overflow) continue;
        out.kind = Outcome::Kind::Fail;
        out.detail += "line " + std::to_string(s.line) + ": " + s.source + " (" +
                      (mode == exec::DataMode::Ints ? "ints" : "random") + ", rel error " +
                      std::to_string(s.max_rel_error) + ", replica error " +
                      std::to_string(s.replica_error) + ")\n";
    }
    return out;
}

} // namespace

Outcome run(const std::string& src, bool ints, std::uint64_t seed,
            const std::function<void(semantics::Plan&)>& mutate) {
    Outcome out;
    semantics::Plan plan;
    parser::ParseResult parsed;
    try {
        semantics::CheckOptions options;
        options.small_defaults = true;
        auto checked = frontend::check_text("diff.ein", src, options);
        if (!checked.syntax_ok()) return out;
        parsed = std::move(checked.parsed);
        plan = std::move(checked.plan);
    } catch (const std::exception& e) {
        out.kind = Outcome::Kind::CheckThrew;
        out.detail = std::string(e.what()) + "\n";
        return out;
    }
    if (plan.errors() != 0) return out;
    if (mutate) mutate(plan);
    out = exec_once(parsed.program, plan, exec::DataMode::Random, seed);
    if (out.kind != Outcome::Kind::Pass || !ints) return out;
    return exec_once(parsed.program, plan, exec::DataMode::Ints, seed);
}

std::string signature(const Outcome& o) {
    std::string out = outcome_name(o.kind);
    if (o.kind == Outcome::Kind::Fail) return out;
    // The message's first line without the words that name tensors, ranks or sizes.
    const auto line = o.detail.substr(0, o.detail.find('\n'));
    std::size_t at = 0;
    while (at < line.size()) {
        auto end = line.find(' ', at);
        if (end == std::string::npos) end = line.size();
        const auto word = line.substr(at, end - at);
        if (word.find_first_of("0123456789") == std::string::npos) out += " " + word;
        at = end + 1;
    }
    return out;
}

Program minimise(Program p, bool ints, const Outcome& failure) {
    const auto want = signature(failure);
    return minimise(std::move(p),
                    [&](const std::string& src) { return signature(run(src, ints)) == want; });
}

Program minimise(Program p, const std::function<bool(const std::string&)>& still_fails) {
    auto fails = [&](const Program& q) { return still_fails(print(q)); };
    bool changed = true;
    int rounds = 0;
    while (changed && rounds++ < 20) {
        changed = false;
        // Statements, last first.
        for (std::size_t s = p.stmts.size(); s-- > 0 && p.stmts.size() > 1;) {
            Program q = p;
            q.stmts.erase(q.stmts.begin() + static_cast<std::ptrdiff_t>(s));
            if (fails(q)) p = std::move(q), changed = true;
        }
        // Declarations.
        for (std::size_t d = p.decls.size(); d-- > 0;) {
            Program q = p;
            q.decls.erase(q.decls.begin() + static_cast<std::ptrdiff_t>(d));
            if (fails(q)) p = std::move(q), changed = true;
        }
        // Mesh: no device order, fewer axes, smaller axes, plain numbered axes.
        if (!p.devices.empty()) {
            Program q = p;
            q.devices.clear();
            if (fails(q)) p = std::move(q), changed = true;
        }
        if (!p.names.empty()) {
            Program q = p;
            q.names.clear();
            if (fails(q)) p = std::move(q), changed = true;
        }
        for (int a = static_cast<int>(p.sizes.size()); a-- > 0 && p.sizes.size() > 1;) {
            Program q = p;
            q.sizes.erase(q.sizes.begin() + a);
            if (!q.names.empty()) q.names.erase(q.names.begin() + a);
            q.devices.clear();
            auto fix = [&](std::vector<int>& axes) {
                axes.erase(std::remove(axes.begin(), axes.end(), a), axes.end());
                for (int& k : axes)
                    if (k > a) --k;
            };
            auto fix_ref = [&](Ref& r) {
                for (auto& d : r.dims)
                    fix(d.axes);
                fix(r.partial);
            };
            std::function<void(Expr&)> fix_expr = [&](Expr& e) {
                fix_ref(e.ref);
                for (auto& i : e.sub)
                    fix(i.axes);
                for (auto& k : e.kids)
                    fix_expr(k);
            };
            for (auto& s : q.stmts) {
                fix_ref(s.lhs);
                fix_expr(s.rhs);
                for (auto& r : s.chain)
                    fix_ref(r);
            }
            if (fails(q)) p = std::move(q), changed = true;
        }
        for (std::size_t a = 0; a < p.sizes.size(); ++a)
            if (p.sizes[a] > 2) {
                Program q = p;
                q.sizes[a] = 2;
                q.devices.clear();
                if (fails(q)) p = std::move(q), changed = true;
            }
        // Chain steps.
        for (auto& s : p.stmts)
            for (std::size_t r = s.chain.size(); r-- > 0 && s.chain.size() > 2;) {
                auto saved = s.chain;
                s.chain.erase(s.chain.begin() + static_cast<std::ptrdiff_t>(r));
                if (fails(p))
                    changed = true;
                else
                    s.chain = saved;
            }
        // Expressions, then shardings and partial markers everywhere.
        for (auto& s : p.stmts) {
            if (s.kind != Stmt::Kind::Eq) continue;
            // One smaller tree at a time (a node replaced by a child, an operand, a term or a
            // minus sign dropped), kept while it still fails; restored otherwise.
            std::function<bool(Expr&)> shrink = [&](Expr& e) -> bool {
                for (std::size_t k = 0; k < e.kids.size(); ++k) {
                    Expr saved = e;
                    Expr kid = e.kids[k];
                    e = kid;
                    if (fails(p)) return true;
                    e = saved;
                }
                if ((e.kind == Expr::Kind::Prod || e.kind == Expr::Kind::Sum) && e.kids.size() > 1)
                    for (std::size_t k = 0; k < e.kids.size(); ++k) {
                        Expr saved = e;
                        e.kids.erase(e.kids.begin() + static_cast<std::ptrdiff_t>(k));
                        if (k < e.negated.size())
                            e.negated.erase(e.negated.begin() + static_cast<std::ptrdiff_t>(k));
                        if (fails(p)) return true;
                        e = saved;
                    }
                for (std::size_t t = 0; t < e.negated.size(); ++t)
                    if (e.negated[t]) {
                        e.negated[t] = false;
                        if (fails(p)) return true;
                        e.negated[t] = true;
                    }
                for (auto& k : e.kids)
                    if (shrink(k)) return true;
                return false;
            };
            while (shrink(s.rhs))
                changed = true;
        }
        std::vector<std::vector<int>*> lists;
        std::function<void(Expr&)> collect = [&](Expr& e) {
            for (auto& d : e.ref.dims)
                lists.push_back(&d.axes);
            lists.push_back(&e.ref.partial);
            for (auto& k : e.kids)
                collect(k);
        };
        for (auto& s : p.stmts) {
            for (auto& d : s.lhs.dims)
                lists.push_back(&d.axes);
            lists.push_back(&s.lhs.partial);
            collect(s.rhs);
            for (auto& r : s.chain) {
                for (auto& d : r.dims)
                    lists.push_back(&d.axes);
                lists.push_back(&r.partial);
            }
        }
        for (auto* l : lists)
            for (std::size_t k = l->size(); k-- > 0;) {
                auto saved = *l;
                l->erase(l->begin() + static_cast<std::ptrdiff_t>(k));
                if (fails(p))
                    changed = true;
                else
                    *l = saved;
            }
    }
    return p;
}

} // namespace shardscope::diff
