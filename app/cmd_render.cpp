// `shardscope render`: the GUI's pictures as files, without a window. SVG is drawn by the
// same code through the SVG canvas (no display needed); PNG through an offscreen OpenGL
// framebuffer (needs a display: xvfb-run on a headless machine).
#include "commands.hpp"
#include "inputs.hpp"

#include "app/gui_helper.hpp"
#include "frontend/document.hpp"
#include "render/pictures.hpp"
#include "render/stepthrough.hpp"
#ifdef SHARDSCOPE_HAVE_GUI
#include "render/gui/offscreen.hpp"
#endif

#include <charconv>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <system_error>

namespace shardscope::app {

namespace {

struct RenderOptions {
    std::string file;
    std::string output;
    std::string view = "tiling";
    std::string tensor;
    int statement = 0;
    int step = 0;
    bool step_given = false; ///< --step was written (0 is also its default)
    int substep = 0;
    int rows = -1, cols = -1;
    float scale = 1;
    bool tight = false;
    bool animate = false;       ///< steps view: the whole step-through as one animated SVG
    float seconds = 1.5f;       ///< --animate: seconds per picture
    std::string frames;         ///< steps view: a folder for the numbered series
    std::string format = "png"; ///< --frames: png or svg
};

bool ends_with(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() &&
           s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// One picture as SVG or PNG bytes; kExitOk, or a message on stderr and the exit code.
int draw_bytes(const semantics::Plan& plan, render::View view, const render::Selection& sel,
               bool svg, const RenderOptions& o, const std::string& output, std::string& bytes,
               std::string& problem) {
    if (svg) {
        bytes = render::render_svg(plan, view, sel, &problem, o.scale, o.tight);
        return kExitOk;
    }
#ifdef SHARDSCOPE_HAVE_GUI
    std::string error;
    const render::Vec2 size = render::picture_size(plan, view, sel);
    const float sw = size.x * o.scale, sh = size.y * o.scale;
    const int w = static_cast<int>(sw), h = static_cast<int>(sh);
    const auto status = render::render_png(
        w, h,
        [&](render::Canvas& c) {
            render::draw_picture(c, {0, 0, sw, sh}, plan, view, sel, 14 * o.scale);
            problem = c.problem();
        },
        bytes, error, o.scale, o.tight);
    if (status == render::GlStatus::NoDisplay) {
        std::cerr << "shardscope: error: PNG output needs an OpenGL context, and there is " << error
                  << ": write " << std::filesystem::path(output).replace_extension(".svg").string()
                  << " instead (no display needed), or run under a virtual display: "
                     "xvfb-run -a shardscope render ...\n";
        return kExitUsage;
    }
    if (status != render::GlStatus::Ok) {
        std::cerr << "shardscope: error: cannot draw the PNG: " << error
                  << " (write .svg instead)\n";
        return kExitUsage;
    }
    return kExitOk;
#else
    (void)plan;
    (void)view;
    (void)sel;
    (void)o;
    (void)output;
    (void)bytes;
    (void)problem;
    return kExitUsage; // refused before (run_render)
#endif
}

/// Writes a drawing to `path`, or says why not (its `problem`, or the file) and returns the
/// usage exit code.
int write_drawing(const std::string& bytes, const std::string& problem, const std::string& view,
                  const std::string& path, const std::string& otherwise) {
    if (!problem.empty()) {
        std::cerr << "shardscope: error: cannot draw the " << view << " view: " << problem << "; "
                  << otherwise << "\n";
        return kExitUsage;
    }
    if (!write_file_atomically(path, bytes)) {
        std::cerr << "shardscope: error: cannot write " << path << "\n";
        return kExitUsage;
    }
    return kExitOk;
}

int run_render(const RenderOptions& o) {
    const bool series = !o.frames.empty();
    if (series == !o.output.empty()) {
        std::cerr << "shardscope: error: render writes -o OUT.svg|OUT.png, or with --view steps "
                     "--frames DIR a numbered series: give one of them\n";
        return kExitUsage;
    }
    if ((series || o.animate) && o.view != "steps") {
        std::cerr << "shardscope: error: " << (series ? "--frames" : "--animate")
                  << " exports the step-through: it needs --view steps\n";
        return kExitUsage;
    }
    // Like --frames: a frame of the step-through means nothing in another view, and the
    // option would be ignored without a word.
    if (o.step_given && o.view != "steps") {
        std::cerr << "shardscope: error: --step picks a frame of the step-through: it needs "
                     "--view steps\n";
        return kExitUsage;
    }
    if (series && o.animate) {
        std::cerr << "shardscope: error: --animate writes one SVG (-o OUT.svg), --frames a "
                     "series: give one of them\n";
        return kExitUsage;
    }
    if (series && o.format != "png" && o.format != "svg") {
        std::cerr << "shardscope: error: --format is png or svg, not '" << o.format << "'\n";
        return kExitUsage;
    }
    const bool svg = series ? o.format == "svg" : ends_with(o.output, ".svg");
    const bool png = series ? o.format == "png" : ends_with(o.output, ".png");
    if (!svg && !png) {
        std::cerr << "shardscope: error: the output '" << o.output
                  << "' must end in .svg or .png\n";
        return kExitUsage;
    }
    if (o.animate && !svg) {
        std::cerr << "shardscope: error: --animate writes an animated SVG: the output must end "
                     "in .svg (--frames DIR writes a numbered PNG series)\n";
        return kExitUsage;
    }
    const auto view = render::parse_view(o.view);
    if (!view) {
        std::cerr << "shardscope: error: unknown view '" << o.view
                  << "': expected tiling, mesh, plan or steps\n";
        return kExitUsage;
    }
#if !defined(SHARDSCOPE_HAVE_GUI) && defined(SHARDSCOPE_GUI_HELPER)
    // The main binary: PNG is drawn by shardscope-gui, which links OpenGL (gui_helper.hpp).
    if (png) return run_gui_helper();
#elif !defined(SHARDSCOPE_HAVE_GUI)
    if (png) {
        std::cerr << "shardscope: error: this shardscope was built without the GUI "
                     "(SHARDSCOPE_GUI=OFF), which PNG output needs: write "
                  << (series ? std::string("--format svg")
                             : std::filesystem::path(o.output).replace_extension(".svg").string())
                  << " instead, or install libimgui-dev, libglfw3-dev and libgl-dev and rebuild\n";
        return kExitUsage;
    }
#endif
    auto source = load_source(o.file);
    if (!source) return kExitUsage;
    const auto checked = frontend::check_text(o.file, source->text());
    const bool color = stderr_color();
    if (checked.plan.errors() > 0) {
        for (const auto& d : checked.plan.diagnostics)
            if (d.severity != Severity::Note) std::cerr << format_diagnostic(*source, d, color);
        std::cerr << "shardscope: error: " << o.file << " has " << checked.plan.errors()
                  << (checked.plan.errors() == 1 ? " error" : " errors")
                  << " (shardscope check explains them); nothing drawn\n";
        return kExitInputErrors;
    }
    std::string error;
    auto sel = render::resolve_selection(checked.plan, o.statement, o.tensor, error);
    if (!sel) {
        std::cerr << "shardscope: error: " << o.file << ": " << error << "\n";
        return kExitUsage;
    }
    sel->step = o.step;
    if (*view == render::View::Steps) {
        const auto& s = checked.plan.statements.at(static_cast<std::size_t>(sel->statement));
        const int frames = static_cast<int>(render::step_frames(checked.plan, s).size());
        if (o.step < 0 || o.step >= frames) {
            std::cerr << "shardscope: error: statement " << sel->statement + 1 << " has " << frames
                      << (frames == 1 ? " frame" : " frames") << ": --step takes 0 to "
                      << frames - 1 << "\n";
            return kExitUsage;
        }
    }
    if (o.substep > 0) {
        const auto& s = checked.plan.statements.at(static_cast<std::size_t>(sel->statement));
        const auto frames = render::step_frames(checked.plan, s);
        const auto& f = frames.at(static_cast<std::size_t>(o.step));
        const int subs = *view != render::View::Steps || !f.collective
                             ? 0
                             : static_cast<int>(render::collective_schedule(
                                                    checked.plan.mesh,
                                                    s.steps.at(static_cast<std::size_t>(f.step)))
                                                    .steps.size());
        if (o.substep > subs) {
            std::cerr << "shardscope: error: --message " << o.substep
                      << (subs == 0 ? " needs the steps view's frame of an all-gather, "
                                      "reduce-scatter, all-reduce, all-to-all or permute"
                                    : " is out of range: the collective has " +
                                          std::to_string(subs) + " message steps")
                      << "\n";
            return kExitUsage;
        }
        sel->substep = o.substep;
    }
    sel->row_dim = o.rows;
    sel->col_dim = o.cols;
    if (*view == render::View::Tiling) {
        const auto* t = render::selected_layout(checked.plan, *sel);
        const int rank = t ? static_cast<int>(t->indices.size()) : 0;
        for (int d : {o.rows, o.cols})
            if (d >= rank) {
                std::cerr << "shardscope: error: " << (t ? t->tensor : std::string("the tensor"))
                          << " has " << rank << (rank == 1 ? " dimension" : " dimensions")
                          << ": --rows and --cols take 0 to " << rank - 1 << "\n";
                return kExitUsage;
            }
        if ((o.rows >= 0) != (o.cols >= 0) || (o.rows >= 0 && o.rows == o.cols)) {
            std::cerr << "shardscope: error: --rows and --cols name two different dimensions, "
                         "both or neither\n";
            return kExitUsage;
        }
    }
    std::string bytes, problem;
    if (o.animate || series) {
        if (o.animate) {
            bytes = render::render_steps_animation_svg(checked.plan, sel->statement, o.seconds,
                                                       &problem, o.scale, o.tight);
            return write_drawing(bytes, problem, "steps", o.output, "nothing written");
        }
        const auto& s = checked.plan.statements.at(static_cast<std::size_t>(sel->statement));
        const auto shots = render::step_sequence(checked.plan, s);
        int number = 0;
        for (const auto& shot : shots) {
            auto one = *sel;
            one.step = shot.frame;
            one.substep = shot.substep;
            char name[32];
            std::snprintf(name, sizeof name, "frame-%03d.%s", ++number, svg ? "svg" : "png");
            const std::string path = (std::filesystem::path(o.frames) / name).string();
            if (const int rc = draw_bytes(checked.plan, *view, one, svg, o, path, bytes, problem);
                rc != kExitOk)
                return rc;
            // The folder is made once the first frame is drawn: a series that cannot be drawn
            // (PNG without a display) leaves no new folders behind.
            if (number == 1 && problem.empty()) {
                std::error_code ec;
                std::filesystem::create_directories(o.frames, ec);
                if (ec || !std::filesystem::is_directory(o.frames)) {
                    std::cerr << "shardscope: error: cannot make the folder " << o.frames << "\n";
                    return kExitUsage;
                }
            }
            if (const int rc = write_drawing(bytes, problem, "steps", path, "stopped at " + path);
                rc != kExitOk)
                return rc;
            // What each file shows, one line each (the frame and the collective's message).
            std::cout << path << "\tframe " << shot.frame;
            if (shot.substep > 0) std::cout << " message " << shot.substep;
            std::cout << "\n";
        }
        return kExitOk;
    }
    if (const int rc = draw_bytes(checked.plan, *view, *sel, svg, o, o.output, bytes, problem);
        rc != kExitOk)
        return rc;
    return write_drawing(bytes, problem, o.view, o.output, "nothing written");
}

} // namespace

void add_render_command(CLI::App& app, int& exit_code) {
    auto opts = std::make_shared<RenderOptions>();
    auto* cmd = app.add_subcommand(
        "render", "Draw the tiling, mesh or plan of a program as SVG or PNG (no window)");
    cmd->add_option("file", opts->file, "A notation file (- for stdin)")->required();
    cmd->add_option("-o,--output", opts->output,
                    "OUT.svg or OUT.png (required unless --frames is given)");
    cmd->add_option("--view", opts->view, "tiling (default), mesh, plan or steps");
    cmd->add_option("--statement", opts->statement,
                    "The statement to draw, 1-based (default: the first, or the first with "
                    "--tensor)")
        ->check(CLI::Range(1, 1 << 30));
    cmd->add_option("--tensor", opts->tensor,
                    "The tensor to tile (default: the statement's result)")
        ->check([](const std::string& s) { return s.empty() ? "a tensor name, not ''" : ""; });
    auto* step = cmd->add_option("--step", opts->step, "steps view: the frame (0: the inputs)");
    cmd->add_option("--message", opts->substep,
                    "steps view, a collective's frame: its K-th message step (who sends which "
                    "block to whom)")
        ->check(CLI::Range(1, 1 << 20));
    cmd->add_flag("--animate", opts->animate,
                  "steps view: the statement's whole step-through (every frame, and each "
                  "collective's message steps) as one animated SVG, looping");
    cmd->add_option("--seconds", opts->seconds, "--animate: seconds per picture (default 1.5)")
        ->check(CLI::Range(0.1, 60.0));
    cmd->add_option("--frames", opts->frames,
                    "steps view: write the step-through as a numbered series DIR/frame-001.png, "
                    "... (the pictures --animate plays, in order; one line each on stdout: the "
                    "file, its frame and message step)");
    cmd->add_option("--format", opts->format, "--frames: png (default) or svg");
    // -1 is "not given" inside: a negative value must not pass for that.
    const auto dimension = [](const std::string& v) -> std::string {
        int d = -1;
        const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), d);
        if (ec != std::errc() || end != v.data() + v.size() || d < 0)
            return "expected a dimension: 0, 1, ... (0-based), not '" + v + "'";
        return "";
    };
    cmd->add_option("--rows", opts->rows, "tiling: the dimension drawn as rows (0-based)")
        ->check(dimension);
    cmd->add_option("--cols", opts->cols, "tiling: the dimension drawn as columns (0-based)")
        ->check(dimension);
    cmd->add_option("--scale", opts->scale,
                    "Draw the picture this much larger, text included (0.25 to 8; default 1)")
        ->check(CLI::Range(0.25, 8.0));
    cmd->add_flag("--tight", opts->tight, "Crop the picture to what is drawn (8 px margin)");
    cmd->callback([opts, step, &exit_code] {
        opts->step_given = step->count() > 0;
        exit_code = run_render(*opts);
    });
}

} // namespace shardscope::app
