// The strategy search: enumeration of mesh sizes, pruning, ranking, explanations (search.hpp).
#include "search.hpp"

#include "grad.hpp"

#include "checker.hpp"
#include "cost.hpp"
#include "report.hpp"

#include "parser/diagnostic_codes.hpp"
#include "parser/open.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <map>
#include <set>
#include <thread>
#include <type_traits>
#include <unordered_map>

namespace shardscope::semantics {

namespace {

constexpr std::int64_t kMaxDevices = std::int64_t{1} << 24; // as a `mesh` line (P205)

/// Which declared axes an axis reference names (as the checker resolves it: a name, a
/// position, or a run of one-letter names); empty when it names none.
std::vector<int> resolve(const std::vector<std::string>& names, const std::string& ref) {
    for (std::size_t k = 0; k < names.size(); ++k)
        if (names[k] == ref) return {static_cast<int>(k)};
    const bool digits =
        !ref.empty() && ref.size() < 9 &&
        std::all_of(ref.begin(), ref.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (digits) {
        const auto k = std::stoul(ref);
        if (k < names.size()) return {static_cast<int>(k)};
        return {};
    }
    if (ref.size() > 1) {
        std::vector<int> out;
        for (char c : ref) {
            auto one = resolve(names, std::string(1, c));
            if (one.empty()) return {};
            out.push_back(one[0]);
        }
        return out;
    }
    return {};
}

/// What the search needs to know of the program's text: which axes are used, and the
/// indices sharded over them with their declared ranges.
struct ProgramFacts {
    std::vector<std::string> names;
    std::vector<bool> used;
    bool all_used = false; ///< an axis reference could not be resolved: merge nothing
    struct Sharded {
        std::string index; ///< "d'"
        std::int64_t range = 0;
        std::vector<int> axes;
        ast::SourceRange at;
    };
    std::vector<Sharded> sharded; ///< one per distinct (index, axes) with a declared range
    std::map<std::pair<std::string, int>, std::int64_t> ranges;

    void use(const ast::AxisRef& a) {
        auto ks = resolve(names, a.name);
        if (ks.empty()) all_used = true;
        for (int k : ks)
            used[static_cast<std::size_t>(k)] = true;
    }
    void index(const ast::Index& i) {
        if (i.axes.empty()) return;
        std::vector<int> axes;
        for (const auto& a : i.axes) {
            use(a);
            for (int k : resolve(names, a.name))
                axes.push_back(k);
        }
        auto r = ranges.find({i.name, i.primes});
        if (r == ranges.end()) return;
        const std::string text = i.name + std::string(static_cast<std::size_t>(i.primes), '\'');
        for (const auto& s : sharded)
            if (s.index == text && s.axes == axes) return;
        sharded.push_back({text, r->second, std::move(axes), i.range});
    }
    void ref(const ast::TensorRef& r) {
        for (const auto& d : r.dims)
            for (const auto& p : d.parts)
                index(p);
        for (const auto& a : r.partial_axes)
            use(a);
    }
    void expr(const ast::Expr& e) {
        std::visit(
            [&](const auto& n) {
                using T = std::decay_t<decltype(n)>;
                if constexpr (std::is_same_v<T, ast::TensorRef>) {
                    ref(n);
                } else if constexpr (std::is_same_v<T, ast::Call>) {
                    for (const auto& i : n.indices)
                        index(i);
                    expr(*n.arg);
                } else if constexpr (std::is_same_v<T, ast::Product>) {
                    for (const auto& f : n.factors)
                        expr(f);
                } else if constexpr (std::is_same_v<T, ast::Quotient>) {
                    expr(*n.num);
                    expr(*n.den);
                } else if constexpr (std::is_same_v<T, ast::Sum>) {
                    for (const auto& t : n.terms)
                        expr(t);
                } else if constexpr (!std::is_same_v<T, ast::Number>) {
                    all_used = true; // a node this walk does not know: merge nothing
                }
            },
            e.node);
    }
};

/// The statements of a program, top level.
template <typename F>
void for_each_statement(const ast::Program& p, F&& f) {
    for (const auto& item : p.items)
        if (const auto* s = std::get_if<ast::Statement>(&item)) f(*s);
}

ProgramFacts facts_of(const ast::Program& program, const std::vector<std::string>& names) {
    ProgramFacts f;
    f.names = names;
    f.used.assign(names.size(), false);
    // An item this walk does not know (a block that holds statements): merge nothing.
    for (const auto& item : program.items)
        std::visit(
            [&](const auto& n) {
                using T = std::decay_t<decltype(n)>;
                if constexpr (!std::is_same_v<T, ast::Statement> &&
                              !std::is_same_v<T, ast::Comment> &&
                              !std::is_same_v<T, ast::BlankLine>)
                    f.all_used = true;
            },
            item);
    for_each_statement(program, [&](const ast::Statement& s) {
        if (const auto* d = std::get_if<ast::DimDecl>(&s.node))
            for (const auto& b : d->bindings)
                f.ranges[{b.index.name, b.index.primes}] = b.size;
    });
    for_each_statement(program, [&](const ast::Statement& s) {
        std::visit(
            [&](const auto& n) {
                using T = std::decay_t<decltype(n)>;
                if constexpr (std::is_same_v<T, ast::Equation>) {
                    f.ref(n.lhs);
                    f.expr(n.rhs);
                } else if constexpr (std::is_same_v<T, ast::Chain>) {
                    f.ref(n.from);
                    for (const auto& st : n.steps)
                        f.ref(st.to);
                    // A chain of products: the context factors are references too.
                    for (const auto& r : n.with)
                        f.ref(r);
                    for (const auto& st : n.steps)
                        for (const auto& r : st.with)
                            f.ref(r);
                } else if constexpr (std::is_same_v<T, ast::SplitDecl>) {
                    f.index(n.from);
                    for (const auto& p : n.parts)
                        f.index(p);
                } else if constexpr (std::is_same_v<T, ast::MeshDecl> ||
                                     std::is_same_v<T, ast::DimDecl> ||
                                     std::is_same_v<T, ast::DtypeDecl> ||
                                     std::is_same_v<T, ast::TensorDecl> ||
                                     std::is_same_v<T, ast::HwDecl> ||
                                     std::is_same_v<T, ast::LinkDecl> ||
                                     std::is_same_v<T, ast::FnDecl> ||
                                     std::is_same_v<T, ast::Expect>) {
                    // no tensor is sharded here
                } else {
                    f.all_used = true; // a statement this walk does not know: merge nothing
                }
            },
            s.node);
    });
    return f;
}

void factorize(std::int64_t n, std::size_t k, std::vector<std::int64_t>& prefix,
               std::vector<std::vector<std::int64_t>>& out) {
    if (prefix.size() + 1 == k) {
        prefix.push_back(n);
        out.push_back(prefix);
        prefix.pop_back();
        return;
    }
    for (std::int64_t d = 1; d <= n; ++d) {
        if (n % d != 0) continue;
        prefix.push_back(d);
        factorize(n / d, k, prefix, out);
        prefix.pop_back();
    }
}

std::string mesh_text(const std::vector<std::string>& names, const std::vector<std::int64_t>& s) {
    std::string out;
    for (std::size_t k = 0; k < names.size(); ++k)
        if (s[k] != 1) out += (out.empty() ? "" : " ") + names[k] + "=" + std::to_string(s[k]);
    return out.empty() ? "1 device" : out;
}

std::string percent(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, x >= 0.1 ? "%.0f%%" : "%.2g%%", x * 100);
    return buf;
}

std::string bandwidth_text(double bps) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g GB/s", bps / 1e9);
    return buf;
}

/// The link of each axis: the preset's, or a `link` line's.
std::vector<double> link_bandwidths(const ast::Program& program,
                                    const std::vector<std::string>& names, const Hardware& hw) {
    std::vector<double> out(names.size(), hw.link_bw);
    for_each_statement(program, [&](const ast::Statement& s) {
        if (const auto* l = std::get_if<ast::LinkDecl>(&s.node))
            for (int k : resolve(names, l->axis.name))
                out[static_cast<std::size_t>(k)] = l->bytes_per_second;
    });
    return out;
}

Diagnostic problem(std::string message, std::string fix, ast::SourceRange at = {}) {
    return Diagnostic{Severity::Error, "", at, std::move(message), std::move(fix)};
}

} // namespace

bool ranks_before(const Candidate& a, const Candidate& b) {
    if (a.cost.time_s != b.cost.time_s) return a.cost.time_s < b.cost.time_s;
    if (a.cost.memory_bytes_per_device != b.cost.memory_bytes_per_device)
        return a.cost.memory_bytes_per_device < b.cost.memory_bytes_per_device;
    if (a.sizes != b.sizes) return a.sizes > b.sizes; // deterministic: the earlier axes larger
    return a.open_choice < b.open_choice;             // then replicated first
}

namespace {

/// Each collective's link: the slowest of its axes' (`links`, one per mesh axis).
void set_links(CandidateCost& cost, const std::vector<double>& links) {
    for (auto& c : cost.collectives) {
        double bw = 0;
        for (int k : c.axes) {
            if (k < 0 || static_cast<std::size_t>(k) >= links.size()) continue;
            const double b = links[static_cast<std::size_t>(k)];
            bw = bw == 0 ? b : std::min(bw, b);
        }
        c.link_bytes_per_second = bw;
    }
}

} // namespace

CandidateCost evaluate(const Plan& plan) {
    // Time, traffic, FLOPs and memory are the program totals (semantics/totals.hpp: the
    // overlap model, every statement counted StatementPlan::repeat times); the collectives by
    // name and axes, which the "why it loses" lines cite, are summed here from the steps.
    const auto totals = program_totals(plan);
    CandidateCost c;
    c.time_s = totals.step_s;
    c.compute_s = totals.compute_s;
    c.comm_s = totals.comm_s;
    c.exposed_s = totals.exposed_s;
    c.bubble_s = totals.pipeline.bubble_s;
    c.flops_per_device = totals.flops;
    c.comm_bytes_per_device = totals.comm_bytes;
    c.memory_bytes_per_device = totals.memory.total();
    std::map<std::string, CollectiveTotal> by_name;
    for (const auto& s : plan.statements) {
        const auto r = std::max<std::int64_t>(1, s.repeat);
        for (const auto& st : s.steps) {
            if (!is_collective(st.kind)) continue;
            const auto name = collective_text(plan.mesh, st.kind, st.mesh_axes);
            auto& t = by_name[name];
            if (t.name.empty()) {
                t.name = name;
                t.kind = std::string(step_kind_name(st.kind));
                t.axes = st.mesh_axes.to_vector();
            }
            t.count += r;
            t.bytes_per_device += st.cost.bytes_per_device * static_cast<double>(r);
            t.time_s += st.cost.time_s * static_cast<double>(r);
        }
    }
    for (auto& [name, t] : by_name)
        c.collectives.push_back(std::move(t));
    return c;
}

std::string_view prune_reason_name(PruneReason r) {
    switch (r) {
    case PruneReason::Uneven:
        return "uneven";
    case PruneReason::Error:
        return "error";
    case PruneReason::Memory:
        return "memory";
    }
    return "error";
}

std::vector<std::vector<std::int64_t>> factorizations(std::int64_t n, std::size_t k) {
    std::vector<std::vector<std::int64_t>> out;
    if (n < 1 || k == 0) return out;
    std::vector<std::int64_t> prefix;
    factorize(n, k, prefix, out);
    return out;
}

std::uint64_t factorization_count(std::int64_t n, std::size_t k) {
    if (n < 1 || k == 0) return 0;
    std::uint64_t total = 1;
    auto choose = [](std::uint64_t a, std::uint64_t b) {
        std::uint64_t r = 1;
        for (std::uint64_t i = 1; i <= b; ++i)
            r = r * (a - b + i) / i;
        return r;
    };
    for (std::int64_t p = 2; p * p <= n; ++p) {
        std::uint64_t e = 0;
        while (n % p == 0) {
            n /= p;
            ++e;
        }
        if (e > 0) total *= choose(e + k - 1, k - 1);
    }
    if (n > 1) total *= k; // one prime left, exponent 1: C(k, k-1)
    return total;
}

std::optional<double> parse_byte_size(std::string_view text) {
    std::string s;
    for (char c : text)
        if (c != ' ' && c != '_') s += c;
    if (s.empty()) return std::nullopt;
    std::size_t used = 0;
    double value = 0;
    try {
        value = std::stod(s, &used);
    } catch (...) {
        return std::nullopt;
    }
    std::string unit = s.substr(used);
    for (auto& c : unit)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    static const std::map<std::string, double> units = {{"", 1},
                                                        {"b", 1},
                                                        {"kb", 1e3},
                                                        {"mb", 1e6},
                                                        {"gb", 1e9},
                                                        {"tb", 1e12},
                                                        {"kib", 1024.},
                                                        {"mib", 1024. * 1024},
                                                        {"gib", 1024. * 1024 * 1024},
                                                        {"tib", 1024. * 1024 * 1024 * 1024},
                                                        {"k", 1e3},
                                                        {"m", 1e6},
                                                        {"g", 1e9},
                                                        {"t", 1e12}};
    auto u = units.find(unit);
    if (u == units.end() || !std::isfinite(value) || value <= 0) return std::nullopt;
    return value * u->second;
}

SearchResult search(const ast::Program& program, const SearchOptions& options) {
    SearchResult result;
    result.devices = options.devices;
    result.hbm_bytes = options.hbm_bytes;

    // The working copy: parsed once, its mesh sizes rewritten per candidate.
    ast::Program work = program;
    ast::MeshDecl* mesh = nullptr;
    ast::SourceRange mesh_at;
    ast::HwDecl* hw_decl = nullptr;
    std::vector<ast::Item> kept;
    kept.reserve(work.items.size());
    for (auto& item : work.items) {
        if (auto* s = std::get_if<ast::Statement>(&item)) {
            if (std::holds_alternative<ast::Expect>(s->node)) continue; // expectations: ignored
            if (auto* c = std::get_if<ast::Chain>(&s->node))
                for (auto& st : c->steps)
                    st.expect.reset();
        }
        kept.push_back(std::move(item));
    }
    work.items = std::move(kept);
    for (auto& item : work.items)
        if (auto* s = std::get_if<ast::Statement>(&item)) {
            if (auto* m = std::get_if<ast::MeshDecl>(&s->node); m && !mesh) {
                mesh = m;
                mesh_at = s->range;
            }
            if (auto* h = std::get_if<ast::HwDecl>(&s->node)) hw_decl = h;
        }
    if (!mesh || mesh->axes.empty()) {
        result.problems.push_back(
            problem("the program declares no mesh axes to size",
                    "declare every parallelism it may use as a named mesh axis, e.g. "
                    "'mesh dp=1 fsdp=1 tp=1 pp=1', and shard the tensors over them"));
        return result;
    }
    for (const auto& a : mesh->axes)
        result.axis_names.push_back(a.name);
    const auto& names = result.axis_names;

    // The hardware.
    std::string hw_name = hw_decl ? hw_decl->preset : "h100";
    if (!options.hardware.empty()) {
        if (!find_hardware(options.hardware)) {
            result.problems.push_back(problem("unknown hardware preset '" + options.hardware + "'",
                                              "use one of " + hardware_names()));
            return result;
        }
        hw_name = options.hardware;
        if (hw_decl) {
            hw_decl->preset = hw_name;
        } else {
            ast::Statement s;
            s.node = ast::HwDecl{hw_name};
            work.items.insert(work.items.begin(), ast::Item{std::move(s)});
            for (auto& item : work.items) // the insertion moved the mesh
                if (auto* st = std::get_if<ast::Statement>(&item))
                    if (auto* m = std::get_if<ast::MeshDecl>(&st->node)) {
                        mesh = m;
                        break;
                    }
        }
    }
    result.hardware = hw_name;
    const Hardware* hw = find_hardware(hw_name);
    if (!hw) hw = find_hardware("h100");

    if (options.devices < 1 || options.devices > kMaxDevices) {
        result.problems.push_back(problem("the device count must be between 1 and " +
                                              std::to_string(kMaxDevices) + ", not " +
                                              std::to_string(options.devices),
                                          "give --devices N with N a positive number of devices"));
        return result;
    }

    // The axes the search may size.
    std::vector<bool> searched(names.size(), options.axes.empty());
    for (const auto& a : options.axes) {
        const auto it = std::find(names.begin(), names.end(), a);
        if (it == names.end()) {
            std::string all;
            for (const auto& n : names)
                all += (all.empty() ? "" : ", ") + n;
            result.problems.push_back(
                problem("--axes names '" + a + "', which the mesh does not declare",
                        "the mesh declares " + all, mesh_at));
            return result;
        }
        searched[static_cast<std::size_t>(it - names.begin())] = true;
    }
    std::vector<std::size_t> free_axes;
    for (std::size_t k = 0; k < names.size(); ++k)
        if (searched[k]) {
            free_axes.push_back(k);
            result.searched_axes.push_back(names[k]);
        }

    // Open dimensions (`f_?`): the variables, the axes each may choose (-1: replicated
    // first), their ranges, and the references that constrain them together.
    const auto open = ast::open_dimensions(work);
    std::vector<std::vector<int>> var_choices;
    std::vector<std::int64_t> var_range;
    std::map<std::string, std::size_t> var_of;
    std::vector<bool> open_may_use(names.size(), false);
    // The program's facts with every open dimension replicated (facts_of reads written axes).
    ProgramFacts facts;
    {
        ast::Program closed = work;
        ast::close_open(closed, [](const std::string&) { return std::vector<std::string>{}; });
        facts = facts_of(closed, names);
        for (const auto& o : open) {
            std::vector<int> choices{-1};
            std::vector<std::string> axes_text;
            if (o.axes.empty())
                for (std::size_t k = 0; k < names.size(); ++k)
                    choices.push_back(static_cast<int>(k));
            for (const auto& a : o.axes) {
                const auto ks = resolve(names, a);
                if (ks.size() != 1) {
                    auto d = problem("the open dimension " + o.key + " may choose axis '" + a +
                                         "', which the mesh does not declare",
                                     "name one of the mesh's axes before '?'", o.at);
                    d.code = code_name(Code::S102); // the file's mistake, not the options'
                    result.problems.push_back(std::move(d));
                    return result;
                }
                if (std::find(choices.begin(), choices.end(), ks[0]) == choices.end())
                    choices.push_back(ks[0]);
            }
            for (std::size_t c = 1; c < choices.size(); ++c) {
                open_may_use[static_cast<std::size_t>(choices[c])] = true;
                axes_text.push_back(names[static_cast<std::size_t>(choices[c])]);
            }
            std::string idx = o.index;
            int primes = 0;
            while (!idx.empty() && idx.back() == '\'') {
                idx.pop_back();
                ++primes;
            }
            const auto r = facts.ranges.find({idx, primes});
            var_range.push_back(r == facts.ranges.end() ? 0 : r->second);
            var_of[o.key] = var_choices.size();
            var_choices.push_back(std::move(choices));
            result.open_dimensions.push_back(o.key);
            result.open_axes.push_back(std::move(axes_text));
        }
        for (std::size_t v = 0; v < var_choices.size(); ++v) {
            if (result.open_assignments > (std::size_t{1} << 16) / var_choices[v].size()) {
                auto d = problem("the open dimensions allow more than 65536 assignments per mesh",
                                 "narrow the markers to the axes that make sense (f_{tp?}) or "
                                 "write some shardings out",
                                 open.front().at);
                d.code = code_name(Code::S403); // the file's mistake, not the options'
                result.problems.push_back(std::move(d));
                return result;
            }
            result.open_assignments *= var_choices[v].size();
        }
    }
    // The references with open indices: a choice may not reuse an axis of the same tensor.
    struct RefConstraint {
        std::vector<std::size_t> vars;
        std::vector<int> fixed;
    };
    std::vector<RefConstraint> constraints;
    for (const auto& r : ast::open_refs(work)) {
        RefConstraint c;
        for (const auto& k : r.keys)
            c.vars.push_back(var_of.at(k));
        for (const auto& a : r.fixed_axes)
            for (int k : resolve(names, a))
                c.fixed.push_back(k);
        constraints.push_back(std::move(c));
    }
    for (std::size_t k = 0; k < names.size(); ++k)
        if (!facts.all_used && !facts.used[k] && !open_may_use[k])
            result.unused_axes.push_back(names[k]);
    const auto links = link_bandwidths(work, names, *hw);

    const auto tuples = factorizations(options.devices, free_axes.size());
    result.factorizations = tuples.size();

    // Every assignment of the open dimensions (mixed radix over their choices).
    std::vector<std::vector<int>> assignments;
    {
        std::vector<std::size_t> digit(var_choices.size(), 0);
        for (std::size_t n = 0; n < result.open_assignments; ++n) {
            std::vector<int> a(var_choices.size());
            for (std::size_t v = 0; v < var_choices.size(); ++v)
                a[v] = var_choices[v][digit[v]];
            assignments.push_back(std::move(a));
            for (std::size_t v = var_choices.size(); v-- > 0;) {
                if (++digit[v] < var_choices[v].size()) break;
                digit[v] = 0;
            }
        }
    }

    // Phase 1: every mesh and assignment, its class (the effective sizes and choices), and
    // the rejection of sizes that do not divide a declared range, without a check.
    std::vector<Candidate> classes_found;
    std::map<std::pair<std::vector<std::int64_t>, std::vector<int>>, std::size_t> class_of;
    std::vector<std::size_t> jobs; // classes to check, in enumeration order
    for (const auto& t : tuples)
        for (const auto& assignment : assignments) {
            std::vector<std::int64_t> sizes(names.size(), 1);
            for (std::size_t j = 0; j < free_axes.size(); ++j)
                sizes[free_axes[j]] = t[j];
            // An open dimension on an axis of size 1 is replicated.
            std::vector<int> choice = assignment;
            for (auto& c : choice)
                if (c >= 0 && sizes[static_cast<std::size_t>(c)] == 1) c = -1;
            // One axis on two dimensions of one tensor: not a layout.
            bool clash = false;
            for (const auto& rc : constraints) {
                std::vector<int> seen = rc.fixed;
                for (std::size_t v : rc.vars) {
                    const int c = choice[v];
                    if (c < 0) continue;
                    if (std::find(seen.begin(), seen.end(), c) != seen.end()) clash = true;
                    seen.push_back(c);
                }
            }
            if (clash) {
                ++result.inconsistent;
                continue;
            }
            // The effective sizes: an axis no tensor is sharded over changes nothing.
            std::vector<bool> used = facts.used;
            for (int c : choice)
                if (c >= 0) used[static_cast<std::size_t>(c)] = true;
            std::vector<std::int64_t> key = sizes;
            for (std::size_t k = 0; k < names.size(); ++k)
                if (!facts.all_used && !used[k]) key[k] = 0;
            if (auto c = class_of.find({key, choice}); c != class_of.end()) {
                ++classes_found[c->second].equivalents;
                continue;
            }
            Candidate cand;
            cand.sizes = sizes;
            cand.open_choice = choice;
            cand.mesh_text = mesh_text(names, sizes);
            for (std::size_t v = 0; v < choice.size() && !cand.pruned; ++v) {
                if (choice[v] < 0 || var_range[v] == 0) continue;
                const auto n = sizes[static_cast<std::size_t>(choice[v])];
                if (var_range[v] % n != 0) {
                    cand.pruned = PruneReason::Uneven;
                    cand.reason = "open " + result.open_dimensions[v] + " on " +
                                  names[static_cast<std::size_t>(choice[v])] + ": " +
                                  open[v].index + "=" + std::to_string(var_range[v]) +
                                  " does not divide by " + std::to_string(n) + " (line " +
                                  std::to_string(open[v].at.line) + ")";
                }
            }
            for (const auto& sh : facts.sharded) {
                if (cand.pruned) break;
                std::int64_t n = 1;
                std::string axes;
                for (int k : sh.axes) {
                    n *= sizes[static_cast<std::size_t>(k)];
                    axes += (axes.empty() ? "" : "·") + names[static_cast<std::size_t>(k)];
                }
                if (n > 1 && sh.range % n != 0) {
                    cand.pruned = PruneReason::Uneven;
                    cand.reason = sh.index + "=" + std::to_string(sh.range) +
                                  " does not divide by " + axes + " = " + std::to_string(n) +
                                  " (line " + std::to_string(sh.at.line) + ")";
                    break;
                }
            }
            class_of[{key, choice}] = classes_found.size();
            if (!cand.pruned) jobs.push_back(classes_found.size());
            classes_found.push_back(std::move(cand));
        }

    // Phase 2: check each class on a copy of the program whose mesh sizes are rewritten (in
    // parallel where threads are allowed: the checks share nothing).
    const CheckOptions co;
    using Slots = std::vector<std::pair<std::size_t, ast::Index*>>; // open index, its variable
    auto slots_of = [&](ast::Program& prog) {
        Slots out;
        for (auto& [key, ix] : ast::open_indices(prog))
            out.emplace_back(var_of.at(key), ix);
        return out;
    };
    // With open dimensions, consecutive candidates are one mesh's assignments: a worker's
    // CheckCache reuses the plans of the statements an assignment leaves unchanged (its key
    // is the statement as printed, so a rewritten index is a new entry; the result equals an
    // uncached check).
    const bool cached = !var_choices.empty();
    auto check_one = [&](ast::Program& prog, ast::MeshDecl& m, const Slots& slots,
                         CheckCache& cache, Candidate& cand) {
        for (std::size_t k = 0; k < names.size(); ++k)
            m.axes[k].size = cand.sizes[k];
        m.devices.clear();
        for (const auto& [v, ix] : slots) {
            ix->open = false;
            ix->axes.clear();
            const int c = cand.open_choice[v];
            if (c >= 0) ix->axes.push_back({names[static_cast<std::size_t>(c)], ix->range});
        }
        const Plan plan = cached ? check(prog, co, cache) : check(prog, co);
        const Diagnostic* first_error = nullptr;
        const Diagnostic* uneven = nullptr;
        for (const auto& d : plan.diagnostics) {
            if (d.severity == Severity::Error && !first_error) first_error = &d;
            if (has_code(d, Code::S500) && !uneven) uneven = &d;
        }
        if (first_error) {
            cand.pruned = PruneReason::Error;
            cand.reason = "line " + std::to_string(first_error->range.line) + ": " +
                          first_error->message + " [" + first_error->code + "]";
            return;
        }
        if (uneven) {
            cand.pruned = PruneReason::Uneven;
            cand.reason = "line " + std::to_string(uneven->range.line) + ": " + uneven->message;
            return;
        }
        // A training step with its backward (grad.hpp, training_step_plan).
        cand.cost = evaluate(training_step_plan(prog, plan, co));
        set_links(cand.cost, links);
        if (options.hbm_bytes && cand.cost.memory_bytes_per_device > *options.hbm_bytes) {
            cand.pruned = PruneReason::Memory;
            cand.reason = "needs " + format_bytes(cand.cost.memory_bytes_per_device) +
                          " per device, more than " + format_bytes(*options.hbm_bytes);
        }
    };
    // A check that throws (out of memory) prunes its mesh with the reason instead of ending
    // the process from a worker thread.
    auto check_safely = [&](ast::Program& prog, ast::MeshDecl& m, const Slots& slots,
                            CheckCache& cache, Candidate& cand) {
        try {
            check_one(prog, m, slots, cache, cand);
        } catch (const std::exception& e) {
            cand.pruned = PruneReason::Error;
            cand.reason = std::string("the check failed: ") + e.what();
        }
    };
    std::vector<char> checked(classes_found.size(), 0);
    std::size_t threads = options.threads;
    if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
    threads = std::min(threads, std::max<std::size_t>(1, jobs.size()));
    if (threads <= 1) {
        const Slots slots = slots_of(work);
        CheckCache cache;
        for (std::size_t j = 0; j < jobs.size(); ++j) {
            if (options.progress && !options.progress(j, jobs.size())) {
                result.interrupted = true;
                break;
            }
            check_safely(work, *mesh, slots, cache, classes_found[jobs[j]]);
            checked[jobs[j]] = 1;
        }
    } else {
        // Work is handed out one mesh at a time (its assignments are consecutive jobs), so
        // that a worker's cache sees one mesh's assignments one after the other.
        std::vector<std::size_t> group_start;
        for (std::size_t j = 0; j < jobs.size(); ++j)
            if (j == 0 || classes_found[jobs[j]].sizes != classes_found[jobs[j - 1]].sizes)
                group_start.push_back(j);
        group_start.push_back(jobs.size());
        std::atomic<std::size_t> next{0}, done{0};
        std::atomic<bool> stop{false};
        auto worker = [&] {
            ast::Program prog = work;
            ast::MeshDecl* m = nullptr;
            for (auto& item : prog.items)
                if (auto* st = std::get_if<ast::Statement>(&item))
                    if ((m = std::get_if<ast::MeshDecl>(&st->node))) break;
            const Slots slots = slots_of(prog);
            CheckCache cache;
            while (!stop) {
                const std::size_t g = next++;
                if (g + 1 >= group_start.size()) break;
                for (std::size_t j = group_start[g]; j < group_start[g + 1] && !stop; ++j) {
                    check_safely(prog, *m, slots, cache, classes_found[jobs[j]]);
                    checked[jobs[j]] = 1;
                    ++done;
                }
            }
        };
        std::vector<std::thread> pool;
        for (std::size_t k = 0; k < threads; ++k)
            pool.emplace_back(worker);
        while (done < jobs.size() && !stop) {
            if (options.progress && !options.progress(done, jobs.size())) {
                stop = true;
                result.interrupted = true;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        for (auto& th : pool)
            th.join();
    }
    if (options.progress && !result.interrupted) options.progress(jobs.size(), jobs.size());
    for (std::size_t i = 0; i < classes_found.size(); ++i) {
        auto& cand = classes_found[i];
        if (!cand.pruned && !checked[i]) continue; // interrupted before its check
        result.checked += checked[i];
        if (cand.pruned)
            result.pruned.push_back(std::move(cand));
        else
            result.ranked.push_back(std::move(cand));
    }
    std::stable_sort(result.ranked.begin(), result.ranked.end(), ranks_before);
    for (std::size_t k = 1; k < result.ranked.size(); ++k)
        result.ranked[k].reason = explain_loss(result.ranked[k], result.ranked[0]);
    return result;
}

std::string open_choice_text(const SearchResult& r, const Candidate& c) {
    std::string out;
    for (std::size_t v = 0; v < r.open_dimensions.size() && v < c.open_choice.size(); ++v) {
        const int k = c.open_choice[v];
        out += (out.empty() ? "" : ", ") + r.open_dimensions[v] + "→" +
               (k < 0 ? std::string("R") : r.axis_names[static_cast<std::size_t>(k)]);
    }
    return out;
}

ResolvedOpen resolve_open(const ast::Program& program, const CheckOptions& options) {
    ResolvedOpen out;
    out.program = program;
    const auto open = ast::open_dimensions(program);
    if (open.empty()) return out;
    // The mesh's axes: the --mesh override's, else the program's first mesh line.
    std::vector<std::string> names;
    std::vector<std::int64_t> sizes;
    if (options.mesh) {
        for (const auto& a : options.mesh->axes) {
            names.push_back(a.name);
            sizes.push_back(a.size);
        }
    } else {
        for_each_statement(program, [&](const ast::Statement& s) {
            if (const auto* m = std::get_if<ast::MeshDecl>(&s.node); m && names.empty())
                for (const auto& a : m->axes) {
                    names.push_back(a.name);
                    sizes.push_back(a.size);
                }
        });
    }
    // Each open dimension's choices: replicated first, then its axes (every axis for `f_?`).
    std::vector<std::vector<int>> choices;
    std::map<std::string, std::size_t> var_of;
    for (const auto& o : open) {
        std::vector<int> c{-1};
        if (o.axes.empty())
            for (std::size_t k = 0; k < names.size(); ++k)
                c.push_back(static_cast<int>(k));
        for (const auto& a : o.axes) {
            const auto ks = resolve(names, a);
            if (ks.size() != 1) {
                std::string all;
                for (const auto& n : names)
                    all += (all.empty() ? "" : ", ") + n;
                out.diagnostics.push_back(
                    {Severity::Error, std::string(code_name(Code::S102)), o.at,
                     "the open dimension " + o.key + " may choose axis '" + a +
                         "', which the mesh does not declare",
                     names.empty() ? "declare a mesh (mesh tp=4) or remove the axis"
                                   : "the mesh declares " + all});
                continue;
            }
            if (std::find(c.begin(), c.end(), ks[0]) == c.end()) c.push_back(ks[0]);
        }
        var_of[o.key] = choices.size();
        out.keys.push_back(o.key);
        choices.push_back(std::move(c));
    }
    // The rewritten program of an assignment, and its cost: nullopt where it has errors.
    auto program_of = [&](const std::vector<int>& a) {
        ast::Program p = program;
        ast::close_open(p, [&](const std::string& key) {
            const int k = a[var_of.at(key)];
            return k < 0 ? std::vector<std::string>{}
                         : std::vector<std::string>{names[static_cast<std::size_t>(k)]};
        });
        return p;
    };
    struct Score {
        double time = 0, memory = 0;
        std::size_t sharded = 0;
        bool operator<(const Score& o) const {
            if (time != o.time) return time < o.time;
            if (memory != o.memory) return memory < o.memory;
            return sharded < o.sharded;
        }
    };
    auto score_of = [&](const std::vector<int>& a) -> std::optional<Score> {
        ++out.checked;
        const ast::Program p = program_of(a);
        try {
            const Plan plan = check(p, options);
            if (plan.errors() > 0) return std::nullopt;
            const auto cost = evaluate(training_step_plan(p, plan, options));
            Score sc{cost.time_s, cost.memory_bytes_per_device, 0};
            for (int k : a)
                sc.sharded += k >= 0;
            return sc;
        } catch (const std::exception&) {
            return std::nullopt;
        }
    };
    std::size_t total = 1;
    for (const auto& c : choices)
        total = total > kMaxResolveAssignments ? total : total * c.size();
    std::vector<int> best(choices.size(), -1);
    std::optional<Score> best_score;
    if (total <= kMaxResolveAssignments) {
        std::vector<std::size_t> digit(choices.size(), 0);
        for (std::size_t n = 0; n < total; ++n) {
            std::vector<int> a(choices.size());
            for (std::size_t v = 0; v < choices.size(); ++v)
                a[v] = choices[v][digit[v]];
            if (auto sc = score_of(a); sc && (!best_score || *sc < *best_score)) {
                best_score = sc;
                best = a;
            }
            for (std::size_t v = choices.size(); v-- > 0;) {
                if (++digit[v] < choices[v].size()) break;
                digit[v] = 0;
            }
        }
    } else {
        // Too many to enumerate: one dimension at a time, from all replicated, until no
        // single change improves (a local optimum; the note says so).
        out.exhaustive = false;
        best_score = score_of(best);
        for (bool improved = true; improved;) {
            improved = false;
            for (std::size_t v = 0; v < choices.size(); ++v)
                for (int c : choices[v]) {
                    if (c == best[v]) continue;
                    auto a = best;
                    a[v] = c;
                    if (auto sc = score_of(a); sc && (!best_score || *sc < *best_score)) {
                        best_score = sc;
                        best = a;
                        improved = true;
                    }
                }
        }
    }
    out.program = program_of(best);
    std::string chosen;
    for (std::size_t v = 0; v < choices.size(); ++v) {
        const int k = best[v];
        out.axes.push_back(k < 0 ? std::vector<std::string>{}
                                 : std::vector<std::string>{names[static_cast<std::size_t>(k)]});
        chosen += (chosen.empty() ? "" : ", ") + out.keys[v] + " → " +
                  (k < 0 ? std::string("replicated") : names[static_cast<std::size_t>(k)]);
    }
    std::string mesh;
    for (std::size_t k = 0; k < names.size(); ++k)
        mesh += (mesh.empty() ? "" : " ") + names[k] + "=" + std::to_string(sizes[k]);
    std::string message;
    if (!best_score)
        message = "no choice of the open shardings checks without errors on the mesh (" + mesh +
                  "); they are checked replicated: " + chosen;
    else if (out.exhaustive)
        message = "open shardings chosen for the written mesh (" + mesh + "): " + chosen +
                  ", the cheapest of " + std::to_string(out.checked) + " assignments";
    else
        message = "open shardings chosen for the written mesh (" + mesh + "): " + chosen +
                  ", one dimension at a time from all replicated (" + std::to_string(out.checked) +
                  " checks; more than " + std::to_string(kMaxResolveAssignments) +
                  " assignments to enumerate): a local optimum, not necessarily the cheapest";
    out.diagnostics.push_back({Severity::Note, std::string(code_name(Code::S402)), open.front().at,
                               message,
                               "shardscope plan --devices N chooses them with the mesh sizes"});
    return out;
}

Candidate candidate_of(const ast::Program& program, const Plan& plan) {
    Candidate c;
    std::vector<std::string> names;
    for (const auto& a : plan.mesh.axes) {
        names.push_back(a.name);
        c.sizes.push_back(a.size);
    }
    c.mesh_text = mesh_text(names, c.sizes);
    c.cost = evaluate(training_step_plan(program, plan, {}));
    const Hardware* hw = find_hardware(plan.hardware);
    if (hw == nullptr) hw = find_hardware("h100");
    if (hw != nullptr) set_links(c.cost, link_bandwidths(program, names, *hw));
    return c;
}

std::string explain_loss(const Candidate& loser, const Candidate& best) {
    const auto& l = loser.cost;
    const auto& b = best.cost;
    const double dt = l.time_s - b.time_s;
    if (dt <= 1e-9 * std::max(b.time_s, 1e-30)) {
        if (l.memory_bytes_per_device > b.memory_bytes_per_device)
            return "same time; more memory: " + format_bytes(l.memory_bytes_per_device) +
                   " per device vs " + format_bytes(b.memory_bytes_per_device);
        return "same time and memory (a tie)";
    }
    std::string head =
        b.time_s > 0 ? "+" + percent(dt / b.time_s) + " time: " : "+" + format_seconds(dt) + ": ";
    // What a collective adds to the step is its exposed part, not its whole time: the overlap
    // model exposes the communication as a whole (exposed_s of comm_s), and each collective is
    // charged its share of that, pro rata to its time.
    auto exposed = [](const CandidateCost& c, double time_s) {
        return c.comm_s > 0 ? time_s * std::clamp(c.exposed_s / c.comm_s, 0.0, 1.0) : 0.0;
    };
    auto exposed_in_best = [&](const std::string& name, bool& has) {
        has = false;
        for (const auto& o : b.collectives)
            if (o.name == name) {
                has = true;
                return exposed(b, o.time_s);
            }
        return 0.0;
    };
    // The biggest contributor to the difference: compute, or one collective's exposed part.
    double worst = l.compute_s - b.compute_s;
    const CollectiveTotal* which = nullptr;
    double which_exposed = 0;
    for (const auto& c : l.collectives) {
        bool has = false;
        const double mine = exposed(l, c.time_s);
        if (mine - exposed_in_best(c.name, has) > worst) {
            worst = mine - exposed_in_best(c.name, has);
            which = &c;
            which_exposed = mine;
        }
    }
    // A pipeline's bubble (devices idle while the stages fill and drain) is time too.
    if (l.bubble_s - b.bubble_s > std::max(worst, which_exposed))
        return head + "the pipeline bubble, " + format_seconds(l.bubble_s) +
               " (stages idle while the pipeline fills and drains" +
               (b.bubble_s > 0 ? "; #1's is " + format_seconds(b.bubble_s) : "; #1 has none") + ")";
    if (!which) {
        std::string out = head + "compute " + format_seconds(l.compute_s) + " vs " +
                          format_seconds(b.compute_s) + " (" + format_flops(l.flops_per_device) +
                          " per device vs " + format_flops(b.flops_per_device);
        if (l.flops_per_device > b.flops_per_device * 1.0001)
            out += ": less of the work is sharded";
        return out + ")";
    }
    std::string out = head + which->name;
    if (which->count > 1)
        out += " ×" + std::to_string(which->count) + " of " +
               format_bytes(which->bytes_per_device / static_cast<double>(which->count)) +
               " each (" + format_bytes(which->bytes_per_device) + "/device per step)";
    else
        out += " of " + format_bytes(which->bytes_per_device) + "/device";
    if (which->link_bytes_per_second > 0)
        out += " over a " + bandwidth_text(which->link_bytes_per_second) + " link";
    out += ", " + format_seconds(which_exposed) + " exposed of " + format_seconds(which->time_s);
    bool has = false;
    const double before = exposed_in_best(which->name, has);
    out += has ? " (#1: " + format_seconds(before) + " exposed)" : " (#1 has none)";
    return out;
}

std::string explain_no_fit(double memory_bytes, double hbm_bytes) {
    return "does not fit: needs " + format_bytes(memory_bytes) + " per device, more than the " +
           format_bytes(hbm_bytes) + " of HBM";
}

namespace {

struct Row {
    std::string label;
    std::vector<std::string> cells;
};

std::string pad(const std::string& s, std::size_t width) {
    // Width in code points (×, · are two bytes).
    std::size_t n = 0;
    for (unsigned char c : s)
        if ((c & 0xC0) != 0x80) ++n;
    return s + std::string(width > n ? width - n : 0, ' ');
}

std::size_t width_of(const std::string& s) {
    std::size_t n = 0;
    for (unsigned char c : s)
        if ((c & 0xC0) != 0x80) ++n;
    return n;
}

/// Per collective kind: bytes and time.
std::map<std::string, std::pair<double, double>> by_kind(const CandidateCost& c) {
    std::map<std::string, std::pair<double, double>> out;
    for (const auto& t : c.collectives) {
        out[t.kind].first += t.bytes_per_device;
        out[t.kind].second += t.time_s;
    }
    return out;
}

std::string summary_line(const SearchResult& r, const std::string& path) {
    std::string axes;
    for (const auto& a : r.searched_axes)
        axes += (axes.empty() ? "" : ", ") + a;
    std::string out = path + ": " + std::to_string(r.devices) + " devices over " + axes + ": " +
                      std::to_string(r.factorizations) + " meshes";
    if (!r.open_dimensions.empty())
        out += " × " + std::to_string(r.open_assignments) + " choices of " +
               std::to_string(r.open_dimensions.size()) + " open dimension" +
               (r.open_dimensions.size() == 1 ? "" : "s");
    out +=
        ", " + std::to_string(r.checked) + " checked, " + std::to_string(r.ranked.size()) + " kept";
    if (r.inconsistent > 0)
        out += "; " + std::to_string(r.inconsistent) +
               " choices left out (one axis on two dimensions of a tensor)";
    std::map<std::string, std::size_t> counts;
    for (const auto& p : r.pruned)
        counts[std::string(prune_reason_name(*p.pruned))] += p.equivalents;
    if (!counts.empty()) {
        out += "; pruned:";
        bool first = true;
        for (const auto& [reason, n] : counts) {
            out += std::string(first ? " " : ", ") + std::to_string(n) + " " +
                   (reason == "memory"   ? "do not fit"
                    : reason == "uneven" ? "uneven shards"
                                         : "with errors");
            first = false;
        }
    }
    return out;
}

} // namespace

std::string format_search(const SearchResult& r, const std::string& path, std::size_t top) {
    std::string out = summary_line(r, path) + "\n";
    if (r.interrupted) out += "  (interrupted: the candidates checked so far)\n";
    if (!r.unused_axes.empty()) {
        std::string u;
        for (const auto& a : r.unused_axes)
            u += (u.empty() ? "" : ", ") + a;
        out += "  no tensor is sharded over " + u +
               ": meshes that differ only there cost the same and are shown once\n";
    }
    out += "  memory limit: " +
           (r.hbm_bytes ? format_bytes(*r.hbm_bytes) + " per device"
                        : std::string("none (give --hbm)")) +
           "; hardware: " + r.hardware + "\n";
    const std::size_t n = std::min(top, r.ranked.size());
    if (n == 0) {
        out += "no candidate is left";
        if (!r.pruned.empty())
            out += "; for example " + r.pruned.front().mesh_text + ": " + r.pruned.front().reason;
        return out + "\n";
    }
    std::vector<Row> rows;
    auto row = [&](std::string label, auto cell) {
        Row x{std::move(label), {}};
        for (std::size_t k = 0; k < n; ++k)
            x.cells.push_back(cell(r.ranked[k]));
        rows.push_back(std::move(x));
    };
    row("", [k = std::size_t{0}](const Candidate&) mutable { return "#" + std::to_string(++k); });
    row("mesh", [](const Candidate& c) { return c.mesh_text; });
    // The open dimensions' choices, one row each: the axis, or R (replicated).
    for (std::size_t v = 0; v < r.open_dimensions.size(); ++v)
        row(r.open_dimensions[v] + " (open)", [&r, v](const Candidate& c) {
            const int k = v < c.open_choice.size() ? c.open_choice[v] : -1;
            return k < 0 ? std::string("R") : r.axis_names[static_cast<std::size_t>(k)];
        });
    row("step time", [](const Candidate& c) { return format_seconds(c.cost.time_s); });
    row("  compute", [](const Candidate& c) { return format_seconds(c.cost.compute_s); });
    row("  communication", [](const Candidate& c) { return format_seconds(c.cost.comm_s); });
    row("FLOP/device", [](const Candidate& c) { return format_flops(c.cost.flops_per_device); });
    row("memory/device",
        [](const Candidate& c) { return format_bytes(c.cost.memory_bytes_per_device); });
    std::set<std::string> kinds;
    for (std::size_t k = 0; k < n; ++k)
        for (const auto& t : r.ranked[k].cost.collectives)
            kinds.insert(t.kind);
    for (const auto& kind : kinds)
        row(kind, [&](const Candidate& c) {
            auto m = by_kind(c.cost);
            auto it = m.find(kind);
            if (it == m.end()) return std::string("-");
            return format_bytes(it->second.first) + ", " + format_seconds(it->second.second);
        });
    bool merged = false;
    for (std::size_t k = 0; k < n; ++k)
        merged = merged || r.ranked[k].equivalents > 1;
    if (merged)
        row("equivalent meshes", [](const Candidate& c) { return std::to_string(c.equivalents); });
    std::size_t label_w = 0;
    for (const auto& x : rows)
        label_w = std::max(label_w, width_of(x.label));
    std::vector<std::size_t> col_w(n, 0);
    for (const auto& x : rows)
        for (std::size_t k = 0; k < n; ++k)
            col_w[k] = std::max(col_w[k], width_of(x.cells[k]));
    for (const auto& x : rows) {
        std::string line = "  " + pad(x.label, label_w);
        for (std::size_t k = 0; k < n; ++k)
            line += "   " + pad(x.cells[k], col_w[k]);
        while (!line.empty() && line.back() == ' ')
            line.pop_back();
        out += line + "\n";
    }
    for (std::size_t k = 1; k < n; ++k)
        out += "  #" + std::to_string(k + 1) + " loses to #1: " + r.ranked[k].reason + "\n";
    if (!r.pruned.empty()) {
        out += "  pruned, for example:\n";
        std::set<PruneReason> shown;
        for (const auto& p : r.pruned)
            if (shown.insert(*p.pruned).second)
                out += "    " + p.mesh_text +
                       (p.open_choice.empty() ? "" : " (" + open_choice_text(r, p) + ")") + ": " +
                       p.reason + "\n";
    }
    return out;
}

nlohmann::json search_to_json(const SearchResult& r, const std::string& path, std::size_t top) {
    using nlohmann::json;
    auto mesh_json = [&](const Candidate& c) {
        json m = json::object();
        for (std::size_t k = 0; k < r.axis_names.size(); ++k)
            m[r.axis_names[k]] = c.sizes[k];
        return m;
    };
    // The open dimensions' choices: {"W f": "tp", "x s": null} (null: replicated).
    auto open_json = [&](const Candidate& c) {
        json o = json::object();
        for (std::size_t v = 0; v < r.open_dimensions.size(); ++v) {
            const int k = v < c.open_choice.size() ? c.open_choice[v] : -1;
            o[r.open_dimensions[v]] =
                k < 0 ? json(nullptr) : json(r.axis_names[static_cast<std::size_t>(k)]);
        }
        return o;
    };
    json candidates = json::array();
    for (std::size_t k = 0; k < std::min(top, r.ranked.size()); ++k) {
        const auto& c = r.ranked[k];
        json cols = json::array();
        for (const auto& t : c.cost.collectives)
            cols.push_back({{"name", t.name},
                            {"kind", t.kind},
                            {"count", t.count},
                            {"bytes_per_device", t.bytes_per_device},
                            {"time_s", t.time_s},
                            {"link_bytes_per_second", t.link_bytes_per_second}});
        json kinds = json::object();
        for (const auto& [kind, bt] : by_kind(c.cost))
            kinds[kind] = {{"bytes_per_device", bt.first}, {"time_s", bt.second}};
        json e = {{"rank", k + 1},
                  {"mesh", mesh_json(c)},
                  {"mesh_text", c.mesh_text},
                  {"open", open_json(c)},
                  {"equivalent_meshes", c.equivalents},
                  {"time_s", c.cost.time_s},
                  {"compute_s", c.cost.compute_s},
                  {"comm_s", c.cost.comm_s},
                  {"flops_per_device", c.cost.flops_per_device},
                  {"comm_bytes_per_device", c.cost.comm_bytes_per_device},
                  {"memory_bytes_per_device", c.cost.memory_bytes_per_device},
                  {"collectives", cols},
                  {"collectives_by_kind", kinds}};
        if (k > 0) e["why"] = c.reason;
        candidates.push_back(std::move(e));
    }
    json pruned = json::array();
    for (const auto& p : r.pruned)
        pruned.push_back({{"mesh", mesh_json(p)},
                          {"mesh_text", p.mesh_text},
                          {"open", open_json(p)},
                          {"equivalent_meshes", p.equivalents},
                          {"reason", std::string(prune_reason_name(*p.pruned))},
                          {"detail", p.reason}});
    json open_dims = json::array();
    for (std::size_t v = 0; v < r.open_dimensions.size(); ++v)
        open_dims.push_back({{"key", r.open_dimensions[v]}, {"axes", r.open_axes[v]}});
    return {{"version", 1},
            {"file", path},
            {"devices", r.devices},
            {"hbm_bytes", r.hbm_bytes ? json(*r.hbm_bytes) : json(nullptr)},
            {"hardware", r.hardware},
            {"axes", r.axis_names},
            {"searched_axes", r.searched_axes},
            {"unused_axes", r.unused_axes},
            {"factorizations", r.factorizations},
            {"open_dimensions", open_dims},
            {"open_assignments", r.open_assignments},
            {"inconsistent", r.inconsistent},
            {"checked", r.checked},
            {"kept", r.ranked.size()},
            {"interrupted", r.interrupted},
            {"candidates", candidates},
            {"pruned", pruned}};
}

} // namespace shardscope::semantics
