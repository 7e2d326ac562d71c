// The REPL's views of the session: :mesh, :dims, :tensors, :show, :plan and :viz.
#include "repl_session.hpp"
#include "repl_text.hpp"

#include "parser/printer.hpp"
#include "render/text_tiles.hpp"
#include "render/tiles.hpp"
#include "semantics/report.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace shardscope::app {

using namespace repl;
using semantics::TensorLayout;

Answer Session::show_mesh() const {
    const auto& m = plan_.mesh;
    if (m.axes.empty())
        return {"no mesh declared: one device (declare one: mesh 2x4, or mesh dp=2 tp=4)\n"};
    std::string sizes;
    for (const auto& a : m.axes)
        sizes += (sizes.empty() ? "" : "x") + std::to_string(a.size);
    std::string out = "mesh " + sizes + ": " +
                      plural(static_cast<std::size_t>(m.device_count()), "device", "devices") +
                      "\n";
    for (std::size_t k = 0; k < m.axes.size(); ++k)
        out += "  axis " + std::to_string(k) + ": " +
               (m.axes[k].name == std::to_string(k) ? "" : m.axes[k].name + ", ") + "size " +
               std::to_string(m.axes[k].size) + "\n";
    std::string devices;
    const std::int64_t n = m.device_count();
    for (std::int64_t p = 0; p < n && p < 64; ++p)
        devices += (devices.empty() ? "" : " ") +
                   std::to_string(m.devices.empty() ? p : m.devices[static_cast<std::size_t>(p)]);
    if (n > 64) devices += " ...";
    out += "  devices, row-major over the axes: " + devices +
           (m.devices.empty() ? " (in order)" : "") + "\n";
    return {out};
}

Answer Session::show_dims() const {
    std::map<std::string, std::int64_t> ranges; // from every layout
    for_each_layout(plan_, [&](const TensorLayout& t, const auto&, bool) {
        for (const auto& a : t.atoms)
            ranges.emplace(a.index.text(), a.extent);
    });
    std::string declared, splits;
    std::set<std::string> seen;
    for (const auto& item : program_.items) {
        const auto* s = std::get_if<ast::Statement>(&item);
        if (!s) continue;
        if (const auto* d = std::get_if<ast::DimDecl>(&s->node))
            for (const auto& b : d->bindings) {
                const auto i = parser::print(b.index);
                if (!seen.insert(i).second) continue;
                declared += "  " + i + " = " + std::to_string(b.size) + "\n";
            }
        if (const auto* sp = std::get_if<ast::SplitDecl>(&s->node)) {
            std::string parts;
            for (const auto& p : sp->parts) {
                const auto i = parser::print(p);
                seen.insert(i);
                auto it = ranges.find(i);
                parts += (parts.empty() ? "" : " ") + i +
                         (it != ranges.end() ? "=" + std::to_string(it->second) : "");
            }
            splits += "  " + parser::print(sp->from) + " -> " + parts + "\n";
        }
    }
    std::string inferred;
    for (const auto& [i, n] : ranges)
        if (!seen.count(i)) inferred += "  " + i + " = " + std::to_string(n) + "\n";
    std::string out;
    if (!declared.empty()) out += "declared:\n" + declared;
    if (!splits.empty()) out += "split:\n" + splits;
    if (!inferred.empty()) out += "inferred (not declared):\n" + inferred;
    if (out.empty()) out = "no indices yet (declare ranges with: dim b=8 d=1024)\n";
    return {out};
}

Answer Session::show_tensors() const {
    const auto names = tensor_names();
    if (names.empty()) return {"no tensors yet\n"};
    std::string out;
    for (const auto& n : names) {
        const TensorLayout* last = nullptr;
        bool defined = false;
        std::uint32_t line = 0;
        for_each_layout(plan_,
                        [&](const TensorLayout& t, const semantics::StatementPlan& s, bool result) {
                            if (t.tensor != n) return;
                            last = &t;
                            if (result) {
                                defined = true;
                                line = s.range.line;
                            }
                        });
        auto text = semantics::format_tensor_line(*last, defined ? "result" : "input");
        text.pop_back();
        out += text + (defined ? "  line " + std::to_string(line) : "") + "\n";
    }
    return {out};
}

Answer Session::show(const std::string& name) const {
    const auto* t = layout_of(name);
    if (!t) return {"no tensor " + name + " in the session (:tensors lists them)\n", true};
    std::string out;
    for (const auto& s : plan_.statements) {
        std::string lines;
        for (const auto& o : s.operands)
            if (o.tensor == name) lines += semantics::format_tensor_line(o, "operand");
        if (s.result.tensor == name) lines += semantics::format_tensor_line(s.result, "result");
        if (!lines.empty())
            out += std::string(kName) + ":" + std::to_string(s.range.line) + ": " + s.pretty +
                   "\n" + lines;
    }
    out += "now: (" + semantics::placements_text(t->placements) + "), local " +
           semantics::shape_text(t->local_shape) + " of " + semantics::shape_text(t->global_shape) +
           "\n";
    for (const auto& a : t->atoms) {
        std::string axes;
        std::int64_t n = 1;
        for (int k : a.axes) {
            axes += (axes.empty() ? "" : ",") + plan_.mesh.axes[static_cast<std::size_t>(k)].name;
            n *= plan_.mesh.axes[static_cast<std::size_t>(k)].size;
        }
        out += "  " + a.index.text() + ": " + std::to_string(a.extent) +
               (axes.empty() ? ", whole on every device"
                             : ", over mesh axis " + axes + " in " + std::to_string(n) +
                                   " chunks of at most " +
                                   std::to_string(semantics::chunk(a.extent, n, 0).size())) +
               "\n";
    }
    return {out};
}

Answer Session::show_plan(const std::string& arg) const {
    if (plan_.statements.empty()) return {"no statements yet\n"};
    if (arg.empty()) {
        auto text = semantics::format_plan(plan_, kName, options_.color);
        if (text.size() > 1 && text.back() == '\n' && text[text.size() - 2] == '\n')
            text.pop_back();
        return {text};
    }
    std::uint32_t line = 0;
    try {
        std::size_t used = 0;
        const long v = std::stol(arg, &used);
        if (used != arg.size() || v <= 0) throw std::invalid_argument(arg);
        line = static_cast<std::uint32_t>(v);
    } catch (const std::exception&) {
        return {"usage: :plan [LINE], LINE a number as in repl:LINE\n", true};
    }
    std::string lines;
    for (const auto& s : plan_.statements) {
        if (s.range.line <= line && line <= std::max(s.range.line, s.range.end_line)) {
            semantics::Plan one = plan_;
            one.statements = {s};
            auto text = semantics::format_plan(one, kName, options_.color);
            text.pop_back();
            return {text};
        }
        lines += (lines.empty() ? "" : ", ") + std::to_string(s.range.line);
    }
    return {"no statement at line " + arg + "; statements are at lines " + lines + "\n", true};
}

Answer Session::viz(const std::vector<std::string>& args) const {
    if (args.size() != 1 && args.size() != 3)
        return {"usage: :viz NAME [ROW COL] (ROW COL: dimensions by number or index)\n", true};
    const auto* t = layout_of(args[0]);
    if (!t) return {"no tensor " + args[0] + " in the session (:tensors lists them)\n", true};
    render::Drawn drawn;
    if (args.size() == 3) {
        auto dim_of = [&](const std::string& w) -> int {
            for (std::size_t d = 0; d < t->indices.size(); ++d) {
                const auto& i = t->indices[d];
                if (i == w || i.substr(0, i.find('_')) == w) return static_cast<int>(d);
            }
            try {
                std::size_t used = 0;
                const int v = std::stoi(w, &used);
                if (used == w.size()) return v;
            } catch (const std::exception&) {
            }
            return -2;
        };
        drawn = {dim_of(args[1]), dim_of(args[2])};
        const int rank = static_cast<int>(t->indices.size());
        std::string dims;
        for (int d = 0; d < rank; ++d)
            dims += (dims.empty() ? "" : ", ") + std::to_string(d) + " " +
                    t->indices[static_cast<std::size_t>(d)];
        if (dims.empty()) dims = "none: it is a scalar";
        for (int k : {1, 2}) {
            const int d = k == 1 ? drawn.row : drawn.col;
            if (d < 0 || d >= rank)
                return {args[0] + " has no dimension '" + args[static_cast<std::size_t>(k)] +
                            "' (its dimensions: " + dims + ")\n",
                        true};
        }
        if (drawn.row == drawn.col)
            return {"ROW and COL name the same dimension of " + args[0] +
                        ": draw two different ones (" + dims + ")\n",
                    true};
    }
    try {
        const auto model = render::tile_model(plan_.mesh, *t, drawn);
        return {render::draw_tiles(model, {options_.color, options_.width})};
    } catch (const std::invalid_argument& e) {
        return {std::string(e.what()) + "\n", true};
    }
}

} // namespace shardscope::app
