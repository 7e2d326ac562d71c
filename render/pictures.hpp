// The pictures: tiling, mesh and plan, drawn from a `const Plan&` on any Canvas (the window's
// panels, SVG and PNG files draw the same code). They hold no state.
#pragma once

#include "render/canvas.hpp"
#include "render/tiles.hpp"
#include "semantics/plan.hpp"

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace shardscope::render {

enum class View { Tiling, Mesh, Plan, Steps };

/// "tiling", "mesh", "plan", "steps"; nullopt for anything else.
std::optional<View> parse_view(std::string_view name);

/// What is drawn: a statement, and in it a tensor (a layout of the statement) or a value.
struct Selection {
    int statement = 0;  ///< index into Plan::statements
    std::string tensor; ///< TensorLayout::tensor; empty: the statement's result
    int value = -1;     ///< >= 0: this value of StatementPlan::values instead of `tensor`
    int row_dim = -1;   ///< drawn dimensions (-1: the defaults, the last two)
    int col_dim = -1;
    int step = 0; ///< Steps view: the frame of the step-through
    /// Steps view: 0 the frame; k >= 1 the k-th step of its collective's schedule
    /// (collective_schedule: who sends which block to whom)
    int substep = 0;
    /// Tiling view: the picture drawn `zoom` times larger, moved by `pan` (pixels), in the
    /// same area (the window clips it): zoom and pan on the tiling canvas.
    float zoom = 1;
    Vec2 pan{0, 0};
    /// Tiling view: >= 0 outlines the tiles this device holds (hovering it in the mesh).
    std::int64_t highlight = -1;
};

/// The area a picture is laid out in at `zoom` and `pan` (zoom 1 and no pan: `area` itself).
Rect zoomed_area(const Rect& area, float zoom, Vec2 pan);

/// The layouts of a statement a user can pick, in order: the result, then each operand
/// (each name once; the result wins over an operand of the same name).
std::vector<const semantics::TensorLayout*> statement_layouts(const semantics::StatementPlan& s);

/// The layout a selection names (nullptr when the statement, tensor or value does not exist).
const semantics::TensorLayout* selected_layout(const semantics::Plan& plan, const Selection& sel);

/// Tensor names compare after dropping braces, `^`, `_` and spaces: `W^{SS}` matches `W^SS`
/// and `WSS`.
bool same_tensor_name(std::string_view a, std::string_view b);

/// Resolves `--statement` (1-based; 0: not given) and `--tensor` into a selection. Without a
/// statement, the first statement whose result is the tensor, else the first that reads it.
/// On failure returns nullopt with the reason in `error`.
std::optional<Selection> resolve_selection(const semantics::Plan& plan, int statement_1based,
                                           const std::string& tensor, std::string& error);

/// The dimensions a tiling draws by default: the first two sharded dimensions (so that every
/// device's own tile shows), else a sharded one and the last other, else the last two.
Drawn default_drawn(const semantics::TensorLayout& layout);

/// The drawn dimensions of a selection: its own, or the defaults.
Drawn drawn_of(const Selection& sel, const semantics::TensorLayout& layout);

/// The natural size of a picture, in pixels.
Vec2 picture_size(const semantics::Plan& plan, View view, const Selection& sel);

/// Draws a picture into `area` (the background is the caller's).
void draw_picture(Canvas& c, const Rect& area, const semantics::Plan& plan, View view,
                  const Selection& sel, float font = 14);

/// tile_model() through a small per-thread cache keyed on the values (not the addresses) of
/// the mesh, layout and drawn dimensions: the window draws the same tilings every frame, and
/// cutting a 32x32 tiling costs more than drawing it. Throws as tile_model() does.
std::shared_ptr<const TileModel>
cached_tile_model(const semantics::Mesh& mesh, const semantics::TensorLayout& layout, Drawn drawn);

/// The tiling of one layout: one tile per distinct block, in its holder's colour (by mesh
/// coordinates on large meshes) or, held by several devices, one tile in a replica tint
/// labelled with every holder and the axes it is replicated over; hatched and marked Σ when
/// partial; one panel (small multiple) per slice of the sharded undrawn dimensions; local and
/// global shapes, a legend. `compact` (the step-through's frames) leaves out the shape line
/// and the legend so that the tiles keep the room.
/// `highlight` >= 0: the tiles that device holds are outlined, and a line says so.
void draw_tiling(Canvas& c, const Rect& area, const semantics::Mesh& mesh,
                 const semantics::TensorLayout& layout, Drawn drawn, float font = 14,
                 bool compact = false, std::int64_t highlight = -1);

/// A tiling's title, `name_{indices}   (placements)`, fitted to `max_width` at `size`: the
/// placements are kept whole as long as anything fits; the name is shortened first (with
/// "…"), then the indices.
std::string tiling_title(const Canvas& c, const std::string& name, const std::string& indices,
                         const std::string& placements, float size, float max_width);

/// The written dimensions of `layout` whose indices are, without their mesh-axis subscripts,
/// `row` and `col` ("r_0" and "r" are the same logical dimension); default_drawn(layout) when
/// it lacks one of them.
Drawn drawn_by_names(const semantics::TensorLayout& layout, const std::string& row,
                     const std::string& col);

/// The mesh: every device as a cell of a grid (3-D and larger meshes as small multiples),
/// with coordinates; hovering a device shows what it holds of each of `layouts`.
void draw_mesh(Canvas& c, const Rect& area, const semantics::Mesh& mesh,
               const std::vector<const semantics::TensorLayout*>& layouts, float font = 14);

/// The timeline of a statement's steps, lengths proportional to estimated time, with bytes
/// and reasons, then the alternatives with their cost.
void draw_plan(Canvas& c, const Rect& area, const semantics::Plan& plan, int statement,
               float font = 14);

/// One frame of the step-through: the tilings before and after a step; with `substep` >= 1
/// on a collective's frame, that step of its schedule: one group's devices in ring order,
/// an arrow per message labelled with its block (Σ where the receiver adds it).
void draw_step(Canvas& c, const Rect& area, const semantics::Plan& plan, int statement, int frame,
               float font = 14, int substep = 0);

/// What a device holds of a layout, in words: "[0:2, 0:2] of 4×4", "nothing", with "Σ"
/// when partial.
std::string holding_text(const TileModel& model, std::int64_t device);

/// What the device at mesh coordinates `coords` holds of a layout, every written dimension:
/// "[640:768, 0:4096] of 4096×4096", a group whose minor part is cut as "(r 0:1, c 0:2)",
/// "nothing (an empty shard)", with "Σ partial over AXES". Cheap (no tile model): the mesh's
/// hover lists every tensor this way.
std::string device_holding_text(const semantics::Mesh& mesh, const semantics::TensorLayout& layout,
                                const std::vector<int>& coords);

/// "[0:2, 2:4]": a tile's ranges along the drawn dimensions; with small multiples, its panel's
/// slice after them: "[0:8, 0:2048] f[0:4096]".
std::string tile_text(const TileModel& model, const Tile& tile);

/// An index as the pictures show it, mesh-axis numbers typeset as subscripts: "r_0" -> "r₀",
/// "j_{1,2}" -> "j₁,₂", "r'_1" -> "r′₁"; named axes ("b_{dp}", "f_tp", "seq_X") stay as
/// written (Unicode has subscripts for few letters).
std::string typeset_index(const std::string& index);

/// "d3 (1,1)": a device and its mesh coordinates.
std::string device_text(std::int64_t id, const std::vector<int>& coords);

/// The tensors of the whole program as they stand after their last statement, one layout
/// per name (results, and inputs as first read): what the mesh view's hover lists.
std::vector<const semantics::TensorLayout*> program_layouts(const semantics::Plan& plan);

/// The SVG document of a picture at its natural size; `problem`, if given, receives why the
/// picture cannot show what was asked ("" when it can: Canvas::report_problem).
/// `scale` draws it that much larger (the picture's size and its text); `tight` crops the
/// document to what was drawn (a margin of 8).
std::string render_svg(const semantics::Plan& plan, View view, const Selection& sel,
                       std::string* problem = nullptr, float scale = 1, bool tight = false);

/// A statement's whole step-through as one animated SVG: every picture of step_sequence in
/// the window's order, `seconds` each, looping (SMIL: each picture a <g id="frame-F"> or
/// <g id="frame-F-message-K"> whose visibility an <animate calcMode="discrete"> switches on
/// for its turn; a viewer without SMIL shows the first). `scale` and `tight` as render_svg
/// (tight: cropped to what any picture draws).
std::string render_steps_animation_svg(const semantics::Plan& plan, int statement,
                                       float seconds = 1.5f, std::string* problem = nullptr,
                                       float scale = 1, bool tight = false);

} // namespace shardscope::render
