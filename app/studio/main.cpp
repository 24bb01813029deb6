// dyllm-studio: the desktop visualizer. Dear ImGui's GLFW + OpenGL3 example loop (sleeps when iconified, vsync on),
// the engine on a worker thread, and a headless mode: --screenshot FILE --frames N [--step K] runs K engine steps,
// renders N frames, writes a PNG of the window and exits; --bench-frames N prints frame-time statistics.
#include <CLI/CLI.hpp>
#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>
#include <stb_image_write.h>

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>
#include <vector>

#include "app/studio/studio.h"

using namespace dyllm;
using namespace dyllm::app;

namespace {

void glfw_error(int code, const char* desc) { std::fprintf(stderr, "dyllm-studio: GLFW error %d: %s\n", code, desc); }

double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Reads the back buffer (call after rendering, before the swap) and writes it as a PNG.
bool write_window_png(GLFWwindow* win, const std::string& path, std::string* err) {
    int w = 0, h = 0;
    glfwGetFramebufferSize(win, &w, &h);
    if (w <= 0 || h <= 0) {
        *err = "window has no pixels";
        return false;
    }
    std::vector<unsigned char> px(size_t(w) * h * 4);
    glPixelStorei(GL_PACK_ALIGNMENT, 1);
    glReadBuffer(GL_BACK);
    glReadPixels(0, 0, w, h, GL_RGBA, GL_UNSIGNED_BYTE, px.data());
    for (size_t i = 3; i < px.size(); i += 4) px[i] = 255;  // opaque PNG whatever the framebuffer alpha holds
    stbi_flip_vertically_on_write(1);  // GL's origin is bottom-left
    if (!stbi_write_png(path.c_str(), w, h, 4, px.data(), w * 4)) {
        *err = "cannot write " + path;
        return false;
    }
    return true;
}

void load_fonts() {
    ImGuiIO& io = ImGui::GetIO();
    // DejaVu Sans from the Debian fonts-dejavu-core package when present; ImGui's built-in font otherwise. Latin-1
    // plus a few symbol ranges (arrows, math, block elements) for token text, and U+FFFD, which the tokenizer
    // uses for byte tokens that are not complete UTF-8.
    static const ImWchar kRanges[] = {0x0020, 0x00FF, 0x2000, 0x206F, 0x2190, 0x21FF, 0x2200, 0x22FF,
                                      0x2500, 0x259F, 0x25A0, 0x25FF, 0xFFFD, 0xFFFD, 0};
    const char* candidates[] = {"/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
                                "/usr/share/fonts/TTF/DejaVuSans.ttf"};
    for (const char* path : candidates) {
        std::error_code ec;
        if (std::filesystem::exists(path, ec) && io.Fonts->AddFontFromFileTTF(path, 14.0f, nullptr, kRanges)) return;
    }
    io.Fonts->AddFontDefault();
}

void apply_style() {
    ImGui::StyleColorsDark();
    ImGuiStyle& st       = ImGui::GetStyle();
    st.WindowRounding    = 0.f;
    // Square corners and no anti-aliased fills: the software rasteriser (llvmpipe under Xvfb, no-GPU machines) pays
    // per triangle, and rounded AA shapes cost ~10x the vertices of a plain rectangle (measured with --bench-frames).
    st.FrameRounding     = 0.f;
    st.GrabRounding      = 0.f;
    st.AntiAliasedFill   = false;
    st.WindowPadding     = ImVec2(8, 6);
    st.FramePadding      = ImVec2(6, 3);
    st.ItemSpacing       = ImVec2(7, 5);
    st.WindowBorderSize  = 1.f;
    st.Colors[ImGuiCol_WindowBg]      = ImVec4(0.085f, 0.09f, 0.105f, 1.f);
    st.Colors[ImGuiCol_TitleBg]       = ImVec4(0.13f, 0.15f, 0.20f, 1.f);
    st.Colors[ImGuiCol_TitleBgActive] = ImVec4(0.16f, 0.20f, 0.29f, 1.f);
    st.Colors[ImGuiCol_Border]        = ImVec4(0.25f, 0.27f, 0.32f, 1.f);
}

struct FrameStats {
    std::vector<double> ms;
    void print() const {
        if (ms.empty()) return;
        std::vector<double> v = ms;
        std::sort(v.begin(), v.end());
        double sum = 0;
        for (double x : v) sum += x;
        auto pct = [&](double p) { return v[std::min(v.size() - 1, size_t(p * double(v.size() - 1) + 0.5))]; };
        std::printf("frames %zu  mean %.2f ms (%.0f fps)  p50 %.2f  p95 %.2f  p99 %.2f  max %.2f ms  >50ms: %zu\n",
                    v.size(), sum / v.size(), 1e3 * v.size() / sum, pct(0.5), pct(0.95), pct(0.99), v.back(),
                    size_t(std::count_if(v.begin(), v.end(), [](double x) { return x > 50.0; })));
    }
};

}  // namespace

int main(int argc, char** argv) {
    StudioOptions opt;
    std::string   size;
    CLI::App      cli{"dyllm-studio: live visualizer and profiler of masked-diffusion LMs with DyLLM"};
    cli.add_option("-m,--model", opt.model, "checkpoint directory or built-in name (tiny-llada, tiny-dream)");
    cli.add_option("--backend", opt.backend, "cpu|cuda|auto")->check(CLI::IsMember({"cpu", "cuda", "auto"}));
    cli.add_option("-p,--prompt", opt.prompt, "prompt (user message)");
    cli.add_option("--method", opt.method, "original|dyllm|fast-prefix|fast-dual|dllm-cache")
        ->check(CLI::IsMember({"original", "dyllm", "fast-prefix", "fast-dual", "dllm-cache"}));
    cli.add_option("--tau", opt.tau, "DyLLM cosine threshold (default: family default)");
    cli.add_option("-n,--gen-length", opt.gen_length, "response length")->check(CLI::PositiveNumber);
    cli.add_option("--steps", opt.steps, "denoising steps")->check(CLI::PositiveNumber);
    cli.add_option("--block-length", opt.block_length, "semi-autoregressive block length")->check(CLI::PositiveNumber);
    cli.add_option("--full-steps", opt.full_steps, "T_full: initial dense steps of dyllm")->check(CLI::PositiveNumber);
    cli.add_flag("--no-approx", opt.no_approx, "dyllm: exact attention for every query (the paper's 'Salient' ablation)");
    cli.add_option("--speed", opt.speed, "play speed limit in steps/s (0 = as fast as the engine goes)")
        ->check(CLI::NonNegativeNumber);
    cli.add_flag("--compare", opt.compare, "run original vs the chosen method on the prompt and open Compare");
    cli.add_option("--export-dir", opt.export_dir, "headless: write CSV, Chrome trace and JSONL of the run here");
    cli.add_option("--screenshot", opt.screenshot, "write a PNG of the window after --frames frames and exit");
    cli.add_option("--frames", opt.frames, "frames to render before the screenshot")->check(CLI::PositiveNumber);
    cli.add_option("--step", opt.step, "engine steps to run (and wait for) before the screenshot")
        ->check(CLI::NonNegativeNumber);
    cli.add_option("--bench-frames", opt.bench_frames, "render N frames while generating, print frame-time stats")
        ->check(CLI::NonNegativeNumber);
    cli.add_option("--size", size, "window size WxH (default 1600x1000)");
    cli.add_option("-t,--threads", opt.threads, "engine CPU threads (0 = all cores)");
    try {
        cli.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return cli.exit(e);
    }
    // The CLI's bound (app/cli/cli_common.h kMaxThreads): a typo such as 100000 is one line, not a failed thread start.
    if (opt.threads < 0 || opt.threads > 1024) {
        std::fprintf(stderr, "dyllm-studio: --threads must be in [0, 1024] (0 = all cores; got %d)\n", opt.threads);
        return 2;
    }
    if (!size.empty() && std::sscanf(size.c_str(), "%dx%d", &opt.width, &opt.height) != 2) {
        std::fprintf(stderr, "dyllm-studio: --size '%s': expected WxH, e.g. 1600x1000\n", size.c_str());
        return 2;
    }
    if (opt.width < 320 || opt.height < 240 || opt.width > 8192 || opt.height > 8192) {
        std::fprintf(stderr, "dyllm-studio: --size %dx%d: width must be in [320, 8192] and height in [240, 8192]\n",
                     opt.width, opt.height);
        return 2;
    }
    const bool headless = !opt.screenshot.empty() || opt.bench_frames > 0;

    glfwSetErrorCallback(glfw_error);
    if (!glfwInit()) {
        std::fprintf(stderr, "dyllm-studio: cannot initialise GLFW (no display? run under xvfb-run -a)\n");
        return 1;
    }
    glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
    glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
    glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
    if (headless) glfwWindowHint(GLFW_RESIZABLE, GLFW_FALSE);
    GLFWwindow* win = glfwCreateWindow(opt.width, opt.height, "dyllm-studio", nullptr, nullptr);
    if (!win) {
        std::fprintf(stderr, "dyllm-studio: cannot create a %dx%d OpenGL 3.3 window\n", opt.width, opt.height);
        glfwTerminate();
        return 1;
    }
    glfwMakeContextCurrent(win);
    // vsync in normal use; off when benchmarking so the frame time measures our work, not the display.
    glfwSwapInterval(opt.bench_frames > 0 ? 0 : 1);

    IMGUI_CHECKVERSION();
    ImGui::CreateContext();
    ImGui::GetIO().IniFilename = nullptr;
    apply_style();
    load_fonts();
    ImGui_ImplGlfw_InitForOpenGL(win, true);
    ImGui_ImplOpenGL3_Init("#version 330 core");

    int rc = 0;
    {
        Studio s(opt);
        s.load_selected_model();
        if (opt.speed > 0) s.worker.set_speed(opt.speed);
        // Headless screenshot: run K steps one by one (paused), then render. Interactive and bench: play at once.
        const bool shot = !opt.screenshot.empty();
        if (opt.compare) {
            s.start_compare(true, NAN);  // both runs play to the end; the screenshot waits for run B
        } else {
            s.restart(!shot);
            if (shot)
                for (int k = 0; k < opt.step; ++k) s.worker.step_once();
        }

        const double t_start = now_s();
        int          frames_after_ready = 0;
        bool         ready = !shot;
        FrameStats   stats;
        std::vector<double> ui_ms, render_ms;
        double vtx = 0;  // bench: building the UI vs GL rendering + swap
        double       t_prev = now_s();
        int          bench_done = 0;
        uint64_t     bench_restarted = 0;

        while (!glfwWindowShouldClose(win)) {
            glfwPollEvents();
            if (!headless && glfwGetWindowAttrib(win, GLFW_ICONIFIED)) {
                std::this_thread::sleep_for(std::chrono::milliseconds(10));  // ImGui example: sleep when iconified
                continue;
            }
            // Drain engine events with a 4 ms budget: the queue holds the rest for the next frame.
            s.pump_events(4.0);
            s.begin_frame();

            if (shot && !ready) {
                // Ready once the worker is idle and the history shows the K steps (or the run/model stopped early).
                const RunEntry* lv   = s.live();
                const int       seen = lv ? lv->history.steps_ended() : 0;
                const bool idle      = !s.worker.busy() && s.worker.sink().queued() == 0;
                // Re-read the status after seeing the worker idle: the copy from begin_frame() may predate its last
                // command (e.g. still "ready" from the load while the start was executing).
                s.status = s.worker.status();
                // Ready with no session once the queue is drained means the start was refused (bad parameters).
                const bool stopped   = s.status.state == WorkerState::NoModel || s.status.state == WorkerState::Failed ||
                                     s.status.state == WorkerState::Ready || s.status.run_done;
                if (opt.compare) {
                    // Ready when run B of the comparison has finished and its events are in.
                    const bool b_done = lv && lv->tag == "compare-b" && lv->history.finished();
                    const bool refused = s.status.state == WorkerState::NoModel ||
                                         s.status.state == WorkerState::Failed || s.status.state == WorkerState::Ready;
                    if (idle && (b_done || refused))
                        ready = true;
                } else if (idle && (seen >= opt.step || stopped)) {
                    ready = true;
                }
                if (now_s() - t_start > 300.0) {  // a 5-minute ceiling so CI never hangs on a broken engine
                    std::fprintf(stderr, "dyllm-studio: timed out waiting for %d engine steps (got %d)\n", opt.step,
                                 seen);
                    ready = true;
                    rc    = 3;
                }
            }

            ImGui_ImplOpenGL3_NewFrame();
            ImGui_ImplGlfw_NewFrame();
            // Headless runs: the X server's pointer sits mid-screen; keep it off the window so no tooltip covers a panel.
            if (headless) ImGui::GetIO().MousePos = ImVec2(-FLT_MAX, -FLT_MAX);
            ImGui::NewFrame();
            int fb_w = 0, fb_h = 0;
            glfwGetFramebufferSize(win, &fb_w, &fb_h);
            const ImVec2 disp = ImGui::GetIO().DisplaySize;
            const double t_ui0 = now_s();
            draw_studio(s, disp.x, disp.y);
            ImGui::Render();
            const double t_ui1 = now_s();
            glViewport(0, 0, fb_w, fb_h);
            glClearColor(0.05f, 0.05f, 0.06f, 1.f);
            glClear(GL_COLOR_BUFFER_BIT);
            ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());

            if (!s.png_request.empty()) {
                std::string err;
                if (write_window_png(win, s.png_request, &err)) {
                    s.notice       = "wrote " + s.png_request;
                    s.notice_until = now_s() + 4.0;
                } else {
                    s.message = "PNG export failed: " + err;
                }
                s.png_request.clear();
            }
            if (shot && ready && ++frames_after_ready >= opt.frames) {
                std::string err;
                if (!write_window_png(win, opt.screenshot, &err)) {
                    std::fprintf(stderr, "dyllm-studio: %s\n", err.c_str());
                    rc = 1;
                } else {
                    std::printf("dyllm-studio: wrote %s (%dx%d) at step %d\n", opt.screenshot.c_str(), fb_w, fb_h,
                                s.view_step);
                }
                if (!opt.export_dir.empty())
                    for (const auto& f : s.export_all(opt.export_dir)) std::printf("dyllm-studio: wrote %s\n", f.c_str());
                if (!s.message.empty()) std::fprintf(stderr, "dyllm-studio: message bar: %s\n", s.message.c_str());
                if (rc == 0 && (s.status.state == WorkerState::NoModel || s.status.state == WorkerState::Failed ||
                                s.status.state == WorkerState::Ready))
                    rc = 2;  // the PNG shows the error, but the requested run did not happen
                glfwSetWindowShouldClose(win, 1);
            }
            glfwSwapBuffers(win);
            if (opt.bench_frames > 0 && bench_done > 10) {
                ui_ms.push_back((t_ui1 - t_ui0) * 1e3);
                vtx += ImGui::GetDrawData()->TotalVtxCount;
                render_ms.push_back((now_s() - t_ui1) * 1e3);
            }

            const double t_now = now_s();
            s.frame_ms         = float((t_now - t_prev) * 1e3);
            s.frame_ms_avg     = s.frame_ms_avg == 0 ? s.frame_ms : 0.95f * s.frame_ms_avg + 0.05f * s.frame_ms;
            t_prev             = t_now;
            if (opt.bench_frames > 0) {
                // Keep the model generating for the whole benchmark: restart a finished run.
                if (s.status.run_done && s.status.run_serial != bench_restarted) {
                    bench_restarted = s.status.run_serial;  // once per finished run, not every frame until it starts
                    s.restart(true);
                }
                if (bench_done++ > 10) stats.ms.push_back(s.frame_ms);  // skip warm-up frames (font atlas, shaders)
                if (int(stats.ms.size()) >= opt.bench_frames) {
                    stats.print();
                    auto mean = [](const std::vector<double>& v) {
                        double t = 0;
                        for (double x : v) t += x;
                        return v.empty() ? 0.0 : t / double(v.size());
                    };
                    std::printf("per frame: UI build %.2f ms, GL render + swap %.2f ms (means), %.0f vertices\n",
                                mean(ui_ms), mean(render_ms), vtx / std::max<size_t>(ui_ms.size(), 1));
                    const RunEntry* lv = s.live();
                    std::printf("engine: %d steps seen in the newest run, %llu runs started, events dropped %llu\n",
                                lv ? lv->history.steps_ended() : 0, (unsigned long long)s.status.run_serial,
                                (unsigned long long)s.worker.sink().dropped());
                    glfwSetWindowShouldClose(win, 1);
                }
            }
        }
    }  // the Studio (and its worker thread) goes before the GL context

    ImGui_ImplOpenGL3_Shutdown();
    ImGui_ImplGlfw_Shutdown();
    ImGui::DestroyContext();
    glfwDestroyWindow(win);
    glfwTerminate();
    return rc;
}
