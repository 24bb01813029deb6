// dyllm-studio end to end under Xvfb: --screenshot with 3 engine steps on a tiny random checkpoint, then the PNG is
// read back and checked: right size, not blank, no error bar, and each panel region shows what the layout puts there
// (masked token cells in the canvas, histogram bars, salient-map cells, op-class bars in the Time panel).
#include <catch2/catch.hpp>
#include <stb_image.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "app/model/layout.h"
#include "support/tiny_models.h"

using namespace dyllm;

namespace {

struct Image {
    int            w = 0, h = 0;
    unsigned char* px = nullptr;
    ~Image() {
        if (px) stbi_image_free(px);
    }
    const unsigned char* at(int x, int y) const { return px + (size_t(y) * w + x) * 3; }
    bool                 load(const std::string& path) {  // RGB, whatever the PNG's channels
        int n = 0;
        px    = stbi_load(path.c_str(), &w, &h, &n, 3);
        return px != nullptr;
    }
};

// Pixels of rect r with exactly colour (R, G, B): the panels draw solid, non-antialiased rectangles with these colours.
int count_colour(const Image& im, const app::Rect& r, int R, int G, int B) {
    int n = 0;
    for (int y = int(r.y); y < int(r.bottom()) && y < im.h; ++y)
        for (int x = int(r.x); x < int(r.right()) && x < im.w; ++x) {
            const unsigned char* p = im.at(x, y);
            n += (p[0] == R && p[1] == G && p[2] == B) ? 1 : 0;
        }
    return n;
}

// Mean and variance of the luma over rect r.
std::pair<double, double> luma_stats(const Image& im, const app::Rect& r) {
    double s = 0, s2 = 0;
    long   n = 0;
    for (int y = int(r.y); y < int(r.bottom()) && y < im.h; ++y)
        for (int x = int(r.x); x < int(r.right()) && x < im.w; ++x) {
            const unsigned char* p = im.at(x, y);
            const double         l = 0.2126 * p[0] + 0.7152 * p[1] + 0.0722 * p[2];
            s += l;
            s2 += l * l;
            ++n;
        }
    const double m = n ? s / n : 0;
    return {m, n ? s2 / n - m * m : 0};
}

std::string slurp(const std::string& path) {
    std::ifstream     f(path);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

// Never skips: a missing studio binary or xvfb-run fails the test with the reason (CI installs xvfb and xauth).
std::string studio_or_fail() {
    const char* studio = std::getenv("DYLLM_STUDIO");
    if (!studio || !*studio)
        FAIL(
            "DYLLM_STUDIO is not set: build the dyllm-studio target (needs libimgui-dev, libglfw3-dev) and run via "
            "ctest");
    if (!std::filesystem::exists(studio)) FAIL(std::string("DYLLM_STUDIO=") + studio + " does not exist");
    if (std::system("command -v xvfb-run > /dev/null 2>&1") != 0)
        FAIL("xvfb-run not found: apt-get install xvfb xauth (the studio needs an X display)");
    return studio;
}

// xvfb-run -a starts its search at display :99, so two test processes starting together (parallel ctest, several
// build trees) can race for the same display; start each search at a display number derived from the pid.
std::string xvfb_prefix() {
    static int calls = 0;
    const int  start = 100 + int(getpid() % 700) + 3 * calls++;
    return "xvfb-run -a -n " + std::to_string(start) + " -s '-screen 0 1600x1000x24' ";
}

// Runs dyllm-studio under Xvfb and returns the studio's own exit code. It is written to a file from inside the
// X session, because xvfb-run sometimes exits 5 ("problem while cleaning up temporary directory") after a clean run.
int run_studio(const std::string& studio, const std::string& args, const std::string& log) {
    const std::string rc_file = log + ".rc";
    std::filesystem::remove(rc_file);
    const std::string cmd =
        xvfb_prefix() + "sh -c \"'" + studio + "' " + args + "; echo \\$? > " + rc_file + "\" > " + log + " 2>&1";
    if (std::system(cmd.c_str()) != 0) {
        // xvfb-run's own status; the studio's is in rc_file (see above).
    }
    std::ifstream in(rc_file);
    int           rc = -1;
    if (!(in >> rc)) return -1;  // the studio never ran (xvfb-run failed before it): the log says why
    return rc;
}

// Runs the studio on `model` for 3 engine steps and loads its screenshot of size "WxH" into im. T_full = 1 so steps 2
// and 3 are sparse DyLLM steps with cosine tests (engine/README.md §a.3: step 1 is always FULL).
void shoot_three_steps(const std::string& studio, const std::filesystem::path& model, const std::string& size,
                       const std::string& name, Image& im) {
    const std::string png = name + ".png", log = name + ".log";
    std::filesystem::remove(png);
    const std::string args = "--screenshot " + png + " --frames 5 --step 3 --size " + size + " --full-steps 1 -m '" +
                             model.string() + "' -p 'Q: add 12+30'";
    const int rc = run_studio(studio, args, log);
    INFO("studio " << args << "\nlog:\n" << slurp(log));
    REQUIRE(rc == 0);
    REQUIRE(im.load(png));
}

}  // namespace

TEST_CASE("a model that cannot be loaded shows the red message bar and the app keeps running", "[studio][gui]") {
    const std::string studio = studio_or_fail();
    const std::string png = "studio_error.png", log = "studio_error.log";
    std::filesystem::remove(png);
    const int rc = run_studio(studio, "--screenshot " + png + " --frames 3 --step 2 -m /nonexistent/dyllm-model", log);
    INFO("log:\n" << slurp(log));
    CHECK(rc == 2);  // the PNG is written, but the requested run did not happen
    REQUIRE(std::filesystem::exists(png));
    CHECK(slurp(log).find("/nonexistent/dyllm-model") != std::string::npos);
    Image im;
    REQUIRE(im.load(png));
    // The message bar (150, 30, 30) spans the window under the controls.
    CHECK(count_colour(im, {0, app::kControlsHeight, 1600, app::kMessageBarHeight}, 150, 30, 30) > 1600 * 10);
}

TEST_CASE("--compare runs original then dyllm and --export-dir writes parseable traces and CSV", "[studio][gui]") {
    const std::string studio = studio_or_fail();
    const auto        model  = test::make_tiny_checkpoint(Family::LLaDA);
    const std::string png = "studio_compare.png", log = "studio_compare.log", dir = "studio_exports";
    std::filesystem::remove_all(dir);
    const int rc = run_studio(studio,
                              "--compare --screenshot " + png + " --frames 3 -n 16 --steps 16 --block-length 8 " +
                                  "--export-dir " + dir + " -m '" + model.string() + "' -p 'Q: add 1+2'",
                              log);
    INFO("log:\n" << slurp(log));
    REQUIRE(rc == 0);
    int n_csv = 0, n_json = 0, n_jsonl = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
        const auto        ext  = e.path().extension().string();
        const std::string text = slurp(e.path().string());
        if (ext == ".csv") {
            ++n_csv;
            CHECK(std::count(text.begin(), text.end(), '\n') >= 2);  // header + at least one row
            if (e.path().filename().string().rfind("op-stats-", 0) == 0) CHECK(text.rfind("op,layer,count,", 0) == 0);
        } else if (ext == ".json") {
            ++n_json;
            const auto j = nlohmann::json::parse(text);
            CHECK(j.contains("traceEvents"));
            CHECK(j["traceEvents"].size() > 16);
            // The studio's trace: the model's op names (gate, not only "ffn") and the waits between steps cut.
            CHECK(text.find("\"name\":\"gate\"") != std::string::npos);
            CHECK(j["metadata"]["step_gaps_closed"] == true);
        } else if (ext == ".jsonl") {
            ++n_jsonl;
            std::istringstream in(text);
            std::string        line;
            int                lines = 0;
            while (std::getline(in, line)) {
                CHECK_NOTHROW(nlohmann::json::parse(line));
                ++lines;
            }
            CHECK(lines >= 17);  // environment record + one per step
        }
    }
    CHECK(n_csv == 6);  // histograms, step timings, ops, salient counts, canvas, op stats
    CHECK(n_json == 1);
    CHECK(n_jsonl == 1);
    // The exported run is the second (dyllm) run of the comparison; the JSONL first record names its method.
    CHECK(slurp(log).find("wrote " + png) != std::string::npos);
}

TEST_CASE("--preset paper-regime runs original, fast-dual and dyllm over 256 tokens and shows the Why tab",
          "[studio][gui]") {
    const std::string studio = studio_or_fail();
    const auto        model  = test::make_tiny_checkpoint(Family::LLaDA);
    const std::string png = "studio_why.png", log = "studio_why.log", dir = "studio_why_exports";
    std::filesystem::remove_all(dir);
    const int rc = run_studio(studio,
                              "--preset paper-regime --preset-nu 4 --screenshot " + png + " --frames 3 --export-dir " +
                                  dir + " -m '" + model.string() + "'",
                              log);
    INFO("log:\n" << slurp(log));
    REQUIRE(rc == 0);
    CHECK(slurp(log).find("at step 64") != std::string::npos);  // 256 tokens at n_u 4, past the end of text
    // The shown (exported) run is the trio's last, dyllm, with the preset's knobs.
    int traces = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
        if (e.path().extension() != ".json") continue;
        ++traces;
        const auto j = nlohmann::json::parse(slurp(e.path().string()));
        CHECK(j["metadata"]["method"] == "dyllm");
        CHECK(j["metadata"]["gen_length"] == 256);
        CHECK(j["metadata"]["steps"] == 64);
    }
    CHECK(traces == 1);
    Image im;
    REQUIRE(im.load(png));
    // The Why tab's step-kind strip: fast-dual's cached steps in the block-cached colour (120, 190, 235).
    CHECK(count_colour(im, {0, 0, 1600, 1000}, 120, 190, 235) > 1000);
    // n_u 1, 2 or 4 only: refused in one line naming the option, before any window.
    CHECK(run_studio(studio, "--preset paper-regime --preset-nu 3", log) != 0);
    CHECK(slurp(log).find("--preset-nu") != std::string::npos);
}

TEST_CASE("dyllm-studio --screenshot renders every panel after 3 engine steps", "[studio][gui]") {
    const std::string studio = studio_or_fail();
    Image             im;
    shoot_three_steps(studio, test::make_tiny_checkpoint(Family::LLaDA), "1600x1000", "studio_screenshot", im);
    REQUIRE(im.w == 1600);
    REQUIRE(im.h == 1000);

    const app::StudioLayout L = app::compute_layout(1600, 1000, false);
    // Not blank: the whole window has structure.
    const auto whole = luma_stats(im, {0, 0, 1600, 1000});
    CHECK(whole.second > 100.0);
    // No red message bar (kMessageBarHeight strip under the controls would be (150, 30, 30)).
    CHECK(count_colour(im, {0, app::kControlsHeight, 1600, app::kMessageBarHeight}, 150, 30, 30) < 100);
    // Canvas: 61 of 64 response tokens still masked -> many pixels of the masked-cell grey (70, 72, 78).
    const int masked_px = count_colour(im, L.canvas, 70, 72, 78);
    CHECK(masked_px > 61 * 100);
    // ... and none of that grey outside the canvas band's panels where no tokens are drawn (the Time panel).
    CHECK(count_colour(im, L.time, 70, 72, 78) < masked_px / 10);
    // One stable blue (62, 108, 175) and one salient orange (245, 145, 45) everywhere (kColStable, kColSalient in
    // app/studio/plot.h). Cosine histograms: bars in those two colours.
    const int bars = count_colour(im, L.cosine, 62, 108, 175) + count_colour(im, L.cosine, 245, 145, 45);
    CHECK(bars > 200);
    // Salient map: tested cells in the same two colours.
    const int cells = count_colour(im, L.salient, 62, 108, 175) + count_colour(im, L.salient, 245, 145, 45);
    CHECK(cells > 500);
    // Time panel: FFN bars (240, 210, 70) appear in the stacked bars / timeline.
    CHECK(count_colour(im, L.time, 240, 210, 70) > 50);
    // Panels differ from one another (distinct pixel statistics), the controls bar has text on it.
    const auto canvas = luma_stats(im, L.canvas), time = luma_stats(im, L.time), ctrl = luma_stats(im, L.controls);
    CHECK(std::abs(canvas.first - time.first) + std::abs(canvas.second - time.second) > 1.0);
    CHECK(ctrl.second > 50.0);
}

TEST_CASE("at 1280x720 an 8-layer model's salient map stands beside L_sal, its cells down the whole map",
          "[studio][gui]") {
    const std::string studio = studio_or_fail();
    ModelConfig       cfg    = test::tiny_config(Family::LLaDA);
    cfg.n_layer              = 8;  // the built-in v2 depth: stacked, this band gave each map row about 5 px
    Image im;
    shoot_three_steps(studio, test::make_checkpoint(cfg, DType::F32, 1, 3), "1280x720", "studio_deep_small", im);
    REQUIRE(im.w == 1280);
    REQUIRE(im.h == 720);
    const app::StudioLayout L = app::compute_layout(1280, 720, false);
    REQUIRE(L.lsal.x > L.salient.x);  // side by side (test_app_model checks the geometry)
    // Tested cells (stable blue or salient orange) in each eighth of the map's height (the part of the panel under
    // its title, controls and canvas strip, over the axis line), so the 8 rows got the panel's height.
    const float top = L.salient.y + 0.35f * L.salient.h, bottom = L.salient.bottom() - 22;
    const float row_h           = (bottom - top) / 8;
    int         rows_with_cells = 0;
    for (int r = 0; r < 8; ++r) {
        const app::Rect slice{L.salient.x, top + r * row_h, L.salient.w, row_h};
        if (count_colour(im, slice, 62, 108, 175) + count_colour(im, slice, 245, 145, 45) > 60) ++rows_with_cells;
    }
    CHECK(rows_with_cells >= 7);  // the slices are estimates of where rows fall: allow one straddling a gap
    // No map cells spill into the L_sal panel beside it.
    CHECK(count_colour(im, L.lsal, 62, 108, 175) < 50);
}

TEST_CASE("--sweep-task shoots the Tune panel after the task-suite sweep, references drawn", "[studio][gui]") {
    const std::string studio = studio_or_fail();
    const auto        model  = test::make_tiny_checkpoint(Family::LLaDA);
    {  // the model's own tasks/ (found first by find_tasks_dir): two short items
        std::filesystem::create_directories(model / "tasks");
        std::ofstream add(model / "tasks" / "add.jsonl");
        add << R"({"prompt": "Q: add 1+2", "answer": "answer 3", "task": "add", "shots": 0})"
            << "\n"
            << R"({"prompt": "Q: add 2+3", "answer": "answer 5", "task": "add", "shots": 0})"
            << "\n";
    }
    const std::string png = "studio_suite.png", log = "studio_suite.log";
    std::filesystem::remove(png);
    const std::string args = "--sweep-task add --sweep-limit 2 --sweep-tau 0.9,0.99 --screenshot " + png +
                             " --frames 3 --size 1280x720 -n 8 --steps 8 --block-length 8 -m '" + model.string() + "'";
    const int rc = run_studio(studio, args, log);
    INFO("studio " << args << "\nlog:\n" << slurp(log));
    REQUIRE(rc == 0);
    CHECK(slurp(log).find("task sweep: 4 runs") != std::string::npos);  // original, fast-dual, dyllm at 2 taus
    Image im;
    REQUIRE(im.load(png));
    REQUIRE(im.w == 1280);
    // The bottom half holds the Tune band (--sweep-task opens it at half the body): the original square and the
    // fast-dual diamond in their own colours (kColOrig, kColFastDual in app/studio/view_tune.cpp).
    const app::Rect band{0, 360, 1280, 330};
    CHECK(count_colour(im, band, 225, 105, 205) > 40);
    CHECK(count_colour(im, band, 235, 235, 235) > 40);
}
