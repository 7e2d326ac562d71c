// Screenshot tests of the real window and of `render`'s PNG, under a display (ctest runs this
// binary through xvfb.sh, which starts Xvfb with Mesa's software OpenGL). Each case runs the
// shardscope executable and asserts on the pixels of what it saved.
#include "render/palette.hpp"

#include "pixels.hpp"

#include "tests/read_file.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace shardscope;
using render::device_color;

namespace {

namespace fs = std::filesystem;

/// A fresh output directory for one test case.
fs::path out_dir(const std::string& name) {
    const fs::path d = fs::path(SHARDSCOPE_TEST_OUT) / name;
    fs::remove_all(d);
    fs::create_directories(d);
    return d;
}

std::string quote(const std::string& s) {
    std::string out = "'";
    for (char ch : s)
        out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
    return out + "'";
}

/// Runs shardscope with `args`, stderr into `log`; returns the exit code.
int run_shardscope(const std::string& args, const fs::path& log) {
    const std::string cmd =
        quote(SHARDSCOPE_BIN) + " " + args + " >" + quote(log.string()) + " 2>&1";
    const int rc = std::system(cmd.c_str());
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

std::string sample(const std::string& name) {
    return quote(std::string(SHARDSCOPE_SAMPLES_DIR) + "/" + name);
}

/// Device colours covering at least `fraction` of the image.
int large_device_colours(const test::Image& img, std::int64_t n, double fraction) {
    int k = 0;
    for (std::int64_t d = 0; d < n; ++d)
        k += static_cast<double>(img.count(device_color(d, n))) >=
             fraction * static_cast<double>(img.pixels());
    return k;
}

} // namespace

TEST_CASE("gui: every sample opens in the window and draws its panels") {
    const auto dir = out_dir("samples");
    std::vector<fs::path> samples;
    for (const auto& e : fs::directory_iterator(SHARDSCOPE_SAMPLES_DIR))
        if (e.path().extension() == ".ein") samples.push_back(e.path());
    REQUIRE(samples.size() >= 12);
    for (const auto& s : samples) {
        CAPTURE(s);
        const auto png = dir / (s.stem().string() + ".png");
        REQUIRE(run_shardscope("gui " + quote(s.string()) + " --frames 3 --screenshot " +
                                   quote(png.string()),
                               dir / "log.txt") == 0);
        const auto img = test::load_png(png.string());
        REQUIRE(img.ok());
        CHECK(img.width == 1400);
        CHECK(img.height == 900);
        // Text, tiles, cells: far more than a blank window's few colours, and device colours.
        CHECK(img.distinct() > 50);
        // Device 0's colour as the mesh panel draws it (by coordinates on a large mesh): the
        // sample's `mesh` line read here ("mesh dp=1 tp=8 pp=8", "mesh 2x4").
        std::vector<std::int64_t> sizes;
        {
            std::istringstream text(test::read_file(s));
            for (std::string line; std::getline(text, line);)
                if (line.rfind("mesh ", 0) == 0) {
                    std::istringstream words(line.substr(5));
                    for (std::string w; words >> w && w != "devices";) {
                        if (const auto eq = w.find('='); eq != std::string::npos)
                            w = w.substr(eq + 1);
                        std::istringstream parts(w);
                        for (std::string n; std::getline(parts, n, 'x');)
                            if (!n.empty() && std::isdigit(static_cast<unsigned char>(n[0])))
                                sizes.push_back(std::stoll(n));
                    }
                    break;
                }
        }
        const long mesh_d0 =
            sizes.empty()
                ? 0
                : img.count(render::mesh_device_color(sizes, std::vector<int>(sizes.size(), 0), 0));
        CHECK(img.count(device_color(0, 2)) + img.count(device_color(0, 4)) +
                  img.count(device_color(0, 8)) + img.count(device_color(0, 16)) +
                  img.count(device_color(0, 64)) + mesh_d0 >
              500);
    }
}

TEST_CASE("gui: W_{r_0 c r'_1 d} on a 2x2 mesh shows four distinct device colours") {
    const auto dir = out_dir("tiling");
    const auto png = dir / "ss.png";
    REQUIRE(run_shardscope("gui " + sample("placements_2x2.ein") +
                               " --tensor 'W^{SS}' --frames 3 --screenshot " + quote(png.string()),
                           dir / "log.txt") == 0);
    const auto img = test::load_png(png.string());
    REQUIRE(img.ok());
    // Each device's tile in the tiling plus its cell in the mesh: well above 2% each.
    CHECK(large_device_colours(img, 4, 0.02) == 4);
    // A 1-device-per-tile tiling has one holder per tile: nothing at all in the colours of a
    // 16-mesh palette that the 4-mesh palette does not share.
    CHECK(img.count(device_color(1, 16)) == 0); // Tableau 20's light blue
}

TEST_CASE("gui: the other panels, teaching mode and a verify run draw") {
    const auto dir = out_dir("panels");
    for (const std::string panel : {"plan", "steps", "verify", "mesh"}) {
        CAPTURE(panel);
        const auto png = dir / (panel + ".png");
        REQUIRE(run_shardscope("gui " + sample("sequence_parallel.ein") + " --panel " + panel +
                                   (panel == "verify" ? " --verify" : "") +
                                   " --step 1 --frames 3 --screenshot " + quote(png.string()),
                               dir / "log.txt") == 0);
        const auto img = test::load_png(png.string());
        REQUIRE(img.ok());
        CHECK(img.distinct() > 50);
        if (panel == "plan") // the timeline's all-gather and reduce-scatter blocks
            CHECK(img.count(render::step_color(semantics::StepKind::ReduceScatter)) > 1000);
        if (panel == "steps") // frame 1 is the all-gather: its arrow
            CHECK(img.count(render::step_color(semantics::StepKind::AllGather)) > 20);
        if (panel == "verify") // the PASS column's green
            CHECK(img.count({41, 161, 61, 255}) > 10);
    }
    const auto png = dir / "teaching.png";
    REQUIRE(run_shardscope("gui --teaching " + sample("placements_2x2.ein") +
                               " --frames 3 --screenshot " + quote(png.string()),
                           dir / "log.txt") == 0);
    CHECK(test::load_png(png.string()).distinct() > 50);
}

TEST_CASE("render: PNG pictures of the tiling, mesh and plan") {
    const auto dir = out_dir("render");
    const auto tiling = dir / "tiling.png";
    REQUIRE(run_shardscope("render " + sample("placements_2x2.ein") + " --tensor W^SS -o " +
                               quote(tiling.string()),
                           dir / "log.txt") == 0);
    auto img = test::load_png(tiling.string());
    REQUIRE(img.ok());
    CHECK(large_device_colours(img, 4, 0.05) == 4);

    const auto partial = dir / "partial.png";
    REQUIRE(run_shardscope("render " + sample("placements_2x2.ein") + " --statement 4 -o " +
                               quote(partial.string()),
                           dir / "log.txt") == 0);
    img = test::load_png(partial.string());
    REQUIRE(img.ok());
    // Hatching over the tiles: many dark pixels inside them.
    CHECK(img.distinct() > 100);

    const auto mesh = dir / "mesh.png";
    REQUIRE(run_shardscope("render " + sample("fsdp_tp.ein") + " --view mesh -o " +
                               quote(mesh.string()),
                           dir / "log.txt") == 0);
    img = test::load_png(mesh.string());
    REQUIRE(img.ok());
    CHECK(large_device_colours(img, 8, 0.005) == 8);

    const auto plan = dir / "plan.png";
    REQUIRE(run_shardscope("render " + sample("sequence_parallel.ein") + " --view plan -o " +
                               quote(plan.string()),
                           dir / "log.txt") == 0);
    img = test::load_png(plan.string());
    REQUIRE(img.ok());
    CHECK(img.count(render::step_color(semantics::StepKind::AllGather)) > 1000);
    CHECK(img.count(render::step_color(semantics::StepKind::ReduceScatter)) > 1000);
}

TEST_CASE("issue 16: PNG pictures that do not mislead") {
    const auto dir = out_dir("issue16");
    // Cfull is replicated: one tile in the replica tint, no device colour but the legend's.
    const auto cfull = dir / "cfull.png";
    REQUIRE(run_shardscope("render " + sample("bracket_form.ein") + " --tensor Cfull -o " +
                               quote(cfull.string()),
                           dir / "log.txt") == 0);
    auto img = test::load_png(cfull.string());
    REQUIRE(img.ok());
    CHECK(img.count(render::replicated_color(1)) > img.pixels() / 3);
    for (std::int64_t d = 0; d < 4; ++d)
        CHECK(img.count(device_color(d, 4)) < 400); // a legend swatch, not a band
    // Cscat is a real split: four device colours over large areas.
    const auto cscat = dir / "cscat.png";
    REQUIRE(run_shardscope("render " + sample("bracket_form.ein") + " --tensor Cscat -o " +
                               quote(cscat.string()),
                           dir / "log.txt") == 0);
    CHECK(large_device_colours(test::load_png(cscat.string()), 4, 0.05) == 4);

    // h drawn as rows b, columns s: two panels, eight device colours, each a large tile.
    const fs::path h = dir / "h.ein";
    {
        std::ofstream f(h);
        f << "mesh dp=2 tp=2 sp=2\ndim b=8 s=4096 d=64 f=8192\n"
             "h_{b_{dp} s_{sp} f_{tp}} = x_{b_{dp} s_{sp} d} W_{d f_{tp}}\n";
    }
    const auto hp = dir / "h.png";
    REQUIRE(run_shardscope("render " + quote(h.string()) + " --rows 0 --cols 1 -o " +
                               quote(hp.string()),
                           dir / "log.txt") == 0);
    img = test::load_png(hp.string());
    REQUIRE(img.ok());
    CHECK(large_device_colours(img, 8, 0.03) == 8);
}

TEST_CASE("issue 16: PNG at --scale 2 and --tight") {
    const auto dir = out_dir("scale16");
    const auto one = dir / "one.png", two = dir / "two.png", tight = dir / "tight.png";
    for (const auto& [png, args] :
         {std::pair{one, std::string()}, std::pair{two, std::string(" --scale 2")},
          std::pair{tight, std::string(" --tight")}})
        REQUIRE(run_shardscope("render " + sample("placements_2x2.ein") + " --view mesh" + args +
                                   " -o " + quote(png.string()),
                               dir / "log.txt") == 0);
    const auto a = test::load_png(one.string()), b = test::load_png(two.string()),
               t = test::load_png(tight.string());
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    REQUIRE(t.ok());
    CHECK(b.width == 2 * a.width);
    CHECK(b.height == 2 * a.height);
    // Every device colour covers about four times the pixels.
    for (std::int64_t d = 0; d < 4; ++d) {
        const double ratio = static_cast<double>(b.count(device_color(d, 4))) /
                             static_cast<double>(a.count(device_color(d, 4)));
        CHECK(ratio == doctest::Approx(4).epsilon(0.1));
    }
    // Tight: the mesh's cells and title only, the cells' pixels all kept.
    CHECK(t.width < a.width / 2);
    CHECK(t.height < a.height);
    for (std::int64_t d = 0; d < 4; ++d)
        CHECK(t.count(device_color(d, 4)) == a.count(device_color(d, 4)));
}

TEST_CASE("issue 16: teaching mode's step-through at 1280x720 draws large tiles") {
    const auto dir = out_dir("teaching16");
    const auto png = dir / "steps.png";
    REQUIRE(run_shardscope("gui --teaching " + sample("sequence_parallel.ein") +
                               " --statement 2 --panel steps --step 1 --size 1280x720 "
                               "--frames 3 --screenshot " +
                               quote(png.string()),
                           dir / "log.txt") == 0);
    const auto img = test::load_png(png.string());
    REQUIRE(img.ok());
    CHECK(img.width == 1280);
    CHECK(img.height == 720);
    // Before the all-gather: d0's and d1's halves of x, each at least 200x150 pixels (a
    // hover tooltip may cover part of one); after: one replicated tile.
    CHECK(img.count(device_color(0, 2)) > 200 * 150);
    CHECK(img.count(device_color(1, 2)) > 200 * 100);
    CHECK(img.count(render::replicated_color(1)) > 200 * 150);
}

TEST_CASE("gui: work is never lost (scripted interactions, then the file system)") {
    const auto dir = out_dir("work");
    const fs::path mine = dir / "mine.ein";
    const std::string original = test::read_file(fs::path(SHARDSCOPE_SAMPLES_DIR) / "ddp.ein");
    const fs::path sample_path = fs::path(SHARDSCOPE_SAMPLES_DIR) / "dot_product.ein";
    const std::string sample_text = test::read_file(sample_path);
    auto reset = [&] { std::ofstream(mine, std::ios::binary) << original; };
    // Runs the window on `file` with a script; returns its stdout (title and status).
    auto gui = [&](const std::string& file, const std::string& script, int* rc = nullptr) {
        const auto png = dir / "ss.png";
        const int code = run_shardscope("gui " + file + " --frames 2 --script " + quote(script) +
                                            " --screenshot " + quote(png.string()),
                                        dir / "log.txt");
        if (rc) *rc = code;
        CHECK(code == 0);
        return test::read_file(dir / "log.txt");
    };
    const std::string sample = quote(sample_path.string());

    SUBCASE("Ctrl+S saves the edited file; the title has its name and a dirty marker") {
        reset();
        auto out = gui(quote(mine.string()), "type:# edited\\n;wait");
        CHECK(out.find("title: mine.ein * — shardscope") != std::string::npos);
        CHECK(test::read_file(mine) == original); // not saved without asking
        out = gui(quote(mine.string()), "type:# edited\\n;key:ctrl+s;wait");
        CHECK(out.find("title: mine.ein — shardscope") != std::string::npos);
        CHECK(out.find("status: saved") != std::string::npos);
        CHECK(test::read_file(mine) == original + "# edited\n");
    }
    SUBCASE("choosing a sample asks before replacing edited text; Cancel keeps it") {
        reset();
        auto out = gui(quote(mine.string()), "type:# mine\\n;pick:" + sample_path.string() +
                                                 ";wait;cancel;wait;key:ctrl+s;wait");
        CHECK(out.find("title: mine.ein — shardscope") != std::string::npos);
        CHECK(test::read_file(mine) == original + "# mine\n");
        // Discard: the sample opens as an untitled copy, the file keeps what was saved.
        reset();
        out = gui(quote(mine.string()),
                  "type:# lost\\n;pick:" + sample_path.string() + ";wait;discard;wait");
        CHECK(out.find("title: untitled (copy of dot_product.ein) — shardscope") !=
              std::string::npos);
        CHECK(test::read_file(mine) == original);
    }
    SUBCASE("a sample is an untitled copy: Save asks where, the sample is never written") {
        const fs::path copy = dir / "copy.ein";
        fs::remove(copy);
        const auto out =
            gui(sample, "pick:" + sample_path.string() +
                            ";wait;type:# mine\\n;save;wait;answer:" + copy.string() + ";wait");
        CHECK(out.find("title: copy.ein — shardscope") != std::string::npos);
        CHECK(test::read_file(copy) == sample_text + "# mine\n");
        CHECK(test::read_file(sample_path) == sample_text);
        // Save on the copy now writes the new file; Save as another name writes that one.
        const fs::path other = dir / "other.ein";
        fs::remove(other);
        gui(quote(copy.string()),
            "type:# more\\n;save;wait;save-as;answer:" + other.string() + ";wait");
        CHECK(test::read_file(copy) == sample_text + "# mine\n# more\n");
        CHECK(test::read_file(other) == sample_text + "# mine\n# more\n");
        // Teaching mode starts on a sample: as a copy too.
        const auto t =
            gui("--teaching",
                "type:# x\\n;key:ctrl+s;wait;answer:" + (dir / "t.ein").string() + ";wait");
        CHECK(t.find("title: t.ein — shardscope") != std::string::npos);
        CHECK(fs::exists(dir / "t.ein"));
    }
    SUBCASE("a failed save is shown in the window, the text stays dirty") {
        const auto png = dir / "ss.png";
        REQUIRE(run_shardscope("gui --frames 2 --script " +
                                   quote("type:# x\\n;save-as;answer:" +
                                         (dir / "no" / "such" / "x.ein").string() + ";wait") +
                                   " --screenshot " + quote(png.string()),
                               dir / "log.txt") == 0);
        const std::string out = test::read_file(dir / "log.txt");
        CHECK(out.find("status: cannot save ") != std::string::npos);
        CHECK(out.find("No such file or directory") != std::string::npos);
        CHECK(out.find("title: untitled * — shardscope") != std::string::npos);
        CHECK_FALSE(fs::exists(dir / "no"));
        // The message in red in the toolbar (the program itself has no errors).
        const auto img = test::load_png(png.string());
        REQUIRE(img.ok());
        // Strongly red pixels (anti-aliased text) in the toolbar's first row, above the
        // pictures (whose device colours include a red).
        long red = 0;
        for (std::size_t i = 0; i + 3 < static_cast<std::size_t>(img.width) * 30 * 4; i += 4)
            red += img.rgba[i] > 180 && img.rgba[i + 1] < 110 && img.rgba[i + 2] < 110;
        CHECK(red > 100);
    }
    SUBCASE("Ctrl+O opens a path; closing with unsaved changes asks first") {
        reset();
        auto out = gui("", "key:ctrl+o;wait;answer:" + mine.string() + ";wait");
        CHECK(out.find("title: mine.ein — shardscope") != std::string::npos);
        // Close, Cancel, then Ctrl+S: the edit is saved; closing a clean window just closes.
        out = gui(quote(mine.string()), "type:# kept\\n;close;wait;cancel;wait;key:ctrl+s;wait");
        CHECK(test::read_file(mine) == original + "# kept\n");
        CHECK(out.find("title: mine.ein — shardscope") != std::string::npos);
    }
}

TEST_CASE("gui: presenter keys in teaching mode") {
    const auto dir = out_dir("presenter");
    const auto png = dir / "p.png";
    REQUIRE(run_shardscope("gui --teaching " + sample("sequence_parallel.ein") +
                               " --frames 2 --script " +
                               quote("key:pagedown;wait;key:right;wait;key:ctrl+=;wait;key:ctrl+=;"
                                     "wait;key:f11;wait;wait") +
                               " --screenshot " + quote(png.string()),
                           dir / "log.txt") == 0);
    auto out = test::read_file(dir / "log.txt");
    // PageDown: statement 2; →: its step-through's frame 1; Ctrl+= twice; F11: full screen.
    CHECK(out.find("statement: 2 step: 1 message: 0 scale: 1.2 fullscreen: yes") !=
          std::string::npos);
    const auto img = test::load_png(png.string());
    REQUIRE(img.ok());
    CHECK(img.width > 1400); // the whole screen of Xvfb, not the 1400x900 window
    // The step-through is shown: frame 1 is the all-gather's, its arrow in its colour.
    CHECK(img.count(render::step_color(semantics::StepKind::AllGather)) > 20);
    // PageUp past the first statement stays there; Ctrl+0 resets the scale; ← stops at 0.
    REQUIRE(run_shardscope("gui --teaching " + sample("sequence_parallel.ein") +
                               " --frames 2 --script " +
                               quote("key:pageup;wait;key:left;wait;key:ctrl+-;wait;key:ctrl+0") +
                               " --screenshot " + quote(png.string()),
                           dir / "log.txt") == 0);
    out = test::read_file(dir / "log.txt");
    CHECK(out.find("statement: 1 step: 0 message: 0 scale: 1 fullscreen: no") != std::string::npos);
}

TEST_CASE("gui: the step-through plays a collective's messages") {
    const auto dir = out_dir("play");
    const auto png = dir / "p.png";
    // fsdp_tp's statement 4, frame 2: an all-reduce over groups of four (6 message steps);
    // played at one step a second, 2.5 s later it shows message step 2.
    REQUIRE(run_shardscope("gui " + sample("fsdp_tp.ein") +
                               " --statement 4 --panel steps --step 2 --frames 2 --script " +
                               quote("play;sleep:1200;wait;sleep:1300;wait") + " --screenshot " +
                               quote(png.string()),
                           dir / "log.txt") == 0);
    const auto out = test::read_file(dir / "log.txt");
    CHECK(out.find("statement: 4 step: 2 message: 2 ") != std::string::npos);
}

TEST_CASE("gui: verify runs what check accepts, and says why when it cannot") {
    const auto dir = out_dir("verify16");
    const auto png = dir / "ss.png";
    auto verify = [&](const std::string& program) {
        const fs::path f = dir / "p.ein";
        std::ofstream(f) << program;
        REQUIRE(run_shardscope("gui " + quote(f.string()) +
                                   " --verify --panel verify --frames 3 --script wait "
                                   "--screenshot " +
                                   quote(png.string()),
                               dir / "log.txt") == 0);
        return test::read_file(dir / "log.txt");
    };
    // s declared, sharded over sp in one statement and over sp,tp in the next (issue 16).
    auto out = verify("mesh sp=2 tp=2\ndim b=4 s=64 d=16\ny_{b s_{sp} d} = x_{b s_{sp} d}\n"
                      "z_{b s_{sp,tp} d} = y_{b s_{sp} d}\n");
    CHECK(out.find("verify: 2 of 2 passed") != std::string::npos);
    // Undeclared, s is two device indices of different sizes: the reason, with its line.
    out = verify("mesh sp=2 tp=2\ny_{b s_{sp} d} = x_{b s_{sp} d}\n"
                 "z_{b s_{sp,tp} d} = y_{b s_{sp} d}\n");
    CHECK(out.find("verify: nothing ran") != std::string::npos);
    CHECK(out.find("line 3: index s has no declared range") != std::string::npos);
    CHECK(out.find("[S005]") != std::string::npos);
    CHECK(out.find("fix: declare its range with 'dim s=N'") != std::string::npos);
}

TEST_CASE("render: PNG without a display says so and suggests SVG or xvfb-run") {
    const auto dir = out_dir("nodisplay");
    const auto png = dir / "x.png";
    const std::string cmd = "env -u DISPLAY -u WAYLAND_DISPLAY " + quote(SHARDSCOPE_BIN) +
                            " render " + sample("placements_2x2.ein") + " -o " +
                            quote(png.string()) + " 2>" + quote((dir / "err.txt").string());
    const int status = std::system(cmd.c_str());
    CHECK(WEXITSTATUS(status) == 2);
    const std::string err = test::read_file(dir / "err.txt");
    CHECK(err.find("no display") != std::string::npos);
    CHECK(err.find(".svg") != std::string::npos);
    CHECK(err.find("xvfb-run") != std::string::npos);
    CHECK_FALSE(fs::exists(png));
}

namespace {

/// Runs the window with a script and returns its stdout (the state it prints at the end).
std::string gui_script(const fs::path& dir, const std::string& args, const std::string& script,
                       const fs::path& png) {
    const int rc = run_shardscope("gui " + args + " --frames 2 --script " + quote(script) +
                                      " --screenshot " + quote(png.string()),
                                  dir / "log.txt");
    CHECK(rc == 0);
    return test::read_file(dir / "log.txt");
}

/// The number after `key` in the window's printed state ("zoom: 1.5 pan: ...").
double state_number(const std::string& out, const std::string& key) {
    const auto at = out.find(key);
    if (at == std::string::npos) return -1e9;
    return std::strtod(out.c_str() + at + key.size(), nullptr);
}

/// The index of the choice `answer` in a quiz question's dump: its radio buttons are listed
/// after the question, one a line, in order.
int choice_index(const std::string& dump, const std::string& question,
                 const std::vector<std::string>& known) {
    const auto q = dump.find(question);
    if (q == std::string::npos) return -1;
    std::istringstream lines(dump.substr(q));
    std::string line;
    // The question, maybe wrapped over several lines: up to its '?'.
    while (std::getline(lines, line) && (line.empty() || line.back() != '?')) {
    }
    int i = 0;
    while (std::getline(lines, line) && i < 6) {
        for (const auto& k : known)
            if (line.find(k) != std::string::npos && line.find(k) + k.size() == line.size())
                return i;
        ++i;
    }
    return -1;
}

} // namespace

TEST_CASE("render: the step-through as a numbered PNG series") {
    const auto dir = out_dir("frames");
    const auto series = dir / "series";
    REQUIRE(run_shardscope("render " + sample("fsdp_tp.ein") +
                               " --statement 4 --view steps --frames " + quote(series.string()),
                           dir / "log.txt") == 0);
    const auto listing = test::read_file(dir / "log.txt");
    // One line per file: its frame and message step; the same pictures as --animate's.
    REQUIRE(run_shardscope("render " + sample("fsdp_tp.ein") +
                               " --statement 4 --view steps --animate -o " +
                               quote((dir / "a.svg").string()),
                           dir / "log2.txt") == 0);
    const auto svg = test::read_file(dir / "a.svg");
    std::size_t pictures = 0;
    for (auto at = svg.find("<animate "); at != std::string::npos;
         at = svg.find("<animate ", at + 1))
        ++pictures;
    std::size_t files = 0;
    for (const auto& e : fs::directory_iterator(series))
        files += e.path().extension() == ".png";
    CHECK(files == pictures);
    CHECK(files >= 9);
    CHECK(listing.find("frame-004.png\tframe 2 message 1\n") != std::string::npos);
    // Frame 2's first message step: the group's four devices as boxes in their colours.
    const auto img = test::load_png((series / "frame-004.png").string());
    REQUIRE(img.ok());
    CHECK(img.width == 1100);
    int colours = 0;
    for (std::int64_t d = 0; d < 8; ++d)
        colours += img.count(device_color(d, 8)) > 200;
    CHECK(colours == 4);
    // The first file is the inputs' frame, not a message step.
    const auto first = test::load_png((series / "frame-001.png").string());
    REQUIRE(first.ok());
    CHECK(first.width == 1100);
}

TEST_CASE("gui: the quiz hides the statement's collectives until answered") {
    const auto dir = out_dir("quiz");
    const auto png = dir / "q.png";
    const auto before = dir / "before.txt", after = dir / "after.txt";
    // dot_product's statement 1 needs an all-reduce over axis 0.
    auto out = gui_script(dir, "--quiz --panel plan " + sample("dot_product.ein"),
                          "dump:" + before.string() + ";wait", png);
    CHECK(out.find("quiz: hidden") != std::string::npos);
    const auto hidden = test::read_file(before);
    CHECK(hidden.find("Which collectives does statement 1 need?") != std::string::npos);
    CHECK(hidden.find("(quiz: the plan is hidden until you answer)") != std::string::npos);
    CHECK(hidden.find("expect ? (quiz)") != std::string::npos);
    CHECK(hidden.find("expect all-reduce(0)") == std::string::npos);
    CHECK(hidden.find("estimated") == std::string::npos); // no plan drawn
    const int right =
        choice_index(hidden, "Which collectives does statement 1 need?", {"all-reduce(0)"});
    const int layout = choice_index(hidden, "laid out over the mesh", {"[R]"});
    REQUIRE(right >= 0);
    REQUIRE(layout >= 0);
    // Answered (both right): revealed, the plan and the narration's expect line are back.
    out = gui_script(dir, "--quiz --panel plan " + sample("dot_product.ein"),
                     "choose:0:" + std::to_string(right) + ";choose:1:" + std::to_string(layout) +
                         ";wait;dump:" + after.string() + ";wait",
                     png);
    CHECK(out.find("quiz: revealed, 2 of 2 right") != std::string::npos);
    const auto shown = test::read_file(after);
    CHECK(shown.find("right: all-reduce(0)") != std::string::npos);
    CHECK(shown.find("expect all-reduce(0)") != std::string::npos);
    CHECK(shown.find("(quiz: the plan is hidden") == std::string::npos);
    CHECK(shown.find("Which collectives does statement 1 need?") == std::string::npos);
    // A wrong guess is said to be wrong, with the answer.
    const int wrong = right == 0 ? 1 : 0;
    out = gui_script(dir, "--quiz --panel plan " + sample("dot_product.ein"),
                     "choose:0:" + std::to_string(wrong) + ";choose:1:" + std::to_string(layout) +
                         ";wait;dump:" + after.string() + ";wait",
                     png);
    CHECK(out.find("quiz: revealed, 1 of 2 right") != std::string::npos);
    CHECK(test::read_file(after).find("; it is all-reduce(0)") != std::string::npos);
}

TEST_CASE("gui: the course order in the picker and teaching mode's next sample") {
    const auto dir = out_dir("course");
    const auto png = dir / "c.png";
    // Teaching mode starts on the course's first sample; the next is the course's second.
    auto out = gui_script(dir, "--teaching", "wait", png);
    CHECK(out.find("title: untitled (copy of placements_2x2.ein)") != std::string::npos);
    out = gui_script(dir, "--teaching", "next-sample;wait;next-sample;wait", png);
    CHECK(out.find("title: untitled (copy of reduce_scatter.ein)") != std::string::npos);
    out = gui_script(dir, "--teaching", "previous-sample;wait", png);
    CHECK(out.find("title: untitled (copy of placements_2x2.ein)") != std::string::npos);
}

TEST_CASE("gui: the tiling canvas zooms, pans and outlines the hovered device's tiles") {
    const auto dir = out_dir("canvas");
    const auto png = dir / "z.png";
    const std::string args = sample("placements_2x2.ein") + " --tensor 'W^{SS}'";
    // The plain window: where the tiles and the mesh's cells are.
    gui_script(dir, args, "wait", png);
    const auto plain = test::load_png(png.string());
    REQUIRE(plain.ok());
    long tiles_plain = 0;
    for (std::int64_t d = 0; d < 4; ++d)
        tiles_plain += plain.count(device_color(d, 4));
    // The wheel over the tiling (upper right) zooms about the pointer: larger tiles, clipped.
    auto out = gui_script(dir, args, "mouse:950,300;wheel:2;wait;wait", png);
    CHECK(state_number(out, "zoom: ") == doctest::Approx(1.5625));
    const auto zoomed = test::load_png(png.string());
    REQUIRE(zoomed.ok());
    long tiles_zoomed = 0;
    for (std::int64_t d = 0; d < 4; ++d)
        tiles_zoomed += zoomed.count(device_color(d, 4));
    CHECK(tiles_zoomed > tiles_plain * 11 / 10);
    // The reset button (the first button-blue pixels of the tiling panel's top row) restores
    // zoom 1 and no pan.
    int bx = -1, by = -1;
    for (int y = 60; y < 100 && bx < 0; ++y)
        for (int x = 540; x < 1000; ++x) {
            const auto* p = &zoomed.rgba[(static_cast<std::size_t>(y) * zoomed.width + x) * 4];
            if (std::abs(p[0] - 180) < 12 && std::abs(p[1] - 211) < 12 && p[2] > 235) {
                bx = x + 6;
                by = y + 4;
                break;
            }
        }
    REQUIRE(bx >= 0);
    out = gui_script(dir, args,
                     "mouse:950,300;wheel:2;wait;mouse:" + std::to_string(bx) + "," +
                         std::to_string(by) + ";wait;press;wait;release;wait",
                     png);
    CHECK(out.find("zoom: 1 pan: 0,0") != std::string::npos);
    // A drag pans by the pointer's movement.
    out = gui_script(dir, args, "mouse:950,300;press;mouse:900,260;release;wait", png);
    CHECK(state_number(out, "pan: ") == doctest::Approx(-50));
    CHECK(out.find("pan: -50,-40") != std::string::npos);
    // The pointer over device 3's cell in the mesh (the lower panel): its tiles outlined.
    int x3 = -1, y3 = -1;
    const auto c3 = device_color(3, 4);
    for (int y = plain.height * 2 / 3; y < plain.height && x3 < 0; ++y)
        for (int x = plain.width / 2; x < plain.width; ++x) {
            const auto* p = &plain.rgba[(static_cast<std::size_t>(y) * plain.width + x) * 4];
            if (p[0] == c3.r && p[1] == c3.g && p[2] == c3.b) {
                x3 = x + 4;
                y3 = y + 4;
                break;
            }
        }
    REQUIRE(x3 >= 0);
    const auto dump = dir / "hover.txt";
    out = gui_script(dir, args,
                     "mouse:" + std::to_string(x3) + "," + std::to_string(y3) +
                         ";wait;dump:" + dump.string() + ";wait",
                     png);
    CHECK(out.find("highlight: 3\n") != std::string::npos);
    CHECK(test::read_file(dump).find("outlined: what d3 (1,1) holds") != std::string::npos);
    // The outline is drawn: black pixels around device 3's tile in the tiling.
    const auto lit = test::load_png(png.string());
    REQUIRE(lit.ok());
    CHECK(lit.count(render::colors::kHighlight) > plain.count(render::colors::kHighlight) + 200);
}

TEST_CASE("gui: resizable panes, high-DPI scale, export of the view") {
    const auto dir = out_dir("panes");
    const auto png = dir / "p.png";
    // The bar between the left pane and the right side (at 38% of 1400 px) drags.
    auto out = gui_script(dir, sample("placements_2x2.ein"), "wait", png);
    const double left = state_number(out, "split: ");
    CHECK(left == doctest::Approx(0.38));
    const int bar = static_cast<int>(8 + (1400 - 16 - 6) * 0.38 + 3);
    out = gui_script(dir, sample("placements_2x2.ein"),
                     "mouse:" + std::to_string(bar) +
                         ",500;press;mouse:" + std::to_string(bar - 200) + ",500;release;wait",
                     png);
    CHECK(state_number(out, "split: ") == doctest::Approx(0.38 - 200.0 / 1378).epsilon(0.01));
    // --ui-scale 2 (what a display's content scale of 2 gives): fonts twice as large.
    out = gui_script(dir, "--ui-scale 2 " + sample("placements_2x2.ein"), "wait", png);
    CHECK(out.find("dpi: 2 font: 34") != std::string::npos);
    // Moved to a display of another scale while running: the fonts are rebuilt at it, and the
    // window still draws (the tiles in their colours).
    out = gui_script(dir, sample("placements_2x2.ein") + " --tensor 'W^{SS}'",
                     "wait;ui-scale:1.5;wait;wait", png);
    CHECK(out.find("dpi: 1.5 font: 25.5") != std::string::npos);
    const auto scaled = test::load_png(png.string());
    REQUIRE(scaled.ok());
    CHECK(large_device_colours(scaled, 4, 0.005) == 4);
    // Export…: the chosen view through the headless renderer, PNG and SVG.
    const auto mesh_png = dir / "mesh.png";
    out = gui_script(dir, sample("placements_2x2.ein"),
                     "export;wait;export-view:mesh;answer:" + mesh_png.string() + ";wait", png);
    CHECK(out.find("status: exported " + mesh_png.string()) != std::string::npos);
    const auto img = test::load_png(mesh_png.string());
    REQUIRE(img.ok());
    CHECK(img.width == 760); // the mesh picture's natural size, as render draws it
    CHECK(large_device_colours(img, 4, 0.01) == 4);
    const auto tiling_svg = dir / "tiling.svg";
    out = gui_script(dir, sample("placements_2x2.ein") + " --tensor 'W^{SS}'",
                     "export;wait;export-view:tiling;answer:" + tiling_svg.string() + ";wait", png);
    const auto svg = test::read_file(tiling_svg);
    CHECK(svg.rfind("<?xml", 0) == 0);
    CHECK(svg.find("</svg>") != std::string::npos);
    CHECK(svg.find("W^{SS}") != std::string::npos);
    // A bad name is said in the window, nothing written.
    out = gui_script(dir, sample("placements_2x2.ein"),
                     "export;wait;answer:" + (dir / "x.jpg").string() + ";wait", png);
    CHECK(out.find("must end in .svg or .png") != std::string::npos);
    CHECK_FALSE(fs::exists(dir / "x.jpg"));
}

TEST_CASE("gui: the totals panel shows time, traffic and the memory bar against HBM") {
    // The memory bar's colours (render/gui/panel_totals.cpp).
    const render::Color weights{52, 120, 198}, gradients{232, 142, 36}, optimizer{142, 84, 196},
        buffers{206, 186, 40}, hbm{220, 40, 40};
    const auto dir = out_dir("totals");
    // ZeRO stage 3 (samples/zero_memory.ein): 1.9 GB of model states and a 15 GB gathered
    // weight in an A100's 80 GB. On the bar's scale of 80 GB the optimizer state is 1.8% of
    // it, the buffer 19%; the weights and gradients a few pixels.
    const auto png = dir / "zero3.png", text = dir / "zero3.txt";
    gui_script(dir, "--panel totals " + sample("zero_memory.ein"),
               "dump:" + text.string() + ";wait", png);
    // The panel's text (the editor's comments quote some of the same figures).
    auto panel = [](const std::string& dump) {
        const auto at = dump.find("Program totals per device and step: ");
        return at == std::string::npos ? std::string() : dump.substr(at);
    };
    auto dump = panel(test::read_file(text));
    CHECK(dump.find("Program totals per device and step: 64 devices, a100, training") !=
          std::string::npos);
    CHECK(dump.find("all-gather") != std::string::npos);
    CHECK(dump.find("reduce-scatter") != std::string::npos);
    CHECK(dump.find("optimizer 1.41 GB") != std::string::npos);
    CHECK(dump.find("weights 234 MB") != std::string::npos);
    CHECK(dump.find("fits") != std::string::npos);
    CHECK(dump.find("does NOT fit") == std::string::npos);
    auto img = test::load_png(png.string());
    REQUIRE(img.ok());
    const long opt3 = img.count(optimizer), buf3 = img.count(buffers);
    CHECK(opt3 > 200);
    CHECK(buf3 > 5 * opt3);
    CHECK(img.count(hbm) > 20);

    // Plain data parallelism (the weight replicated): 120 GB of model states do not fit, and
    // the weights, gradients and optimizer state fill most of the bar.
    auto dp = test::read_file(fs::path(SHARDSCOPE_SAMPLES_DIR) / "zero_memory.ein");
    for (const std::string from : {"W_{d_{dp} f} -> W_{d f}\nexpect all-gather(dp)\n",
                                   "gW_{d_{dp} f}", "expect reduce-scatter(dp)"}) {
        const auto at = dp.find(from);
        REQUIRE(at != std::string::npos);
        dp.replace(at, from.size(),
                   from[0] == 'W'   ? ""
                   : from[0] == 'g' ? "gW_{d f}"
                                    : "expect all-reduce(dp)");
    }
    const auto file = dir / "ddp.ein";
    std::ofstream(file) << dp;
    const auto png2 = dir / "ddp.png", text2 = dir / "ddp.txt";
    gui_script(dir, "--panel totals " + quote(file.string()), "dump:" + text2.string() + ";wait",
               png2);
    dump = panel(test::read_file(text2));
    CHECK(dump.find("does NOT fit") != std::string::npos);
    CHECK(dump.find("optimizer 90 GB") != std::string::npos);
    img = test::load_png(png2.string());
    REQUIRE(img.ok());
    // On the bar (136 GB wide) 15 GB is ~11% of it: far more than the legend's square.
    CHECK(img.count(weights) > 1000);
    CHECK(img.count(gradients) > 1000);
    CHECK(img.count(optimizer) > 10 * opt3);

    // A pipelined, forward-only training file (samples/pipeline.ein): the bubble's row with
    // the schedule, and the note that the backward is grad's.
    const auto text3 = dir / "pipeline.txt";
    gui_script(dir, "--panel totals " + sample("pipeline.ein"), "dump:" + text3.string() + ";wait",
               dir / "pipeline.png");
    dump = panel(test::read_file(text3));
    CHECK(dump.find("compute + exposed communication + pipeline bubble") != std::string::npos);
    CHECK(dump.find("pp: 4 stages x 8 layers, 16 micro-batches, 1f1b; 15.8% idle") !=
          std::string::npos);
    CHECK(dump.find("the forward as written + the backward grad derives") != std::string::npos);

    // Two pipelined blocks, each its own pipeline: their sum, then one row each with its own
    // stages, micro-batches and schedule.
    const auto two = dir / "two_pipelines.ein";
    {
        std::ofstream f(two);
        f << "mesh pp=2\ndim b=8 d=16\nh_{b d} = x_{b d}\n"
             "repeat l_{pp}=2 microbatches=2 schedule=gpipe\n  h_{b d} = relu(h_{b d})\nend\n"
             "g_{b d} = h_{b d}\n"
             "repeat k_{pp}=4 microbatches=4 schedule=1f1b\n  g_{b d} = relu(g_{b d})\nend\n";
    }
    const auto text4 = dir / "two_pipelines.txt";
    gui_script(dir, "--panel totals " + two.string(), "dump:" + text4.string() + ";wait",
               dir / "two_pipelines.png");
    dump = panel(test::read_file(text4));
    CHECK_MESSAGE(dump.find("2 pipelines, their bubbles added") != std::string::npos, dump);
    CHECK_MESSAGE(dump.find("pipeline 1") != std::string::npos, dump);
    CHECK_MESSAGE(dump.find("pp: 2 stages x 1 layers, 2 micro-batches, gpipe; 33.3% idle") !=
                      std::string::npos,
                  dump);
    CHECK_MESSAGE(dump.find("pp: 2 stages x 2 layers, 4 micro-batches, 1f1b; 20.0% idle") !=
                      std::string::npos,
                  dump);
}

TEST_CASE("gui: the compare panel searches on a worker thread and shows a candidate's plan") {
    // The panel's row colours (render/gui/panel_compare.cpp): the best, the candidate shown.
    const render::Color best_row{200, 236, 200}, shown_row{252, 228, 160};
    const auto dir = out_dir("compare");
    const auto file = std::string(SHARDSCOPE_SAMPLES_DIR) + "/strategy_search.ein";
    // The command line's ranking of the same search (`plan` with the preset's HBM prunes what
    // does not fit; the panel puts what fits first).
    REQUIRE(run_shardscope("plan " + quote(file) + " --devices 1024 --hbm 80GB --json",
                           dir / "plan.json") == 0);
    const auto plan = nlohmann::json::parse(test::read_file(dir / "plan.json"));
    REQUIRE(plan["candidates"].size() >= 2);
    const std::string best = plan["candidates"][0]["mesh_text"];
    const std::string second = plan["candidates"][1]["mesh_text"];
    const std::string why = plan["candidates"][1]["why"];

    const auto png = dir / "compare.png", before = dir / "before.txt", after = dir / "after.txt",
               mid = dir / "mid.txt";
    const auto out = gui_script(dir, "--panel compare --size 1400x900 " + quote(file),
                                "search:1024;dump:" + mid.string() +
                                    ";wait-search;wait;dump:" + before.string() +
                                    ";candidate:2;wait;wait;dump:" + after.string() + ";wait",
                                png);
    auto panel = [](const std::string& dump) {
        const auto at = dump.find("Strategy search over");
        return at == std::string::npos ? std::string() : dump.substr(at);
    };
    // The frame after Search is pressed: the window draws while the search runs (a worker
    // thread), with its progress.
    const auto m = panel(test::read_file(mid));
    CHECK((m.find("meshes checked") != std::string::npos ||
           m.find("searching: enumerating the meshes") != std::string::npos));
    const auto b = panel(test::read_file(before));
    REQUIRE(!b.empty());
    CHECK(b.find("1024 devices over dp, fsdp, tp: ") != std::string::npos);
    CHECK(b.find("meshes checked") == std::string::npos);
    CHECK(b.find("#1 best") != std::string::npos);
    // The best row first, then #2, with the explanation the command line gives.
    const auto r1 = b.find("#1 best"), r2 = b.find("#2");
    CHECK(r1 < r2);
    CHECK(b.find(best, r1) < b.find(second, r1 + 1));
    CHECK(b.find("#2 " + second + ": " + why.substr(0, 20)) != std::string::npos);
    CHECK(b.find("The other panels show") == std::string::npos);
    // The candidate clicked: the file re-checked at its mesh, 64 devices.
    const auto a = panel(test::read_file(after));
    CHECK(a.find("The other panels show candidate #2 (" + second + ")") != std::string::npos);
    CHECK(a.find("It loses to #1: " + why.substr(0, 20)) != std::string::npos);
    CHECK(out.find("compare: ") != std::string::npos);
    CHECK(out.find(", best " + best + "; shown #2 at ") != std::string::npos);
    CHECK(out.find("(1024 devices)") != std::string::npos);
    auto img = test::load_png(png.string());
    REQUIRE(img.ok());
    CHECK(img.count(best_row) > 2000);
    CHECK(img.count(shown_row) > 2000);
}

TEST_CASE("gui: the compare panel with gui --compare: files ranked, a click opens one") {
    const render::Color best_row{200, 236, 200}, shown_row{252, 228, 160};
    const auto dir = out_dir("compare_files");
    // samples/strategy_search.ein at two meshes of 64 devices, and one with an error.
    auto at_mesh = [&](const std::string& mesh, const std::string& name, const std::string& tail) {
        std::istringstream in(
            test::read_file(fs::path(SHARDSCOPE_SAMPLES_DIR) / "strategy_search.ein"));
        std::string out, line;
        while (std::getline(in, line))
            if (line.rfind("expect ", 0) != 0)
                out += (line.rfind("mesh ", 0) == 0 ? "mesh " + mesh : line) + "\n";
        std::ofstream(dir / name) << out << tail;
        return (dir / name).string();
    };
    const auto tp = at_mesh("dp=8 fsdp=1 tp=8", "tp.ein", "");
    const auto fsdp = at_mesh("dp=1 fsdp=64 tp=1", "fsdp.ein", "");
    const auto bad = at_mesh("dp=8 fsdp=1 tp=8", "bad.ein", "z = q_{\n");
    // The command line's ranking of the same files.
    run_shardscope("check -q --compare " + quote(fsdp) + " " + quote(tp) + " " + quote(bad),
                   dir / "check.txt");
    const auto check = test::read_file(dir / "check.txt");
    REQUIRE(check.find("#1 (best)") != std::string::npos);
    const std::string head = "#2 " + fsdp + " loses to #1 " + tp + ": ";
    const auto loses = check.find(head);
    REQUIRE(loses != std::string::npos);
    const auto why = check.substr(loses + head.size(), 30);

    const auto png = dir / "files.png", before = dir / "before.txt", after = dir / "after.txt";
    const auto out = gui_script(
        dir, "--panel compare --compare " + quote(fsdp) + " " + quote(tp) + " " + quote(bad),
        "dump:" + before.string() + ";compared-file:1;wait;wait;dump:" + after.string() + ";wait",
        png);
    auto panel = [](const std::string& dump) {
        const auto at = dump.find("Files compared (3)");
        return at == std::string::npos ? std::string() : dump.substr(at);
    };
    const auto b = panel(test::read_file(before));
    REQUIRE(!b.empty());
    // Best first (tp.ein), then fsdp.ein with check --compare's reason, the file with errors
    // last and not ranked.
    const auto r1 = b.find("#1 best"), r2 = b.find("| #2 |"), r3 = b.find("not ranked");
    CHECK(r1 < r2);
    CHECK(r2 < r3);
    CHECK(r3 != std::string::npos);
    CHECK(b.find("| tp.ein |", r1) < r2);
    CHECK(b.find("| fsdp.ein |", r2) < r3);
    CHECK(b.find("#2 fsdp.ein: " + why) != std::string::npos);
    // The first file given opened first; clicking the best opens it.
    CHECK(out.find("title: tp.ein") != std::string::npos);
    auto img = test::load_png(png.string());
    REQUIRE(img.ok());
    // The best row is the open one now: amber over green.
    CHECK(img.count(shown_row) > 2000);
    CHECK(img.count(best_row) < 100);
}
