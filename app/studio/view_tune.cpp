// Tune panel (a tab of the bottom band): the tau sweep of the current prompt, FLOPs vs dense against agreement with
// the original run's answer, Pareto points joined; click a point to load its tau into the live run.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "app/model/axis_ticks.h"
#include "app/studio/plot.h"
#include "app/studio/studio.h"

namespace dyllm::app {

namespace {

constexpr ImU32 kColSame    = IM_COL32(110, 200, 120, 255);  // answer as the original's
constexpr ImU32 kColChanged = IM_COL32(235, 90, 80, 255);    // answer changed
constexpr ImU32 kColFront   = IM_COL32(255, 255, 255, 200);  // Pareto front line

void load_tau(Studio& s, float tau) {
    s.ui.tau     = tau;
    s.ui.tau_set = true;
    s.worker.set_tau(tau);  // live: from the next step of the current run, and every later run
    s.show_notice("tau " + std::to_string(tau).substr(0, 6) + " loaded into the live run");
}

void sweep_plot(Studio& s, const std::vector<SweepPoint>& pts, float w, float h) {
    const float lh     = ImGui::GetTextLineHeight();
    const float axis_w = ImGui::CalcTextSize("100%").x + 8;
    ImGui::Dummy(ImVec2(axis_w, 1));
    ImGui::SameLine(0, 0);
    PlotArea    a  = plot_area("##sweep", w - axis_w, h - lh - 4);
    ImDrawList* dl = ImGui::GetWindowDrawList();
    if (pts.empty()) {
        empty_note(a, s.sweep.active() ? "running the reference (original)..." : "press \"Sweep tau\"");
        return;
    }
    const float pad = 10;
    auto x_of = [&](double f) { return a.p0.x + pad + float(std::clamp(f, 0.0, 1.0)) * (a.w() - 2 * pad); };
    auto y_of = [&](double g) { return a.p1.y - pad - float(std::clamp(g, 0.0, 1.0)) * (a.h() - 2 * pad); };
    for (double t : linear_ticks(1.0, 4)) {
        const std::string lbl = tick_label(t * 100) + "%";
        dl->AddLine(ImVec2(x_of(t), a.p0.y), ImVec2(x_of(t), a.p1.y), kColGrid);
        dl->AddLine(ImVec2(a.p0.x, y_of(t)), ImVec2(a.p1.x, y_of(t)), kColGrid);
        dl->AddText(ImVec2(x_of(t) - ImGui::CalcTextSize(lbl.c_str()).x * 0.5f, a.p1.y + 1), IM_COL32(170, 170, 170, 255),
                    lbl.c_str());
        dl->AddText(ImVec2(a.p0.x - 4 - ImGui::CalcTextSize(lbl.c_str()).x, y_of(t) - lh * 0.5f),
                    IM_COL32(170, 170, 170, 255), lbl.c_str());
    }
    dl->AddRect(a.p0, a.p1, kColAxis);
    // Pareto front, left to right.
    std::vector<const SweepPoint*> front;
    for (const auto& p : pts)
        if (p.pareto) front.push_back(&p);
    std::sort(front.begin(), front.end(), [](auto* x, auto* y) { return x->flops_fraction < y->flops_fraction; });
    for (size_t i = 1; i < front.size(); ++i)
        dl->AddLine(ImVec2(x_of(front[i - 1]->flops_fraction), y_of(front[i - 1]->agreement)),
                    ImVec2(x_of(front[i]->flops_fraction), y_of(front[i]->agreement)), kColFront, 1.5f);
    const SweepPoint* hovered = nullptr;
    for (const auto& p : pts) {
        const ImVec2 c(x_of(p.flops_fraction), y_of(p.agreement));
        const ImU32  col = p.same_answer ? kColSame : kColChanged;
        if (p.reference) dl->AddRectFilled(ImVec2(c.x - 5, c.y - 5), ImVec2(c.x + 5, c.y + 5), IM_COL32(230, 230, 230, 255));
        else dl->AddCircleFilled(c, 5, col);
        if (p.pareto) dl->AddCircle(c, 9, kColFront, 0, 1.5f);
        char lbl[24];
        if (p.reference) std::snprintf(lbl, sizeof lbl, "original");
        else std::snprintf(lbl, sizeof lbl, "%.4g", p.tau);
        const float tw = ImGui::CalcTextSize(lbl).x;  // label left of points near the right edge, so it stays inside
        dl->AddText(ImVec2(c.x + 8 + tw > a.p1.x ? c.x - 8 - tw : c.x + 8, c.y - lh - 2), IM_COL32(220, 220, 220, 255), lbl);
        if (a.hovered && std::hypot(a.mouse.x - c.x, a.mouse.y - c.y) < 10) hovered = &p;
    }
    if (hovered) {
        ImGui::BeginTooltip();
        if (hovered->reference) ImGui::TextUnformatted("original (every step dense): the reference");
        else ImGui::Text("dyllm tau %.5f", hovered->tau);
        ImGui::Text("FLOPs vs dense %.1f%%   tokens as original %.1f%%   %.1f tok/s", hovered->flops_fraction * 100,
                    hovered->agreement * 100, hovered->tokens_per_s);
        ImGui::Text("answer: %s%s", hovered->text.substr(0, 60).c_str(), hovered->same_answer ? "" : "  (changed)");
        if (!hovered->reference) ImGui::TextDisabled("click: load this tau into the live run");
        ImGui::EndTooltip();
        if (a.clicked && !hovered->reference) load_tau(s, hovered->tau);
    }
}

void sweep_table(Studio& s, const std::vector<SweepPoint>& pts) {
    constexpr ImGuiTableFlags kFlags =
        ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_ScrollY | ImGuiTableFlags_SizingStretchProp;
    if (!ImGui::BeginTable("##sweeptab", 5, kFlags, ImVec2(0, ImGui::GetContentRegionAvail().y))) return;
    ImGui::TableSetupScrollFreeze(0, 1);
    for (const char* c : {"tau", "FLOPs vs dense", "tok/s", "as original", "answer"}) ImGui::TableSetupColumn(c);
    ImGui::TableHeadersRow();
    for (const auto& p : pts) {
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        char lbl[32];
        if (p.reference) std::snprintf(lbl, sizeof lbl, "original");
        else std::snprintf(lbl, sizeof lbl, "%.4g%s", p.tau, p.pareto ? " *" : "");
        if (ImGui::Selectable(lbl, false, ImGuiSelectableFlags_SpanAllColumns) && !p.reference) load_tau(s, p.tau);
        ImGui::TableNextColumn();
        ImGui::Text("%.1f%%", p.flops_fraction * 100);
        ImGui::TableNextColumn();
        ImGui::Text("%.1f", p.tokens_per_s);
        ImGui::TableNextColumn();
        ImGui::Text("%.0f%%", p.agreement * 100);
        ImGui::TableNextColumn();
        ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(p.same_answer ? kColSame : kColChanged), "%s",
                           p.cancelled ? "cancelled" : p.same_answer ? "same" : "changed");
    }
    ImGui::EndTable();
}

}  // namespace

void draw_tune(Studio& s) {
    const bool busy = s.sweep.active();
    if (busy) ImGui::BeginDisabled();
    if (ImGui::Button("Sweep tau")) s.start_sweep();
    if (busy) ImGui::EndDisabled();
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
        ImGui::SetTooltip("runs the current prompt with original (the reference), then dyllm at tau\n"
                          "0.9, 0.95, 0.98, 0.99, 0.995, 0.999, at full speed; the other settings as in the bar");
    ImGui::SameLine();
    const auto& pts = s.sweep.points();
    if (busy) {
        ImGui::Text("run %d of %d...", int(pts.size()) + 1, s.sweep.runs());
        ImGui::SameLine();
        if (ImGui::SmallButton("stop")) {
            s.sweep.cancel();
            s.sweep_label.clear();
            s.worker.cancel_run();
            s.worker.set_speed(s.ui.speed);
        }
    } else if (!pts.empty()) {
        ImGui::TextDisabled("%zu runs; * = Pareto (least work for the agreement reached); click a row or point to use "
                            "its tau", pts.size());
    } else {
        ImGui::TextDisabled("the FLOPs each tau saves against how much of the original answer it keeps");
    }
    ImGui::TextDisabled("x: FLOPs vs dense   y: response tokens as the original's   ring: Pareto   "
                        "green: same answer, red: changed");
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float  w1    = avail.x * 0.58f;
    ImGui::BeginGroup();
    sweep_plot(s, pts, w1, avail.y);
    ImGui::EndGroup();
    ImGui::SameLine();
    ImGui::BeginChild("##sweep_table", ImVec2(0, avail.y), false);
    sweep_table(s, pts);
    ImGui::EndChild();
}

}  // namespace dyllm::app
