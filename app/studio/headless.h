// dyllm-studio's headless modes, kept out of the frame loop: --screenshot FILE --frames N [--step K] [--export-dir D]
// (run K engine steps, or the --sweep / --sweep-task sweep, render N frames, write the PNG and the exports, exit) and
// --bench-frames N (render N frames while the engine generates, print frame-time statistics, exit).
#pragma once
#include <vector>

#include "app/studio/studio.h"

struct GLFWwindow;

namespace dyllm::app {

class Headless {
public:
    explicit Headless(const StudioOptions& o);

    bool enabled() const { return shot_ || bench_; }  // a headless mode is on: no mouse, fixed size, exit when done
    bool benchmarking() const { return bench_; }      // vsync off, so frame times measure our work

    // Loads the model and starts the first run: a screenshot steps K times while paused, otherwise it plays.
    void start(Studio& s);
    // Hooks around one frame of the loop; after_render/after_swap return true when the app should close.
    void before_frame(Studio& s);  // screenshot: is the requested state reached?
    void ui_begin();
    void ui_end();
    bool after_render(Studio& s, GLFWwindow* win);  // screenshot and exports, once ready and N frames drawn
    bool after_swap(Studio& s);                     // bench: collect, restart finished runs, print the statistics

    int exit_code() const { return rc_; }  // 0; 1 no PNG or an export failed; 2 the run did not happen; 3 timed out

private:
    const StudioOptions& o_;
    bool                 shot_ = false, bench_ = false;
    bool                 ready_              = false;
    int                  frames_after_ready_ = 0;
    int                  rc_                 = 0;
    double               t_start_            = 0;
    // bench
    double              t_ui0_ = 0, t_ui1_ = 0;
    std::vector<double> frame_ms_, ui_ms_, render_ms_;
    double              vtx_             = 0;
    int                 bench_done_      = 0;
    uint64_t            bench_restarted_ = 0;
};

}  // namespace dyllm::app
