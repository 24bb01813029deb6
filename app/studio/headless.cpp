// Headless screenshot/export and frame benchmark modes of dyllm-studio (see headless.h).
#include "app/studio/headless.h"

#include <GLFW/glfw3.h>
#include <imgui.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>

#include "app/studio/window_png.h"

namespace dyllm::app {

namespace {

double mean(const std::vector<double>& v) {
    double t = 0;
    for (double x : v) t += x;
    return v.empty() ? 0.0 : t / double(v.size());
}

void print_frame_stats(const std::vector<double>& ms) {
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

// The worker has no model or no run: the PNG shows the error, but the requested run did not happen.
bool run_refused(WorkerState st) {
    return st == WorkerState::NoModel || st == WorkerState::Failed || st == WorkerState::Ready;
}

}  // namespace

Headless::Headless(const StudioOptions& o) : o_(o), shot_(!o.screenshot.empty()), bench_(o.bench_frames > 0) {
    ready_ = !shot_;
}

void Headless::start(Studio& s) {
    t_start_ = now_s();
    // Screenshot: K steps one by one (paused), then render. Bench: play at once. Compare: both runs play to the end.
    s.open(!shot_);
    if (shot_ && !o_.compare && !o_.sweep && o_.sweep_task.empty() && o_.preset.empty())
        for (int k = 0; k < o_.step; ++k) s.worker.step_once();
}

void Headless::before_frame(Studio& s) {
    if (!shot_ || ready_) return;
    // Ready once the worker is idle and the history shows the K steps (or the run/model stopped early).
    const RunEntry* lv   = s.live();
    const int       seen = lv ? lv->history.steps_ended() : 0;
    const bool      idle = !s.worker.busy() && s.worker.sink().queued() == 0;
    // Re-read the status after seeing the worker idle: the copy from begin_frame() may predate its last command
    // (e.g. still "ready" from the load while the start was executing).
    s.status = s.worker.status();
    if (!o_.sweep_task.empty()) {
        // Ready when the suite sweep's job has ended (or was never accepted: a bad setting is in the message bar).
        if (idle && (!s.suite.job || s.suite.job->finished())) ready_ = true;
        // Meanwhile 20 frames/s show the progress; the rest of the CPU goes to the runs being timed.
        else
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
    } else if (!o_.preset.empty()) {
        // Ready when the Why tab's three runs have ended (or one was refused: the trio stops).
        if (idle && !s.why_speed_pending) ready_ = true;
    } else if (o_.sweep) {
        if (idle && !s.sweep.active()) ready_ = true;
    } else if (o_.compare) {
        // Ready when run B of the comparison has its RunEnd (or the runs were refused).
        if (idle && (s.compare_finished() || run_refused(s.status.state))) ready_ = true;
    } else if (idle && (seen >= o_.step || run_refused(s.status.state) || s.status.run_done)) {
        ready_ = true;
    }
    if (now_s() - t_start_ > 300.0) {  // a 5-minute ceiling so CI never hangs on a broken engine
        std::fprintf(stderr, "dyllm-studio: timed out waiting for %d engine steps (got %d)\n", o_.step, seen);
        ready_ = true;
        rc_    = 3;
    }
}

void Headless::ui_begin() {
    t_ui0_ = now_s();
}
void Headless::ui_end() {
    t_ui1_ = now_s();
}

bool Headless::after_render(Studio& s, GLFWwindow* win) {
    if (!shot_ || !ready_ || ++frames_after_ready_ < o_.frames) return false;
    std::string err;
    if (!write_window_png(win, o_.screenshot, &err)) {
        std::fprintf(stderr, "dyllm-studio: %s\n", err.c_str());
        rc_ = 1;
    } else {
        int fb_w = 0, fb_h = 0;
        glfwGetFramebufferSize(win, &fb_w, &fb_h);
        std::printf("dyllm-studio: wrote %s (%dx%d) at step %d\n", o_.screenshot.c_str(), fb_w, fb_h, s.view_step);
    }
    if (!o_.export_dir.empty()) {
        std::vector<std::string> failed;
        for (const auto& f : s.export_all(o_.export_dir, &failed)) std::printf("dyllm-studio: wrote %s\n", f.c_str());
        for (const auto& f : failed) std::fprintf(stderr, "dyllm-studio: export failed: %s\n", f.c_str());
        if (!failed.empty() && rc_ == 0) rc_ = 1;
    }
    if (!s.message.empty()) std::fprintf(stderr, "dyllm-studio: message bar: %s\n", s.message.c_str());
    if (rc_ == 0 && run_refused(s.status.state)) rc_ = 2;
    if (!o_.sweep_task.empty()) {  // the suite sweep is the requested run here
        const SuiteSweepState st = s.suite.job ? s.suite.job->state() : SuiteSweepState{};
        if (!st.error.empty())
            std::fprintf(stderr, "dyllm-studio: %s\n", st.error.c_str());
        else
            std::printf("dyllm-studio: task sweep: %d runs in %.1f s\n", st.done, st.elapsed_s);
        if (rc_ == 0 && (!s.suite.job || !st.error.empty() || st.done < st.runs)) rc_ = 2;
    }
    return true;
}

bool Headless::after_swap(Studio& s) {
    if (!bench_) return false;
    if (bench_done_ > 10) {  // the same frames as frame_ms_ below: warm-up frames (font atlas, shaders) skipped
        ui_ms_.push_back((t_ui1_ - t_ui0_) * 1e3);
        vtx_ += ImGui::GetDrawData()->TotalVtxCount;
        render_ms_.push_back((now_s() - t_ui1_) * 1e3);
    }
    // Keep the model generating for the whole benchmark: restart a finished run.
    if (s.status.run_done && s.status.run_serial != bench_restarted_) {
        bench_restarted_ = s.status.run_serial;  // once per finished run, not every frame until it starts
        s.restart(true);
    }
    if (bench_done_++ > 10) frame_ms_.push_back(s.frame_ms);
    if (int(frame_ms_.size()) < o_.bench_frames) return false;
    print_frame_stats(frame_ms_);
    std::printf("per frame: UI build %.2f ms, GL render + swap %.2f ms (means), %.0f vertices\n", mean(ui_ms_),
                mean(render_ms_), vtx_ / double(std::max<size_t>(ui_ms_.size(), 1)));
    const RunEntry* lv = s.live();
    std::printf("engine: %d steps seen in the newest run, %llu runs started, events dropped %llu\n",
                lv ? lv->history.steps_ended() : 0, (unsigned long long)s.status.run_serial,
                (unsigned long long)s.worker.sink().dropped());
    return true;
}

}  // namespace dyllm::app
