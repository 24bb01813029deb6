// compare_runs(): per-position token diff plus summary ratios of two runs; run labels and state notes.
#include "app/model/run_compare.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "instrumentation/number_text.h"

namespace dyllm::app {

namespace {

// The highest step with its StepEnd (a dropped event can leave a gap below it; the canvas still replays there).
int last_ended(const RunHistory& h) {
    int k = h.step_count();
    while (k > 0 && !h.step(k)->ended) --k;
    return k;
}

}  // namespace

LockStep lockstep(const RunHistory& a, const RunHistory& b, int k) {
    LockStep  s;
    const int ea = last_ended(a), eb = last_ended(b);
    s.last = std::max(ea, eb);
    k      = std::clamp(k, 0, s.last);
    s.a    = std::min(k, ea);
    s.b    = std::min(k, eb);
    return s;
}

RunCompare compare_runs(const RunHistory& a, const RunHistory& b, int seq, int step) {
    RunCompare     c;
    const LockStep ls = lockstep(a, b, step < 0 ? std::max(a.step_count(), b.step_count()) : step);
    const auto     ta = a.canvas_at(seq, step < 0 ? a.step_count() : ls.a);
    const auto     tb = b.canvas_at(seq, step < 0 ? b.step_count() : ls.b);
    c.positions       = int32_t(std::min(ta.size(), tb.size()));
    c.differs.assign(size_t(c.positions), 0);
    for (int32_t r = 0; r < c.positions; ++r) {
        if (ta[r].masked() || tb[r].masked()) {
            ++c.masked;
        } else if (ta[r].token == tb[r].token) {
            ++c.same;
        } else {
            ++c.differ;
            c.differs[r] = 1;
        }
    }
    c.a           = a.summary();
    c.b           = b.summary();
    c.speedup     = c.a.tokens_per_s > 0 ? c.b.tokens_per_s / c.a.tokens_per_s : 0.0;
    c.flops_ratio = c.a.flops > 0 ? c.b.flops / c.a.flops : 0.0;
    // An aborted run's tokens/s counts only what it committed: a 9-step run measured 2.97x against a full one.
    if (const std::string na = run_state_note(a); !na.empty())
        c.speedup_note = "run A " + na;
    else if (const std::string nb = run_state_note(b); !nb.empty())
        c.speedup_note = "run B " + nb;
    return c;
}

std::vector<float> run_taus(const RunHistory& h) {
    std::vector<float> taus;
    for (int k = 1; k <= h.step_count(); ++k) {
        const StepData* s = h.step(k);
        if (!s->begun || !std::isfinite(s->tau)) continue;
        if (taus.empty() || taus.back() != s->tau) taus.push_back(s->tau);
    }
    return taus;
}

std::string run_label(const RunHistory& h) {
    if (!h.has_run()) return "(no run)";
    std::string label = h.info().method;
    const auto  taus  = run_taus(h);
    if (!taus.empty()) {
        // More than three values (a dragged slider): the first and the last say what the run went through.
        label += " tau " + number_text(taus.front());
        if (taus.size() > 3)
            label += "->...";
        else
            for (size_t i = 1; i + 1 < taus.size(); ++i) label += "->" + number_text(taus[i]);
        if (taus.size() > 1) label += "->" + number_text(taus.back());
    } else if (const std::string tau = h.env("tau"); !tau.empty()) {
        // Before the first step: the tau in force at the start. The engine writes it as text; shown as the float.
        char*       end = nullptr;
        const float v   = std::strtof(tau.c_str(), &end);
        label += " tau " + (end != tau.c_str() ? number_text(v) : tau.substr(0, 20));
    }
    if (h.env("approx") == "false") label += " exact-attn";  // DyLLM's "Salient" ablation
    return label;
}

std::string run_state_note(const RunHistory& h) {
    if (!h.has_run()) return "not started";
    if (!h.finished()) return "running";
    if (h.run_end().cancelled) return "aborted at step " + std::to_string(h.run_end().steps);
    return "";
}

}  // namespace dyllm::app
