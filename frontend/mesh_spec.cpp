#include "frontend/mesh_spec.hpp"

#include "parser/parser.hpp"
#include "semantics/checker.hpp"

#include <algorithm>
#include <string_view>

namespace shardscope::frontend {

std::optional<semantics::Mesh> parse_mesh_spec(const std::string& spec, Diagnostic* problem) {
    // The text of a `mesh` line, read by the parser: the same names, sizes and limits (P205,
    // P208) as a mesh in a file. Diagnostics are moved back to columns of `spec`.
    static constexpr std::string_view kPrefix = "mesh ";
    constexpr auto shift = static_cast<std::uint32_t>(kPrefix.size());
    auto fail = [&](Diagnostic d) -> std::optional<semantics::Mesh> {
        if (problem) {
            auto& r = d.range;
            auto back = [&](std::uint32_t v, std::uint32_t least) {
                return v >= shift + least ? v - shift : least;
            };
            r.offset = back(r.offset, 0);
            r.column = back(r.column, 1);
            r.end_column = std::max(r.column, back(r.end_column, 1));
            *problem = std::move(d);
        }
        return std::nullopt;
    };
    auto whole_spec = [&](std::string message) {
        ast::SourceRange r;
        r.line = r.end_line = 1;
        r.column = shift + 1;
        r.end_column =
            r.column + static_cast<std::uint32_t>(std::max<std::size_t>(1, utf8_length(spec)));
        r.offset = shift;
        r.length = static_cast<std::uint32_t>(spec.size());
        return Diagnostic{Severity::Error, {}, r, std::move(message), {}};
    };
    if (find_invalid_utf8(spec) || spec.find_first_of("\n\r") != std::string::npos)
        return fail(whole_spec("the mesh must be one line of UTF-8"));
    const SourceFile file("--mesh", std::string(kPrefix) + spec);
    auto parsed = parser::parse(file);
    for (auto& d : parsed.diagnostics)
        if (d.severity == Severity::Error) return fail(std::move(d));
    const ast::MeshDecl* decl = nullptr;
    std::size_t statements = 0;
    for (const auto& item : parsed.program.items)
        if (const auto* s = std::get_if<ast::Statement>(&item)) {
            ++statements;
            decl = std::get_if<ast::MeshDecl>(&s->node);
        }
    if (statements != 1 || !decl)
        return fail(whole_spec("only a mesh's axes (and devices) may follow --mesh"));
    return semantics::mesh_of(*decl);
}

} // namespace shardscope::frontend
