// dyllm-studio: the desktop visualizer. Dear ImGui's GLFW + OpenGL3 example loop (init, frame loop that sleeps when
// iconified, shutdown) with the engine on a worker thread; the headless screenshot/export/bench modes live in
// headless.cpp, the font and style in theme.cpp.
#include <CLI/CLI.hpp>
#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>

#include <cfloat>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <regex>
#include <thread>

#include "app/model/frame_throttle.h"
#include "app/model/op_stats.h"
#include "app/model/param_options.h"
#include "app/studio/headless.h"
#include "app/studio/studio.h"
#include "app/studio/theme.h"
#include "app/studio/window_png.h"
#include "engine/interrupt.h"
#include "engine/io/atomic_file.h"
#include "engine/version.h"

using namespace dyllm;
using namespace dyllm::app;

namespace {

void glfw_error(int code, const char* desc) {
    std::fprintf(stderr, "dyllm-studio: GLFW error %d: %s\n", code, desc);
}

// Command line -> opt. Returns -1 to go on, otherwise the exit code (--help, a bad option).
int parse_options(int argc, char** argv, StudioOptions& opt) {
    std::string size;
    CLI::App    cli{"dyllm-studio: live visualizer and profiler of masked-diffusion LMs with DyLLM"};
    cli.set_version_flag("--version", std::string("dyllm-studio ") + dyllm::version());
    // One line per error, as the CLI prints them (CLI11's default adds a "Run with --help" line).
    cli.failure_message(
        [](const CLI::App*, const CLI::Error& e) { return std::string("dyllm-studio: error: ") + e.what() + "\n"; });
    // Counts: CLI11's PositiveNumber/NonNegativeNumber print DBL_MAX's 309 digits in their range message.
    const auto count_from = [](int lo) { return CLI::Range(lo, INT32_MAX); };
    cli.add_option("-m,--model", opt.model,
                   "checkpoint directory, .gguf file or built-in name (tiny-llada, tiny-dream)");
    cli.add_option("--backend", opt.backend, "cpu|cuda|auto")->check(CLI::IsMember({"cpu", "cuda", "auto"}));
    cli.add_option("-p,--prompt", opt.prompt, "prompt (user message)");
    cli::DiffusionOptions diffusion;  // every diffusion setting, from the engine's parameter table
    cli::add_diffusion_options(cli, diffusion);
    cli.add_option("--speed", opt.speed,
                   "play speed limit in steps/s (0 = as fast as the engine goes; default 3.5, and 0 with "
                   "--screenshot/--bench-frames)")
        ->check(cli::finite_number())
        ->check(CLI::Validator(
            [](std::string& v) { return std::strtod(v.c_str(), nullptr) < 0 ? "must be >= 0 (got " + v + ")" : ""; },
            ">= 0", "non-negative"));
    cli.add_flag("--compare", opt.compare, "run original vs the chosen method on the prompt and open Compare");
    cli.add_option("--export-dir", opt.export_dir, "headless: write CSV, Chrome trace and JSONL of the run here");
    cli.add_option("--screenshot", opt.screenshot, "write a PNG of the window after --frames frames and exit");
    cli.add_option("--frames", opt.frames, "frames to render before the screenshot")->check(count_from(1));
    cli.add_option("--step", opt.step, "engine steps to run (and wait for) before the screenshot")
        ->check(count_from(0));
    cli.add_option("--bench-frames", opt.bench_frames, "render N frames while generating, print frame-time stats")
        ->check(count_from(0));
    cli.add_option("--ui-scale", opt.ui_scale, "text and bar scale (Ctrl +/- in the app)")
        ->check(cli::finite_number())
        ->check(CLI::Range(double(kUiScaleMin), double(kUiScaleMax)));
    cli.add_flag("--sweep", opt.sweep, "run the Tune tab's tau sweep of the prompt at start and show the tab");
    cli.add_option("--sweep-task", opt.sweep_task,
                   "run the Tune tab's task-suite sweep at start (original, fast-dual, dyllm at each tau; accuracy vs "
                   "tokens/s) on this task and show the tab")
        ->check(CLI::IsMember({"add", "sort", "word", "rev", "all"}));
    cli.add_option("--sweep-limit", opt.sweep_limit, "items per task of --sweep-task")
        ->capture_default_str()
        ->check(count_from(1));
    cli.add_flag("--sweep-all-methods", opt.sweep_every_method,
                 "--sweep-task also runs every other method once at its defaults (one marker each)");
    cli.add_option("--sweep-tau", opt.sweep_taus,
                   "tau list of --sweep-task, e.g. 0.9,0.99 (default 0.9,0.98,0.99,"
                   "0.995,0.999)");
    std::vector<std::string> tab_flags;
    for (const BottomTabName& t : kBottomTabs) tab_flags.push_back(t.flag);
    std::string tab_list;
    for (const std::string& f : tab_flags) tab_list += (tab_list.empty() ? "" : ", ") + f;
    cli.add_option("--tab", opt.tab, "bottom band tab to show at start: " + tab_list)->check(CLI::IsMember(tab_flags));
    cli.add_option("--open", opt.open,
                   "at start (comma-separated): explain and compare select their tab, export "
                   "opens the export dialog")
        ->delimiter(',')
        ->check(CLI::IsMember({"explain", "export", "compare"}));
    cli.add_option("--preset", opt.preset,
                   "start with a preset: paper-regime (gen 256, block 32, a 4-shot prompt; runs original, fast-dual "
                   "and dyllm and shows the Why tab)")
        ->check(CLI::IsMember({"paper-regime"}));
    cli.add_option("--preset-nu", opt.preset_nu, "tokens per step of --preset paper-regime: 1, 2 or 4")
        ->capture_default_str()
        ->check(CLI::IsMember({1, 2, 4}));
    cli.add_option("--select-op", opt.select_op,
                   "Op stats: select this op at start, e.g. gate or \"gate L3\" (its duration histogram)");
    cli.add_option("--size", size, "window size WxH (default 1600x1000)");
    cli.add_option("-t,--threads", opt.threads, "engine CPU threads (0 = all cores but one, which the UI keeps)");
    try {
        cli.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return cli.exit(e);
    }
    try {
        opt.params = cli::to_diffusion_params(diffusion);
        // The studio's first run keeps the answer right (engine/README.md decision 12): DyLLM's stable rows take the
        // incremental column-sparse update unless a flag chose their update; the Controls bar switches it.
        if (!diffusion.given.count("approx") && !diffusion.given.count("approx_columns") &&
            !diffusion.given.count("approx_incremental"))
            opt.params.approx_incremental = true;
    } catch (const std::exception& e) {  // InputError: one line naming the flag
        std::fprintf(stderr, "dyllm-studio: error: %s\n", e.what());
        return 2;
    }
    // The CLI's bound (cli::kMaxThreads): a typo such as 100000 is one line, not a failed thread start.
    if (opt.threads < 0 || opt.threads > cli::kMaxThreads) {
        std::fprintf(stderr, "dyllm-studio: --threads must be in [0, %d] (0 = all cores but one; got %d)\n",
                     cli::kMaxThreads, opt.threads);
        return 2;
    }
    // Strict WxH: digits, one 'x', digits (sscanf would take "1600x1000junk", " 16x10" or "1600x-5").
    static const std::regex kSize("([0-9]{1,5})x([0-9]{1,5})");
    std::smatch             m;
    if (!size.empty() && std::regex_match(size, m, kSize)) {
        opt.width  = std::stoi(m[1].str());
        opt.height = std::stoi(m[2].str());
    } else if (!size.empty()) {
        std::fprintf(stderr, "dyllm-studio: --size '%s': expected WxH, e.g. 1600x1000\n", size.c_str());
        return 2;
    }
    if (opt.width < 320 || opt.height < 240 || opt.width > 8192 || opt.height > 8192) {
        std::fprintf(stderr, "dyllm-studio: --size %dx%d: width must be in [320, 8192] and height in [240, 8192]\n",
                     opt.width, opt.height);
        return 2;
    }
    if (!opt.sweep_taus.empty()) try {
            (void)parse_sweep_taus("--sweep-tau", opt.sweep_taus);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "dyllm-studio: error: %s\n", e.what());
            return 2;
        }
    // The screenshot is written after the run: a bad target fails now, in one line, not after the frames.
    if (!opt.screenshot.empty()) try {
            check_output_path(opt.screenshot);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "dyllm-studio: error: --screenshot: %s\n", e.what());
            return 2;
        }
    if (!opt.select_op.empty() && !parse_op_label(opt.select_op, nullptr, nullptr)) {
        std::fprintf(stderr,
                     "dyllm-studio: --select-op '%s': expected an op name (q, k, v, o, gate, up, down, ...) and "
                     "optionally a layer, e.g. \"gate L3\"\n",
                     opt.select_op.c_str());
        return 2;
    }
    if ((opt.sweep || !opt.sweep_task.empty()) && opt.tab.empty()) opt.tab = bottom_tab_name(BottomTab::Tune).flag;
    return -1;
}

}  // namespace

int main(int argc, char** argv) {
    StudioOptions opt;
    if (const int rc = parse_options(argc, argv, opt); rc >= 0) return rc;
    // SIGINT/SIGTERM close the window as its close button does (runs end as cancelled; nothing half-written stays).
    install_signal_handlers(false);
    Headless headless(opt);

    // Setup window
    glfwSetErrorCallback(glfw_error);
    if (!glfwInit()) {
        std::fprintf(stderr, "dyllm-studio: cannot initialise GLFW (no display? run under xvfb-run -a)\n");
        return 1;
    }
    glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
    glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
    glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
    if (headless.enabled()) glfwWindowHint(GLFW_RESIZABLE, GLFW_FALSE);
    GLFWwindow* win = glfwCreateWindow(opt.width, opt.height, "dyllm-studio", nullptr, nullptr);
    if (!win) {
        std::fprintf(stderr, "dyllm-studio: cannot create a %dx%d OpenGL 3.3 window\n", opt.width, opt.height);
        glfwTerminate();
        return 1;
    }
    glfwMakeContextCurrent(win);
    // vsync in normal use; off when benchmarking so the frame time measures our work, not the display.
    glfwSwapInterval(headless.benchmarking() ? 0 : 1);

    // Setup Dear ImGui context, style, fonts and backends
    IMGUI_CHECKVERSION();
    ImGui::CreateContext();
    ImGui::GetIO().IniFilename = nullptr;
    apply_style();
    load_fonts();
    ImGui_ImplGlfw_InitForOpenGL(win, true);
    ImGui_ImplOpenGL3_Init("#version 330 core");

    {
        Studio s(opt);
        set_ui_scale(s, opt.ui_scale);
        if (headless.enabled())
            headless.start(s);
        else
            s.open(true);

        // Main loop. Idle (nothing running, paused or done), block for input instead of spinning a core.
        FrameThrottle throttle;
        while (!glfwWindowShouldClose(win)) {
            if (interrupt_requested()) {  // the frame wait is at most FrameThrottle::kIdleWaitS
                glfwSetWindowShouldClose(win, 1);
                break;
            }
            const double wait = headless.enabled() ? 0.0 : throttle.wait_before_frame(s.working());
            if (wait > 0) {
                const double t0 = now_s();
                glfwWaitEventsTimeout(wait);
                throttle.woke(now_s() - t0, wait);
            } else {
                glfwPollEvents();
            }
            if (!headless.enabled() && glfwGetWindowAttrib(win, GLFW_ICONIFIED)) {
                std::this_thread::sleep_for(std::chrono::milliseconds(10));  // ImGui example: sleep when iconified
                continue;
            }
            s.pump_events(4.0);  // drain engine events with a 4 ms budget: the queue holds the rest for the next frame
            s.begin_frame();
            headless.before_frame(s);

            // Start the Dear ImGui frame
            ImGui_ImplOpenGL3_NewFrame();
            ImGui_ImplGlfw_NewFrame();
            // Headless runs: the X server's pointer sits mid-screen; keep it off the window so no tooltip covers a
            // panel.
            if (headless.enabled()) ImGui::GetIO().MousePos = ImVec2(-FLT_MAX, -FLT_MAX);
            ImGui::NewFrame();
            headless.ui_begin();
            const ImVec2 disp = ImGui::GetIO().DisplaySize;
            draw_studio(s, disp.x, disp.y);
            ImGui::Render();
            headless.ui_end();

            // Rendering
            int fb_w = 0, fb_h = 0;
            glfwGetFramebufferSize(win, &fb_w, &fb_h);
            glViewport(0, 0, fb_w, fb_h);
            glClearColor(0.05f, 0.05f, 0.06f, 1.f);
            glClear(GL_COLOR_BUFFER_BIT);
            ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
            serve_png_request(s, win);  // reads the back buffer: before the swap
            if (headless.after_render(s, win)) glfwSetWindowShouldClose(win, 1);
            glfwSwapBuffers(win);
            s.end_frame();
            if (headless.after_swap(s)) glfwSetWindowShouldClose(win, 1);
        }
    }  // the Studio (and its worker thread) goes before the GL context

    // Cleanup
    ImGui_ImplOpenGL3_Shutdown();
    ImGui_ImplGlfw_Shutdown();
    ImGui::DestroyContext();
    glfwDestroyWindow(win);
    glfwTerminate();
    if (const int sig = interrupt_signal()) {
        std::fprintf(stderr, "dyllm-studio: interrupted\n");
        return 128 + sig;
    }
    return headless.exit_code();
}
