// dyllm-studio's UI state (one Studio object, touched only by the main thread) and the panel entry points, one
// view_<panel>.cpp each (Tracy's shape). Panels draw from RunHistory at the shown step, never from engine memory.
#pragma once
#include <cstdint>
#include <memory>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "app/model/compare_pick.h"
#include "app/model/key_routing.h"
#include "app/model/layout.h"
#include "app/model/op_stats.h"
#include "app/model/paper_preset.h"
#include "app/model/run_history.h"
#include "app/model/run_list.h"
#include "app/model/suite_sweep_job.h"
#include "app/model/tau_sweep.h"
#include "app/model/task_examples.h"
#include "app/model/timed_notice.h"
#include "app/model/vocab.h"
#include "app/studio/engine_worker.h"

namespace dyllm::app {

// Command-line options (main.cpp).
struct StudioOptions {
    std::string              model;             // -m; empty = built-in tiny-llada
    std::string              backend = "cpu";   // --backend cpu|cuda|auto
    std::string              prompt;            // -p
    std::string              screenshot;        // --screenshot FILE
    int                      frames       = 5;  // --frames N
    int                      step         = 0;  // --step K
    int                      bench_frames = 0;  // --bench-frames N
    int                      width = 1600, height = 1000;
    int                      threads = 0;
    float                    speed   = -1;     // --speed: steps/s limit (0 = unlimited; -1 = not given, see play_speed)
    bool                     compare = false;  // --compare: original vs current settings, Compare window open
    std::string              export_dir;       // --export-dir: headless runs write every export there before exiting
    float                    ui_scale = 1.f;   // --ui-scale
    bool                     sweep    = false;  // --sweep: run the Tune tab's tau sweep at start (and open the tab)
    std::string              sweep_task;        // --sweep-task: run the Tune tab's task-suite sweep at start instead
    int                      sweep_limit = SuiteTune::kDefaultLimit;  // --sweep-limit: its items per task
    std::string              sweep_taus;                  // --sweep-tau: its tau list ("" = default_suite_taus())
    bool                     sweep_every_method = false;  // --sweep-all-methods: every method in it, once each
    std::string              tab;     // --tab: the bottom band's tab to open first (time, op-stats, tune)
    std::vector<std::string> open;    // --open: windows shown at start (explain, export, compare)
    std::string              preset;  // --preset: "paper-regime" (app/model/paper_preset.h), "" = none
    int                      preset_nu = kPaperRegime.n_u;  // --preset-nu: its tokens per step (1, 2 or 4)
    std::string              select_op;  // --select-op: the Op stats row selected at start ("gate", "gate L3")
    DiffusionParams          params;     // the diffusion flags (engine/params.h), resolved and validated
};

// Interactive play speed when --speed is not given: slow enough to watch each step (a 64-step run takes ~18 s).
constexpr float kWatchableSpeed = 3.5f;
// The play speed a session starts with: --speed when given; otherwise kWatchableSpeed interactively and unlimited in
// the headless modes (--screenshot, --bench-frames), so tests and benchmarks stay fast.
float play_speed(const StudioOptions& o);

// DyLLM's stable-row update as the Controls bar offers it (engine/README.md §a.13), in combo order.
enum class StableUpdateUi : int { Authors, Incremental, Columns, Exact };
inline constexpr const char* kStableUpdateNames[] = {"authors' approx", "incremental", "columns (paper)",
                                                     "exact (ablation)"};
StableUpdateUi               stable_update_of(const DiffusionParams& p);
void                         set_stable_update(DiffusionParams& p, StableUpdateUi u);

// Knobs of the Controls bar (applied on restart, except tau which is live).
struct UiParams {
    int             model_idx       = 0;  // 0 tiny-llada, 1 tiny-dream, 2 path
    char            model_path[512] = {};
    int             backend_idx     = 0;  // cpu, cuda, auto
    int             method_idx      = 1;  // index into method_combo_items()
    float           tau             = 0.99f;
    bool            tau_set         = false;  // user chose tau (otherwise the family default)
    int             full_steps      = 4;
    int             update_idx      = 0;  // DyLLM's stable-row update: StableUpdateUi (engine/README.md §a.13)
    int             gen_length      = 64;
    int             steps           = 64;
    int             block_length    = 32;
    bool            use_threshold   = false;
    float           conf_threshold  = 0.9f;
    float           speed           = 0;     // steps per second limit; 0 = unlimited
    bool            measure_cosine  = true;  // histograms for methods without saliency
    bool            chat            = true;
    DiffusionParams base;  // the flags' settings; the knobs popup edits the methods' other knobs (kp, ...) here
};

// The bottom band's tabs (view_time.cpp). Compare widens the band over the plot bands; the others keep its size.
enum class BottomTab : int { Time, OpStats, Tune, Kernels, Compare, Why, Token, Explain };
// Compare and Why widen the band over the plot bands (two canvases; three runs' curves and their table).
inline bool wide_tab(BottomTab t) {
    return t == BottomTab::Compare || t == BottomTab::Why;
}

// The bottom band's tabs in tab-bar order, each with its --tab name and its label: the flag and the tab bar read this
// one table.
struct BottomTabName {
    BottomTab   tab;
    const char* flag;   // --tab value
    const char* label;  // tab bar label (also the tab's ImGui id)
};
inline constexpr BottomTabName kBottomTabs[] = {{BottomTab::Time, "time", "Time"},
                                                {BottomTab::OpStats, "op-stats", "Op stats"},
                                                {BottomTab::Kernels, "gpu-kernels", "GPU kernels"},
                                                {BottomTab::Tune, "tune", "Tune"},
                                                {BottomTab::Compare, "compare", "Compare"},
                                                {BottomTab::Why, "why", "Why"},
                                                {BottomTab::Token, "token-history", "Token history"},
                                                {BottomTab::Explain, "explain", "Explain"}};
const BottomTabName&           bottom_tab_name(BottomTab t);

// The Time panel timeline's zoom: the visible fraction [offset, offset + 1/zoom] of the steps it lays out, for the
// step range [lo, hi] (another range starts unzoomed).
struct TimelineZoom {
    float  zoom = 1.f, offset = 0.f;
    int    lo = -1, hi = -1;
    double sel0 = -1, sel1 = -1;  // Shift+drag: the selected range in laid-out ns (sel0 < 0: none)
};

struct Studio {
    explicit Studio(const StudioOptions& o);

    StudioOptions opts;
    EngineWorker  worker;
    UiParams      ui;
    char          prompt[4096] = {};
    TaskExamples  examples;
    int           example_idx  = -1;  // prompt came from this task example (for accuracy), -1: typed
    bool          params_dirty = false;

    // Runs, rebuilt from the event stream (RunBegin.label finds the request); the newest is the live one.
    RunList   runs;
    RunEntry* live() { return runs.newest(); }
    RunEntry* shown_run();         // the run the panels show (live unless one was picked in Compare)
    int       shown_run_idx = -1;  // -1: live

    // View state.
    int               view_step      = 0;  // step the panels show
    bool              follow_live    = true;
    int               seq            = 0;   // shown sequence
    int               selected_token = -1;  // response position whose history is open
    TokenSaliencyGrid token_grid;
    int               token_grid_steps = -1;
    int               salient_mode     = 0;  // 0: layers x positions (this step), 1: steps x positions (one layer)
    int               salient_layer    = 0;
    bool              hist_log_y       = false;
    bool              lsal_log_y       = false;
    bool              time_log_y       = false;      // linear: bar heights are times (log mode scales each bar's total)
    int               drift_mean       = 0;          // Drift over steps: 0 the lowest cosine per layer, 1 the mean
    BottomTab         bottom_tab = BottomTab::Time;  // the bottom band's tab shown (its tab bar reports it every frame)
    int               tab_request   = -1;  // a BottomTab to select on the next frame (buttons, --tab, --open...)
    int               token_tab_for = -1;  // selected_token the Token tab was last opened for
    int               explain_entry = -1;  // Explain tab: the entry shown (-1: the one-line overview)
    void              select_tab(BottomTab t) {
                     bottom_tab  = t;
                     tab_request = int(t);
    }
    float        bottom_frac = kBottomDefault;  // bottom band's share of the body (splitter above it)
    float        ui_scale    = 1.f;             // text and widget scale (Ctrl +/-, View menu)
    int          time_steps  = 1;               // steps laid back to back in the Time panel's timeline
    TimelineZoom timeline_zoom;
    float        cmp_tau_b             = 0.98f;  // Compare: tau of run B for "current tau vs tau B"
    bool         salient_response_only = false;  // Salient map: response positions only
    char         op_filter[64]         = {};     // Op stats find box
    bool         stats_by_layer = false, stats_whole_run = true;
    int          stats_sort_col          = 0;  // StatColumn (app/model/op_stats.h)
    bool         stats_sort_asc          = true;
    bool         stats_exclude_preempted = false;  // Op stats: leave preempted samples out (app/model/op_preempt.h)
    int          stats_sel_name  = -1;  // Op stats: the OpName of the row whose duration histogram shows (-1: none)
    int          stats_sel_layer = -2;  // and its layer (OpStat::layer: -2 every layer)
    bool         show_export     = false;
    ComparePick  cmp_pick;  // the runs Compare shows (by label)
    ComparePair  compare_pair() const { return resolve_compare(runs, cmp_pick); }
    bool         compare_queued = false;  // second compare run waits for the first to finish
    StartRequest compare_second;
    RunRequest   compare_second_request;
    std::string  compare_labels[2];        // labels of the newest comparison's (first) pair A and B
    std::string  compare_flight[2];        // labels of the pair running now (the first, then each repetition)
    int          cmp_step        = -1;     // Compare's lock-step slider; -1 follows the newest step of the pair
    bool         cmp_follow      = true;   // "follow newest" (moving the slider clears it)
    bool         cmp_playing     = false;  // Compare's replay plays the pair from step 0
    double       cmp_play_t      = 0;      // now_s() of the last replay advance
    int          cmp_op_grouping = 0;      // Compare's op times: 0 per op class, 1 per op name, 2 per op and layer
    float        tau_drag        = NAN;    // tau while a histogram line is being dragged
    bool         keyboard_nav    = false;  // keyboard navigation mode (Tab on, Escape or a click off)
    bool         arrows_taken    = false;  // a tau slider took the arrow keys this frame (the scrubber skips them)
    TauSweep     sweep;                    // Tune panel: original + dyllm at a few taus on the current prompt
    std::string  sweep_label;              // label of the sweep run in flight ("" when none)
    int          sweep_run       = -1;     // its index in the sweep (0: the original reference)
    bool         tune_suite_mode = false;  // Tune panel shows the task-suite sweep (else the one-prompt sweep)
    SuiteTune    suite;                    // the task-suite sweep: settings and the job the worker runs

    // Per-frame copies from the worker.
    WorkerStatus                 status;
    std::shared_ptr<const Vocab> vocab;
    uint64_t                     seen_error_serial = 0;
    std::string                  message;  // red message bar text ("" = hidden)
    TimedNotice                  notice;   // green notice (exports), on the steady clock of now_s()

    // Export requests handled by main.cpp after rendering (glReadPixels).
    std::string png_request;
    char        export_dir[512] = {};  // Export window's folder: --export-dir, else the working directory (absolute)

    // Frame timing (end_frame).
    float  frame_ms = 0, frame_ms_avg = 0;
    double frame_t_prev = 0;

    // ---- actions ----
    void         load_selected_model();
    void         open(bool autoplay);  // loads the model and starts the first run (--compare: the comparison)
    void         restart(bool autoplay = true);
    StartRequest make_request(bool autoplay) const;
    RunRequest   make_run_request(const std::string& tag) const;  // prompt and expected answer of the current prompt
    void         start_run(StartRequest req, RunRequest what);    // labels the request and hands it to the worker
    void         pump_events(double budget_ms);                   // pops QueueSink events into the live RunHistory
    void         begin_frame();       // status copy, message bar, compare sequencing, follow-live
    void         refresh_status();    // status copy; a new worker error goes to the message bar
    void         end_frame();         // frame time (shown in the scrubber bar)
    bool         compare_finished();  // the newest comparison's last pair has run B's RunEnd (every pair is in)
    bool         flight_finished();   // run B of the pair running now has its RunEnd
    std::string  model_spec() const;
    void         show_notice(std::string text);  // green notice for TimedNotice::kDefaultSeconds
    bool         working();                      // engine playing or loading, events queued or a comparison pending
    // Transport, shared by the Controls bar's buttons and the keys (view.cpp): play (a finished run, a fresh one or
    // changed knobs start a new run), one step, restart. Without a model each says so on the message bar.
    void play();
    void step();
    void restart_or_explain();
    bool explain_no_model();  // true (and a message) when there is no model to run
    // Two runs of the current prompt, B started after A finishes: original vs current settings (original_a), or the
    // current settings vs the same with tau = tau_b. Both run at full speed; when the play speed is limited (someone
    // watches), the pair then replays in lock step at that speed.
    void start_compare(bool original_a, float tau_b);
    bool compare_replay_pending = false;  // the comparison runs at full speed; replay it once run B has ended
    // Repetitions: the pair runs compare_reps times (A, B, A, B, ...); Compare shows the first pair and the median
    // and range of every pair's speed-up (app/model/compare_reps.h).
    int compare_reps        = 3;
    int compare_rep         = 0;  // the pair running now (0-based)
    int compare_reps_active = 0;  // pairs of the comparison running now (0: none more; a restart or sweep ends it)
    StartRequest                                     compare_first;  // run A's request, for the next pair
    RunRequest                                       compare_first_request;
    std::vector<std::pair<std::string, std::string>> compare_rep_labels;  // (A, B) labels of every pair begun
    bool compare_more_reps() const { return compare_rep + 1 < compare_reps_active; }
    // Tau sweep of the current prompt at full speed (the play speed comes back when it ends); advance_sweep() runs
    // in begin_frame and starts each run once the previous one has ended.
    void start_sweep();
    void advance_sweep();
    // Task-suite sweep (Tune panel, suite mode): original, fast-dual and dyllm at the panel's taus on the panel's task
    // with the Controls bar's other settings, run by the worker as one background job (the live run pauses).
    void start_suite_sweep();
    // Writes every CSV table, the Chrome trace and the JSONL of the shown run into dir; returns the files written
    // (an error goes to the message bar, and each failed file's one-line reason to *failed).
    std::vector<std::string> export_all(const std::string& dir, std::vector<std::string>* failed = nullptr);
    Method                   method_ui() const;  // the Controls bar's method
    // The Why tab's three runs: original, Fast-dLLM's dual cache and DyLLM on the current prompt with the Controls
    // bar's other settings, one after another at full speed (the play speed comes back when the last one ends).
    static constexpr Method kWhyMethods[3] = {Method::Original, Method::FastDual, Method::DyLLM};
    std::string             why_labels[3];              // the newest trio's run labels ("" before it started)
    int                     why_next          = 3;      // the next of kWhyMethods to start (3: all started)
    bool                    why_speed_pending = false;  // a trio is under way: the play speed comes back at its end
    bool                    why_fit_cached    = true;   // the Why plots' y axes fit fast-dual and dyllm
    void                    start_why();
    void                    advance_why();  // in begin_frame: starts the next once the previous one has ended
    bool                    why_waiting();  // the trio's last started run has not ended yet
    void                    end_why();      // a comparison or a sweep takes over: no more of the trio's runs
    // The paper-regime preset (Controls bar, --preset paper-regime): its knobs, the 4-shot prompt, then the trio.
    int  preset_nu_idx = 0;  // index into kPaperRegimeNu
    void apply_paper_regime(int n_u);
};

// Method names in the combo's order (the engine's registry, engine/methods/method_list.def).
std::span<const char* const> method_combo_items();
int                          method_combo_index(Method m);  // UiParams::method_idx of m

// ---- panels (app/studio/view_*.cpp) ----
void draw_controls(Studio& s, const Rect& r);
void draw_prompt(Studio& s, const Rect& r);
void draw_canvas(Studio& s, const Rect& r);
void draw_token_history(Studio& s);  // the Token tab's content
void draw_summary(Studio& s, const Rect& r);
void draw_cosine(Studio& s, const Rect& r);
void draw_salient(Studio& s, const Rect& r);
void draw_lsal(Studio& s, const Rect& r);
void draw_drift(Studio& s, const Rect& r);
void draw_time(Studio& s, const Rect& r);  // the bottom band's tabs (BottomTab)
void draw_tune(Studio& s);
void draw_scrubber(Studio& s, const Rect& r);
void draw_explain(Studio& s);  // the Explain tab's content
void draw_compare(Studio& s);
void draw_why(Studio& s);  // the Why tab: FLOPs and time per step kind of the trio (view_why.cpp)
void draw_export(Studio& s);
// Export helpers (view_export.cpp): the Chrome trace as the studio writes it (op names, preempted flags, the waits
// between steps cut), the Op stats table with the tab's settings, and one file written to the Export folder (the
// notice or the message bar says how it went).
void                write_trace(std::ostream& os, const RunHistory& h);
std::vector<OpStat> shown_op_stats(const Studio& s, const RunHistory& h);
void                write_text_export(Studio& s, const std::string& name, const std::string& text);
std::string         export_stamp();  // the date-time tag of export file names, "20260101-120000"
void                draw_studio(Studio& s, float width, float height);  // the whole frame (view.cpp)
constexpr float     kUiScaleMin = 0.8f, kUiScaleMax = 1.8f;
void                set_ui_scale(Studio& s, float scale);  // text and bar sizes (Ctrl +/-/0 and the View menu)
KeyContext          key_context(const Studio& s);  // this frame's key routing (app/model/key_routing.h; view.cpp)

// Drift (view_drift.cpp): whether the run measured it (measure_drift), and a layer's approximated rows below tau.
bool    drift_measured(const RunHistory& h);
int32_t drift_below_tau(const LayerSaliencyRecord& rec);

// Short teaching text of a panel (view_explain.cpp), also shown as the "(?)" tooltip in each panel's title row.
const char* explain_text(const char* panel);
double      now_s();  // steady clock in seconds: the one clock of the studio's timers
void        help_marker(const char* panel);

}  // namespace dyllm::app
