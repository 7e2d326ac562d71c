#include "grad_emit.hpp"

#include "report.hpp"

#include "parser/printer.hpp"

namespace shardscope::semantics::grad_detail {

/// The calls under `e` whose function is in `of`.
void collect_calls(const ast::Expr& e, const std::set<std::string>& of,
                   std::set<std::string>& out) {
    std::visit(
        [&](const auto& n) {
            using T = std::decay_t<decltype(n)>;
            if constexpr (std::is_same_v<T, ast::Call>) {
                if (of.count(n.function)) out.insert(n.function);
                collect_calls(*n.arg, of, out);
            } else if constexpr (std::is_same_v<T, ast::Product>) {
                for (const auto& x : n.factors)
                    collect_calls(x, of, out);
            } else if constexpr (std::is_same_v<T, ast::Sum>) {
                for (const auto& x : n.terms)
                    collect_calls(x, of, out);
            } else if constexpr (std::is_same_v<T, ast::Quotient>) {
                collect_calls(*n.num, of, out);
                collect_calls(*n.den, of, out);
            }
        },
        e.node);
}

/// The derived part of the program text; records each statement's line.
std::string render(const std::vector<Emitted>& em, const std::vector<ast::RepeatDecl>& blocks,
                   const std::set<std::string>& functions, const std::vector<Seed>& seeds,
                   std::uint32_t first_line,
                   const std::map<std::size_t, std::vector<std::string>>* collectives,
                   std::vector<std::uint32_t>& lines) {
    std::string out;
    std::uint32_t line = first_line;
    auto put = [&](const std::string& s) {
        out += s + "\n";
        ++line;
    };
    put("# ---- backward (shardscope grad): gX is the gradient of X ----");
    std::string seed_text;
    for (const auto& s : seeds)
        seed_text += (seed_text.empty() ? "" : ", ") + s.seed + " of " + s.output;
    if (!seed_text.empty()) put("# inputs: the output gradients " + seed_text);
    for (const auto& f : functions) {
        if (f == "ones")
            put("fn ones elementwise   # ones(x) = 1 with x's indices (a broadcast)");
        else if (f == "dmax")
            put("fn dmax elementwise   # dmax(x) = 1 where x = 0 (the maximum), else 0");
        else
            put("fn " + f + " elementwise   # the derivative of " + f.substr(1));
    }
    lines.clear();
    // The backward of a repeat's body is the same repeat's, its layers in reverse order.
    int open = -1;
    std::string indent;
    auto close = [&] {
        if (open >= 0) put("end");
        open = -1;
        indent.clear();
    };
    for (std::size_t i = 0; i < em.size(); ++i) {
        const auto& e = em[i];
        if (!e.keep) {
            lines.push_back(0);
            continue;
        }
        if (e.block != open) {
            close();
            if (e.block >= 0) {
                ast::Statement r;
                auto decl = blocks.at(static_cast<std::size_t>(e.block));
                decl.reverse = true;
                r.node = std::move(decl);
                put(parser::print(r));
                open = e.block;
                indent = "  ";
            }
        }
        if (!e.comment.empty()) put(indent + "# " + e.comment);
        lines.push_back(line);
        put(indent + parser::print(e.stmt));
        if (collectives)
            if (auto it = collectives->find(i); it != collectives->end())
                put(indent + "expect " + join_or_none(it->second));
    }
    close();
    return out;
}

/// Keeps the statements the requested gradients need (liveness, from the end).
void prune(std::vector<Emitted>& em, std::set<std::string> needed) {
    auto step = [](Emitted& e, std::set<std::string>& need) {
        e.keep = need.count(e.gradient) > 0;
        if (!e.keep) return;
        if (!e.accumulate) need.erase(e.gradient);
        need.insert(e.reads.begin(), e.reads.end());
    };
    for (std::size_t i = em.size(); i > 0;) {
        const int block = em[i - 1].block;
        if (block < 0) {
            step(em[--i], needed);
            continue;
        }
        // A repeat's body runs again after itself (the layer before): what its top needs is
        // needed at its bottom too, until nothing changes.
        std::size_t start = i;
        while (start > 0 && em[start - 1].block == block)
            --start;
        std::set<std::string> out = needed, in;
        for (;;) {
            in = out;
            for (std::size_t k = i; k-- > start;)
                step(em[k], in);
            auto next = out;
            next.insert(in.begin(), in.end());
            if (next == out) break;
            out = std::move(next);
        }
        needed = std::move(in);
        i = start;
    }
    // A comment heads its group: move it to the first statement kept.
    std::string pending;
    std::uint32_t pending_line = 0;
    for (auto& e : em) {
        if (!e.comment.empty()) {
            pending = e.comment;
            pending_line = e.forward_line;
        }
        if (!e.keep) {
            e.comment.clear();
            continue;
        }
        e.comment = pending_line == e.forward_line ? pending : std::string();
        pending.clear();
        pending_line = 0;
    }
}

} // namespace shardscope::semantics::grad_detail
