// The bottom band's tabs. Time: per-step stacked bars by op class (click a bar to show that step), the op timeline of
// one or several steps back to back under a ms ruler (rows = layers, wheel to zoom, drag to pan, double-click to
// reset; preempted ops get a red corner), the top op classes. Op stats: per-op table (q/k/v/o/gate/up/down...) with
// CPU time, GFLOP/s and GB/s, sortable, filtered. GPU kernels: CUPTI records under their ops. Then Tune, Compare,
// the token history and Explain.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "app/model/axis_ticks.h"
#include "app/model/kernel_join.h"
#include "app/model/op_names.h"
#include "app/model/op_preempt.h"
#include "app/model/duration_histogram.h"
#include "app/model/op_stats.h"
#include "app/model/step_gaps.h"
#include "app/model/step_rates.h"
#include "app/studio/plot.h"
#include "app/studio/studio.h"

namespace dyllm::app {

namespace {

bool on_gpu(const Studio& s) {
    return s.status.backend.rfind("cuda", 0) == 0;
}

// The worker's CUPTI records of this run that belong to step sd, by join_step_kernels' rule (the step's by id, those
// without an op inside its time span): picked here so a frame copies one step's records, not the whole run's.
std::vector<KernelRecord> step_kernel_records(const Studio& s, const RunEntry& run, const StepData& sd) {
    std::vector<KernelRecord> out;
    const int64_t             t1 = sd.ended && sd.end.t_ns > 0 ? sd.end.t_ns : INT64_MAX;
    for (const auto& batch : s.worker.kernels(run.label))
        for (const KernelRecord& k : *batch)
            if (k.external_id != 0 ? k.step == sd.step : k.start_ns >= sd.t_begin_ns && k.start_ns <= t1)
                out.push_back(k);
    return out;
}

constexpr ImU32 kColPreempted = IM_COL32(255, 70, 60, 255);

// "12.3 GFLOP/s, weights 4.56 GB/s (1.2 GB read)" of one step (weights: the GEMMs' weight matrices, app/model/
// step_rates.h); the short form leaves the bytes out.
std::string step_rates_text(const StepData& sd, int n_embd, bool brief = false) {
    const StepRates r = step_rates(sd, n_embd);
    char            buf[160];
    if (r.gemms == 0)
        std::snprintf(buf, sizeof buf, "%.2f GFLOP/s, weights GB/s n/a%s", r.gflops_per_s(),
                      brief ? "" : " (no GEMM shapes: n_embd unknown)");
    else if (brief)
        std::snprintf(buf, sizeof buf, "%.2f GFLOP/s, weights %.2f GB/s", r.gflops_per_s(), r.weight_gbytes_per_s());
    else
        std::snprintf(buf, sizeof buf, "%.2f GFLOP/s, weights %.2f GB/s (%s read)", r.gflops_per_s(),
                      r.weight_gbytes_per_s(), fmt_si(r.weight_bytes, "B").c_str());
    return buf;
}

int preempted_ops(const StepData& sd) {
    return int(std::count_if(sd.ops.begin(), sd.ops.end(), [](const OpTiming& o) { return op_preempted(o); }));
}

// Per-step bars stacked by op class, over a ms axis. Linear: heights are times. Log: each bar's total sits on a log
// axis and its segments split that height in proportion to their times (stacking log values would draw embed as
// large as the FFN).
void stacked_bars(Studio& s, const RunHistory& h, float w, float hgt) {
    const float axis_w = ImGui::CalcTextSize("0.001").x + 8;  // room for the tick labels left of the bars
    ImGui::Dummy(ImVec2(axis_w, 1));
    ImGui::SameLine(0, 0);
    PlotArea    a  = plot_area("##stacked", w - axis_w, hgt);
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const int   ns = h.step_count();
    if (ns == 0) {
        empty_note(a, "no steps yet");
        return;
    }
    double maxt = 1e-9, mint = 1e30;
    for (int j = 1; j <= ns; ++j) {
        const StepData* sd = h.step(j);
        const double    t  = sd->ops_seconds() + sd->outside_ops_seconds();
        maxt               = std::max(maxt, t);
        if (t > 0) mint = std::min(mint, t);
    }
    const double max_ms = maxt * 1e3;
    // Log axis from the decade at or below half the smallest bar (so every bar shows) to the largest.
    const double lo_ms =
        mint < 1e30 ? std::pow(10.0, std::floor(std::log10(std::min(mint * 1e3 * 0.5, max_ms * 0.5)))) : 1e-3;
    auto y_of_ms = [&](double ms) {
        double f;
        if (s.time_log_y)
            f = ms <= lo_ms ? 0.0 : std::log10(ms / lo_ms) / std::log10(max_ms / lo_ms);
        else
            f = ms / max_ms;
        return a.p1.y - float(std::clamp(f, 0.0, 1.0)) * (a.h() - 2);
    };
    // Axis: tick labels in ms left of the plot, faint grid lines across it.
    const auto  ticks = s.time_log_y ? decade_ticks(lo_ms, max_ms) : linear_ticks(max_ms, std::max(2, int(a.h() / 28)));
    const float lh    = ImGui::GetTextLineHeight();
    for (double t : ticks) {
        const float y = y_of_ms(t);
        dl->AddLine(ImVec2(a.p0.x, y), ImVec2(a.p1.x, y), kColGrid);
        dl->AddLine(ImVec2(a.p0.x - 4, y), ImVec2(a.p0.x, y), kColAxis);
        const std::string lbl = tick_label(t);
        const float       tw  = ImGui::CalcTextSize(lbl.c_str()).x;
        dl->AddText(ImVec2(a.p0.x - 6 - tw, std::clamp(y - lh * 0.5f, a.p0.y - 2, a.p1.y - lh)),
                    IM_COL32(170, 170, 170, 255), lbl.c_str());
    }
    const float bw = a.w() / ns;
    for (int j = 1; j <= ns; ++j) {
        const StepData* sd      = h.step(j);
        const double    outside = sd->outside_ops_seconds() * 1e3;
        const double    total   = sd->ops_seconds() * 1e3 + outside;  // the wall time once the step ended
        if (total <= 0) continue;
        const float x0 = a.p0.x + (j - 1) * bw, x1 = x0 + std::max(bw - (bw > 3 ? 1.f : 0.f), 1.f);
        const float y_top = y_of_ms(total), bar_h = a.p1.y - y_top;
        float       y = a.p1.y;
        for (size_t c = 0; c < kOpClasses; ++c) {
            if (sd->op_seconds[c] <= 0) continue;
            const float seg = bar_h * float(sd->op_seconds[c] * 1e3 / total);
            dl->AddRectFilled(ImVec2(x0, y - seg), ImVec2(x1, y), op_class_color(int(c)));
            y -= seg;
        }
        if (outside > 0)  // on top: the step's wall time no op covers (scheduler, waits, hand-offs)
            dl->AddRectFilled(ImVec2(x0, y_top), ImVec2(x1, y), kColOutsideOps);
    }
    if (s.view_step >= 1) {
        const float xs = a.p0.x + (s.view_step - 0.5f) * bw;
        dl->AddLine(ImVec2(xs, a.p0.y), ImVec2(xs, a.p1.y), kColCursor);
    }
    dl->AddRect(a.p0, a.p1, kColAxis);
    if (a.hovered) {
        const int       j  = std::clamp(1 + int((a.mouse.x - a.p0.x) / bw), 1, ns);
        const StepData* sd = h.step(j);
        ImGui::BeginTooltip();
        ImGui::Text("step %d (%s): wall %s", j, step_kind_name(sd->kind), fmt_ms(sd->wall_seconds()).c_str());
        ImGui::TextUnformatted(step_rates_text(*sd, run_n_embd(h)).c_str());
        // Weights streamed: every projection and the LM head once per forward pass, over the step's wall time.
        if (const double wb = std::atof(h.env("weight_bytes").c_str()); wb > 0 && sd->wall_seconds() > 0)
            ImGui::Text("weights %.2f GB (%s), %.1f GB/s streamed", wb / 1e9, h.env("weights").c_str(),
                        wb / 1e9 / sd->wall_seconds());
        if (const int np = preempted_ops(*sd); np > 0)
            ImGui::TextColored(ImVec4(1, 0.45f, 0.4f, 1), "%d op%s preempted (wall >> CPU time)", np,
                               np > 1 ? "s" : "");
        for (size_t c = 0; c < kOpClasses; ++c)
            if (sd->op_seconds[c] > 0) {
                ImGui::ColorButton("##c", ImGui::ColorConvertU32ToFloat4(op_class_color(int(c))),
                                   ImGuiColorEditFlags_NoTooltip, ImVec2(10, 10));
                ImGui::SameLine();
                ImGui::Text("%-14s %s", op_class_name(OpClass(c)), fmt_ms(sd->op_seconds[c]).c_str());
            }
        if (sd->ended) {
            ImGui::ColorButton("##c", ImGui::ColorConvertU32ToFloat4(kColOutsideOps), ImGuiColorEditFlags_NoTooltip,
                               ImVec2(10, 10));
            ImGui::SameLine();
            ImGui::Text("%-14s %s (wall minus ops: scheduler, waits, hand-offs)", "outside ops",
                        fmt_ms(sd->outside_ops_seconds()).c_str());
        }
        ImGui::TextDisabled("click: show this step everywhere");
        ImGui::EndTooltip();
        if (a.clicked) {
            s.follow_live = false;
            s.view_step   = j;
        }
    }
}

// "q 40x128x128  2.1 GFLOP/s  5.3 GB/s" details of one op.
std::string op_detail(const OpTiming& o, const NamedOp& n) {
    char         buf[160];
    const double t = double(o.dur_ns) * 1e-9;
    int          k = std::snprintf(buf, sizeof buf, "%s", op_name_text(n.name));
    if (n.is_gemm())
        k += std::snprintf(buf + k, sizeof buf - size_t(k), "  M x N x K = %lld x %lld x %lld", (long long)n.m,
                           (long long)n.n, (long long)n.k);
    if (t > 0 && o.flops > 0) k += std::snprintf(buf + k, sizeof buf - size_t(k), "  %.2f GFLOP/s", o.flops / t * 1e-9);
    if (t > 0 && o.bytes > 0) std::snprintf(buf + k, sizeof buf - size_t(k), "  %.2f GB/s", o.bytes / t * 1e-9);
    return buf;
}

// The op timeline of steps [view_step - n + 1, view_step] laid back to back (the idle time between steps, e.g. the
// play-speed wait, is left out), under a ms ruler with step boundaries.
void timeline(Studio& s, const RunHistory& h, float w, float hgt) {
    TimelineZoom& v       = s.timeline_zoom;
    const float   ruler_h = ImGui::GetTextLineHeight() + 4;
    PlotArea      a       = plot_area("##timeline", w, hgt);
    ImDrawList*   dl      = ImGui::GetWindowDrawList();
    const int     hi = s.view_step, lo = std::max(1, s.view_step - std::max(s.time_steps, 1) + 1);
    if (lo != v.lo || hi != v.hi) v = TimelineZoom{.lo = lo, .hi = hi};  // zoom reset per step
    struct Placed {
        const OpTiming* op;
        NamedOp         name;
        int64_t         x0;  // ns from the start of the laid-out range
    };
    struct Gap {
        int64_t x0, dur;  // ns from the start of the laid-out range
    };
    std::vector<Placed>                  placed;
    std::vector<Gap>                     gaps;    // outside ops: no op running inside the step's wall time
    std::vector<std::pair<int64_t, int>> bounds;  // (ns, step) where each step starts
    int64_t                              offset = 0;
    const int                            n_embd = run_n_embd(h);
    for (int k = lo; k <= hi; ++k) {
        const StepData* sd = h.step(k);
        if (!sd || sd->ops.empty()) continue;
        // Each step over its whole wall time, so the stretches no op covers show as gaps.
        const StepGaps g  = step_gaps(*sd);
        const int64_t  t0 = g.span.t0;
        bounds.emplace_back(offset, k);
        const auto names = name_ops(sd->ops, n_embd);
        for (size_t i = 0; i < sd->ops.size(); ++i)
            placed.push_back({&sd->ops[i], names[i], offset + sd->ops[i].t_begin_ns - t0});
        for (const TimeSpan& gp : g.gaps) gaps.push_back({offset + gp.t0 - t0, gp.dur()});
        offset += std::max<int64_t>(g.span.dur(), 1);
    }
    if (placed.empty()) {
        empty_note(a, h.step(s.view_step) ? "no op timings for this step" : "no step selected");
        return;
    }
    const double span = double(offset);
    if (a.hovered) {
        const float wheel = ImGui::GetIO().MouseWheel;
        if (wheel != 0) {  // zoom around the mouse
            const float fx = (a.mouse.x - a.p0.x) / a.w();
            const float at = v.offset + fx / v.zoom;
            v.zoom         = std::clamp(v.zoom * (wheel > 0 ? 1.25f : 0.8f), 1.f, 5000.f);
            v.offset       = at - fx / v.zoom;
        }
        if (ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) v = TimelineZoom{.lo = lo, .hi = hi};
    }
    // Drag pans; Shift+drag selects a range (its statistics under the plot), a Shift+click clears it.
    const bool shift = ImGui::GetIO().KeyShift;
    auto       ns_at = [&](float mx) { return (v.offset + double((mx - a.p0.x) / a.w()) / v.zoom) * span; };
    if (a.clicked && shift) {
        v.sel0 = std::clamp(ns_at(a.mouse.x), 0.0, span);
        v.sel1 = v.sel0;
    }
    if (a.active && ImGui::IsMouseDragging(ImGuiMouseButton_Left)) {
        if (shift && v.sel0 >= 0)
            v.sel1 = std::clamp(ns_at(a.mouse.x), 0.0, span);
        else
            v.offset -= ImGui::GetIO().MouseDelta.x / a.w() / v.zoom;
    }
    v.offset            = std::clamp(v.offset, 0.f, 1.f - 1.f / v.zoom);
    const int   nl      = std::max(h.n_layer(), 1);
    const int   n_lanes = nl + 1;  // lane 0: outside the layers (embed, lm_head, sampling)
    const float y_top   = a.p0.y + ruler_h;
    const float lane_h  = (a.p1.y - y_top) / n_lanes;
    auto        x_of    = [&](double ns) { return a.p0.x + float(((ns / span) - v.offset) * v.zoom) * a.w(); };
    dl->PushClipRect(a.p0, a.p1, true);
    // Ruler: ms ticks over the visible window, step boundaries as full-height lines.
    const double vis0 = v.offset * span * 1e-6, vis1 = (v.offset + 1.0 / v.zoom) * span * 1e-6;  // ms
    const int    max_ticks = std::max(2, int(a.w() / 70));
    for (double t : range_ticks(vis0, vis1, max_ticks)) {
        if (std::fabs(t) < (vis1 - vis0) * 1e-6) t = 0;  // rounding left "-0 ms" at the start
        const float x = x_of(t * 1e6);
        dl->AddLine(ImVec2(x, y_top - 4), ImVec2(x, a.p1.y), kColGrid);
        dl->AddText(ImVec2(x + 2, a.p0.y + 1), IM_COL32(170, 170, 170, 255), (tick_label(t) + " ms").c_str());
    }
    dl->AddLine(ImVec2(a.p0.x, y_top), ImVec2(a.p1.x, y_top), kColAxis);
    // Gaps: a faint band over every lane and the outside-ops grey in the top lane.
    const Gap* hovered_gap = nullptr;
    // Gaps closer than a pixel merge into one mark of the top lane (hundreds of sub-pixel gaps between small ops
    // would each cost a rectangle and show nothing more).
    float run0 = 0, run1 = -1;
    auto  flush = [&] {
        if (run1 >= run0) dl->AddRectFilled(ImVec2(run0, y_top + 1), ImVec2(run1, y_top + lane_h - 1), kColOutsideOps);
    };
    for (const Gap& gp : gaps) {
        const float x0 = x_of(double(gp.x0)), x1 = std::max(x_of(double(gp.x0 + gp.dur)), x0 + 1.f);
        if (x1 < a.p0.x || x0 > a.p1.x) continue;
        // Across the layer lanes only where the gap is wide enough to read: hairlines between small ops are noise.
        if (x1 - x0 >= 3.f)
            dl->AddRectFilled(ImVec2(x0, y_top), ImVec2(x1, a.p1.y), (kColOutsideOps & 0x00FFFFFFu) | (40u << 24));
        if (x0 <= run1 + 1.f) {
            run1 = std::max(run1, x1);
        } else {
            flush();
            run0 = x0;
            run1 = x1;
        }
        if (a.hovered && a.mouse.x >= x0 && a.mouse.x < x1 && a.mouse.y >= y_top) hovered_gap = &gp;
    }
    flush();
    const Placed* hovered = nullptr;
    const bool    find_on = s.op_filter[0] != '\0';
    for (const auto& p : placed) {
        const OpTiming& o    = *p.op;
        const int       lane = o.layer < 0 ? 0 : std::min(o.layer + 1, nl);
        const float     x0 = x_of(double(p.x0)), x1 = std::max(x_of(double(p.x0 + o.dur_ns)), x0 + 1.f);
        if (x1 < a.p0.x || x0 > a.p1.x) continue;
        const float y0 = y_top + lane * lane_h;
        dl->AddRectFilled(ImVec2(x0, y0 + 1), ImVec2(x1, y0 + lane_h - 1), op_class_color(int(o.op)));
        if (find_on && op_matches(p.name.name, o.layer, s.op_filter))  // the Op stats find box, highlighted here
            dl->AddRect(ImVec2(x0 - 1, y0), ImVec2(x1 + 1, y0 + lane_h), IM_COL32(255, 255, 255, 255), 0.f, 0, 2.f);
        if (op_preempted(o)) {  // red corner: this op lost the CPU, its time is the machine's, not the op's
            const float c = std::min(std::max(lane_h * 0.5f, 5.f), 10.f);
            dl->AddTriangleFilled(ImVec2(x0, y0 + 1), ImVec2(x0 + c, y0 + 1), ImVec2(x0, y0 + 1 + c), kColPreempted);
        }
        // The op's name inside its box when it fits (q, k, v, gate, up, down...).
        const char* nm = op_name_text(p.name.name);
        if (x1 - x0 > ImGui::CalcTextSize(nm).x + 4 && lane_h >= ImGui::GetTextLineHeight())
            dl->AddText(ImVec2(x0 + 2, y0 + (lane_h - ImGui::GetTextLineHeight()) * 0.5f), IM_COL32(20, 20, 20, 255),
                        nm);
        if (a.hovered && a.mouse.x >= x0 && a.mouse.x < x1 && a.mouse.y >= y0 && a.mouse.y < y0 + lane_h) hovered = &p;
    }
    for (const auto& [ns, k] : bounds) {
        const float x = x_of(double(ns));
        if (ns > 0) dl->AddLine(ImVec2(x, a.p0.y), ImVec2(x, a.p1.y), kColCursor, 1.5f);
        if (bounds.size() > 1) {
            char sl[16];
            std::snprintf(sl, sizeof sl, "s%d", k);
            dl->AddText(ImVec2(x + 2, y_top + 1), IM_COL32(255, 255, 255, 200), sl);
        }
    }
    const int label_every = std::max(1, int(13.f / std::max(lane_h, 0.1f)) + 1);
    for (int lane = 0; lane < n_lanes; lane += label_every) {
        char ln[16];
        if (lane == 0)
            std::snprintf(ln, sizeof ln, "-");
        else
            std::snprintf(ln, sizeof ln, "L%d", lane - 1);
        dl->AddText(ImVec2(a.p0.x + 2, y_top + lane * lane_h + std::max(0.f, (lane_h - 13) * 0.5f)),
                    IM_COL32(230, 230, 230, 200), ln);
    }
    const bool selected = v.sel0 >= 0 && std::fabs(v.sel1 - v.sel0) > 0;
    if (selected)
        dl->AddRectFilled(ImVec2(x_of(std::min(v.sel0, v.sel1)), a.p0.y),
                          ImVec2(x_of(std::max(v.sel0, v.sel1)), a.p1.y), IM_COL32(255, 255, 255, 36));
    dl->PopClipRect();
    dl->AddRect(a.p0, a.p1, kColAxis);
    char lbl[256], brief[128];
    if (selected) {
        // The selection's statistics take the footer: span, op time (top classes), outside ops.
        std::vector<RangeOp> rops;
        rops.reserve(placed.size());
        for (const auto& p : placed) rops.push_back({p.x0, p.x0 + p.op->dur_ns, p.op->op});
        std::vector<TimeSpan> rgaps;
        rgaps.reserve(gaps.size());
        for (const Gap& g : gaps) rgaps.push_back({g.x0, g.x0 + g.dur});
        const RangeStats rs     = range_stats(rops, rgaps, int64_t(v.sel0), int64_t(v.sel1));
        size_t           top[2] = {kOpClasses, kOpClasses};
        for (size_t c = 0; c < kOpClasses; ++c) {
            if (rs.by_class[c] <= 0) continue;
            if (top[0] == kOpClasses || rs.by_class[c] > rs.by_class[top[0]]) {
                top[1] = top[0];
                top[0] = c;
            } else if (top[1] == kOpClasses || rs.by_class[c] > rs.by_class[top[1]]) {
                top[1] = c;
            }
        }
        auto pct = [&](int64_t x) { return rs.span_ns > 0 ? 100.0 * double(x) / double(rs.span_ns) : 0.0; };
        int  n =
            std::snprintf(lbl, sizeof lbl, "selection %s: %d ops %s, outside ops %s (%.0f%%)",
                          fmt_ms(double(rs.span_ns) * 1e-9).c_str(), rs.n_ops, fmt_ms(double(rs.ops_ns) * 1e-9).c_str(),
                          fmt_ms(double(rs.outside_ns) * 1e-9).c_str(), pct(rs.outside_ns));
        for (size_t t : top)
            if (t < kOpClasses && n > 0 && size_t(n) < sizeof lbl)
                n += std::snprintf(lbl + n, sizeof lbl - size_t(n), "; %s %.0f%%", op_class_name(OpClass(t)),
                                   pct(rs.by_class[t]));
        std::snprintf(brief, sizeof brief, "selection %s, outside ops %.0f%%",
                      fmt_ms(double(rs.span_ns) * 1e-9).c_str(), pct(rs.outside_ns));
    } else if (lo == hi && h.step(hi)) {
        std::snprintf(lbl, sizeof lbl, "step %d: %s wall, %s outside ops; %s", hi, fmt_ms(span * 1e-9).c_str(),
                      fmt_ms(h.step(hi)->outside_ops_seconds()).c_str(),
                      step_rates_text(*h.step(hi), n_embd, true).c_str());
        std::snprintf(brief, sizeof brief, "step %d: %s wall, %s outside ops", hi, fmt_ms(span * 1e-9).c_str(),
                      fmt_ms(h.step(hi)->outside_ops_seconds()).c_str());
    } else {
        std::snprintf(lbl, sizeof lbl, "steps %d-%d back to back (the wait between steps left out): %s wall", lo, hi,
                      fmt_ms(span * 1e-9).c_str());
        std::snprintf(brief, sizeof brief, "steps %d-%d: %s wall", lo, hi, fmt_ms(span * 1e-9).c_str());
    }
    // The footer under the plot: the longest form that fits, clipped to it (the top-ops column starts right of it).
    dl->PushClipRect(ImVec2(a.p0.x, a.p1.y), ImVec2(a.p1.x, a.p1.y + ImGui::GetTextLineHeight() + 2), true);
    fit_text(dl, ImVec2(a.p0.x, a.p1.y + 1), a.w(), IM_COL32(150, 150, 150, 255), {lbl, brief});
    dl->PopClipRect();
    if (hovered) {
        const OpTiming&  o  = *hovered->op;
        const OpCpuState st = op_cpu_state(o);
        ImGui::BeginTooltip();
        ImGui::Text("%s\nstep %d  layer %d  rows %d\nwall %s  flops %s  bytes %s", op_detail(o, hovered->name).c_str(),
                    o.step, o.layer, o.rows, fmt_ms(double(o.dur_ns) * 1e-9).c_str(), fmt_si(o.flops).c_str(),
                    fmt_si(o.bytes, "B").c_str());
        if (o.cpu_ns >= 0 && o.cpu_gap_ns >= 10'000)  // a range (events.h): the start reading came earlier
            ImGui::Text("CPU %s to %s (this thread)", fmt_ms(double(o.cpu_ns) * 1e-9).c_str(),
                        fmt_ms(double(o.cpu_ns + o.cpu_gap_ns) * 1e-9).c_str());
        else if (o.cpu_ns >= 0)
            ImGui::Text("CPU %s (this thread)", fmt_ms(double(o.cpu_ns) * 1e-9).c_str());
        if (st == OpCpuState::Preempted)
            ImGui::TextColored(ImVec4(1, 0.45f, 0.4f, 1), "%s", op_cpu_state_text(st));
        else
            ImGui::TextDisabled("%s", op_cpu_state_text(st));
        ImGui::EndTooltip();
    } else if (hovered_gap) {
        ImGui::SetTooltip(
            "outside ops: %s with no timed op running\n(the scheduler, sampling bookkeeping, waits for the\n"
            "thread pool, hand-offs to the event queue)",
            fmt_ms(double(hovered_gap->dur) * 1e-9).c_str());
    } else if (a.hovered) {
        ImGui::SetTooltip(
            "lanes: top = outside the layers (grey: outside ops), then L0..L%d; red corner: preempted op\n"
            "wheel: zoom, drag: pan, Shift+drag: select a range (its statistics below), double-click: reset",
            nl - 1);
    }
}

// The selected Op stats row's durations on log bins (app/model/duration_histogram.h), preempted samples in red.
void op_histogram(Studio& s, const RunHistory& h, float w, float hgt) {
    const int         lo = s.stats_whole_run ? 1 : s.view_step, hi = s.stats_whole_run ? h.step_count() : s.view_step;
    const OpName      name = OpName(s.stats_sel_name);
    std::vector<bool> pre;
    const auto        samples     = op_durations(h, lo, hi, name, s.stats_sel_layer, s.stats_exclude_preempted, &pre);
    const DurationHistogram hist  = duration_histogram(samples, 24);
    std::string             label = name == OpName::Count ? "outside ops" : op_name_text(name);
    if (s.stats_sel_layer >= 0) label += " L" + std::to_string(s.stats_sel_layer);
    ImGui::Text("%s: %d samples", label.c_str(), hist.total);
    ImGui::SameLine();
    if (ImGui::SmallButton("x##closehist")) s.stats_sel_name = -1;
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("close the histogram");
    const float lh = ImGui::GetTextLineHeight();
    PlotArea    a  = plot_area("##ophist", w, hgt - 3 * lh - 12);
    ImDrawList* dl = ImGui::GetWindowDrawList();
    if (hist.counts.empty()) {
        empty_note(a, "no samples in the range");
        return;
    }
    std::vector<int> pre_counts(hist.counts.size(), 0);
    for (size_t i = 0; i < samples.size(); ++i)
        if (pre[i]) pre_counts[size_t(hist.bin_of(samples[i]))]++;
    const int   top = std::max(1, *std::max_element(hist.counts.begin(), hist.counts.end()));
    const int   n   = int(hist.counts.size());
    const float bw  = a.w() / float(n);
    dl->AddRect(a.p0, a.p1, kColAxis);
    int hovered = -1;
    for (int b = 0; b < n; ++b) {
        const float x0 = a.p0.x + bw * float(b), x1 = x0 + bw - 1;
        const float y_all = a.p1.y - a.h() * float(hist.counts[size_t(b)]) / float(top);
        const float y_pre = a.p1.y - a.h() * float(pre_counts[size_t(b)]) / float(top);
        dl->AddRectFilled(ImVec2(x0, y_all), ImVec2(x1, a.p1.y), op_class_color(int(op_name_class(name))));
        if (pre_counts[size_t(b)] > 0)
            dl->AddRectFilled(ImVec2(x0, y_pre), ImVec2(x1, a.p1.y), IM_COL32(235, 80, 70, 255));
        if (a.hovered && a.mouse.x >= x0 && a.mouse.x < x0 + bw) hovered = b;
    }
    const ImU32       txt = IM_COL32(170, 170, 170, 255);
    const std::string l0 = fmt_ms(hist.lo_s), l1 = fmt_ms(hist.hi_s);
    dl->AddText(ImVec2(a.p0.x, a.p1.y + 1), txt, l0.c_str());
    dl->AddText(ImVec2(a.p1.x - ImGui::CalcTextSize(l1.c_str()).x, a.p1.y + 1), txt, l1.c_str());
    ImGui::Dummy(ImVec2(w, lh));
    ImGui::TextDisabled(n > 1 ? "log bins, min to max; red: preempted" : "every sample equal");
    if (hovered >= 0)
        ImGui::SetTooltip("%s to %s: %d samples%s", fmt_ms(hist.bin_lo(hovered)).c_str(),
                          fmt_ms(hist.bin_hi(hovered)).c_str(), hist.counts[size_t(hovered)],
                          pre_counts[size_t(hovered)] > 0
                              ? (" (" + std::to_string(pre_counts[size_t(hovered)]) + " preempted)").c_str()
                              : "");
}

// Per-op table over this step or the whole run: sortable by any column (click a header), filtered by the find box.
void op_stats_table(Studio& s, const RunHistory& h) {
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 10);
    ImGui::InputTextWithHint("##findop", "find op (q, ffn, L3...)", s.op_filter, sizeof s.op_filter);
    ImGui::SameLine();
    ImGui::Checkbox("per layer", &s.stats_by_layer);
    ImGui::SameLine();
    ImGui::Checkbox("whole run", &s.stats_whole_run);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("off: the shown step only");
    ImGui::SameLine();
    ImGui::Checkbox("exclude preempted", &s.stats_exclude_preempted);
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            "leave out samples of ops that ran on one thread but whose wall time exceeds that thread's\n"
            "CPU time by > 1.5x + 0.2 ms (preempted, or waiting on a page fault); 'pre' counts them");
    std::vector<OpStat> stats = shown_op_stats(s, h);
    ImGui::SameLine();
    if (ImGui::SmallButton("copy CSV")) {
        ImGui::SetClipboardText(op_stats_csv(stats).c_str());
        s.show_notice("Op stats copied as CSV (" + std::to_string(stats.size()) + " rows)");
    }
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("the table as shown (range, grouping, preempted samples) as CSV");
    ImGui::SameLine();
    if (ImGui::SmallButton("save CSV"))
        write_text_export(s, "op-stats-" + export_stamp() + ".csv", op_stats_csv(stats));
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("the same CSV as a file in the Export folder:\n%s", s.export_dir);
    ImGui::SameLine();
    ImGui::TextDisabled(
        "share: of the step wall time (ops + outside ops); GFLOP/s, GB/s: engine FLOPs and bytes over summed time; "
        "click a row: its duration histogram, double-click: its slowest step");
    constexpr ImGuiTableFlags kFlags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_ScrollY |
                                       ImGuiTableFlags_Sortable | ImGuiTableFlags_SizingStretchProp |
                                       ImGuiTableFlags_Resizable;
    // The selected row's duration histogram takes the right of the tab; the table the rest.
    const bool  show_hist = s.stats_sel_name >= 0;
    const float hist_w  = show_hist ? std::min(ImGui::GetContentRegionAvail().x * 0.3f, ImGui::GetFontSize() * 28) : 0;
    const float table_w = show_hist ? ImGui::GetContentRegionAvail().x - hist_w - 8 : 0;
    if (show_hist) {
        ImGui::BeginGroup();
    }
    if (!ImGui::BeginTable("##opstats", 15, kFlags, ImVec2(table_w, ImGui::GetContentRegionAvail().y))) {
        if (show_hist) ImGui::EndGroup();
        return;
    }
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("op", ImGuiTableColumnFlags_DefaultSort, 1.3f, int(StatColumn::Label));
    ImGui::TableSetupColumn("M x N x K", ImGuiTableColumnFlags_NoSort, 1.6f, 100);
    ImGui::TableSetupColumn("n", 0, 0.6f, int(StatColumn::Count));
    ImGui::TableSetupColumn("total", 0, 1.f, int(StatColumn::Total));
    ImGui::TableSetupColumn("mean", 0, 1.f, int(StatColumn::Mean));
    ImGui::TableSetupColumn("median", 0, 1.f, int(StatColumn::Median));
    ImGui::TableSetupColumn("min", 0, 1.f, int(StatColumn::Min));
    ImGui::TableSetupColumn("max", 0, 1.f, int(StatColumn::Max));
    ImGui::TableSetupColumn("sigma", 0, 1.f, int(StatColumn::Sigma));
    ImGui::TableSetupColumn("p90", 0, 1.f, int(StatColumn::P90));
    ImGui::TableSetupColumn("cpu", 0, 1.f, int(StatColumn::CpuMean));
    ImGui::TableSetupColumn("pre", 0, 0.6f, int(StatColumn::Preempted));
    ImGui::TableSetupColumn("share %", 0, 0.9f, int(StatColumn::Share));
    ImGui::TableSetupColumn("GFLOP/s", 0, 1.f, int(StatColumn::GFlops));
    ImGui::TableSetupColumn("GB/s", 0, 0.9f, int(StatColumn::GBytes));
    ImGui::TableHeadersRow();
    if (ImGuiTableSortSpecs* sp = ImGui::TableGetSortSpecs(); sp && sp->SpecsCount > 0) {
        s.stats_sort_col = int(sp->Specs[0].ColumnUserID);
        s.stats_sort_asc = sp->Specs[0].SortDirection == ImGuiSortDirection_Ascending;
    }
    sort_stats(stats, StatColumn(s.stats_sort_col), s.stats_sort_asc);
    for (const OpStat& st : stats) {
        if (!stat_matches(st, s.op_filter)) continue;
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        const bool outside = st.name == OpName::Count;  // the row of the time outside every op
        ImGui::ColorButton(
            "##c",
            ImGui::ColorConvertU32ToFloat4(outside ? kColOutsideOps : op_class_color(int(op_name_class(st.name)))),
            ImGuiColorEditFlags_NoTooltip, ImVec2(10, 10));
        ImGui::SameLine();
        // A click selects the row (its duration histogram beside the table); a double-click jumps to the step of the
        // slowest sample (Time tab, the op highlighted in the timeline).
        ImGui::PushID(st.label.c_str());
        const bool selected = s.stats_sel_name == int(st.name) && s.stats_sel_layer == st.layer;
        if (ImGui::Selectable(st.label.c_str(), selected,
                              ImGuiSelectableFlags_SpanAllColumns | ImGuiSelectableFlags_AllowDoubleClick)) {
            s.stats_sel_name  = int(st.name);
            s.stats_sel_layer = st.layer;
            if (ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left) && st.max_step > 0) {
                s.follow_live = false;
                s.view_step   = st.max_step;
                std::snprintf(s.op_filter, sizeof s.op_filter, "%s", outside ? "" : st.label.c_str());
                s.select_tab(BottomTab::Time);
            }
        }
        ImGui::PopID();
        if (ImGui::IsItemHovered() && st.max_step > 0)
            ImGui::SetTooltip(
                "click: its duration histogram; double-click: show step %d, the slowest %s (%s), highlighted in "
                "the timeline",
                st.max_step, st.label.c_str(), fmt_ms(st.max_s).c_str());
        ImGui::TableNextColumn();
        if (st.m > 0) ImGui::Text("%lldx%lldx%lld", (long long)st.m, (long long)st.n, (long long)st.k);
        ImGui::TableNextColumn();
        ImGui::Text("%d", st.count);
        // With their units (ms, or µs below a millisecond): a sub-microsecond op read "0.000" in a ms column.
        for (double v : {st.total_s, st.mean_s, st.median_s, st.min_s, st.max_s, st.sigma_s, st.p90_s}) {
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(fmt_ms(v).c_str());
        }
        ImGui::TableNextColumn();  // mean thread CPU time; "*" when some samples were split over the pool
        if (st.cpu_count > 0) {
            ImGui::Text("%s%s", fmt_ms(st.cpu_mean_s()).c_str(), st.split > 0 ? "*" : "");
            if (ImGui::IsItemHovered())
                ImGui::SetTooltip(
                    "mean CPU time of the thread that ran the op (%d samples: its runs of 0.2 ms or "
                    "more, the only ones that carry a CPU time)%s",
                    st.cpu_count,
                    st.split > 0 ? "\n*: some were split over the pool's threads: their CPU time is "
                                   "the calling thread's share only"
                                 : "");
        }
        ImGui::TableNextColumn();
        if (st.preempted > 0) ImGui::TextColored(ImVec4(1, 0.45f, 0.4f, 1), "%d", st.preempted);
        ImGui::TableNextColumn();
        ImGui::Text("%.1f", st.share * 100);
        ImGui::TableNextColumn();
        if (st.flops > 0) ImGui::Text("%.2f", st.gflops_per_s());
        ImGui::TableNextColumn();
        if (st.bytes > 0) ImGui::Text("%.2f", st.gbytes_per_s());
    }
    ImGui::EndTable();
    if (!show_hist) return;
    ImGui::EndGroup();
    ImGui::SameLine(0, 8);
    ImGui::BeginGroup();
    op_histogram(s, h, hist_w, ImGui::GetContentRegionAvail().y);
    ImGui::EndGroup();
}

void top_ops(Studio& s, const RunHistory& h) {
    const StepData*             sd  = h.step(s.view_step);
    const RunSummary            sum = h.summary();
    std::array<int, kOpClasses> counts{};
    if (sd)
        for (const auto& o : sd->ops) counts[size_t(o.op)]++;
    std::array<size_t, kOpClasses> order;
    std::iota(order.begin(), order.end(), size_t(0));
    std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return sum.op_seconds[x] > sum.op_seconds[y]; });
    // Shares of the run's step wall time (ops + outside ops), the time tokens/s is measured on.
    const double run_total = sum.denoise_seconds > 0
                                 ? sum.denoise_seconds
                                 : std::accumulate(sum.op_seconds.begin(), sum.op_seconds.end(), 0.0);
    const float  table_h   = ImGui::GetContentRegionAvail().y - ImGui::GetTextLineHeightWithSpacing() * 1.3f;
    if (ImGui::BeginTable("##topops", 5,
                          ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_ScrollY |
                              ImGuiTableFlags_SizingStretchProp,
                          ImVec2(0, table_h))) {
        ImGui::TableSetupScrollFreeze(0, 1);
        ImGui::TableSetupColumn("op class", 0, 1.6f);
        ImGui::TableSetupColumn("step ms", 0, 1.f);
        ImGui::TableSetupColumn("n", 0, 0.6f);
        ImGui::TableSetupColumn("run ms", 0, 1.f);
        ImGui::TableSetupColumn("run %", 0, 0.8f);
        ImGui::TableHeadersRow();
        if (ImGui::TableGetColumnFlags(4) & ImGuiTableColumnFlags_IsHovered)
            ImGui::SetTooltip("share of the run's step wall time (ops + outside ops)");
        for (size_t c : order) {
            if (sum.op_seconds[c] <= 0) continue;
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            ImGui::ColorButton("##c", ImGui::ColorConvertU32ToFloat4(op_class_color(int(c))),
                               ImGuiColorEditFlags_NoTooltip, ImVec2(10, 10));
            ImGui::SameLine();
            ImGui::TextUnformatted(op_class_name(OpClass(c)));
            ImGui::TableNextColumn();
            if (sd) ImGui::Text("%.3f", sd->op_seconds[c] * 1e3);
            ImGui::TableNextColumn();
            ImGui::Text("%d", counts[c]);
            ImGui::TableNextColumn();
            ImGui::Text("%.1f", sum.op_seconds[c] * 1e3);
            ImGui::TableNextColumn();
            ImGui::Text("%.1f", run_total > 0 ? 100.0 * sum.op_seconds[c] / run_total : 0.0);
        }
        if (sum.outside_ops_seconds > 0) {
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            ImGui::ColorButton("##c", ImGui::ColorConvertU32ToFloat4(kColOutsideOps), ImGuiColorEditFlags_NoTooltip,
                               ImVec2(10, 10));
            ImGui::SameLine();
            ImGui::TextUnformatted("outside ops");
            if (ImGui::IsItemHovered())
                ImGui::SetTooltip(
                    "step wall time no timed op covers: the scheduler, sampling bookkeeping,\n"
                    "waits for the thread pool, hand-offs to the event queue");
            ImGui::TableNextColumn();
            if (sd) ImGui::Text("%.3f", sd->outside_ops_seconds() * 1e3);
            ImGui::TableNextColumn();
            ImGui::TableNextColumn();
            ImGui::Text("%.1f", sum.outside_ops_seconds * 1e3);
            ImGui::TableNextColumn();
            ImGui::Text("%.1f", run_total > 0 ? 100.0 * sum.outside_ops_seconds / run_total : 0.0);
        }
        ImGui::EndTable();
    }
    // CUPTI kernel records need a GPU; the line stays visible (greyed) so users know they exist.
    if (!on_gpu(s)) {
        ImGui::TextDisabled("CUPTI kernels: unavailable (no GPU)");
    } else if (s.status.cupti != "on") {
        ImGui::TextDisabled("CUPTI kernels: %s", s.status.cupti.c_str());
    } else if (const RunEntry* run = s.shown_run(); run && sd) {
        const StepKernels j = join_step_kernels(*sd, step_kernel_records(s, *run, *sd));
        ImGui::TextDisabled("CUPTI: %d GPU records at step %d, %s of GPU time (GPU kernels tab)", j.records,
                            s.view_step, fmt_ms(j.gpu_s).c_str());
    }
}

// GPU kernels tab: the shown step's CUPTI records joined to the engine ops that launched them, per op (host time of
// the ops beside the GPU time of their kernels) and per kernel.
void kernels_tab(Studio& s) {
    if (s.status.cupti != "on") {
        ImGui::TextDisabled("CUPTI kernels: %s", s.status.cupti.c_str());
        return;
    }
    const RunEntry* run = s.shown_run();
    const StepData* sd  = run ? run->history.step(s.view_step) : nullptr;
    if (!sd) {
        ImGui::TextDisabled("no step selected");
        return;
    }
    const StepKernels j = join_step_kernels(*sd, step_kernel_records(s, *run, *sd));
    ImGui::Text("step %d: %d GPU records, %s of GPU time; ops are host-timed (launch), kernels GPU-timed", s.view_step,
                j.records, fmt_ms(j.gpu_s).c_str());
    constexpr ImGuiTableFlags kFlags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_ScrollY |
                                       ImGuiTableFlags_SizingStretchProp | ImGuiTableFlags_Resizable;
    const ImVec2 avail    = ImGui::GetContentRegionAvail();
    auto         op_label = [](int32_t layer, OpClass op) {
        return std::string(op_class_name(op)) + (layer >= 0 ? " L" + std::to_string(layer) : std::string());
    };
    if (ImGui::BeginTable("##gpu_ops", 5, kFlags, ImVec2(avail.x * 0.42f, avail.y))) {
        ImGui::TableSetupScrollFreeze(0, 1);
        ImGui::TableSetupColumn("op", 0, 1.4f);
        ImGui::TableSetupColumn("ops", 0, 0.5f);
        ImGui::TableSetupColumn("host ms", 0, 1.f);
        ImGui::TableSetupColumn("kernels", 0, 0.7f);
        ImGui::TableSetupColumn("GPU ms", 0, 1.f);
        ImGui::TableHeadersRow();
        for (const OpGpuTime& k : j.ops) {
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(op_label(k.layer, k.op).c_str());
            ImGui::TableNextColumn();
            ImGui::Text("%d", k.n_ops);
            ImGui::TableNextColumn();
            ImGui::Text("%.3f", k.host_s * 1e3);
            ImGui::TableNextColumn();
            ImGui::Text("%d", k.n_kernels);
            ImGui::TableNextColumn();
            if (k.n_kernels > 0) ImGui::Text("%.3f", k.gpu_s * 1e3);
        }
        ImGui::EndTable();
    }
    ImGui::SameLine();
    if (ImGui::BeginTable("##gpu_kernels", 4, kFlags, ImVec2(0, avail.y))) {
        ImGui::TableSetupScrollFreeze(0, 1);
        ImGui::TableSetupColumn("launched by", 0, 1.f);
        ImGui::TableSetupColumn("kernel", 0, 3.f);
        ImGui::TableSetupColumn("n", 0, 0.4f);
        ImGui::TableSetupColumn("GPU ms", 0, 0.8f);
        ImGui::TableHeadersRow();
        for (const KernelRow& k : j.rows) {
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(k.attributed ? op_label(k.layer, k.op).c_str() : "(no engine op)");
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(k.name.c_str());
            if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s (%s)", k.name.c_str(), kernel_kind_name(k.kind));
            ImGui::TableNextColumn();
            ImGui::Text("%d", k.count);
            ImGui::TableNextColumn();
            ImGui::Text("%.3f", k.gpu_s * 1e3);
        }
        ImGui::EndTable();
    }
}

}  // namespace

void draw_time(Studio& s, const Rect& r) {
    help_marker(s.bottom_tab == BottomTab::Compare ? "Compare" : s.bottom_tab == BottomTab::Why ? "Why" : "Time");
    RunEntry*         run = s.shown_run();
    const RunHistory* h   = run && run->history.has_run() ? &run->history : nullptr;
    ImGui::SameLine();
    if (!ImGui::BeginTabBar("##bottomtabs")) return;
    // A requested tab (buttons, --tab, --open, a token click) is selected once; afterwards the clicks choose. While a
    // request is pending, the tab the bar still shows does not overwrite it (the selection lands a frame later).
    const int req = s.tab_request;
    s.tab_request = -1;
    auto tab      = [&](BottomTab t) {
        const bool open = ImGui::BeginTabItem(bottom_tab_name(t).label, nullptr,
                                              req == int(t) ? ImGuiTabItemFlags_SetSelected : ImGuiTabItemFlags_None);
        if (open && req < 0) s.bottom_tab = t;
        return open;
    };
    if (tab(BottomTab::Time)) {
        ImGui::Checkbox("log y##time", &s.time_log_y);
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip(
                "log y: each bar's total on a log axis (its op classes keep their shares of the bar),\n"
                "so sparse steps stay readable next to the FULL ones");
        ImGui::SameLine();
        ImGui::SetNextItemWidth(ImGui::GetFontSize() * 5);
        ImGui::SliderInt("steps in timeline", &s.time_steps, 1, 8);
        if (s.op_filter[0] != '\0') {  // the Op stats find box outlines its ops in the timeline
            ImGui::SameLine();
            ImGui::TextColored(ImVec4(1, 1, 1, 1), "found: %s", s.op_filter);
            ImGui::SameLine(0, 4);
            if (ImGui::SmallButton("x##clearfind")) s.op_filter[0] = '\0';
            if (ImGui::IsItemHovered()) ImGui::SetTooltip("clear the highlight (the Op stats find box)");
        }
        if (h) {
            // Legend of op classes that occur in this run.
            const RunSummary sum = h->summary();
            for (size_t c = 0; c < kOpClasses; ++c) {
                if (sum.op_seconds[c] <= 0) continue;
                ImGui::SameLine();
                ImGui::ColorButton("##lg", ImGui::ColorConvertU32ToFloat4(op_class_color(int(c))),
                                   ImGuiColorEditFlags_NoTooltip, ImVec2(10, 10));
                ImGui::SameLine(0, 3);
                ImGui::TextUnformatted(op_class_name(OpClass(c)));
            }
            if (sum.outside_ops_seconds > 0) {
                ImGui::SameLine();
                ImGui::ColorButton("##lg", ImGui::ColorConvertU32ToFloat4(kColOutsideOps),
                                   ImGuiColorEditFlags_NoTooltip, ImVec2(10, 10));
                ImGui::SameLine(0, 3);
                ImGui::TextUnformatted("outside ops");
            }
            const ImVec2 avail = ImGui::GetContentRegionAvail();
            const float  w1 = avail.x * 0.30f, w2 = avail.x * 0.46f, w3 = avail.x - w1 - w2 - 16;
            const float  ph = avail.y - ImGui::GetTextLineHeight() - 2;
            ImGui::BeginGroup();
            stacked_bars(s, *h, w1, ph);
            // The footer in the bars' own width (at 1280x720 and UI scale 1.4 it ran into the timeline's).
            fit_text(ImGui::GetWindowDrawList(), ImVec2(ImGui::GetItemRectMin().x, ImGui::GetItemRectMax().y + 1),
                     w1 - 4, IM_COL32(150, 150, 150, 255),
                     {s.time_log_y ? "ms per step (log): op classes + outside ops"
                                   : "ms per step: op classes + outside ops = wall",
                      "ms/step: ops + outside ops", "ms per step", ""});
            ImGui::EndGroup();
            ImGui::SameLine();
            ImGui::BeginGroup();
            timeline(s, *h, w2, ph);
            ImGui::EndGroup();
            ImGui::SameLine();
            ImGui::BeginChild("##topops_child", ImVec2(w3, avail.y), false);
            top_ops(s, *h);
            ImGui::EndChild();
        }
        ImGui::EndTabItem();
    }
    if (tab(BottomTab::OpStats)) {
        if (h) op_stats_table(s, *h);
        ImGui::EndTabItem();
    }
    // The tab is there on every backend (--tab gpu-kernels on a CPU build opened Time without a word): off the GPU it
    // says why it is empty.
    if (tab(BottomTab::Kernels)) {
        if (on_gpu(s))
            kernels_tab(s);
        else
            ImGui::TextWrapped(
                "No GPU kernels: this run is on %s. CUPTI kernel records need the cuda backend (a build with CUDA "
                "and CUPTI, a GPU, --backend cuda or the backend box); the Time and Op stats tabs show the CPU ops.",
                s.status.backend.empty() ? "no backend yet" : s.status.backend.c_str());
        ImGui::EndTabItem();
    }
    if (tab(BottomTab::Tune)) {
        draw_tune(s);
        ImGui::EndTabItem();
    }
    if (tab(BottomTab::Compare)) {
        draw_compare(s);
        ImGui::EndTabItem();
    }
    if (tab(BottomTab::Why)) {
        draw_why(s);
        ImGui::EndTabItem();
    }
    if (tab(BottomTab::Token)) {
        draw_token_history(s);
        ImGui::EndTabItem();
    }
    if (tab(BottomTab::Explain)) {
        draw_explain(s);
        ImGui::EndTabItem();
    }
    ImGui::EndTabBar();
    (void)r;
}

}  // namespace dyllm::app
