// Studio: UI-thread state and actions (model load, restart, event pumping into the run history, per-frame status).
#include "app/studio/studio.h"

#include <imgui.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "app/model/task_suite.h"

namespace dyllm::app {

const char* const kMethods[5] = {"original", "dyllm", "fast-prefix", "fast-dual", "dllm-cache"};

namespace {

double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Default prompt when neither -p nor a task suite is there.
constexpr const char* kFallbackPrompt = "What is 27 + 45? Show the column sums.";

}  // namespace

Studio::Studio(const StudioOptions& o) : opts(o) {
    // Model choice.
    if (o.model.empty() || o.model == "tiny-llada") ui.model_idx = 0;
    else if (o.model == "tiny-dream") ui.model_idx = 1;
    else {
        ui.model_idx = 2;
        std::snprintf(ui.model_path, sizeof ui.model_path, "%s", o.model.c_str());
    }
    ui.backend_idx = o.backend == "cuda" ? 1 : o.backend == "auto" ? 2 : 0;
    for (int i = 0; i < 5; ++i)
        if (o.method == kMethods[i]) ui.method_idx = i;
    if (std::isfinite(o.tau)) {
        ui.tau     = o.tau;
        ui.tau_set = true;
    }
    ui.speed        = o.speed;
    ui.full_steps   = o.full_steps;
    ui.approx       = !o.no_approx;
    ui.gen_length   = o.gen_length;
    ui.steps        = o.steps;
    ui.block_length = o.block_length;
    const auto tasks = find_tasks_dir(resolve_model_path(o.model));  // the model's own suite, else the shipped one
    if (!tasks.empty()) examples = load_task_examples(tasks);
    if (!o.prompt.empty()) {
        std::snprintf(prompt, sizeof prompt, "%s", o.prompt.c_str());
    } else if (!examples.items.empty()) {
        example_idx = 0;
        std::snprintf(prompt, sizeof prompt, "%s", examples.items[0].prompt.c_str());
    } else {
        std::snprintf(prompt, sizeof prompt, "%s", kFallbackPrompt);
    }
    worker.sink().set_wants_cosines(true);
    worker.sink().set_wants_op_timings(true);
}

std::string Studio::model_spec() const {
    if (ui.model_idx == 0) return opts.model.empty() ? std::string() : std::string("tiny-llada");
    if (ui.model_idx == 1) return "tiny-dream";
    return ui.model_path;
}

const char* Studio::method_name_ui() const { return kMethods[ui.method_idx]; }

void Studio::load_selected_model() {
    const BackendKind bk = ui.backend_idx == 1 ? BackendKind::Cuda : ui.backend_idx == 2 ? BackendKind::Auto
                                                                                         : BackendKind::Cpu;
    message.clear();
    worker.load_model(model_spec(), bk, opts.threads);
}

StartRequest Studio::make_request(bool autoplay) const {
    StartRequest r;
    r.prompt = prompt;
    r.chat   = ui.chat;
    DiffusionParams& p = r.params;
    p.gen_length   = ui.gen_length;
    p.steps        = ui.steps;
    p.block_length = ui.block_length;
    p.conf_threshold = ui.use_threshold ? ui.conf_threshold : NAN;
    p.method       = parse_method(kMethods[ui.method_idx]).value_or(Method::DyLLM);
    p.tau          = ui.tau_set ? ui.tau : NAN;  // NaN: the engine picks the family default (0.99 / 0.995)
    p.full_steps   = ui.full_steps;
    p.approx       = ui.approx;
    // Methods without a saliency test still get the cosine histograms (one extra cosine per layer), so the panels
    // can show what DyLLM would decide; DyLLM computes them anyway.
    p.measure_cosine = ui.measure_cosine;
    r.autoplay       = autoplay;
    return r;
}

void Studio::restart(bool autoplay) {
    message.clear();
    pending_prompt = prompt;
    pending_answer = example_idx >= 0 && size_t(example_idx) < examples.items.size()
                         ? examples.items[size_t(example_idx)].answer : std::string();
    worker.start(make_request(autoplay));
    params_dirty  = false;
    follow_live   = true;
    shown_run_idx = -1;
    selected_token = -1;
}

void Studio::start_compare(bool original_a, float tau_b) {
    StartRequest a = make_request(true);
    a.tag          = "compare-a";
    compare_second     = make_request(true);
    compare_second.tag = "compare-b";
    if (original_a) a.params.method = Method::Original;
    else compare_second.params.tau = tau_b;
    message.clear();
    pending_prompt = a.prompt;
    pending_answer = example_idx >= 0 && size_t(example_idx) < examples.items.size()
                         ? examples.items[size_t(example_idx)].answer : std::string();
    worker.start(a);
    compare_queued = true;
    cmp_a = cmp_b = -1;
    follow_live   = true;
    shown_run_idx = -1;
    show_compare  = true;
}

RunEntry* Studio::shown_run() {
    if (shown_run_idx >= 0 && size_t(shown_run_idx) < runs.size()) return runs[size_t(shown_run_idx)].get();
    return live();
}

void Studio::pump_events(double budget_ms) {
    const double t_end = now_s() + budget_ms * 1e-3;
    EventRecord  rec;
    int          n = 0;
    while (worker.sink().pop(rec)) {
        if (auto* err = std::get_if<ErrorRecord>(&rec)) {
            if (err->where == "studio:run") {  // the worker's marker: the next RunBegin belongs to this request
                pending_tag = err->message;
                continue;
            }
            message = err->where + ": " + err->message;
        }
        if (std::holds_alternative<RunBegin>(rec)) {
            auto e    = std::make_unique<RunEntry>();
            e->tag    = pending_tag;
            e->prompt = pending_prompt;
            e->answer = pending_answer;
            e->serial = runs.empty() ? 1 : runs.back()->serial + 1;
            pending_tag.clear();
            runs.push_back(std::move(e));
            // Keep memory bounded: the 12 newest runs (enough for several comparisons).
            if (runs.size() > 12) {
                runs.erase(runs.begin());
                cmp_a = cmp_b = -1;
                shown_run_idx = -1;
            }
            token_grid_steps = -1;
        }
        if (!runs.empty()) runs.back()->history.apply(rec);
        // Check the clock every 64 events: a burst from a fast model must not stall the frame.
        if ((++n & 63) == 0 && now_s() > t_end) break;
    }
}

void Studio::begin_frame() {
    status = worker.status();
    vocab  = worker.vocab();
    if (status.error_serial != seen_error_serial) {
        seen_error_serial = status.error_serial;
        message           = status.error;
    }
    // Family default tau once a model is known, unless the user chose one.
    // (spec project decision 5: LLaDA 0.99, Dream 0.995.)
    if (!ui.tau_set && !status.family.empty())
        ui.tau = (status.family == "dream" || status.family == "Dream") ? 0.995f : 0.99f;

    RunEntry* lv = live();
    if (lv && !lv->has_result && status.has_result && lv->history.finished() && status.run_tag == lv->tag) {
        lv->result     = status.last_result;
        lv->has_result = true;
    }
    if (compare_queued && status.run_done && status.run_tag == "compare-a") {
        compare_queued = false;
        pending_prompt = compare_second.prompt;  // pending_answer carries over from run A
        worker.start(compare_second);
    }
    if (RunEntry* r = shown_run()) {
        const int last = r->history.step_count();
        int       ended = last;
        while (ended > 0 && !r->history.step(ended)->ended) --ended;
        if (follow_live || view_step > last) view_step = ended;
        if (view_step < 0) view_step = 0;
    } else {
        view_step = 0;
    }
    if (!notice.empty() && now_s() > notice_until) notice.clear();
}

}  // namespace dyllm::app
