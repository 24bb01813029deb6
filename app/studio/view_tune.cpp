// Tune panel (a tab of the bottom band), two modes: the tau sweep of the current prompt (FLOPs vs dense against
// agreement with the original run's answer) and the task-suite sweep (accuracy against engine tokens/s, original and
// fast-dual as references); Pareto points joined, click a point or row to load its tau into the live run.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "app/model/axis_ticks.h"
#include "app/model/pareto_front.h"
#include "app/model/tau_scale.h"
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
    // After the run ended a live tau changes nothing on screen: say so, and light the restart button.
    const bool running = s.status.state == WorkerState::Playing || s.status.state == WorkerState::Paused;
    if (running) {
        s.show_notice("tau " + tau_text(tau) + " loaded into the live run (from its next step)");
    } else {
        s.params_dirty = true;
        s.show_notice("tau " + tau_text(tau) + " set in the Controls bar: restart (R) runs it");
    }
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
    const float pad  = 10;
    auto        x_of = [&](double f) { return a.p0.x + pad + float(std::clamp(f, 0.0, 1.0)) * (a.w() - 2 * pad); };
    auto        y_of = [&](double g) { return a.p1.y - pad - float(std::clamp(g, 0.0, 1.0)) * (a.h() - 2 * pad); };
    for (double t : linear_ticks(1.0, 4)) {
        const std::string lbl = tick_label(t * 100) + "%";
        dl->AddLine(ImVec2(x_of(t), a.p0.y), ImVec2(x_of(t), a.p1.y), kColGrid);
        dl->AddLine(ImVec2(a.p0.x, y_of(t)), ImVec2(a.p1.x, y_of(t)), kColGrid);
        dl->AddText(ImVec2(x_of(t) - ImGui::CalcTextSize(lbl.c_str()).x * 0.5f, a.p1.y + 1),
                    IM_COL32(170, 170, 170, 255), lbl.c_str());
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
        if (p.reference)
            dl->AddRectFilled(ImVec2(c.x - 5, c.y - 5), ImVec2(c.x + 5, c.y + 5), IM_COL32(230, 230, 230, 255));
        else
            dl->AddCircleFilled(c, 5, col);
        if (p.pareto) dl->AddCircle(c, 9, kColFront, 0, 1.5f);
        char lbl[24];
        if (p.reference)
            std::snprintf(lbl, sizeof lbl, "original");
        else
            std::snprintf(lbl, sizeof lbl, "%.4g", p.tau);
        const float tw = ImGui::CalcTextSize(lbl).x;  // label left of points near the right edge, so it stays inside
        dl->AddText(ImVec2(c.x + 8 + tw > a.p1.x ? c.x - 8 - tw : c.x + 8, c.y - lh - 2), IM_COL32(220, 220, 220, 255),
                    lbl);
        if (a.hovered && std::hypot(a.mouse.x - c.x, a.mouse.y - c.y) < 10) hovered = &p;
    }
    if (hovered) {
        ImGui::BeginTooltip();
        if (hovered->reference)
            ImGui::TextUnformatted("original (every step dense): the reference");
        else
            ImGui::Text("dyllm tau %s", tau_text(hovered->tau).c_str());
        ImGui::Text("FLOPs vs dense %.1f%%   tokens as original %.1f%%   %.1f tok/s", hovered->flops_fraction * 100,
                    hovered->agreement * 100, hovered->tokens_per_s);
        ImGui::Text("answer: %s%s", hovered->text.substr(0, 60).c_str(), hovered->same_answer ? "" : "  (changed)");
        if (!hovered->reference) ImGui::TextDisabled("click: load this tau into the live run");
        ImGui::EndTooltip();
        if (a.clicked && !hovered->reference) load_tau(s, hovered->tau);
    }
}

void sweep_table(Studio& s, const std::vector<SweepPoint>& pts) {
    constexpr ImGuiTableFlags kFlags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_ScrollY |
                                       ImGuiTableFlags_SizingStretchProp;
    if (!ImGui::BeginTable("##sweeptab", 5, kFlags, ImVec2(0, ImGui::GetContentRegionAvail().y))) return;
    ImGui::TableSetupScrollFreeze(0, 1);
    for (const char* c : {"tau", "FLOPs vs dense", "tok/s", "as original", "answer"}) ImGui::TableSetupColumn(c);
    ImGui::TableHeadersRow();
    for (const auto& p : pts) {
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        char lbl[32];
        if (p.reference)
            std::snprintf(lbl, sizeof lbl, "original");
        else
            std::snprintf(lbl, sizeof lbl, "%.4g%s", p.tau, p.pareto ? " *" : "");
        if (ImGui::Selectable(lbl, false, ImGuiSelectableFlags_SpanAllColumns) && !p.reference) load_tau(s, p.tau);
        ImGui::TableNextColumn();
        ImGui::Text("%.1f%%", p.flops_fraction * 100);
        ImGui::TableNextColumn();
        ImGui::Text("%.1f", p.tokens_per_s);
        ImGui::TableNextColumn();
        ImGui::Text("%.0f%%", p.agreement * 100);
        ImGui::TableNextColumn();
        ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(p.same_answer ? kColSame : kColChanged), "%s",
                           p.cancelled     ? "cancelled"
                           : p.same_answer ? "same"
                                           : "changed");
    }
    ImGui::EndTable();
}

// ---- task-suite mode ----

constexpr ImU32 kColText     = IM_COL32(220, 220, 220, 255);
constexpr ImU32 kColTick     = IM_COL32(170, 170, 170, 255);
constexpr ImU32 kColOrig     = IM_COL32(235, 235, 235, 255);  // original: square
constexpr ImU32 kColFastDual = IM_COL32(225, 105, 205, 255);  // fast-dual: diamond (orange is "salient")
// dyllm points by stable-row update, StableUpdateUi order.
constexpr ImU32 kColUpdate[] = {IM_COL32(95, 160, 240, 255), IM_COL32(110, 200, 120, 255), IM_COL32(185, 140, 235, 255),
                                IM_COL32(230, 210, 90, 255)};

// The other methods (triangles) by registry index, so a method keeps its colour from sweep to sweep.
constexpr ImU32 kColOther[] = {IM_COL32(240, 150, 60, 255),  IM_COL32(80, 200, 200, 255),  IM_COL32(200, 90, 90, 255),
                               IM_COL32(150, 200, 60, 255),  IM_COL32(240, 120, 160, 255), IM_COL32(120, 130, 240, 255),
                               IM_COL32(200, 170, 120, 255), IM_COL32(160, 160, 160, 255)};

ImU32 point_col(const SuitePoint& p) {
    if (p.run.method == Method::Original) return kColOrig;
    if (p.run.method == Method::FastDual) return kColFastDual;
    if (p.run.method != Method::DyLLM) {
        const auto   ms = all_methods();
        const size_t i  = size_t(std::find(ms.begin(), ms.end(), p.run.method) - ms.begin());
        return kColOther[i % std::size(kColOther)];
    }
    return kColUpdate[size_t(stable_update_of(p.run.params))];
}

// The point is the live run's settings (dyllm at this tau with this update): drawn with a ring, its row marked.
bool is_live(const Studio& s, const SuitePoint& p) {
    if (p.run.method != Method::DyLLM || s.ui.method_idx < 0) return false;
    const DiffusionParams live = s.make_request(false).params;
    return live.method == Method::DyLLM && stable_update_of(live) == stable_update_of(p.run.params) &&
           std::fabs(s.ui.tau - p.run.tau) < 1e-6f;
}

// Loads a dyllm point into the live run: tau at once (from the next step); another method or stable-row update needs
// a restart, which happens at once unless the sweep still holds the engine.
void load_point(Studio& s, const SuitePoint& p) {
    if (p.run.method != Method::DyLLM) return;
    const DiffusionParams live = s.make_request(false).params;
    const bool restart = live.method != Method::DyLLM || stable_update_of(live) != stable_update_of(p.run.params);
    if (!restart) {
        load_tau(s, p.run.tau);
        return;
    }
    s.ui.method_idx = method_combo_index(Method::DyLLM);
    s.ui.update_idx = int(stable_update_of(p.run.params));
    s.ui.tau        = p.run.tau;
    s.ui.tau_set    = true;
    if (s.suite.running()) {
        s.params_dirty = true;
        s.show_notice(p.run.label() + " set: restart when the sweep ends to run it");
    } else {
        s.restart(true);
        s.show_notice("restarted with " + p.run.label());
    }
}

void suite_tooltip(const Studio& s, const SuitePoint& p, const SuitePoint* orig) {
    ImGui::BeginTooltip();
    ImGui::TextUnformatted(p.run.label().c_str());
    if (p.run.method == Method::Original) ImGui::TextDisabled("reference: every step dense");
    if (p.run.method == Method::FastDual) ImGui::TextDisabled("reference: Fast-dLLM's dual block cache");
    if (p.run.method == Method::DyLLM && stable_update_of(p.run.params) != StableUpdateUi::Authors)
        ImGui::TextDisabled("stable-row update: %s", p.run.stable_rows.c_str());
    ImGui::Text("accuracy %.1f%% (%d of %d)   engine tok/s %.1f", p.accuracy * 100, p.correct, p.items, p.tokens_per_s);
    if (p.repetitions > 1)
        ImGui::TextDisabled("tok/s: median of %d runs, range %.1f-%.1f", p.repetitions, p.tokens_per_s_lo,
                            p.tokens_per_s_hi);
    if (orig && orig->tokens_per_s > 0 && &p != orig)
        ImGui::Text("%.2fx the tokens/s of original", p.tokens_per_s / orig->tokens_per_s);
    ImGui::Text("FLOPs vs dense %.1f%%   %s FLOP per token", p.flops_vs_dense * 100, fmt_si(p.flops_per_token).c_str());
    if (p.pareto) ImGui::TextDisabled("on the Pareto front: no other run is both faster and more accurate");
    if (p.run.method == Method::DyLLM)
        ImGui::TextDisabled(is_live(s, p) ? "the live run's settings" : "click: load this tau into the live run");
    ImGui::EndTooltip();
}

const SuitePoint* original_of(const std::vector<SuitePoint>& pts) {
    for (const auto& p : pts)
        if (p.run.method == Method::Original) return &p;
    return nullptr;
}

void suite_plot(Studio& s, const SuiteSweepState& st, float w, float h) {
    const auto& pts    = st.points;
    const float lh     = ImGui::GetTextLineHeight();
    const float axis_w = ImGui::CalcTextSize("100%").x + lh + 10;  // tick labels plus the rotated-free axis title
    ImGui::Dummy(ImVec2(axis_w, 1));
    ImGui::SameLine(0, 0);
    PlotArea    a  = plot_area("##suite", w - axis_w, h - 2 * lh - 4);
    ImDrawList* dl = ImGui::GetWindowDrawList();
    if (pts.empty()) {
        empty_note(a, s.suite.running()
                          ? (st.current.empty() ? "waiting for the engine..." : "running the first run...")
                          : "press \"Sweep suite\"");
        return;
    }
    double x_hi = 0;
    for (const auto& p : pts) x_hi = std::max(x_hi, p.tokens_per_s);
    const std::vector<double> xt = linear_ticks(x_hi * 1.08, 5);
    x_hi                         = std::max(xt.back(), x_hi * 1.08);
    // Margins inside the frame: points at 0 or 100% keep their markers and labels inside it.
    const float pad = 10, top = lh + 6;
    auto x_of = [&](double v) { return a.p0.x + pad + float(std::clamp(v / x_hi, 0.0, 1.0)) * (a.w() - 2 * pad); };
    // Accuracy from a tenth below the lowest point (0 at most) to 100%: a sweep's points often lie within 20%.
    double y_lo = 1;
    for (const auto& p : pts) y_lo = std::min(y_lo, p.accuracy);
    y_lo      = std::max(0.0, std::floor(y_lo * 10 + 1e-9) / 10 - 0.1);
    auto y_of = [&](double g) {
        return a.p1.y - pad - float(std::clamp((g - y_lo) / (1 - y_lo), 0.0, 1.0)) * (a.h() - pad - top);
    };
    for (double t : xt) {
        char lbl_buf[24];  // tokens/s: whole numbers, thousands as "k" past 10000 (tick_label is for milliseconds)
        if (t >= 1e4)
            std::snprintf(lbl_buf, sizeof lbl_buf, "%gk", t / 1e3);
        else if (t >= 1)
            std::snprintf(lbl_buf, sizeof lbl_buf, "%.0f", t);
        else
            std::snprintf(lbl_buf, sizeof lbl_buf, "%g", t);
        const std::string lbl = lbl_buf;
        dl->AddLine(ImVec2(x_of(t), a.p0.y), ImVec2(x_of(t), a.p1.y), kColGrid);
        dl->AddText(ImVec2(x_of(t) - ImGui::CalcTextSize(lbl.c_str()).x * 0.5f, a.p1.y + 1), kColTick, lbl.c_str());
    }
    for (double t : range_ticks(y_lo, 1.0, 4)) {
        const std::string lbl = tick_label(std::round(t * 1000) / 10) + "%";
        dl->AddLine(ImVec2(a.p0.x, y_of(t)), ImVec2(a.p1.x, y_of(t)), kColGrid);
        dl->AddText(ImVec2(a.p0.x - 4 - ImGui::CalcTextSize(lbl.c_str()).x, y_of(t) - lh * 0.5f), kColTick,
                    lbl.c_str());
    }
    // Accuracy moves in steps of one item: with few items, each possible value gets a faint line, so two points one
    // step apart read as one item apart, not as a trend.
    const int items = pts.front().items;
    if (items > 0 && items <= 40)
        for (int k = 0; k <= items; ++k) {
            const double g = double(k) / items;
            if (g < y_lo - 1e-9) continue;
            dl->AddLine(ImVec2(a.p0.x + 1, y_of(g)), ImVec2(a.p0.x + 7, y_of(g)), kColTick);
            dl->AddLine(ImVec2(a.p0.x + 7, y_of(g)), ImVec2(a.p1.x, y_of(g)), (kColGrid & 0x00FFFFFFu) | (14u << 24));
        }
    dl->AddRect(a.p0, a.p1, kColAxis);
    if (items > 0) {
        char step_note[64];
        std::snprintf(step_note, sizeof step_note, "one item = %.3g%% (%d items)", 100.0 / items, items);
        // Bottom left: the plot keeps a tenth of accuracy below its lowest point free, so no point sits there.
        fit_text(dl, ImVec2(a.p0.x + 10, a.p1.y - lh - 2), a.w() * 0.5f, kColTick, {step_note, ""});
    }
    // Axis titles: x centred under the tick labels, y at the top of the tick labels' column.
    const char* xt_title = "engine tokens/s (response tokens over denoising time)";
    dl->AddText(ImVec2(a.p0.x + (a.w() - ImGui::CalcTextSize(xt_title).x) * 0.5f, a.p1.y + lh + 2), kColTick, xt_title);
    dl->AddText(ImVec2(a.p0.x - axis_w + 2, a.p0.y), kColTick, "accuracy");

    // Pareto front, left to right.
    std::vector<ParetoInput> in;
    for (const auto& p : pts) in.push_back({p.tokens_per_s, p.accuracy, p.pareto});
    const std::vector<size_t> order = pareto_order(in, std::vector<bool>(pts.size(), true));
    std::vector<size_t>       front;
    for (size_t i : order)
        if (pts[i].pareto) front.push_back(i);
    for (size_t k = 1; k < front.size(); ++k)
        dl->AddLine(ImVec2(x_of(pts[front[k - 1]].tokens_per_s), y_of(pts[front[k - 1]].accuracy)),
                    ImVec2(x_of(pts[front[k]].tokens_per_s), y_of(pts[front[k]].accuracy)), kColFront, 1.5f);

    const SuitePoint*   hovered = nullptr;
    float               best_d  = 10;
    std::vector<ImVec4> placed;  // label boxes drawn so far (x0, y0, x1, y1)
    // Labels: the references' first (they are always labelled), then each dyllm tau at the first free spot around
    // its point; a label with no free spot is left out (the tooltip and the table still name the point).
    auto place_label = [&](ImVec2 c, const char* text) {
        const ImVec2 sz      = ImGui::CalcTextSize(text);
        const ImVec2 cands[] = {
            {c.x + 8, c.y - sz.y - 2}, {c.x + 8, c.y + 2}, {c.x - 8 - sz.x, c.y - sz.y - 2}, {c.x - 8 - sz.x, c.y + 2}};
        for (const ImVec2& q : cands) {
            const ImVec4 r(q.x, q.y, q.x + sz.x, q.y + sz.y);
            if (r.x < a.p0.x || r.z > a.p1.x || r.y < a.p0.y || r.w > a.p1.y) continue;
            bool            hit  = false;
            constexpr float kGap = 4;  // labels closer than this read as one ("0.990.9")
            for (const ImVec4& o : placed)
                hit = hit || (r.x < o.z + kGap && o.x < r.z + kGap && r.y < o.w && o.y < r.w);
            if (hit) continue;
            placed.push_back(r);
            dl->AddText(q, kColText, text);
            return;
        }
    };
    std::vector<const SuitePoint*> draw_order;
    for (const auto& p : pts)
        if (p.run.reference) draw_order.push_back(&p);
    for (const auto& p : pts)
        if (!p.run.reference) draw_order.push_back(&p);
    for (const SuitePoint* pp : draw_order) {
        const SuitePoint& p = *pp;
        const ImVec2      c(x_of(p.tokens_per_s), y_of(p.accuracy));
        const ImU32       col = point_col(p);
        if (p.repetitions > 1 && p.tokens_per_s_hi > p.tokens_per_s_lo) {  // the range of the repeated runs
            const float x0 = x_of(p.tokens_per_s_lo), x1 = x_of(p.tokens_per_s_hi);
            dl->AddLine(ImVec2(x0, c.y), ImVec2(x1, c.y), col, 1.5f);
            dl->AddLine(ImVec2(x0, c.y - 4), ImVec2(x0, c.y + 4), col, 1.5f);
            dl->AddLine(ImVec2(x1, c.y - 4), ImVec2(x1, c.y + 4), col, 1.5f);
        }
        if (p.run.method == Method::Original) {
            dl->AddRectFilled(ImVec2(c.x - 5, c.y - 5), ImVec2(c.x + 5, c.y + 5), col);
        } else if (p.run.method == Method::FastDual) {
            dl->AddQuadFilled(ImVec2(c.x, c.y - 7), ImVec2(c.x + 7, c.y), ImVec2(c.x, c.y + 7), ImVec2(c.x - 7, c.y),
                              col);
        } else if (p.run.method == Method::DyLLM) {
            dl->AddCircleFilled(c, 5, col);
        } else {
            dl->AddTriangleFilled(ImVec2(c.x, c.y - 6), ImVec2(c.x + 6, c.y + 5), ImVec2(c.x - 6, c.y + 5), col);
        }
        if (p.pareto) dl->AddCircle(c, 9, kColFront, 0, 1.5f);
        if (is_live(s, p)) dl->AddCircle(c, 12, kColTau, 0, 2.f);
        char lbl_tau[16];  // dyllm: the tau alone (the colour says the update); other methods: their name
        std::snprintf(lbl_tau, sizeof lbl_tau, "%.4g", p.run.tau);
        const std::string lbl = p.run.method == Method::DyLLM ? std::string(lbl_tau) : method_name(p.run.method);
        place_label(c, lbl.c_str());
        const float d = std::hypot(a.mouse.x - c.x, a.mouse.y - c.y);
        if (a.hovered && d < best_d) {
            hovered = &p;
            best_d  = d;
        }
    }
    if (hovered) {
        suite_tooltip(s, *hovered, original_of(pts));
        if (a.clicked) load_point(s, *hovered);
    }
}

void suite_table(Studio& s, const std::vector<SuitePoint>& pts) {
    constexpr ImGuiTableFlags kFlags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_ScrollY |
                                       ImGuiTableFlags_SizingStretchProp;
    if (!ImGui::BeginTable("##suitetab", 5, kFlags, ImVec2(0, ImGui::GetContentRegionAvail().y))) return;
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("run", ImGuiTableColumnFlags_WidthStretch, 1.8f);
    for (const char* c : {"accuracy", "tok/s", "vs original", "FLOPs/dense"})
        ImGui::TableSetupColumn(c, ImGuiTableColumnFlags_WidthStretch, 1.f);
    ImGui::TableHeadersRow();
    const SuitePoint* orig = original_of(pts);
    for (const auto& p : pts) {
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        const std::string lbl = p.run.label() + (p.pareto ? " *" : "") + "##" + p.run.label();
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(point_col(p)));
        if (ImGui::Selectable(lbl.c_str(), is_live(s, p), ImGuiSelectableFlags_SpanAllColumns)) load_point(s, p);
        ImGui::PopStyleColor();
        if (ImGui::IsItemHovered()) suite_tooltip(s, p, orig);
        ImGui::TableNextColumn();
        ImGui::Text("%.0f%% (%d/%d)", p.accuracy * 100, p.correct, p.items);
        ImGui::TableNextColumn();
        if (p.repetitions > 1)
            ImGui::Text("%.1f [%.0f-%.0f]", p.tokens_per_s, p.tokens_per_s_lo, p.tokens_per_s_hi);
        else
            ImGui::Text("%.1f", p.tokens_per_s);
        ImGui::TableNextColumn();
        if (orig && orig->tokens_per_s > 0)
            ImGui::Text("%.2fx", p.tokens_per_s / orig->tokens_per_s);
        else
            ImGui::TextDisabled("-");
        ImGui::TableNextColumn();
        ImGui::Text("%.1f%%", p.flops_vs_dense * 100);
    }
    ImGui::EndTable();
}

void draw_suite_sweep(Studio& s) {
    SuiteTune& t    = s.suite;
    const bool busy = t.running();
    if (t.job) t.shown = t.job->state();
    const SuiteSweepState& st = t.shown;
    const float            em = ImGui::GetFontSize();

    if (busy || s.sweep.active()) ImGui::BeginDisabled();
    ImGui::SetNextItemWidth(em * 4.5f);
    ImGui::Combo("task", &t.task_idx, kSuiteTasks, int(std::size(kSuiteTasks)));
    ImGui::SameLine();
    ImGui::SetNextItemWidth(em * 5.5f);
    if (ImGui::InputInt("items", &t.limit)) t.limit = std::clamp(t.limit, 1, 1000);
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
        ImGui::SetTooltip(
            "items per task (the first N of assets/tasks/<task>.jsonl); 10 keeps a sweep of tiny-llada\n"
            "well under a minute, and each point's accuracy is then a multiple of 10%%");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(em * 5.5f);
    if (ImGui::InputInt("reps", &t.repetitions)) t.repetitions = std::clamp(t.repetitions, 1, 20);
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
        ImGui::SetTooltip(
            "runs per configuration: a point's tokens/s is their median and its bar their range (one\n"
            "sample of a loaded machine moved a point on and off the front); accuracy repeats (greedy)");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(em * 9);
    ImGui::InputTextWithHint("tau", "0.9,0.98,0.99,0.995,0.999", t.taus, sizeof t.taus);
    ImGui::SameLine();
    ImGui::TextUnformatted("dyllm update:");
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
        ImGui::SetTooltip("DyLLM's stable-row update to sweep (one colour each); none ticked: the Controls bar's");
    static const char* kShort[] = {"authors'", "incr.", "columns", "exact"};
    for (size_t i = 0; i < std::size(kStableRowNames); ++i) {
        ImGui::SameLine();
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(kColUpdate[i]));
        ImGui::Checkbox(kShort[i], &t.stable_rows[i]);
        ImGui::PopStyleColor();
    }
    ImGui::SameLine();
    ImGui::Checkbox("all methods", &t.every_method);
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
        ImGui::SetTooltip("also every other method once at its defaults (a triangle each): the front across methods");
    ImGui::SameLine();
    if (ImGui::Button("Sweep suite")) s.start_suite_sweep();
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
        ImGui::SetTooltip(
            "runs the task's first items with original and fast-dual (references), then dyllm at each\n"
            "tau (and with \"all methods\" every other method once), scored as `dyllm eval` scores them, in\n"
            "the background (the live run pauses); the other settings as in the Controls bar. Same sweep:\n"
            "dyllm bench --task T --tau LIST [--methods all] -o f.csv");
    if (busy || s.sweep.active()) ImGui::EndDisabled();

    if (busy) {
        ImGui::Text("run %d of %d: %s (%.0f s)", st.done + 1, std::max(st.runs, st.done + 1),
                    st.current.empty() ? "starting" : st.current.c_str(), st.elapsed_s);
        ImGui::SameLine();
        if (ImGui::SmallButton("stop")) t.job->cancel();
    } else if (!st.error.empty()) {
        ImGui::TextColored(ImVec4(0.95f, 0.45f, 0.4f, 1.f), "%s", st.error.c_str());
    } else if (!st.points.empty()) {
        ImGui::TextDisabled(
            "%d runs in %.*f s%s; * and ring: Pareto front (nothing faster is as accurate); "
            "click a dyllm point or row to load its tau",
            st.done, st.elapsed_s < 10 ? 1 : 0, st.elapsed_s, st.cancelled ? " (stopped)" : "");
    } else {
        ImGui::TextDisabled("accuracy on a task suite against engine tokens/s, for each tau");
    }
    ImGui::SameLine();
    const ImVec2 p  = ImGui::GetCursorScreenPos();
    ImDrawList*  dl = ImGui::GetWindowDrawList();
    const float  lh = ImGui::GetTextLineHeight(), r = lh * 0.3f;
    dl->AddRectFilled(ImVec2(p.x + 8 - r, p.y + lh * 0.5f - r), ImVec2(p.x + 8 + r, p.y + lh * 0.5f + r), kColOrig);
    dl->AddQuadFilled(ImVec2(p.x + 84, p.y + lh * 0.5f - r - 1), ImVec2(p.x + 85 + r, p.y + lh * 0.5f),
                      ImVec2(p.x + 84, p.y + lh * 0.5f + r + 1), ImVec2(p.x + 83 - r, p.y + lh * 0.5f), kColFastDual);
    dl->AddText(ImVec2(p.x + 8 + r + 4, p.y), kColTick, "original");
    dl->AddText(ImVec2(p.x + 85 + r + 4, p.y), kColTick, "fast-dual");
    ImGui::Dummy(ImVec2(85 + r + 4 + ImGui::CalcTextSize("fast-dual").x, lh));

    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float  w1    = avail.x * 0.58f;
    ImGui::BeginGroup();
    suite_plot(s, st, w1, avail.y);
    ImGui::EndGroup();
    ImGui::SameLine();
    ImGui::BeginChild("##suite_table", ImVec2(0, avail.y), false);
    suite_table(s, st.points);
    ImGui::EndChild();
}

void draw_prompt_sweep(Studio& s) {
    const bool busy = s.sweep.active();
    if (busy || s.suite.running()) ImGui::BeginDisabled();
    if (ImGui::Button("Sweep tau")) s.start_sweep();
    if (busy || s.suite.running()) ImGui::EndDisabled();
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
        ImGui::SetTooltip(
            "runs the current prompt with original (the reference), then dyllm at tau\n"
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
        ImGui::TextDisabled(
            "%zu runs; * = Pareto (least work for the agreement reached); click a row or point to use "
            "its tau",
            pts.size());
    } else {
        ImGui::TextDisabled("the FLOPs each tau saves against how much of the original answer it keeps");
    }
    ImGui::TextDisabled(
        "x: FLOPs vs dense   y: response tokens as the original's   ring: Pareto   "
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

}  // namespace

void draw_tune(Studio& s) {
    // The two modes: one prompt (FLOPs vs agreement with original) and a task suite (accuracy vs tokens/s).
    int mode = s.tune_suite_mode ? 1 : 0;
    if (ImGui::RadioButton("one prompt", &mode, 0)) s.tune_suite_mode = false;
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("sweep tau on the current prompt: FLOPs saved vs answer kept");
    ImGui::SameLine();
    if (ImGui::RadioButton("task suite", &mode, 1)) s.tune_suite_mode = true;
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("sweep tau on a task suite: accuracy vs tokens/s, with references");
    ImGui::SameLine();
    if (s.tune_suite_mode)
        draw_suite_sweep(s);
    else
        draw_prompt_sweep(s);
}

}  // namespace dyllm::app
