// Studio: UI-thread state and actions (model load, restart, event pumping into the run history, per-frame status).
#include "app/studio/studio.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <thread>
#include <utility>

#include "app/model/engine_threads.h"
#include "app/model/task_suite.h"

namespace dyllm::app {

std::span<const char* const> method_combo_items() {
    static const std::vector<const char*> names = [] {
        std::vector<const char*> v;
        for (Method m : all_methods()) v.push_back(method_name(m));
        return v;
    }();
    return names;
}

int method_combo_index(Method m) {
    const auto methods = all_methods();
    return int(std::find(methods.begin(), methods.end(), m) - methods.begin());
}

const BottomTabName& bottom_tab_name(BottomTab t) {
    static_assert(std::size(kBottomTabs) == size_t(BottomTab::Explain) + 1, "kBottomTabs lists every BottomTab");
    for (const BottomTabName& n : kBottomTabs)
        if (n.tab == t) return n;
    return kBottomTabs[0];
}

double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

float play_speed(const StudioOptions& o) {
    if (o.speed >= 0) return o.speed;
    return o.screenshot.empty() && o.bench_frames == 0 ? kWatchableSpeed : 0.f;
}

namespace {

// Default prompt when neither -p nor a task suite is there.
constexpr const char* kFallbackPrompt = "What is 27 + 45? Show the column sums.";

}  // namespace

Studio::Studio(const StudioOptions& o) : opts(o) {
    // Model choice.
    if (o.model.empty() || o.model == "tiny-llada")
        ui.model_idx = 0;
    else if (o.model == "tiny-dream")
        ui.model_idx = 1;
    else {
        ui.model_idx = 2;
        std::snprintf(ui.model_path, sizeof ui.model_path, "%s", o.model.c_str());
    }
    ui.backend_idx           = o.backend == "cuda" ? 1 : o.backend == "auto" ? 2 : 0;
    const DiffusionParams& p = o.params;
    ui.method_idx            = method_combo_index(p.method);
    if (std::isfinite(p.tau)) {
        ui.tau     = p.tau;
        ui.tau_set = true;
    }
    ui.speed        = play_speed(o);
    ui.full_steps   = p.full_steps;
    ui.update_idx   = int(stable_update_of(p));
    ui.gen_length   = p.gen_length;
    ui.steps        = p.steps;
    ui.block_length = p.block_length;
    if (!std::isnan(p.conf_threshold)) {
        ui.use_threshold  = true;
        ui.conf_threshold = p.conf_threshold;
    }
    ui.measure_cosine = ui.measure_cosine || p.measure_cosine;
    ui.base           = p;
    const auto tasks  = find_tasks_dir(resolve_model_path(o.model));  // the model's own suite, else the shipped one
    if (!tasks.empty()) examples = load_task_examples(tasks);
    if (!o.prompt.empty()) {
        std::snprintf(prompt, sizeof prompt, "%s", o.prompt.c_str());
    } else if (!examples.items.empty()) {
        example_idx = 0;
        std::snprintf(prompt, sizeof prompt, "%s", examples.items[0].prompt.c_str());
    } else {
        std::snprintf(prompt, sizeof prompt, "%s", kFallbackPrompt);
    }
    std::error_code ec;
    auto            dir = std::filesystem::absolute(o.export_dir.empty() ? "." : o.export_dir, ec).lexically_normal();
    if (!dir.has_filename() && dir.has_parent_path() && dir != dir.root_path()) dir = dir.parent_path();  // no "x/"
    std::snprintf(export_dir, sizeof export_dir, "%s", ec ? "." : dir.string().c_str());
    for (const std::string& w : o.open) {
        show_export = show_export || w == "export";
        if (w == "explain") select_tab(BottomTab::Explain);
        if (w == "compare") select_tab(BottomTab::Compare);
    }
    for (const BottomTabName& t : kBottomTabs)
        if (o.tab == t.flag) select_tab(t.tab);
    if (!o.select_op.empty()) parse_op_label(o.select_op, &stats_sel_name, &stats_sel_layer);
    worker.sink().set_wants_cosines(true);
    worker.sink().set_wants_op_timings(true);
}

StableUpdateUi stable_update_of(const DiffusionParams& p) {
    if (!p.approx) return StableUpdateUi::Exact;
    if (p.approx_incremental) return StableUpdateUi::Incremental;
    if (p.approx_columns) return StableUpdateUi::Columns;
    return StableUpdateUi::Authors;
}

void set_stable_update(DiffusionParams& p, StableUpdateUi u) {
    p.approx             = u != StableUpdateUi::Exact;
    p.approx_incremental = u == StableUpdateUi::Incremental;
    p.approx_columns     = u == StableUpdateUi::Columns;
}

std::string Studio::model_spec() const {
    if (ui.model_idx == 0) return opts.model.empty() ? std::string() : std::string("tiny-llada");
    if (ui.model_idx == 1) return "tiny-dream";
    return ui.model_path;
}

Method Studio::method_ui() const {
    return all_methods()[size_t(ui.method_idx)];
}

void Studio::load_selected_model() {
    const BackendKind bk = ui.backend_idx == 1   ? BackendKind::Cuda
                           : ui.backend_idx == 2 ? BackendKind::Auto
                                                 : BackendKind::Cpu;
    message.clear();
    worker.load_model(model_spec(), bk, studio_engine_threads(opts.threads, std::thread::hardware_concurrency()));
}

void Studio::open(bool autoplay) {
    load_selected_model();
    if (ui.speed > 0) worker.set_speed(ui.speed);
    if (opts.preset == "paper-regime")
        apply_paper_regime(opts.preset_nu);
    else if (opts.compare)
        start_compare(true, NAN);
    else
        restart(autoplay);
    if (opts.sweep) start_sweep();
    if (!opts.sweep_task.empty()) {  // --sweep-task/--sweep-limit/--sweep-tau: the Tune panel's suite settings
        for (size_t i = 0; i < std::size(kSuiteTasks); ++i)
            if (opts.sweep_task == kSuiteTasks[i]) suite.task_idx = int(i);
        suite.limit        = opts.sweep_limit;
        suite.every_method = opts.sweep_every_method;
        std::snprintf(suite.taus, sizeof suite.taus, "%s", opts.sweep_taus.c_str());
        tune_suite_mode = true;
        bottom_frac     = std::max(bottom_frac, 0.5f);  // the Tune band tall enough for the plot and its table
        start_suite_sweep();
    }
}

StartRequest Studio::make_request(bool autoplay) const {
    StartRequest r;
    r.prompt           = prompt;
    r.chat             = ui.chat;
    DiffusionParams& p = r.params;
    p                  = ui.base;
    p.gen_length       = ui.gen_length;
    p.steps            = ui.steps;
    p.block_length     = ui.block_length;
    p.conf_threshold   = ui.use_threshold ? ui.conf_threshold : NAN;
    p.method           = all_methods()[size_t(ui.method_idx)];
    p.tau              = ui.tau_set ? ui.tau : NAN;  // NaN: the engine picks the family default (0.99 / 0.995)
    p.full_steps       = ui.full_steps;
    set_stable_update(p, StableUpdateUi(ui.update_idx));
    // Methods without a saliency test still get the cosine histograms (one extra cosine per layer), so the panels
    // can show what DyLLM would decide; DyLLM computes them anyway.
    p.measure_cosine = ui.measure_cosine;
    r.autoplay       = autoplay;
    return r;
}

RunRequest Studio::make_run_request(const std::string& tag) const {
    RunRequest w;
    w.tag    = tag;
    w.prompt = prompt;
    if (example_idx >= 0 && size_t(example_idx) < examples.items.size())
        w.answer = examples.items[size_t(example_idx)].answer;
    return w;
}

void Studio::start_run(StartRequest req, RunRequest what) {
    what.prompt = req.prompt;
    req.label   = runs.expect(std::move(what));  // the engine carries it in the run's RunBegin
    worker.start(std::move(req));
}

void Studio::restart(bool autoplay) {
    message.clear();
    if (compare_replay_pending) {  // a comparison at full speed gives the play speed back
        compare_replay_pending = false;
        worker.set_speed(ui.speed);
    }
    compare_queued      = false;               // a restart replaces a comparison still waiting for its run B
    compare_reps_active = 0;                   // and its pairs still to come
    if (suite.running()) suite.job->cancel();  // and a suite sweep holding the engine (its points stay)
    if (sweep.active()) {                      // and a sweep
        sweep.cancel();
        sweep_label.clear();
        worker.set_speed(ui.speed);
    }
    if (why_speed_pending) {  // and the Why tab's runs still to come (the ones that ran stay in the run list)
        why_next          = 3;
        why_speed_pending = false;
        worker.set_speed(ui.speed);
    }
    start_run(make_request(autoplay), make_run_request(""));
    params_dirty   = false;
    follow_live    = true;
    shown_run_idx  = -1;
    selected_token = -1;
}

bool Studio::explain_no_model() {
    if (status.state != WorkerState::NoModel) return false;
    message = "no model loaded: pick tiny-llada or tiny-dream in the model box, or a checkpoint path and Load";
    return true;
}

void Studio::play() {
    if (explain_no_model() || status.state == WorkerState::Loading) return;
    if (status.state == WorkerState::Done || status.state == WorkerState::Ready || params_dirty)
        restart(true);
    else
        worker.play();
}

void Studio::step() {
    if (explain_no_model() || status.state == WorkerState::Loading) return;
    if (status.state == WorkerState::Done || status.state == WorkerState::Ready || params_dirty) restart(false);
    worker.step_once();
    follow_live = true;
}

void Studio::restart_or_explain() {
    if (explain_no_model() || status.state == WorkerState::Loading) return;
    restart(true);
}

void Studio::end_why() {
    if (!why_speed_pending) return;
    why_next          = 3;  // the runs already started stay in the run list
    why_speed_pending = false;
}

void Studio::start_compare(bool original_a, float tau_b) {
    end_why();  // one sequencer at a time drives the worker
    StartRequest a         = make_request(true);
    compare_second         = make_request(true);
    compare_second_request = make_run_request("compare-b");
    if (original_a)
        a.params.method = Method::Original;
    else
        compare_second.params.tau = tau_b;
    message.clear();
    RunRequest what       = make_run_request("compare-a");
    what.prompt           = a.prompt;
    compare_first         = a;
    compare_first_request = what;
    compare_rep           = 0;
    compare_reps          = std::clamp(compare_reps, 1, 10);
    compare_reps_active   = compare_reps;
    a.label               = runs.expect(std::move(what));
    compare_labels[0]     = a.label;
    compare_labels[1].clear();
    compare_flight[0] = a.label;
    compare_flight[1].clear();
    compare_rep_labels.assign(1, {a.label, ""});
    cmp_pick.start_pair(compare_labels[0]);  // shown as soon as its runs begin, never older runs meanwhile
    // A comparison is for its figures and its replay, not for waiting: both runs at full speed, then (when the play
    // speed is limited, i.e. someone watches) the pair replays at that speed.
    compare_replay_pending = ui.speed > 0;
    if (compare_replay_pending) worker.set_speed(0);
    worker.start(std::move(a));
    compare_queued = true;
    follow_live    = true;
    shown_run_idx  = -1;
    select_tab(BottomTab::Compare);
}

void Studio::start_why() {
    message.clear();
    compare_queued      = false;  // the trio replaces a comparison still to come
    compare_reps_active = 0;
    if (suite.running()) suite.job->cancel();
    if (sweep.active()) {
        sweep.cancel();
        sweep_label.clear();
    }
    for (std::string& l : why_labels) l.clear();
    why_next          = 0;
    why_speed_pending = true;
    params_dirty      = false;
    selected_token    = -1;
    worker.set_speed(0);  // the trio is for its costs, not for watching
    select_tab(BottomTab::Why);
    advance_why();
}

bool Studio::why_waiting() {
    for (int i = 2; i >= 0; --i) {
        if (why_labels[i].empty()) continue;
        const RunEntry* r = runs.find(why_labels[i]);
        // Not begun yet while the worker still holds the start; refused when the worker is idle with nothing queued.
        if (!r) return worker.busy() || worker.sink().queued() > 0;
        return !r->history.finished();
    }
    return false;
}

void Studio::advance_why() {
    if (!why_speed_pending || why_waiting()) return;
    // The previous run ended: a cancelled or refused one stops the trio (its error is on the message bar).
    const RunEntry* prev = why_next > 0 ? runs.find(why_labels[why_next - 1]) : nullptr;
    if (why_next >= 3 || (why_next > 0 && (!prev || prev->history.run_end().cancelled))) {
        why_next          = 3;
        why_speed_pending = false;
        worker.set_speed(ui.speed);  // the play speed comes back once the trio is over
        return;
    }
    StartRequest req     = make_request(true);
    req.params.method    = kWhyMethods[why_next];
    RunRequest what      = make_run_request("why");
    what.prompt          = req.prompt;
    req.label            = runs.expect(std::move(what));
    why_labels[why_next] = req.label;
    ++why_next;
    worker.start(std::move(req));
    follow_live   = true;
    shown_run_idx = -1;
}

void Studio::apply_paper_regime(int n_u) {
    if (!paper_regime_nu_ok(n_u)) n_u = kPaperRegime.n_u;
    for (size_t i = 0; i < std::size(kPaperRegimeNu); ++i)
        if (kPaperRegimeNu[i] == n_u) preset_nu_idx = int(i);
    ui.gen_length    = kPaperRegime.gen_length;
    ui.block_length  = kPaperRegime.block_length;
    ui.steps         = paper_regime_steps(n_u);
    ui.use_threshold = false;  // n_u tokens every step: the step kinds' counts follow from the knobs alone
    // The tiny models end their answers early; decoding past the end of text keeps all 256 positions and 8 blocks.
    ui.base.ignore_eos = kPaperRegime.ignore_eos;
    ui.method_idx      = method_combo_index(Method::DyLLM);
    if (const int i = paper_regime_item(examples.items); i >= 0) {
        example_idx = i;
        std::snprintf(prompt, sizeof prompt, "%s", examples.items[size_t(i)].prompt.c_str());
    }
    bottom_frac = std::max(bottom_frac, 0.5f);  // the Why tab's curves and table
    start_why();                                // the last of its runs (DyLLM) is the live one afterwards
}

void Studio::start_sweep() {
    end_why();
    message.clear();
    compare_queued      = false;
    compare_reps_active = 0;
    sweep.begin(default_sweep_taus());
    sweep_label.clear();
    worker.set_speed(0);  // the sweep is for its points, not for watching
    advance_sweep();
}

void Studio::start_suite_sweep() {
    if (suite.running() || sweep.active()) return;
    if (why_speed_pending) {  // the trio's runs would fight the job for the engine
        end_why();
        worker.set_speed(ui.speed);
    }
    try {
        auto job  = std::make_shared<SuiteSweepJob>(suite_request(suite, make_request(false).params));
        suite.job = job;
        worker.pause();  // the engine is the sweep's until it ends
        worker.run_job([job](const Model* m) { job->run(m); });
    } catch (const std::exception& e) {  // InputError: a bad tau list
        message = e.what();
    }
}

void Studio::advance_sweep() {
    if (!sweep.active()) return;
    if (!sweep_label.empty()) {
        const RunEntry* r = runs.find(sweep_label);
        if (r && r->history.finished()) {
            const RunHistory& h = r->history;
            SweepPoint        p;
            p.reference          = h.info().method == "original";
            p.tau                = p.reference ? NAN : sweep.tau_of(sweep_run);
            const RunSummary sum = h.summary();
            p.flops_fraction     = sum.flops_fraction;
            p.tokens_per_s       = sum.tokens_per_s;
            p.cancelled          = h.run_end().cancelled;
            if (!h.run_end().texts.empty()) p.text = h.run_end().texts[0];
            if (h.n_seq() > 0)
                for (const TokenInfo& t : h.tokens(0)) p.tokens.push_back(t.token);
            sweep.finished(&p);
            sweep_label.clear();
        } else if (!r && !worker.busy() && worker.sink().queued() == 0) {
            sweep.finished(nullptr);  // refused (bad settings): the error is in the message bar
            sweep_label.clear();
        } else {
            return;  // still running
        }
    }
    const int k = sweep.next();
    if (k < 0) {
        worker.set_speed(ui.speed);
        return;
    }
    StartRequest req  = make_request(true);
    req.params.method = k == 0 ? Method::Original : Method::DyLLM;
    if (k > 0) req.params.tau = sweep.tau_of(k);
    RunRequest what = make_run_request("sweep");
    what.prompt     = req.prompt;
    req.label       = runs.expect(std::move(what));
    sweep_label     = req.label;
    sweep_run       = k;
    worker.start(std::move(req));
    follow_live   = true;
    shown_run_idx = -1;
}

bool Studio::flight_finished() {
    const RunEntry* b = compare_flight[1].empty() ? nullptr : runs.find(compare_flight[1]);
    return b && b->history.finished();
}

bool Studio::compare_finished() {
    return !compare_queued && !compare_more_reps() && flight_finished();
}

RunEntry* Studio::shown_run() {
    if (shown_run_idx >= 0 && size_t(shown_run_idx) < runs.size()) return &runs[size_t(shown_run_idx)];
    return live();
}

void Studio::pump_events(double budget_ms) {
    const double t_end = now_s() + budget_ms * 1e-3;
    EventRecord  rec;
    int          n = 0;
    while (worker.sink().pop(rec)) {
        if (auto* err = std::get_if<ErrorRecord>(&rec)) message = err->where + ": " + err->message;
        const uint64_t dropped = runs.dropped_runs();
        if (runs.apply(rec)) {
            token_grid_steps = -1;
            if (runs.dropped_runs() != dropped) shown_run_idx = -1;  // indices moved (Compare picks by label)
        }
        // Check the clock every 64 events: a burst from a fast model must not stall the frame.
        if ((++n & 63) == 0 && now_s() > t_end) break;
    }
}

void Studio::refresh_status() {
    status = worker.status();
    if (status.error_serial != seen_error_serial) {
        seen_error_serial = status.error_serial;
        message           = status.error;
    }
}

void Studio::begin_frame() {
    refresh_status();
    vocab = worker.vocab();
    // Family default tau once a model is known, unless the user chose one.
    if (!ui.tau_set && status.family) ui.tau = default_tau(*status.family);

    // Run B of a comparison starts once run A has ended (its RunEnd is in); a cancelled or refused A drops B.
    if (compare_queued) {
        const RunEntry* a = runs.find(compare_flight[0]);
        if (a && a->history.finished()) {
            compare_queued = false;
            if (!a->history.run_end().cancelled) {
                StartRequest b    = compare_second;
                b.label           = runs.expect(compare_second_request);
                compare_flight[1] = b.label;
                if (!compare_rep_labels.empty()) compare_rep_labels.back().second = b.label;
                if (compare_rep == 0) {  // Compare shows the first pair
                    compare_labels[1] = b.label;
                    cmp_pick.pair_b_started(b.label);
                }
                worker.start(std::move(b));
            } else {
                cmp_pick.drop_pair();
                message = "comparison stopped: run A (" + compare_flight[0] + ") was cancelled before its end";
                if (compare_replay_pending) worker.set_speed(ui.speed);
                compare_replay_pending = false;
            }
        } else if (!a && !worker.busy() && worker.sink().queued() == 0) {
            // The worker finished the start (busy() is read first) and no RunBegin came: A was refused. The worker
            // set its error before busy() fell, perhaps after this frame's status copy: read it again, so the refusal
            // is on the message bar in the frame that drops the comparison.
            compare_queued = false;
            cmp_pick.drop_pair();
            refresh_status();
            if (compare_replay_pending) worker.set_speed(ui.speed);
            compare_replay_pending = false;
        }
    }
    // Run B of a pair ended and more pairs are asked for: the next pair's run A.
    if (!compare_queued && compare_more_reps() && flight_finished()) {
        const RunEntry* b = runs.find(compare_flight[1]);
        if (b && b->history.run_end().cancelled) {
            compare_reps_active = 0;  // a cancelled pair ends the repetitions
        } else {
            ++compare_rep;
            StartRequest a    = compare_first;
            a.label           = runs.expect(compare_first_request);
            compare_flight[0] = a.label;
            compare_flight[1].clear();
            compare_rep_labels.emplace_back(a.label, "");
            worker.start(std::move(a));
            compare_queued = true;
        }
    }
    // Both runs of the comparison's last pair are in: the play speed comes back and the first pair replays from 0.
    if (compare_replay_pending && compare_finished()) {
        compare_replay_pending = false;
        worker.set_speed(ui.speed);
        cmp_follow  = false;
        cmp_step    = 0;
        cmp_playing = true;
        cmp_play_t  = 0;
    }
    advance_sweep();
    advance_why();
    if (RunEntry* r = shown_run()) {
        const int last  = r->history.step_count();
        int       ended = last;
        while (ended > 0 && !r->history.step(ended)->ended) --ended;
        if (follow_live || view_step > last) view_step = ended;
        if (view_step < 0) view_step = 0;
    } else {
        view_step = 0;
    }
    notice.expire(now_s());
}

void Studio::show_notice(std::string text) {
    notice.show(std::move(text), now_s());
}

bool Studio::working() {
    return status.state == WorkerState::Playing || status.state == WorkerState::Loading || compare_queued ||
           sweep.active() || why_speed_pending || (bottom_tab == BottomTab::Compare && cmp_playing) ||
           worker.sink().queued() > 0;
}

void Studio::end_frame() {
    const double t_now = now_s();
    if (frame_t_prev > 0) {
        frame_ms     = float((t_now - frame_t_prev) * 1e3);
        frame_ms_avg = frame_ms_avg == 0 ? frame_ms : 0.95f * frame_ms_avg + 0.05f * frame_ms;
    }
    frame_t_prev = t_now;
}

}  // namespace dyllm::app
