// Time panel: per-step stacked bars by op class (click a bar to show that step), the op timeline of the shown step
// (rows = layers, wheel to zoom, drag to pan, double-click to reset), and the top op classes of the step and the run.
// CUPTI kernels are greyed out without a GPU.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "app/model/axis_ticks.h"
#include "app/studio/plot.h"
#include "app/studio/studio.h"

namespace dyllm::app {

namespace {

struct TimelineView {
    float zoom = 1.f, offset = 0.f;  // visible fraction [offset, offset + 1/zoom] of the step
};

// Per-step bars stacked by op class, over a ms axis. Linear: heights are times. Log: each bar's total sits on a log
// axis and its segments split that height in proportion to their times (stacking log values would draw embed as
// large as the FFN).
void stacked_bars(Studio& s, const RunHistory& h, float w, float hgt) {
    const float axis_w = ImGui::CalcTextSize("0.001").x + 8;  // room for the tick labels left of the bars
    ImGui::Dummy(ImVec2(axis_w, 1));
    ImGui::SameLine(0, 0);
    PlotArea    a  = plot_area("##stacked", w - axis_w, hgt);
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const int ns = h.step_count();
    if (ns == 0) {
        empty_note(a, "no steps yet");
        return;
    }
    double maxt = 1e-9, mint = 1e30;
    for (int j = 1; j <= ns; ++j) {
        const StepData* sd = h.step(j);
        const double    op = std::accumulate(sd->op_seconds.begin(), sd->op_seconds.end(), 0.0);
        maxt = std::max({maxt, op, sd->wall_seconds()});
        if (op > 0) mint = std::min(mint, op);
    }
    const double max_ms = maxt * 1e3;
    // Log axis from the decade at or below half the smallest bar (so every bar shows) to the largest.
    const double lo_ms = mint < 1e30 ? std::pow(10.0, std::floor(std::log10(std::min(mint * 1e3 * 0.5, max_ms * 0.5))))
                                     : 1e-3;
    auto y_of_ms = [&](double ms) {
        double f;
        if (s.time_log_y) f = ms <= lo_ms ? 0.0 : std::log10(ms / lo_ms) / std::log10(max_ms / lo_ms);
        else f = ms / max_ms;
        return a.p1.y - float(std::clamp(f, 0.0, 1.0)) * (a.h() - 2);
    };
    // Axis: tick labels in ms left of the plot, faint grid lines across it.
    const auto ticks = s.time_log_y ? decade_ticks(lo_ms, max_ms) : linear_ticks(max_ms, std::max(2, int(a.h() / 28)));
    const float lh   = ImGui::GetTextLineHeight();
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
        const StepData* sd    = h.step(j);
        const double    total = std::accumulate(sd->op_seconds.begin(), sd->op_seconds.end(), 0.0) * 1e3;
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
        if (sd->ended) {  // wall time tick: the part not covered by timed ops is host overhead
            const float yw = y_of_ms(sd->wall_seconds() * 1e3);
            dl->AddLine(ImVec2(x0, yw), ImVec2(x1, yw), IM_COL32(255, 255, 255, 160));
        }
    }
    if (s.view_step >= 1) {
        const float xs = a.p0.x + (s.view_step - 0.5f) * bw;
        dl->AddLine(ImVec2(xs, a.p0.y), ImVec2(xs, a.p1.y), kColCursor);
    }
    dl->AddRect(a.p0, a.p1, kColAxis);
    if (a.hovered) {
        const int j = std::clamp(1 + int((a.mouse.x - a.p0.x) / bw), 1, ns);
        const StepData* sd = h.step(j);
        ImGui::BeginTooltip();
        ImGui::Text("step %d (%s): wall %s", j, step_kind_name(sd->kind), fmt_ms(sd->wall_seconds()).c_str());
        for (size_t c = 0; c < kOpClasses; ++c)
            if (sd->op_seconds[c] > 0) {
                ImGui::ColorButton("##c", ImGui::ColorConvertU32ToFloat4(op_class_color(int(c))),
                                   ImGuiColorEditFlags_NoTooltip, ImVec2(10, 10));
                ImGui::SameLine();
                ImGui::Text("%-14s %s", op_class_name(OpClass(c)), fmt_ms(sd->op_seconds[c]).c_str());
            }
        ImGui::TextDisabled("click: show this step everywhere");
        ImGui::EndTooltip();
        if (a.clicked) {
            s.follow_live = false;
            s.view_step   = j;
        }
    }
}

void timeline(Studio& s, const RunHistory& h, float w, float hgt) {
    static TimelineView v;
    PlotArea            a  = plot_area("##timeline", w, hgt);
    ImDrawList*         dl = ImGui::GetWindowDrawList();
    const StepData* sd = h.step(s.view_step);
    if (!sd || sd->ops.empty()) {
        empty_note(a, sd ? "no op timings for this step" : "no step selected");
        return;
    }
    int64_t t0 = sd->ops.front().t_begin_ns, t1 = t0;
    for (const auto& o : sd->ops) {
        t0 = std::min(t0, o.t_begin_ns);
        t1 = std::max(t1, o.t_begin_ns + o.dur_ns);
    }
    const double span = double(std::max<int64_t>(t1 - t0, 1));
    if (a.hovered) {
        const float wheel = ImGui::GetIO().MouseWheel;
        if (wheel != 0) {  // zoom around the mouse
            const float fx   = (a.mouse.x - a.p0.x) / a.w();
            const float at   = v.offset + fx / v.zoom;
            v.zoom           = std::clamp(v.zoom * (wheel > 0 ? 1.25f : 0.8f), 1.f, 2000.f);
            v.offset         = at - fx / v.zoom;
        }
        if (ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) v = TimelineView{};
    }
    if (a.active && ImGui::IsMouseDragging(ImGuiMouseButton_Left)) {
        v.offset -= ImGui::GetIO().MouseDelta.x / a.w() / v.zoom;
    }
    v.offset = std::clamp(v.offset, 0.f, 1.f - 1.f / v.zoom);
    const int   nl      = std::max(h.n_layer(), 1);
    const int   n_lanes = nl + 1;  // lane 0: outside the layers (embed, lm_head, sampling)
    const float lane_h  = a.h() / n_lanes;
    auto        x_of    = [&](int64_t t) { return a.p0.x + float(((double(t - t0) / span) - v.offset) * v.zoom) * a.w(); };
    dl->PushClipRect(a.p0, a.p1, true);
    const OpTiming* hovered = nullptr;
    for (const auto& o : sd->ops) {
        const int   lane = o.layer < 0 ? 0 : std::min(o.layer + 1, nl);
        const float x0 = x_of(o.t_begin_ns), x1 = std::max(x_of(o.t_begin_ns + o.dur_ns), x0 + 1.f);
        const float y0 = a.p0.y + lane * lane_h;
        dl->AddRectFilled(ImVec2(x0, y0 + 1), ImVec2(x1, y0 + lane_h - 1), op_class_color(int(o.op)));
        if (a.hovered && a.mouse.x >= x0 && a.mouse.x < x1 && a.mouse.y >= y0 && a.mouse.y < y0 + lane_h) hovered = &o;
    }
    // Lane labels (every lane when they fit).
    const int label_every = std::max(1, int(13.f / std::max(lane_h, 0.1f)) + 1);
    for (int lane = 0; lane < n_lanes; lane += label_every) {
        char ln[16];
        if (lane == 0) std::snprintf(ln, sizeof ln, "-");
        else std::snprintf(ln, sizeof ln, "L%d", lane - 1);
        dl->AddText(ImVec2(a.p0.x + 2, a.p0.y + lane * lane_h + std::max(0.f, (lane_h - 13) * 0.5f)),
                    IM_COL32(230, 230, 230, 200), ln);
    }
    dl->PopClipRect();
    dl->AddRect(a.p0, a.p1, kColAxis);
    char lbl[96];
    std::snprintf(lbl, sizeof lbl, "step %d: %s span, %zu ops, lanes: top = outside layers, then L0..L%d", s.view_step,
                  fmt_ms(span * 1e-9).c_str(), sd->ops.size(), nl - 1);
    dl->AddText(ImVec2(a.p0.x, a.p1.y + 1), IM_COL32(150, 150, 150, 255), lbl);
    if (hovered) {
        ImGui::SetTooltip("%s  layer %d\n%s  (+%s from step start)\nrows %d  flops %s  bytes %s", op_class_name(hovered->op),
                          hovered->layer, fmt_ms(hovered->dur_ns * 1e-9).c_str(),
                          fmt_ms((hovered->t_begin_ns - t0) * 1e-9).c_str(), hovered->rows,
                          fmt_si(hovered->flops).c_str(), fmt_si(hovered->bytes, "B").c_str());
    } else if (a.hovered) {
        ImGui::SetTooltip("wheel: zoom, drag: pan, double-click: reset");
    }
}

void top_ops(Studio& s, const RunHistory& h) {
    const StepData* sd = h.step(s.view_step);
    const RunSummary sum = h.summary();
    std::array<int, kOpClasses> counts{};
    if (sd)
        for (const auto& o : sd->ops) counts[size_t(o.op)]++;
    std::array<size_t, kOpClasses> order;
    std::iota(order.begin(), order.end(), size_t(0));
    std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return sum.op_seconds[x] > sum.op_seconds[y]; });
    const double run_total = std::accumulate(sum.op_seconds.begin(), sum.op_seconds.end(), 0.0);
    const double step_total = sd ? std::accumulate(sd->op_seconds.begin(), sd->op_seconds.end(), 0.0) : 0.0;
    const float  table_h = ImGui::GetContentRegionAvail().y - ImGui::GetTextLineHeightWithSpacing() * 1.3f;
    if (ImGui::BeginTable("##topops", 5, ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_ScrollY |
                                            ImGuiTableFlags_SizingStretchProp, ImVec2(0, table_h))) {
        ImGui::TableSetupScrollFreeze(0, 1);
        ImGui::TableSetupColumn("op class", 0, 1.6f);
        ImGui::TableSetupColumn("step ms", 0, 1.f);
        ImGui::TableSetupColumn("n", 0, 0.6f);
        ImGui::TableSetupColumn("run ms", 0, 1.f);
        ImGui::TableSetupColumn("run %", 0, 0.8f);
        ImGui::TableHeadersRow();
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
        ImGui::EndTable();
    }
    (void)step_total;
    // CUPTI kernel records need a GPU; the section stays visible (greyed) so users know it exists.
    ImGui::TextDisabled("CUPTI kernels: unavailable (%s)",
                        s.status.backend.rfind("cuda", 0) == 0 ? "not collected in the studio yet" : "no GPU");
}

}  // namespace

void draw_time(Studio& s, const Rect& r) {
    help_marker("Time");
    ImGui::SameLine();
    ImGui::Checkbox("log y##time", &s.time_log_y);
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("log y: each bar's total on a log axis (its op classes keep their shares of the bar),\n"
                          "so sparse steps stay readable next to the FULL ones");
    RunEntry* run = s.shown_run();
    if (!run || !run->history.has_run()) return;
    const RunHistory& h = run->history;
    ImGui::SameLine();
    // Legend of op classes that occur in this run.
    const RunSummary sum = h.summary();
    for (size_t c = 0; c < kOpClasses; ++c) {
        if (sum.op_seconds[c] <= 0) continue;
        ImGui::SameLine();
        ImGui::ColorButton("##lg", ImGui::ColorConvertU32ToFloat4(op_class_color(int(c))),
                           ImGuiColorEditFlags_NoTooltip, ImVec2(10, 10));
        ImGui::SameLine(0, 3);
        ImGui::TextUnformatted(op_class_name(OpClass(c)));
    }
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float  w1 = avail.x * 0.36f, w2 = avail.x * 0.38f, w3 = avail.x - w1 - w2 - 16;
    const float  ph = avail.y - 16;
    ImGui::BeginGroup();
    stacked_bars(s, h, w1, ph);
    ImGui::GetWindowDrawList()->AddText(ImVec2(ImGui::GetItemRectMin().x, ImGui::GetItemRectMax().y + 1),
                                        IM_COL32(150, 150, 150, 255),
                                        s.time_log_y ? "ms per step (log), by op class; white tick: wall time"
                                                     : "ms per step by op class; white tick: wall time");
    ImGui::EndGroup();
    ImGui::SameLine();
    ImGui::BeginGroup();
    timeline(s, h, w2, ph);
    ImGui::EndGroup();
    ImGui::SameLine();
    ImGui::BeginChild("##topops_child", ImVec2(w3, avail.y), false);
    top_ops(s, h);
    ImGui::EndChild();
    (void)r;
}

}  // namespace dyllm::app
