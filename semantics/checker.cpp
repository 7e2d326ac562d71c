// The checker's entry points: a program's declarations, then each statement planned (or
// taken from the re-check cache) in order, with expectations compared (NOTATION.md 5-8).
#include "checker.hpp"

#include "context.hpp"
#include "planner.hpp"
#include "report.hpp"

#include "parser/printer.hpp"
#include "parser/visit.hpp"

#include <algorithm>
#include <unordered_map>

namespace shardscope::semantics {

namespace {

/// A range the inference gave the default to (a chain group's whole, so that its parts
/// multiply out), which is as undeclared as one that simply took it.
bool origin_is_default(const detail::Context& ctx, const IndexId& id) {
    auto it = ctx.range_origin.find(id);
    return it != ctx.range_origin.end() && it->second == "default";
}

} // namespace

using namespace detail;

namespace {

// Re-checking: statements whose plan cannot have changed are taken from the cache.

/// A statement as planned by an earlier check, with what the plan depended on.
struct CachedStatement {
    std::string context; ///< the program-wide facts (context_key)
    std::vector<std::pair<std::string, std::optional<Value>>> reads; ///< defined tensors it names
    std::optional<Planned> planned;      ///< nullopt: the statement could not be planned
    std::vector<Diagnostic> diagnostics; ///< at the positions of `at`
    ast::SourceRange at;                 ///< where the statement was
    std::uint64_t generation = 0;        ///< the last check that used it
};

template <typename T>
void append_raw(std::string& out, const T& x) {
    out.append(reinterpret_cast<const char*>(&x), sizeof x);
}

/// Everything program-wide that a statement's plan depends on, as one comparable string.
std::string context_key(const Context& ctx, const CheckOptions& options) {
    std::string out;
    auto text = [&](const std::string& t) {
        append_raw(out, t.size());
        out += t;
    };
    auto index = [&](const IndexId& i) {
        text(i.name);
        append_raw(out, i.primes);
    };
    append_raw(out, ctx.has_mesh);
    for (const auto& a : ctx.mesh.axes) {
        text(a.name);
        append_raw(out, a.size);
    }
    out += '|';
    for (auto d : ctx.mesh.devices)
        append_raw(out, d);
    out += '|';
    for (const auto& [i, n] : ctx.ranges) {
        index(i);
        append_raw(out, n);
    }
    out += '|';
    for (const auto& [i, n] : ctx.shard_lcm) {
        index(i);
        append_raw(out, n);
    }
    out += '|';
    for (const auto& [i, parts] : ctx.splits) {
        index(i);
        for (const auto& p : parts)
            index(p);
        out += ';';
    }
    out += '|';
    append_raw(out, ctx.dtype_bytes);
    for (const auto& [t, b] : ctx.tensor_bytes) {
        text(t);
        append_raw(out, b);
    }
    out += '|';
    text(std::string(ctx.hw->name));
    for (const auto& l : ctx.links) {
        append_raw(out, l.bytes_per_second);
        append_raw(out, l.latency_s);
    }
    for (const auto& [f, kind] : ctx.functions) {
        text(f);
        append_raw(out, kind);
    }
    out += '|';
    append_raw(out, ctx.strict);
    append_raw(out, ctx.small_defaults);
    append_raw(out, options.ignore_dims);
    return out;
}

/// `r`, which lay inside a statement at `from`, for the same statement at `to`.
ast::SourceRange moved(ast::SourceRange r, const ast::SourceRange& from,
                       const ast::SourceRange& to) {
    if (r.line == from.line) r.column = r.column - from.column + to.column;
    if (r.end_line == from.line) r.end_column = r.end_column - from.column + to.column;
    r.offset = r.offset - from.offset + to.offset;
    r.line = r.line - from.line + to.line;
    r.end_line = r.end_line - from.line + to.line;
    return r;
}

bool inside(const ast::SourceRange& r, const ast::SourceRange& s) {
    return r.offset >= s.offset && r.offset + r.length <= s.offset + s.length && r.line >= s.line &&
           (r.line > s.line || r.column >= s.column);
}

} // namespace

struct CheckCache::Impl {
    std::unordered_map<std::string, CachedStatement> entries; ///< by source and pretty form
    std::uint64_t generation = 0;
    std::size_t hits = 0;
};

CheckCache::CheckCache() : impl_(std::make_unique<Impl>()) {}
CheckCache::~CheckCache() = default;
CheckCache::CheckCache(CheckCache&&) noexcept = default;
CheckCache& CheckCache::operator=(CheckCache&&) noexcept = default;
std::size_t CheckCache::size() const {
    return impl_->entries.size();
}
std::size_t CheckCache::hits() const {
    return impl_->hits;
}
void CheckCache::clear() {
    impl_->entries.clear();
    impl_->hits = 0;
}

namespace {

/// The plan of statement `s`: the cached one when the statement, the program-wide facts and
/// the tensors it reads are unchanged (its diagnostics replayed at the new position), else
/// `plan_statement()`, which is then cached.
template <typename F>
std::optional<Planned> cached_plan(CheckCache::Impl& cache, const std::string& context,
                                   const Defined& defined, const ast::Statement& s,
                                   const std::string& source, const std::string& pretty,
                                   std::vector<Diagnostic>& diagnostics, F&& plan_statement) {
    std::string key = source;
    key += '\0';
    key += pretty;
    std::vector<std::pair<std::string, std::optional<Value>>> reads;
    ast::for_each_ref(s, [&](const ast::TensorRef& r) {
        auto name = parser::tensor_key(r.name, r.label);
        auto it = defined.find(name);
        reads.emplace_back(std::move(name),
                           it == defined.end() ? std::nullopt : std::optional<Value>(it->second));
    });
    if (auto it = cache.entries.find(key);
        it != cache.entries.end() && it->second.context == context && it->second.reads == reads) {
        auto& e = it->second;
        e.generation = cache.generation;
        ++cache.hits;
        for (auto d : e.diagnostics) {
            d.range = moved(d.range, e.at, s.range);
            diagnostics.push_back(std::move(d));
        }
        return e.planned;
    }
    const auto first = diagnostics.size();
    auto planned = plan_statement();
    CachedStatement e{
        context, std::move(reads),
        planned, {diagnostics.begin() + static_cast<std::ptrdiff_t>(first), diagnostics.end()},
        s.range, cache.generation};
    const bool positioned =
        std::all_of(e.diagnostics.begin(), e.diagnostics.end(),
                    [&](const Diagnostic& d) { return inside(d.range, s.range); });
    if (positioned) cache.entries.insert_or_assign(std::move(key), std::move(e));
    return planned;
}

} // namespace
namespace {

Plan check_program(const ast::Program& program, const CheckOptions& options,
                   CheckCache::Impl* cache) {
    Plan plan;
    Context ctx;
    ctx.diagnostics = &plan.diagnostics;
    ctx.strict = options.strict;
    ctx.small_defaults = options.small_defaults;
    declare(ctx, program, options);
    infer_ranges(ctx, program);
    check_splits(ctx, program);
    ctx.freeze_ranges();
    plan.mesh = ctx.mesh;
    // An empty device list means the identity order (the mesh may be large).
    plan.dtype = ctx.dtype;
    plan.hardware = std::string(ctx.hw->name);

    // Room for every equation and chain up front: moving a 100k-statement plan list on each
    // growth cost more than counting.
    std::size_t planned_count = 0;
    for (const auto& item : program.items)
        if (const auto* s = std::get_if<ast::Statement>(&item))
            planned_count += std::holds_alternative<ast::Equation>(s->node) ||
                             std::holds_alternative<ast::Chain>(s->node);
    plan.statements.reserve(planned_count);
    Defined defined;
    defined.reserve(planned_count);
    const std::string context = cache ? context_key(ctx, options) : std::string();
    StatementPlan* last = nullptr;
    bool last_failed = false; // the statement before an `expect` could not be planned
    std::vector<std::vector<std::string>> last_steps; // per chain step collectives

    for (const auto& item : program.items) {
        const auto* s = std::get_if<ast::Statement>(&item);
        if (!s) continue;
        if (const auto* ex = std::get_if<ast::Expect>(&s->node)) {
            // Expectations describe the plans at the declared sizes.
            if (last_failed || options.ignore_dims)
                continue; // its errors are reported; nothing to compare against
            if (!last) {
                ctx.diag(Severity::Error, "S300", s->range,
                         "an expectation with no statement before it",
                         "put 'expect ...' right after the statement it describes");
                continue;
            }
            std::vector<std::string> want;
            bool ok = ex->collectives.size() == last->collectives.size();
            for (std::size_t i = 0; i < ex->collectives.size(); ++i) {
                const auto& c = ex->collectives[i];
                std::string axes;
                std::vector<int> ks;
                for (const auto& a : c.axes)
                    for (int k : ctx.resolve_axis(a, false))
                        ks.push_back(k);
                for (int k : ks)
                    axes += (axes.empty() ? "" : ",") + ctx.axis_name(k);
                const std::string name(collective_name(c.kind));
                want.push_back(c.axes.empty() ? name : name + "(" + axes + ")");
                if (ok) {
                    const auto& have = last->collectives[i];
                    ok = c.axes.empty() ? have.rfind(name + "(", 0) == 0 : have == want.back();
                }
            }
            if (!ok) {
                ctx.diag(Severity::Error, "S301", s->range,
                         "expected " + join_or_none(want) + ", but the plan of line " +
                             std::to_string(last->range.line) + " has " +
                             join_or_none(last->collectives),
                         "correct the expectation to 'expect " + join_or_none(last->collectives) +
                             "', or the notation");
            }
            continue;
        }
        const auto* eq = std::get_if<ast::Equation>(&s->node);
        const auto* ch = std::get_if<ast::Chain>(&s->node);
        if (!eq && !ch) continue;

        // The plan: searched, or reused from the cache when nothing it depends on changed.
        const std::string source =
            options.text.size() >= s->range.offset + s->range.length && s->range.length > 0
                ? std::string(options.text.substr(s->range.offset, s->range.length))
                : parser::print(*s);
        const std::string pretty = parser::print(*s, {true});
        auto plan_one = [&] {
            return plan_statement(ctx, defined, *s, source, pretty, options, plan.diagnostics);
        };
        std::optional<Planned> planned;
        if (cache) {
            planned = cached_plan(*cache, context, defined, *s, source, pretty, plan.diagnostics,
                                  plan_one);
        } else {
            planned = plan_one();
        }
        last_failed = !planned;
        if (last_failed) continue;
        StatementPlan& sp = planned->plan;
        sp.range = s->range;
        sp.source = source;
        // Ranges nobody gave: one note per statement, each index named once per program.
        std::vector<std::string> defaulted;
        auto note_defaults = [&](const ast::TensorRef& r) {
            for (const auto& d : r.dims)
                for (const auto& p : d.parts)
                    if (const auto id = id_of(p);
                        (!ctx.has_range(id) || origin_is_default(ctx, id)) &&
                        ctx.defaulted.insert(id).second)
                        defaulted.push_back(id.text());
        };
        ast::for_each_ref(*s, note_defaults);
        if (!defaulted.empty()) {
            std::string names, example;
            for (const auto& n : defaulted) {
                names += (names.empty() ? "" : ", ") + n;
                example += " " + n + "=4096";
            }
            ctx.diag(Severity::Note, "S501", s->range,
                     std::string(defaulted.size() == 1 ? "index " : "indices ") + names +
                         (defaulted.size() == 1 ? " has" : " have") + " no declared range; " +
                         (ctx.small_defaults ? std::string("small defaults that every sharding "
                                                           "divides are used")
                                             : "costs assume " + std::to_string(kDefaultRange)),
                     "declare the ranges, e.g. 'dim" + example + "'");
        }
        // Record the definition (for later uses) and the plan.
        const std::string key =
            eq ? parser::tensor_key(eq->lhs.name, eq->lhs.label)
               : parser::tensor_key(ch->steps.back().to.name, ch->steps.back().to.label);
        if (eq && eq->op != ast::AssignOp::Define && !defined.count(key))
            ctx.diag(Severity::Note, "S131", eq->lhs.range,
                     std::string(eq->op == ast::AssignOp::Update ? "':='" : "'+='") + " updates " +
                         key +
                         ", which no earlier statement defines: it is a program input, as written");
        defined[key] = std::move(planned->result);
        sp.target = key;
        if (eq) sp.assign = static_cast<Assign>(eq->op);
        plan.statements.push_back(std::move(sp));
        last = &plan.statements.back();
    }
    return plan;
}

} // namespace

Plan check(const ast::Program& program, const CheckOptions& options) {
    return check_program(program, options, nullptr);
}

Plan check(const ast::Program& program, const CheckOptions& options, CheckCache& cache) {
    auto& impl = *cache.impl_;
    ++impl.generation;
    impl.hits = 0;
    auto plan = check_program(program, options, &impl);
    std::erase_if(impl.entries,
                  [&](const auto& e) { return e.second.generation != impl.generation; });
    return plan;
}

} // namespace shardscope::semantics
