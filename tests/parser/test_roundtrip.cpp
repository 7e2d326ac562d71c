// The printer/parser round trip: parse(print(ast)) == ast, for every sample and for random
// programs built by a generator, in canonical ASCII and in pretty Unicode.
#include "helpers.hpp"

#include "parser/functions.hpp"

#include "tests/read_file.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

namespace shardscope::test {

namespace {

std::vector<std::filesystem::path> sample_files() {
    std::vector<std::filesystem::path> out;
    for (const auto& e : std::filesystem::directory_iterator(SHARDSCOPE_SAMPLES_DIR))
        if (e.path().extension() == ".ein") out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
}

/// Random well-formed programs, built as ASTs in the shape the parser produces.
class Generator {
public:
    explicit Generator(unsigned seed) : rng_(seed) {}

    ast::Program program() {
        ast::Program p;
        const int n = pick(1, 12);
        bool last_blank = true; // no blank line first
        for (int i = 0; i < n; ++i) {
            const int k = pick(0, 9);
            if (k == 0 && !last_blank && i + 1 < n) {
                p.items.emplace_back(ast::BlankLine{});
                last_blank = true;
                continue;
            }
            if (k == 1) {
                p.items.emplace_back(ast::Comment{comment_text(), {}});
            } else {
                p.items.emplace_back(statement());
            }
            last_blank = false;
        }
        return p;
    }

private:
    int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
    bool coin(int percent = 50) { return pick(1, 100) <= percent; }
    template <typename T>
    const T& choose(const std::vector<T>& v) {
        return v[static_cast<std::size_t>(pick(0, static_cast<int>(v.size()) - 1))];
    }

    std::string comment_text() {
        static const std::vector<std::string> texts = {
            "note", "all-reduce here", "a; b", "r₀ is a device index", "x = y % z", ""};
        return choose(texts);
    }

    std::string identifier(bool short_ok = true) {
        static const std::vector<std::string> names = {
            "x", "y", "W", "gW", "Q2", "acc", "Z", "N", "hidden", "q", "k", "v", "C", "A", "B"};
        static const std::vector<std::string> longer = {"batch", "seq", "d", "heads", "I", "J"};
        return short_ok ? choose(names) : choose(longer);
    }

    ast::AxisRef axis() {
        static const std::vector<std::string> axes = {"0", "1", "2", "tp", "dp", "X", "Y"};
        return {choose(axes), {}};
    }

    std::vector<ast::AxisRef> axes(int max_count) {
        std::vector<ast::AxisRef> out;
        const int n = pick(1, max_count);
        for (int i = 0; i < n; ++i)
            out.push_back(axis());
        return out;
    }

    ast::Index index(bool bracket) {
        ast::Index ix;
        if (bracket) {
            ix.name = identifier(coin());
        } else {
            ix.name =
                coin(85) ? std::string(1, static_cast<char>('a' + pick(0, 25))) : identifier(false);
        }
        ix.primes = coin(20) ? pick(1, 3) : 0;
        if (coin(30)) ix.axes = axes(2);
        return ix;
    }

    ast::TensorRef ref(bool allow_partial = true) {
        ast::TensorRef t;
        t.name = identifier();
        if (coin(20)) t.label = coin() ? std::to_string(pick(0, 12)) : "up";
        const int style = pick(0, 4);
        if (style == 0) {
            t.style = ast::IndexStyle::None;
        } else {
            t.style = style == 4 ? ast::IndexStyle::Bracket : ast::IndexStyle::Subscript;
            const bool bracket = t.style == ast::IndexStyle::Bracket;
            const int n = pick(0, 4);
            for (int i = 0; i < n; ++i) {
                ast::Dimension d;
                d.grouped = coin(15);
                const int parts = d.grouped ? pick(1, 3) : 1;
                for (int j = 0; j < parts; ++j)
                    d.parts.push_back(index(bracket));
                t.dims.push_back(std::move(d));
            }
        }
        if (allow_partial && coin(10)) t.partial_axes = axes(2);
        return t;
    }

    ast::Expr expr(int depth) {
        const int k = depth > 3 ? pick(0, 1) : pick(0, 6);
        switch (k) {
        case 0: {
            static const std::vector<std::string> numbers = {"2", "0.5", "1e-3", "10", "3.25E+2"};
            return {ast::Number{choose(numbers)}, {}};
        }
        case 1:
            return {ref(), {}};
        case 2: {
            ast::Call c{function_name(), {}, expr(depth + 1)};
            if (coin(40)) c.indices.push_back(index(false));
            return {std::move(c), {}};
        }
        case 3: {
            ast::Product p;
            const int n = pick(2, 4);
            for (int i = 0; i < n; ++i)
                p.factors.push_back(expr(depth + 1));
            return {std::move(p), {}};
        }
        case 4:
            return {ast::Quotient{expr(depth + 1), expr(depth + 1)}, {}};
        default: {
            ast::Sum s;
            const int n = pick(1, 3);
            for (int i = 0; i < n; ++i) {
                s.terms.push_back(expr(depth + 1));
                s.negated.push_back(coin(30));
            }
            if (n == 1) s.negated[0] = true; // one term prints as a sum only when negated
            return {std::move(s), {}};
        }
        }
    }

    std::string function_name() {
        const auto fns = builtin_functions();
        if (!declared_.empty() && coin(20)) return choose(declared_);
        return std::string(
            fns[static_cast<std::size_t>(pick(0, static_cast<int>(fns.size()) - 1))].name);
    }

    ast::Expect expect() {
        ast::Expect e;
        if (coin(20)) return e;
        const int n = pick(1, 3);
        for (int i = 0; i < n; ++i) {
            ast::ExpectedCollective c;
            c.kind = static_cast<ast::CollectiveKind>(pick(0, 4));
            if (coin(70)) c.axes = {{std::to_string(pick(0, 2)), {}}};
            e.collectives.push_back(std::move(c));
        }
        return e;
    }

    ast::Statement statement() {
        ast::Statement s;
        if (coin(15)) s.comment = comment_text();
        if (s.comment.empty()) s.comment.clear();
        switch (pick(0, 14)) {
        case 0: {
            ast::MeshDecl m;
            m.named = coin();
            const int n = pick(1, 3);
            std::int64_t total = 1;
            static const std::vector<std::string> names = {"dp", "tp", "pp", "X", "Y", "Z"};
            for (int i = 0; i < n; ++i) {
                const auto size = pick(1, 8);
                total *= size;
                m.axes.push_back({m.named ? names[static_cast<std::size_t>(i * 2 + pick(0, 1))]
                                          : std::to_string(i),
                                  size,
                                  {}});
            }
            if (coin(20)) {
                for (std::int64_t d = 0; d < total; ++d)
                    m.devices.push_back(d);
                std::shuffle(m.devices.begin(), m.devices.end(), rng_);
            }
            s.node = m;
            break;
        }
        case 1: {
            ast::DimDecl d;
            const int n = pick(1, 4);
            for (int i = 0; i < n; ++i) {
                ast::Index ix;
                ix.name = identifier(coin());
                ix.primes = coin(20) ? 1 : 0;
                d.bindings.push_back({ix, pick(1, 5000)});
            }
            s.node = d;
            break;
        }
        case 2: {
            ast::SplitDecl sp;
            sp.from.name = "s";
            const int n = pick(2, 3);
            for (int i = 0; i < n; ++i) {
                ast::Index p;
                p.name = std::string(1, static_cast<char>('r' + i));
                p.primes = coin(20) ? 1 : 0;
                sp.parts.push_back(p);
            }
            s.node = sp;
            break;
        }
        case 3:
            s.node = ast::DtypeDecl{coin() ? "bf16" : "f32"};
            break;
        case 4:
            s.node = ast::TensorDecl{identifier(), coin() ? "0" : "", "f16"};
            break;
        case 5:
            s.node = ast::HwDecl{coin() ? "h100" : "tpu-v5e"};
            break;
        case 6: {
            ast::LinkDecl l;
            l.axis = axis();
            l.bandwidth_text = "450GB/s";
            l.bytes_per_second = 450 * 1e9;
            if (coin()) {
                l.latency_text = "2us";
                l.latency_seconds = 2 * 1e-6;
            }
            s.node = l;
            break;
        }
        case 7: {
            ast::FnDecl f{"swish" + std::to_string(declared_.size()),
                          coin() ? ast::FunctionKind::Linear : ast::FunctionKind::Elementwise};
            declared_.push_back(f.name);
            s.node = f;
            break;
        }
        case 8:
            s.node = expect();
            break;
        case 9:
        case 10: {
            ast::Chain c;
            c.from = ref();
            // One chain in three is a chain of products: the same context factors on every
            // side, the moved factor among them (the parser takes the first factor that
            // changes, so the moved one must change somewhere).
            std::vector<ast::TensorRef> context;
            if (pick(0, 2) == 0)
                for (int k = pick(1, 2); k > 0; --k)
                    context.push_back(ref());
            c.with = context;
            c.moved = context.empty() ? 0 : static_cast<std::size_t>(pick(0, int(context.size())));
            const int n = pick(1, 3);
            for (int i = 0; i < n; ++i) {
                ast::ChainStep st;
                st.to = ref();
                for (int tries = 0; i == 0 && st.to == c.from && tries < 10; ++tries)
                    st.to = ref();
                if (i == 0 && st.to == c.from) st.to.name += "x";
                st.with = context;
                const int kind = pick(0, 3);
                if (kind == 1) st.expect = expect();
                if (kind == 2) st.label = "TP matmul";
                c.steps.push_back(std::move(st));
            }
            s.node = c;
            break;
        }
        default: {
            ast::Equation e;
            e.lhs = ref();
            e.op = static_cast<ast::AssignOp>(pick(0, 2));
            e.rhs = expr(0);
            s.node = e;
            break;
        }
        }
        return s;
    }

    std::mt19937 rng_;
    std::vector<std::string> declared_;
};

} // namespace

TEST_CASE("every sample parses and round-trips through the canonical printer") {
    const auto files = sample_files();
    REQUIRE(files.size() >= 10);
    for (const auto& path : files) {
        CAPTURE(path.string());
        const auto text = read_file(path);
        const auto first = parse_text(text);
        REQUIRE_MESSAGE(!first.has_errors(), diagnostics_text(text, first));
        for (bool unicode : {false, true}) {
            CAPTURE(unicode);
            const auto printed = parser::print(first.program, {unicode});
            const auto second = parse_text(printed);
            REQUIRE_MESSAGE(!second.has_errors(), diagnostics_text(printed, second) << printed);
            CHECK_MESSAGE(second.program == first.program, printed);
            // Printing is idempotent: the canonical form is a fixed point.
            CHECK(parser::print(second.program, {unicode}) == printed);
        }
    }
}

TEST_CASE("random programs round-trip: parse(print(ast)) == ast") {
    constexpr int kPrograms = 3000;
    int checked = 0;
    for (unsigned seed = 1; seed <= kPrograms; ++seed) {
        Generator gen(seed);
        const auto program = gen.program();
        for (bool unicode : {false, true}) {
            const auto printed = parser::print(program, {unicode});
            const auto parsed = parse_text(printed);
            INFO("seed " << seed << (unicode ? " (unicode)" : " (ascii)") << "\n" << printed);
            REQUIRE_MESSAGE(!parsed.has_errors(), diagnostics_text(printed, parsed));
            REQUIRE(parsed.program == program);
            ++checked;
        }
    }
    CHECK(checked == 2 * kPrograms);
}

TEST_CASE("the round trip keeps comments, blank lines and LaTeX captions as comments") {
    const std::string text = "\\textrm{dot product:}& z = x_{k} y_{k}  % trailing\n"
                             "\n\n# own line\n"
                             "mesh 4;dim b=8\n";
    const auto r = parse_text(text);
    REQUIRE_MESSAGE(!r.has_errors(), diagnostics_text(text, r));
    const auto printed = parser::print(r.program);
    CHECK(printed == "# dot product:\n"
                     "z = x_{k} y_{k}  # trailing\n"
                     "\n"
                     "# own line\n"
                     "mesh 4\n"
                     "dim b=8\n");
    CHECK(parse_text(printed).program == r.program);
}

} // namespace shardscope::test
