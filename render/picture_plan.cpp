// The plan picture (a timeline of a statement's steps) and the step-through frames.
#include "render/draw.hpp"
#include "render/palette.hpp"
#include "render/pictures.hpp"
#include "render/stepthrough.hpp"
#include "render/timeline.hpp"
#include "semantics/report.hpp"

#include <algorithm>
#include <cstdio>

namespace shardscope::render {

namespace {

std::string step_name(const semantics::Plan& plan, const semantics::Step& st) {
    if (semantics::is_collective(st.kind))
        return semantics::collective_text(plan.mesh, st.kind, st.mesh_axes);
    return std::string(semantics::step_kind_name(st.kind));
}

const semantics::StatementPlan* statement_at(const semantics::Plan& plan, int i) {
    if (i < 0 || i >= static_cast<int>(plan.statements.size())) return nullptr;
    return &plan.statements[static_cast<std::size_t>(i)];
}

} // namespace

void draw_plan(Canvas& c, const Rect& area, const semantics::Plan& plan, int statement,
               float font) {
    const float pad = 8, small = font * 0.85f, line = font * 1.45f;
    const float maxw = area.width() - 2 * pad;
    const auto* s = statement_at(plan, statement);
    if (!s) {
        c.text({area.x0 + pad, area.y0 + pad}, colors::kMuted, "no statement", font);
        return;
    }
    float y = area.y0 + pad;
    text_clipped(c, {area.x0 + pad, y}, colors::kText, s->pretty, font * 1.15f, maxw);
    y += line * 1.15f;
    std::string totals = "estimated " + semantics::format_seconds(s->cost.time_s) + " · " +
                         semantics::format_bytes(s->cost.comm_bytes_per_device) +
                         " sent per device · " + semantics::format_flops(s->cost.flops_per_device) +
                         " per device · " + plan.hardware + ", " + plan.dtype;
    if (s->chosen) totals += " · a fix was chosen";
    text_clipped(c, {area.x0 + pad, y}, colors::kMuted, totals, small, maxw);
    y += line;

    // The timeline bar.
    const float bar_h = font * 2.6f;
    const Rect bar{area.x0 + pad, y + 4, area.x1 - pad, y + 4 + bar_h};
    if (s->steps.empty()) {
        c.stroke_rect(bar, colors::kMuted, 1);
        text_centered(c, bar, "no steps: nothing to compute or move", colors::kMuted, small);
    } else {
        const auto spans =
            timeline_spans(step_times(*s), bar.width(),
                           std::min(8.0f, bar.width() / static_cast<float>(s->steps.size())));
        for (std::size_t i = 0; i < s->steps.size(); ++i) {
            const auto& st = s->steps[i];
            const Rect r{bar.x0 + spans[i].x0, bar.y0, bar.x0 + spans[i].x1, bar.y1};
            const Color col = step_color(st.kind);
            c.fill_rect(r, col);
            if (c.hovered(r)) c.stroke_rect(r, colors::kText, 2.5f);
            c.stroke_rect(r, colors::kBackground, 1);
            text_centered(c, r, std::to_string(i + 1) + " " + step_name(plan, st), text_on(col),
                          small);
            if (c.wants_tip(r)) {
                std::string tip = std::to_string(i + 1) + ". " + step_name(plan, st) +
                                  (st.tensor.empty() ? "" : " of " + st.tensor) + "\n" +
                                  semantics::format_seconds(st.cost.time_s);
                if (st.cost.bytes_per_device > 0)
                    tip += ", " + semantics::format_bytes(st.cost.bytes_per_device) + " per device";
                if (st.cost.flops_per_device > 0)
                    tip += ", " + semantics::format_flops(st.cost.flops_per_device);
                if (!st.text.detail.empty()) tip += "\n" + st.text.detail;
                if (!st.text.reason.empty()) tip += "\n" + st.text.reason;
                c.tip(r, tip);
            }
        }
    }
    y = bar.y1 + 4;
    c.text({bar.x0, y}, colors::kMuted, "0", small);
    const std::string total = semantics::format_seconds(s->cost.time_s);
    c.text({bar.x1 - c.text_size(total, small).x, y}, colors::kMuted, total, small);
    y += line * 1.2f;

    // The steps, one line each.
    for (std::size_t i = 0; i < s->steps.size(); ++i) {
        const auto& st = s->steps[i];
        c.fill_rect({area.x0 + pad, y + 2, area.x0 + pad + small, y + 2 + small},
                    step_color(st.kind));
        std::string t = std::to_string(i + 1) + ". " + step_name(plan, st);
        if (!st.tensor.empty()) t += " of " + st.tensor;
        if (!st.text.detail.empty()) t += " [" + st.text.detail + "]";
        t += "  " + semantics::format_seconds(st.cost.time_s);
        if (st.cost.bytes_per_device > 0)
            t += ", " + semantics::format_bytes(st.cost.bytes_per_device);
        if (!st.text.reason.empty()) t += " — " + st.text.reason;
        text_clipped(c, {area.x0 + pad + small + 6, y}, colors::kText, t, small, maxw - small - 6);
        y += line;
    }
    if (!s->alternatives.empty()) {
        y += line * 0.3f;
        c.text({area.x0 + pad, y}, colors::kText, "alternatives", font);
        y += line;
        for (const auto& a : s->alternatives) {
            std::string cols;
            for (const auto& x : a.collectives)
                cols += (cols.empty() ? "" : ", ") + x;
            std::string t = "• " + (cols.empty() ? std::string("no collective") : cols) + ": " +
                            semantics::format_seconds(a.time_s);
            if (!a.description.empty()) t += " — " + a.description;
            text_clipped(c, {area.x0 + pad, y}, colors::kMuted, t, small, maxw);
            y += line;
        }
    }
}

namespace {

/// One step of a collective's schedule: the group's devices in a row, each message an arrow
/// below them from sender to receiver, labelled with its block.
void draw_schedule_step(Canvas& c, const Rect& area, const semantics::Plan& plan,
                        const Schedule& sched, int substep, float font,
                        const semantics::TensorLayout* input, const semantics::TensorLayout* output,
                        const std::string& output_name) {
    const float pad = 8, small = font * 0.85f, line = font * 1.45f;
    const auto& st = sched.steps[static_cast<std::size_t>(substep - 1)];
    float y = area.y0;
    text_clipped(c, {area.x0 + pad, y}, colors::kText, st.title, font, area.width() - 2 * pad);
    y += line;
    const auto n = static_cast<int>(sched.group.size());
    std::string note;
    // A permute whose messages carry part of the receiver's new block (it has several
    // senders, or holds part of it already).
    const bool several = sched.parts;
    if (sched.rotation) {
        note = "the devices in mesh order; each arrow: the sender's block, which is the "
               "receiver's block after the step";
    } else if (sched.permute) {
        note = several ? "the devices in mesh order; each arrow: the part of the receiver's new "
                         "block that the sender holds (the receiver keeps what it holds itself)"
                       : "the devices in mesh order; each arrow: the part of the sender's block "
                         "that is the receiver's block after the permute";
    } else {
        note = "the devices of one group, in ring order";
        if (sched.groups > 1)
            note +=
                "; the " + std::to_string(sched.groups - 1) + " other groups do the same at once";
        note += "; block j: the j-th of " + std::to_string(n) + " parts of the tensor";
    }
    text_clipped(c, {area.x0 + pad, y}, colors::kMuted, note, small, area.width() - 2 * pad);
    y += line * 1.2f;
    const float gap = font;
    const float box_w =
        std::min(font * 6, (area.width() - 2 * pad - gap * static_cast<float>(n - 1)) /
                               static_cast<float>(n));
    if (box_w < font * 1.5f) {
        text_clipped(c, {area.x0 + pad, y}, colors::kMuted,
                     std::to_string(n) + " devices are too many to draw each message here", small,
                     area.width() - 2 * pad);
        return;
    }
    const float box_h = std::min(font * 3.5f, (area.y1 - y) * 0.35f);
    std::vector<std::int64_t> sizes;
    for (const auto& a : plan.mesh.axes)
        sizes.push_back(a.size);
    std::vector<Rect> boxes;
    for (int i = 0; i < n; ++i) {
        const float x0 = area.x0 + pad + static_cast<float>(i) * (box_w + gap);
        const Rect r{x0, y, x0 + box_w, y + box_h};
        boxes.push_back(r);
        // The device's colour as the tilings and the mesh draw it (by coordinates on a
        // large mesh).
        const std::int64_t id = sched.group[static_cast<std::size_t>(i)];
        const auto coords = plan.mesh.coords_at(plan.mesh.position_of(id));
        const Color col = mesh_device_color(sizes, coords, id);
        c.fill_rect(r, col);
        text_centered(c, r, "d" + std::to_string(sched.group[static_cast<std::size_t>(i)]),
                      text_on(col), font);
    }
    auto index_of = [&](std::int64_t id) {
        for (int i = 0; i < n; ++i)
            if (sched.group[static_cast<std::size_t>(i)] == id) return i;
        return 0;
    };
    // Each message: down from the sender, across, up into the receiver, at its own depth.
    const float depth0 = y + box_h + line * 1.1f;
    const float step_h = std::max(line * 1.1f, 6.0f);
    auto coords_of = [&](std::int64_t id) {
        return plan.mesh.coords_at(plan.mesh.position_of(id));
    };
    auto block_text = [&](const semantics::TensorLayout& layout, std::int64_t id) {
        std::string text = device_holding_text(plan.mesh, layout, coords_of(id));
        const auto of = text.find(" of ");
        return of == std::string::npos ? text : text.substr(0, of);
    };
    auto ranges_text = [](const std::vector<semantics::Range>& r) {
        std::string out;
        for (const auto& x : r)
            out +=
                (out.empty() ? "" : ", ") + std::to_string(x.begin) + ":" + std::to_string(x.end);
        return "[" + out + "]";
    };
    // A permute's message is labelled with what it carries (Transfer::part: the sender's block
    // within the receiver's new block): the receiver's whole new block, or that part of it.
    auto permute_label = [&](const Transfer& m) {
        const std::int64_t from = m.from, to = m.to;
        if (sched.rotation && input)
            return "its block " + block_text(*input, from) + " of " + input->tensor + ", d" +
                   std::to_string(to) + "'s block after the step";
        const std::string block = "d" + std::to_string(to) + "'s block " + block_text(*output, to);
        if (!m.part.empty() && m.part == m.target) return block + " of " + output_name;
        if (!m.part.empty())
            return ranges_text(m.part) + " of " + output_name + ", its part of " + block;
        if (!several) return block + " of " + output_name;
        return "the part of " + block + " of " + output_name + " that it holds (" +
               (input ? block_text(*input, from) : std::string("?")) + ")";
    };
    for (std::size_t t = 0; t < st.transfers.size(); ++t) {
        const auto& m = st.transfers[t];
        const Rect& a = boxes[static_cast<std::size_t>(index_of(m.from))];
        const Rect& b = boxes[static_cast<std::size_t>(index_of(m.to))];
        const float ax = a.x0 + a.width() * 0.65f, bx = b.x0 + b.width() * 0.35f;
        const float dy = depth0 + step_h * static_cast<float>(t);
        const Color col = colors::kText;
        c.line({ax, a.y1}, {ax, dy}, col, 2);
        c.line({ax, dy}, {bx, dy}, col, 2);
        arrow(c, {bx, dy}, {bx, b.y1 + 1}, col, 2);
        // A permute's arrows are numbered (its blocks are named in a list below them: the
        // labels are longer than the gap between neighbours); a ring's name their block.
        const std::string label = sched.permute
                                      ? "#" + std::to_string(t + 1)
                                      : "block " + std::to_string(m.block) +
                                            (!m.reduce                                    ? ""
                                             : sched.combine == semantics::PartialOp::Max ? " max"
                                                                                          : " Σ");
        c.text({std::min(ax, bx) + 4, dy - small - 1}, colors::kText, label, small);
    }
    if (sched.permute) {
        float ly = depth0 + step_h * static_cast<float>(st.transfers.size()) + line * 0.6f;
        for (std::size_t t = 0; t < st.transfers.size() && ly + small < area.y1; ++t) {
            const auto& m = st.transfers[t];
            std::string text = "#" + std::to_string(t + 1) + ": d" + std::to_string(m.from) +
                               " → d" + std::to_string(m.to);
            if (output) text += " sends " + permute_label(m);
            text_clipped(c, {area.x0 + pad, ly}, colors::kText, text, small,
                         area.width() - 2 * pad);
            ly += line;
        }
    }
}

} // namespace

void draw_step(Canvas& c, const Rect& area, const semantics::Plan& plan, int statement, int frame,
               float font, int substep) {
    const float pad = 8, line = font * 1.45f;
    const auto* s = statement_at(plan, statement);
    if (!s) {
        c.text({area.x0 + pad, area.y0 + pad}, colors::kMuted, "no statement", font);
        return;
    }
    const auto frames = step_frames(plan, *s);
    frame = std::clamp(frame, 0, static_cast<int>(frames.size()) - 1);
    const auto& f = frames[static_cast<std::size_t>(frame)];
    float y = area.y0 + pad;
    text_clipped(c, {area.x0 + pad, y}, colors::kText,
                 "step " + std::to_string(frame) + " of " + std::to_string(frames.size() - 1) +
                     ": " + f.title,
                 font * 1.15f, area.width() - 2 * pad);
    y += line * 1.15f;
    if (!f.explanation.empty()) {
        text_clipped(c, {area.x0 + pad, y}, colors::kMuted, f.explanation, font * 0.85f,
                     area.width() - 2 * pad);
        y += line;
    }
    if (substep > 0 && f.collective) {
        const auto sched = collective_schedule(plan, *s, f.step);
        if (!sched.steps.empty()) {
            const semantics::TensorLayout* output = step_output(*s, f.step);
            // The value the step writes, under its name in the plan (value_name).
            std::string output_name = output ? output->tensor : std::string();
            for (std::size_t v = 0; v < s->values.size(); ++v)
                if (output == &s->values[v].layout)
                    output_name = value_name(*s, static_cast<int>(v));
            const semantics::TensorLayout* input = step_input(*s, f.step);
            draw_schedule_step(c, {area.x0, y, area.x1, area.y1}, plan, sched,
                               std::min(substep, static_cast<int>(sched.steps.size())), font, input,
                               output, output_name);
            return;
        }
    }
    // Before (up to three values) -> after.
    std::vector<int> before;
    for (int v : f.before)
        if (v >= 0 && v < static_cast<int>(s->values.size()) && before.size() < 3)
            before.push_back(v);
    const bool has_after = f.after >= 0 && f.after < static_cast<int>(s->values.size());
    const std::size_t slots = before.size() + (has_after ? 1 : 0);
    if (slots == 0) return;
    const float arrow_w = has_after && !before.empty() ? 48 : 0;
    const float w = (area.width() - 2 * pad - arrow_w) / static_cast<float>(slots);
    // Every tiling of the frame is drawn along the same logical dimensions (those of the
    // first value the step reads, by index without mesh-axis subscripts: r_0 and r are one),
    // so that a collective does not look like a change of axes.
    const auto& ref =
        s->values[static_cast<std::size_t>(before.empty() ? f.after : before.front())].layout;
    const Drawn ref_drawn = default_drawn(ref);
    const int rank = static_cast<int>(ref.indices.size());
    const int rd = ref_drawn.row >= 0 ? ref_drawn.row : rank - 2;
    const int cd = ref_drawn.col >= 0 ? ref_drawn.col : rank - 1;
    const std::string row_name =
        rd >= 0 && rd < rank ? logical_index(ref.indices[static_cast<std::size_t>(rd)]) : "";
    const std::string col_name =
        cd >= 0 && cd < rank ? logical_index(ref.indices[static_cast<std::size_t>(cd)]) : "";
    auto drawn_for = [&](const semantics::TensorLayout& l) {
        return rank >= 2 ? drawn_by_names(l, row_name, col_name) : default_drawn(l);
    };
    // Text no larger than the frame allows: the tiles keep most of the room.
    const float sub = std::clamp(std::min(w, area.y1 - y) / 18.0f, 9.0f, font * 0.8f);
    // Each value under its name in the plan: the stored one as the statement's target.
    auto named = [&](int v) {
        auto l = s->values[static_cast<std::size_t>(v)].layout;
        l.tensor = value_name(*s, v);
        return l;
    };
    float x = area.x0 + pad;
    for (int v : before) {
        const auto l = named(v);
        draw_tiling(c, {x, y, x + w, area.y1 - pad}, plan.mesh, l, drawn_for(l), sub, true);
        x += w;
    }
    if (has_after) {
        if (!before.empty()) {
            const float ay = (y + area.y1) / 2;
            arrow(c, {x + 6, ay}, {x + arrow_w - 6, ay},
                  f.collective ? step_color(s->steps[static_cast<std::size_t>(f.step)].kind)
                               : colors::kMuted,
                  3);
            x += arrow_w;
        }
        const auto l = named(f.after);
        draw_tiling(c, {x, y, x + w, area.y1 - pad}, plan.mesh, l, drawn_for(l), sub, true);
    }
}

} // namespace shardscope::render
