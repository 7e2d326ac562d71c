// The desktop window's loop: GLFW + OpenGL 3 + Dear ImGui around render::MainView. The app
// owns the document (text, checked plan) and the background verification.
#include "app/gui_app.hpp"
#include "app/check_formats.hpp"
#include "app/inputs.hpp"
#include "frontend/document.hpp"
#include "frontend/mesh_spec.hpp"

#include "exec/run.hpp"
#include "render/course.hpp"
#include "render/gui/offscreen.hpp"
#include "render/gui/solid_fill.hpp"
#include "render/gui/view.hpp"
#include "semantics/cost.hpp"
#include "semantics/grad.hpp"
#include "semantics/search.hpp"

#define GLFW_INCLUDE_NONE
#include <GL/gl.h>
#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <thread>

namespace shardscope::app {

namespace {

namespace fs = std::filesystem;

/// The samples: their files in course order (the folder's COURSE index, render/course.hpp)
/// and the index's titles.
struct Samples {
    std::vector<std::string> files;
    std::vector<std::string> titles;
};

/// The samples directory: next to the working directory, or the source tree's.
Samples find_samples() {
    Samples out;
    for (const fs::path& dir : {fs::path("samples"), fs::path(SHARDSCOPE_SAMPLES_DIR)}) {
        std::error_code ec;
        if (!fs::is_directory(dir, ec)) continue;
        for (const auto& e : fs::directory_iterator(dir, ec))
            if (e.path().extension() == ".ein") out.files.push_back(e.path().string());
        if (out.files.empty()) continue;
        std::string index;
        render::Course course;
        if (read_whole_file((dir / "COURSE").string(), index).empty()) {
            course = render::parse_course(index, (dir / "COURSE").string());
            for (const auto& e : course.errors)
                std::cerr << "shardscope: warning: " << e << "\n";
        }
        out.files = render::course_order(out.files, course);
        for (const auto& f : out.files)
            out.titles.push_back(render::course_title(course, f));
        break;
    }
    return out;
}

/// Writes a picture of the plan as `render` does (SVG, or PNG offscreen); "" on success, else
/// why not. The caller makes its window's GL context current again.
std::string export_picture(const semantics::Plan& plan, render::View view, render::Selection sel,
                           const std::string& path) {
    const auto ends = [&](const char* ext) {
        const std::string e = ext;
        return path.size() >= e.size() && path.compare(path.size() - e.size(), e.size(), e) == 0;
    };
    if (!ends(".svg") && !ends(".png"))
        return "cannot export " + path + ": the file must end in .svg or .png";
    if (plan.statements.empty()) return "cannot export: the program has no statement to draw";
    sel.zoom = 1; // the whole picture, at its natural size
    sel.pan = {0, 0};
    sel.highlight = -1;
    std::string bytes, problem, error;
    if (ends(".svg")) {
        bytes = render::render_svg(plan, view, sel, &problem);
    } else {
        const render::Vec2 size = render::picture_size(plan, view, sel);
        const auto status = render::render_png(
            static_cast<int>(size.x), static_cast<int>(size.y),
            [&](render::Canvas& c) {
                render::draw_picture(c, {0, 0, size.x, size.y}, plan, view, sel, 14);
                problem = c.problem();
            },
            bytes, error);
        if (status != render::GlStatus::Ok) return "cannot draw the PNG: " + error;
    }
    if (!problem.empty()) return "cannot export the picture: " + problem;
    errno = 0;
    if (!write_file_atomically(path, bytes))
        return "cannot write " + path + ": " + std::strerror(errno ? errno : EIO);
    return {};
}

/// The GLFW key code of a --script key ("ctrl+s", "pagedown", "f11"); -1 for none.
int script_key(const std::string& name) {
    const std::string k = name.rfind("ctrl+", 0) == 0 ? name.substr(5) : name;
    if (k.size() == 1) {
        const char c = k[0];
        if (c >= 'a' && c <= 'z') return GLFW_KEY_A + (c - 'a');
        if (c == '=') return GLFW_KEY_EQUAL;
        if (c == '-') return GLFW_KEY_MINUS;
        if (c == '0') return GLFW_KEY_0;
    }
    if (k == "pagedown") return GLFW_KEY_PAGE_DOWN;
    if (k == "pageup") return GLFW_KEY_PAGE_UP;
    if (k == "left") return GLFW_KEY_LEFT;
    if (k == "right") return GLFW_KEY_RIGHT;
    if (k == "f11") return GLFW_KEY_F11;
    return -1;
}

/// The steps of --script, split at ';'.
std::vector<std::string> split_script(const std::string& s) {
    std::vector<std::string> out;
    std::size_t from = 0;
    while (from <= s.size() && !s.empty()) {
        const auto to = s.find(';', from);
        out.push_back(s.substr(from, to == std::string::npos ? std::string::npos : to - from));
        if (to == std::string::npos) break;
        from = to + 1;
    }
    return out;
}

const char* kNewProgram = "# A new program: a 2x2 mesh, a matrix cut over both axes.\n"
                          "mesh 2x2\n"
                          "dim a=8 b=8\n"
                          "W_{a_0 b_1} = X_{a_0 b_1}\n";

} // namespace

/// Why a verify run could not start: the errors of the program as checked for it (small
/// sizes, `dim` ignored, as `exec --small`), each with its line, code and fix. The editor's
/// diagnostics are those of the program as written, which may have none.
std::string verify_errors(const frontend::CheckedText& checked) {
    std::string out = "nothing ran: at the small sizes of a verify run (dim declarations "
                      "ignored, as exec --small) the program has errors:";
    int shown = 0, errors = 0;
    for (const auto& d : checked.plan.diagnostics) {
        if (d.severity != Severity::Error) continue;
        if (++errors > 5) continue;
        ++shown;
        out += "\nline " + std::to_string(d.range.line) + ": " + d.message + " [" + d.code + "]";
        if (!d.fix.empty()) out += "\n    fix: " + d.fix;
    }
    if (errors > shown) out += "\n… and " + std::to_string(errors - shown) + " more";
    if (errors == 0) out += "\n(no error was reported; the syntax did not parse)";
    return out;
}

namespace {

/// The verification running in the background and its state.
class Verifier {
public:
    ~Verifier() { join(); }
    void start(const std::string& name, const std::string& text) {
        join();
        {
            std::lock_guard lock(mu_);
            state_ = {};
            state_.running = true;
        }
        done_ = 0;
        total_ = 0;
        thread_ = std::thread([this, name, text] { run(name, text); });
    }
    render::VerifyState snapshot() {
        std::lock_guard lock(mu_);
        render::VerifyState s = state_;
        s.done = done_;
        if (total_) s.total = total_;
        return s;
    }
    bool running() {
        std::lock_guard lock(mu_);
        return state_.running;
    }

private:
    void join() {
        if (thread_.joinable()) thread_.join();
    }
    void run(const std::string& name, const std::string& text) {
        const auto t0 = std::chrono::steady_clock::now();
        render::VerifyState s;
        semantics::CheckOptions co;
        co.small_defaults = true;
        co.ignore_dims = true;
        const auto checked = frontend::check_text(name, text, co);
        if (!checked.syntax_ok() || checked.plan.errors() > 0) {
            s.error = verify_errors(checked);
        } else if (checked.plan.mesh.device_count() > 4096) {
            s.error = "the mesh has more than 4096 devices; the sim backend runs at most 4096";
        } else {
            exec::ExecOptions eo;
            eo.progress = [this](std::size_t done, std::size_t total) {
                done_ = done;
                total_ = total;
            };
            total_ = checked.plan.statements.size();
            try {
                const auto report = exec::execute(checked.parsed.program, checked.plan, eo);
                s.setting = "sim backend, " + std::to_string(report.ranks) + " ranks, " +
                            report.dtype + ", " + report.data + " data, small sizes";
                for (const auto& r : report.statements) {
                    char buf[160];
                    if (r.exact)
                        std::snprintf(buf, sizeof buf, "exact: max abs error %.3g",
                                      r.max_abs_error);
                    else
                        std::snprintf(buf, sizeof buf,
                                      "rel error %.3g (tolerance %.0e), replicas %.3g",
                                      r.max_rel_error, r.tolerance, r.replica_error);
                    s.rows.push_back({r.line, r.source, r.pass, buf});
                }
            } catch (const std::exception& e) {
                s.error = e.what();
            }
        }
        s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        s.running = false;
        s.finished = true;
        std::lock_guard lock(mu_);
        s.total = total_;
        state_ = s;
    }

    std::mutex mu_;
    render::VerifyState state_;
    std::atomic<std::size_t> done_{0}, total_{0};
    std::thread thread_;
};

/// The strategy search of the Compare panel, running in the background, and its state.
class Searcher {
public:
    ~Searcher() { stop(); }
    /// Searches `text`'s mesh axes over `devices` (a search already running is stopped).
    void start(const std::string& name, const std::string& text, std::int64_t devices) {
        stop();
        {
            std::lock_guard lock(mu_);
            state_ = {};
            state_.running = true;
            state_.devices = devices;
        }
        checked_ = 0;
        total_ = 0;
        cancel_ = false;
        thread_ = std::thread([this, name, text, devices] { run(name, text, devices); });
    }
    /// Stops the search (the window closes, another search starts).
    void stop() {
        cancel_ = true;
        if (thread_.joinable()) thread_.join();
    }
    render::CompareState snapshot() {
        std::lock_guard lock(mu_);
        render::CompareState s = state_;
        if (s.running) {
            s.checked = checked_;
            s.total = total_;
        }
        return s;
    }
    bool running() {
        std::lock_guard lock(mu_);
        return state_.running;
    }
    /// The plan shown is the file re-checked at this candidate's mesh ("": as written).
    void set_shown(const std::string& mesh, int rank) {
        std::lock_guard lock(mu_);
        state_.shown_mesh = mesh;
        state_.shown_rank = rank;
    }

private:
    void run(const std::string& name, const std::string& text, std::int64_t devices) {
        const auto t0 = std::chrono::steady_clock::now();
        render::CompareState s;
        s.devices = devices;
        const auto checked = frontend::check_text(name, text);
        const auto* hw = semantics::find_hardware(checked.plan.hardware);
        s.hardware = checked.plan.hardware;
        s.hbm_bytes = hw ? hw->hbm_bytes : 0;
        if (!checked.syntax_ok()) {
            s.error = "the file has syntax errors: fix them (the editor shows where) and search "
                      "again";
        } else {
            semantics::SearchOptions so;
            so.devices = devices;
            so.threads = 1; // one core for the search, the other for the window
            so.progress = [this](std::size_t done, std::size_t total) {
                checked_ = done;
                total_ = total;
                return !cancel_.load();
            };
            try {
                const auto r = semantics::search(checked.written(), so); // open markers kept
                for (const auto& p : r.problems) {
                    s.error += (s.error.empty() ? "" : "\n") +
                               (p.range.line ? "line " + std::to_string(p.range.line) + ": "
                                             : std::string()) +
                               p.message + (p.fix.empty() ? "" : " (" + p.fix + ")");
                }
                if (r.problems.empty()) {
                    std::string axes;
                    for (const auto& a : r.searched_axes)
                        axes += (axes.empty() ? "" : ", ") + a;
                    std::size_t pruned = 0;
                    for (const auto& p : r.pruned)
                        pruned += p.equivalents;
                    s.summary = std::to_string(devices) + " devices over " + axes + ": " +
                                std::to_string(r.factorizations) + " meshes, " +
                                std::to_string(r.checked) + " checked, " +
                                std::to_string(r.ranked.size()) + " kept, " +
                                std::to_string(pruned) + " pruned (errors or uneven shards)" +
                                (r.interrupted ? ", interrupted" : "");
                    s.rows = render::compare_rows(r, s.hbm_bytes, 10);
                    s.checked = r.checked;
                    s.total = r.checked;
                }
            } catch (const std::exception& e) {
                s.error = std::string("the search failed: ") + e.what();
            }
        }
        s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        s.running = false;
        s.finished = true;
        std::lock_guard lock(mu_);
        state_ = std::move(s);
    }

    std::mutex mu_;
    render::CompareState state_;
    std::atomic<std::size_t> checked_{0}, total_{0};
    std::atomic<bool> cancel_{false};
    std::thread thread_;
};

/// `gui --compare A B...`: the files checked and ranked as `check --compare` ranks them, as
/// the Compare panel's rows (rank order, files with errors last); false when one cannot be
/// read (said on stderr).
bool compare_files(const std::vector<std::string>& paths, std::vector<render::CompareRow>& rows,
                   std::string& note) {
    std::vector<ComparedFile> files;
    for (const auto& path : paths) {
        auto source = load_source(path);
        if (!source) return false;
        const auto checked =
            frontend::check_source(std::make_shared<const SourceFile>(std::move(*source)));
        files.push_back(compared_file(path, checked.parsed.program, checked.plan));
    }
    const auto c = compare(std::move(files));
    auto row = [](const ComparedFile& f) {
        render::CompareRow r;
        r.rank = f.rank;
        r.file = f.path;
        r.errors = f.errors;
        r.mesh = f.candidate.mesh_text;
        r.step_s = f.totals.step_s;
        r.compute_s = f.totals.compute_s;
        r.exposed_s = f.totals.exposed_s;
        r.comm_s = f.totals.comm_s;
        r.memory_bytes = f.totals.memory.total();
        r.fits = f.totals.fits;
        r.why = f.why;
        return r;
    };
    for (auto i : c.ranking)
        rows.push_back(row(c.files[i]));
    for (const auto& f : c.files)
        if (f.rank == 0) rows.push_back(row(f));
    if (!c.models_differ.empty())
        note = "These are different models (" + c.models_differ +
               "): the figures compare different work.";
    return true;
}

/// The open program and its last check.
struct Document {
    std::string path;    ///< "" for an untitled text (new, or a sample's copy)
    std::string copy_of; ///< the sample an untitled text was copied from
    std::string name;    ///< what the title and toolbar call it
    std::string text;
    std::string saved_text; ///< the text as last loaded or saved: dirty when it differs
    std::string status;     ///< the last save's or open's outcome, shown in the window
    bool status_error = false;
    bool dirty() const { return text != saved_text; }
    /// Loads `file` (a copy: untitled, never written back). False with the reason in status.
    bool open(const std::string& file, bool copy) {
        std::string read;
        std::string why = read_whole_file(file, read);
        if (why.empty()) why = utf8_problem(file, read);
        if (!why.empty()) {
            status = why;
            status_error = true;
            std::cerr << "shardscope: error: " << why << "\n";
            return false;
        }
        // A UTF-8 byte order mark is not part of the program.
        if (read.rfind("\xEF\xBB\xBF", 0) == 0) read.erase(0, 3);
        const std::string base = fs::path(file).filename().string();
        path = copy ? "" : file;
        copy_of = copy ? file : "";
        name = copy ? "untitled (copy of " + base + ")" : base;
        text = std::move(read);
        saved_text = text;
        status = copy ? "a copy: Save asks where to write it" : "";
        status_error = false;
        return true;
    }
    /// Writes the text to `to`; on success it becomes the open file.
    bool save(const std::string& to) {
        std::error_code ec;
        if (fs::is_directory(to, ec)) {
            status = "cannot save: " + to + " is a directory";
        } else if (errno = 0; !write_file_atomically(to, text)) {
            status = "cannot save " + to + ": " + std::strerror(errno ? errno : EIO);
        } else {
            path = to;
            copy_of.clear();
            name = fs::path(to).filename().string();
            saved_text = text;
            status = "saved " + to;
            status_error = false;
            return true;
        }
        status_error = true;
        std::cerr << "shardscope: error: " << status << "\n";
        return false;
    }
    std::string title() const { return name + (dirty() ? " *" : "") + " — shardscope"; }
    frontend::CheckedText checked;
    semantics::Plan shown;           ///< the plan drawn: the last one whose text parsed
    semantics::ProgramTotals totals; ///< shown's program totals (the totals panel)
    double check_ms = 0;
    semantics::CheckCache cache; ///< an edit re-plans only the statements it changes
    /// The Compare panel's candidate shown: the text checked at this mesh ("dp=8,tp=8"; "":
    /// the mesh as written)
    std::string mesh;
    void recheck() {
        const auto t0 = std::chrono::steady_clock::now();
        semantics::CheckOptions co;
        if (!mesh.empty()) co.mesh = frontend::parse_mesh_spec(mesh);
        checked = frontend::check_text(path.empty() ? "untitled.ein" : path, text, co, &cache);
        if (checked.syntax_ok()) {
            shown = checked.plan;
            totals = semantics::step_totals(checked.parsed.program, shown, co);
        }
        check_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                       .count();
    }
};

} // namespace

int run_gui(const GuiOptions& o) {
    Document doc;
    const auto samples = find_samples();
    std::vector<render::CompareRow> compared;
    std::string compared_note;
    if (o.compare.size() == 1) {
        std::cerr << "shardscope: error: --compare needs at least two files to compare, got 1: "
                     "shardscope gui --compare a.ein b.ein\n";
        return kExitUsage;
    }
    if (!o.compare.empty() && !compare_files(o.compare, compared, compared_note)) return kExitUsage;
    const std::string first_file =
        o.file.empty() && !o.compare.empty() ? o.compare.front() : o.file;
    if (o.file == "-") {
        auto source = load_source(o.file);
        if (!source) return kExitUsage;
        doc.name = "untitled";
        doc.text = source->text();
        doc.saved_text = "";
    } else if (!first_file.empty()) {
        if (!doc.open(first_file, false)) return kExitUsage;
    } else if (o.teaching && !samples.files.empty()) {
        // The course's first sample, as an untitled copy (never written back).
        doc.open(samples.files.front(), true);
    } else {
        doc.name = "untitled";
        doc.text = kNewProgram;
        doc.saved_text = kNewProgram;
    }
    doc.recheck();
    const auto script = split_script(o.script);
    std::size_t script_at = 0;
    bool script_key_down = false;

    render::GlStatus status;
    std::string error;
    GLFWwindow* window =
        render::create_gl_window(o.width, o.height, "shardscope", true, status, error);
    if (!window) {
        if (status == render::GlStatus::NoDisplay)
            std::cerr << "shardscope: error: the window needs a display, and there is " << error
                      << ": run it on a desktop, or under a virtual display (xvfb-run -a "
                         "shardscope gui ...); 'shardscope render FILE -o OUT.svg' draws the "
                         "pictures without one\n";
        else
            std::cerr << "shardscope: error: " << error << "\n";
        return kExitUsage;
    }
    glfwSwapInterval(o.screenshot.empty() ? 1 : 0);
    IMGUI_CHECKVERSION();
    ImGui::CreateContext();
    ImGuiIO& io = ImGui::GetIO();
    io.IniFilename = nullptr;
    // High DPI: the display's content scale (or --ui-scale) sizes the fonts, the style and the
    // pictures' text.
    float scripted_scale = 0; ///< --script's ui-scale:S, as if the display's scale changed
    auto content_scale = [&] {
        if (scripted_scale > 0) return scripted_scale;
        if (o.ui_scale > 0) return o.ui_scale;
        float xs = 1, ys = 1;
        glfwGetWindowContentScale(window, &xs, &ys);
        return std::clamp(std::max(xs, ys), 0.5f, 4.0f);
    };
    float dpi = content_scale();
    render::apply_style();
    ImGui::GetStyle().ScaleAllSizes(dpi);
    render::Fonts fonts = render::setup_fonts(17.0f * dpi);
    ImGui_ImplGlfw_InitForOpenGL(window, true);
    ImGui_ImplOpenGL3_Init("#version 330");

    render::MainView view(fonts);
    view.set_teaching(o.teaching);
    view.set_quiz(o.quiz);
    view.set_dpi_scale(dpi);
    if (!o.panel.empty())
        view.show_panel(o.panel == "plan"      ? render::MainView::Panel::Plan
                        : o.panel == "steps"   ? render::MainView::Panel::Steps
                        : o.panel == "verify"  ? render::MainView::Panel::Verify
                        : o.panel == "totals"  ? render::MainView::Panel::Totals
                        : o.panel == "compare" ? render::MainView::Panel::Compare
                                               : render::MainView::Panel::Mesh);
    if (o.statement > 0 || !o.tensor.empty()) {
        auto sel = render::resolve_selection(doc.shown, o.statement, o.tensor, error);
        if (!sel) {
            std::cerr << "shardscope: error: " << error << "\n";
            ImGui_ImplOpenGL3_Shutdown();
            ImGui_ImplGlfw_Shutdown();
            ImGui::DestroyContext();
            glfwDestroyWindow(window);
            return kExitUsage;
        }
        view.selection() = *sel;
    }
    view.selection().step = o.step;
    view.fit_selection(doc.shown);

    Verifier verifier;
    if (o.verify) verifier.start(doc.path, doc.text);
    Searcher searcher;
    int rc = kExitOk;
    int frame = 0;
    // A screenshot waits for a verify run to finish (at most a minute), and then for two
    // frames drawn with its result: a table that appears fits its columns in its first frame
    // and draws them clipped there (the verify panel's PASS column).
    const auto started = std::chrono::steady_clock::now();
    bool waited = false; ///< background work was running at some frame
    int settled = 0;     ///< frames drawn since it finished
    std::string title;
    bool quit = false;
    int windowed[4] = {0, 0, o.width, o.height}; ///< position and size before full screen
    // The scripted pointer (mouse:X,Y, press, release, wheel:N): once set, it stands for the
    // real one.
    bool script_mouse = false, script_button = false;
    ImVec2 script_pos{0, 0};
    float script_wheel = 0;
    std::string dump_path;
    while (!quit) {
        // Moved to a display of another content scale: the fonts and style rebuilt at it.
        if (const float now = content_scale(); std::abs(now - dpi) > 0.01f) {
            ImGui::GetStyle().ScaleAllSizes(now / dpi);
            dpi = now;
            io.Fonts->Clear();
            fonts = render::setup_fonts(17.0f * dpi);
            ImGui_ImplOpenGL3_DestroyFontsTexture();
            ImGui_ImplOpenGL3_CreateFontsTexture();
            view.set_fonts(fonts);
            view.set_dpi_scale(dpi);
        }
        if (glfwWindowShouldClose(window)) {
            // Closing with unsaved changes asks first.
            glfwSetWindowShouldClose(window, GLFW_FALSE);
            if (!doc.dirty()) break;
            view.request_quit();
        }
        if (doc.title() != title) {
            title = doc.title();
            glfwSetWindowTitle(window, title.c_str());
        }
        const bool busy = verifier.running() || searcher.running();
        if (!o.screenshot.empty())
            glfwPollEvents();
        else
            glfwWaitEventsTimeout(busy ? 0.05 : 0.5);
        ImGui_ImplOpenGL3_NewFrame();
        ImGui_ImplGlfw_NewFrame();
        // Scripted interactions (tests): one a frame once the first frames are drawn.
        render::Script step;
        bool text_typed = false;
        if (script_key_down) {
            for (bool& k : io.KeysDown)
                k = false;
            io.KeyCtrl = false;
            script_key_down = false;
        } else if (frame >= o.frames && script_at < script.size()) {
            const std::string& a = script[script_at++];
            auto arg = [&](std::string_view prefix) {
                return a.rfind(prefix, 0) == 0 ? a.substr(prefix.size()) : std::string();
            };
            if (a.rfind("type:", 0) == 0) {
                std::string t = arg("type:");
                for (std::size_t i; (i = t.find("\\n")) != std::string::npos;)
                    t.replace(i, 2, "\n");
                doc.text += t;
                text_typed = true;
            } else if (const int key = script_key(arg("key:")); key >= 0) {
                io.KeyCtrl = arg("key:").rfind("ctrl+", 0) == 0;
                io.KeysDown[key] = true;
                script_key_down = true;
            } else if (a == "save") {
                step.save = true;
            } else if (a == "save-as") {
                step.save_as = true;
            } else if (a == "open") {
                step.open = true;
            } else if (a.rfind("pick:", 0) == 0) {
                step.pick = arg("pick:");
            } else if (a.rfind("answer:", 0) == 0) {
                step.answer = arg("answer:");
            } else if (a.rfind("search:", 0) == 0) {
                step.search_devices = std::atoll(a.c_str() + 7);
            } else if (a.rfind("candidate:", 0) == 0) {
                step.pick_candidate = std::atoi(a.c_str() + 10);
            } else if (a.rfind("compared-file:", 0) == 0) {
                step.pick_file = std::atoi(a.c_str() + 14);
            } else if (a == "wait-search") {
                // Holds the script until the search is done (at most a minute).
                if (searcher.running() &&
                    std::chrono::steady_clock::now() - started < std::chrono::seconds(60)) {
                    --script_at;
                    std::this_thread::sleep_for(std::chrono::milliseconds(20));
                }
            } else if (a == "play") {
                step.play = true;
            } else if (a == "quiz") {
                step.quiz = true;
            } else if (a.rfind("choose:", 0) == 0) {
                std::sscanf(a.c_str() + 7, "%d:%d", &step.choose_question, &step.choose_choice);
            } else if (a == "next-sample") {
                step.next_sample = true;
            } else if (a == "previous-sample") {
                step.previous_sample = true;
            } else if (a == "export") {
                step.export_view = true;
            } else if (a.rfind("export-view:", 0) == 0) {
                const std::string v = arg("export-view:");
                step.export_kind = v == "tiling" ? 0 : v == "mesh" ? 1 : v == "plan" ? 2 : 3;
            } else if (a.rfind("mouse:", 0) == 0) {
                float x = 0, y = 0;
                std::sscanf(a.c_str() + 6, "%f,%f", &x, &y);
                script_mouse = true;
                script_pos = {x, y};
            } else if (a == "press") {
                script_button = true;
            } else if (a == "release") {
                script_button = false;
            } else if (a.rfind("wheel:", 0) == 0) {
                script_wheel = std::strtof(a.c_str() + 6, nullptr);
            } else if (a.rfind("ui-scale:", 0) == 0) {
                scripted_scale = std::clamp(std::strtof(a.c_str() + 9, nullptr), 0.5f, 4.0f);
            } else if (a.rfind("dump:", 0) == 0) {
                dump_path = arg("dump:");
            } else if (a.rfind("sleep:", 0) == 0) {
                std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(a.c_str() + 6)));
            } else if (a == "discard") {
                step.confirm = 1;
            } else if (a == "cancel") {
                step.confirm = -1;
            } else if (a == "close") {
                glfwSetWindowShouldClose(window, GLFW_TRUE);
            } else if (a != "wait") {
                std::cerr << "shardscope: error: unknown script step '" << a << "'\n";
                rc = kExitUsage;
                break;
            }
        }
        if (script_mouse) {
            io.MousePos = script_pos;
            io.MouseDown[0] = script_button;
            io.MouseWheel = script_wheel;
            script_wheel = 0;
        }
        ImGui::NewFrame();
        // dump:FILE: every text the window draws this frame (widgets and pictures), for tests.
        const bool dumping = !dump_path.empty();
        if (dumping) ImGui::LogToFile(-1, dump_path.c_str());
        const auto vstate = verifier.snapshot();
        auto cstate = searcher.snapshot();
        cstate.files = compared;
        cstate.files_note = compared_note;
        render::ViewInput in;
        in.text = &doc.text;
        in.plan = &doc.shown;
        in.totals = &doc.totals;
        in.diagnostics = &doc.checked.plan.diagnostics;
        in.stale = !doc.checked.syntax_ok();
        in.check_ms = doc.check_ms;
        in.verify = &vstate;
        in.compare = &cstate;
        in.samples = &samples.files;
        in.sample_titles = &samples.titles;
        in.copy_of = doc.copy_of;
        in.file = doc.path;
        in.name = doc.name;
        in.dirty = doc.dirty();
        in.status = doc.status;
        in.status_error = doc.status_error;
        in.script = &step;
        auto act = view.frame(in);
        act.text_changed = act.text_changed || text_typed;
        if (dumping) {
            ImGui::LogFinish();
            dump_path.clear();
        }
        ImGui::Render();
        int w = 0, h = 0;
        glfwGetFramebufferSize(window, &w, &h);
        glViewport(0, 0, w, h);
        glClearColor(1, 1, 1, 1);
        glClear(GL_COLOR_BUFFER_BIT);
        render::render_draw_data(ImGui::GetDrawData());
        ++frame;
        if (!o.screenshot.empty() && frame >= o.frames && script_at >= script.size() &&
            !script_key_down) {
            waited = waited || busy;
            settled = busy ? 0 : settled + 1;
            const bool waiting =
                (busy || (waited && settled < 2)) &&
                std::chrono::steady_clock::now() - started < std::chrono::seconds(60);
            if (!waiting) {
                glFinish();
                const auto px = render::read_pixels(w, h);
                if (!write_file_atomically(o.screenshot, render::encode_png(w, h, px, true))) {
                    std::cerr << "shardscope: error: cannot write " << o.screenshot << "\n";
                    rc = kExitUsage;
                }
                break;
            }
        }
        glfwSwapBuffers(window);
        if (act.text_changed) {
            doc.recheck();
            view.fit_selection(doc.shown);
        }
        if (act.run_verify && !verifier.running()) verifier.start(doc.path, doc.text);
        if (act.run_search > 0 && !searcher.running()) {
            // A new search: the plan shown goes back to the mesh as written.
            if (!doc.mesh.empty()) {
                doc.mesh.clear();
                doc.recheck();
                view.fit_selection(doc.shown);
            }
            searcher.start(doc.path, doc.text, act.run_search);
        }
        if (!act.show_mesh.empty() || act.show_written) {
            // A candidate of the Compare panel: the file re-checked at its mesh (or back).
            doc.mesh = act.show_written ? std::string() : act.show_mesh;
            searcher.set_shown(doc.mesh.empty() ? "" : act.show_mesh, act.show_rank);
            doc.recheck();
            view.fit_selection(doc.shown);
        }
        if (act.save && !doc.path.empty()) doc.save(doc.path);
        if (!act.save_as.empty()) doc.save(act.save_as);
        if (!act.open.empty() && doc.open(act.open, act.open_copy)) {
            searcher.stop();
            doc.mesh.clear();
            searcher.set_shown("", 0);
            doc.recheck();
            view.selection() = {};
            view.new_document();
            view.fit_selection(doc.shown);
        }
        if (!act.export_path.empty()) {
            // Export…: the picture through the headless renderer, as `render` writes it.
            const std::string why =
                export_picture(doc.shown, act.export_view, act.export_selection, act.export_path);
            glfwMakeContextCurrent(window);
            doc.status = why.empty() ? "exported " + act.export_path : why;
            doc.status_error = !why.empty();
            if (!why.empty()) std::cerr << "shardscope: error: " << why << "\n";
        }
        if (act.quit) quit = true;
        if (act.toggle_fullscreen) {
            // Presenter mode: the primary monitor's whole screen, and back.
            if (glfwGetWindowMonitor(window)) {
                glfwSetWindowMonitor(window, nullptr, windowed[0], windowed[1], windowed[2],
                                     windowed[3], GLFW_DONT_CARE);
            } else if (GLFWmonitor* m = glfwGetPrimaryMonitor()) {
                glfwGetWindowPos(window, &windowed[0], &windowed[1]);
                glfwGetWindowSize(window, &windowed[2], &windowed[3]);
                const GLFWvidmode* mode = glfwGetVideoMode(m);
                if (mode)
                    glfwSetWindowMonitor(window, m, 0, 0, mode->width, mode->height,
                                         mode->refreshRate);
            }
        }
    }
    if (!o.script.empty()) {
        std::cout << "title: " << doc.title() << "\nstatus: " << doc.status << "\n";
        std::cout << "statement: " << view.selection().statement + 1
                  << " step: " << view.selection().step << " message: " << view.selection().substep
                  << " scale: " << view.scale()
                  << " fullscreen: " << (glfwGetWindowMonitor(window) ? "yes" : "no") << "\n";
        std::cout << "quiz: " << view.quiz_status(doc.shown) << "\n";
        std::cout << "zoom: " << view.zoom() << " pan: " << view.pan().x << "," << view.pan().y
                  << " highlight: " << view.highlighted() << "\n";
        std::cout << "split: " << view.left_split() << " " << view.top_split()
                  << " dpi: " << view.dpi_scale() << " font: " << ImGui::GetFontSize() << "\n";
        const auto c = searcher.snapshot();
        if (c.finished) {
            std::cout << "compare: " << c.rows.size() << " candidates";
            if (!c.rows.empty()) std::cout << ", best " << c.rows.front().mesh;
            if (!c.shown_mesh.empty())
                std::cout << "; shown #" << c.shown_rank << " at " << c.shown_mesh << " ("
                          << doc.shown.mesh.device_count() << " devices)";
            if (!c.error.empty()) std::cout << "; error: " << c.error;
            std::cout << "\n";
        }
        const auto v = verifier.snapshot();
        if (!v.error.empty()) {
            std::cout << "verify: " << v.error << "\n";
        } else if (v.finished) {
            const auto passed =
                std::count_if(v.rows.begin(), v.rows.end(), [](const auto& r) { return r.pass; });
            std::cout << "verify: " << passed << " of " << v.rows.size() << " passed\n";
        }
    }
    ImGui_ImplOpenGL3_Shutdown();
    ImGui_ImplGlfw_Shutdown();
    ImGui::DestroyContext();
    glfwDestroyWindow(window);
    return rc;
}

} // namespace shardscope::app
