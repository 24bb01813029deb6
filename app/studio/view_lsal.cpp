// L_sal panel: |S_l| (salient rows per layer) as bars at the shown step and as lines over steps (one colour per
// layer), with a log-y toggle; the vertical line marks the shown step.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "app/studio/plot.h"
#include "app/studio/studio.h"

namespace dyllm::app {

void draw_lsal(Studio& s, const Rect& r) {
    help_marker("L_sal per layer");
    ImGui::SameLine();
    ImGui::Checkbox("log y##lsal", &s.lsal_log_y);
    RunEntry* run = s.shown_run();
    if (!run || !run->history.has_run() || run->history.n_layer() <= 0) return;
    const RunHistory& h  = run->history;
    const int         nl = h.n_layer(), ns = h.step_count(), k = s.view_step;
    int               maxc = 1;
    for (int j = 1; j <= ns; ++j)
        for (int l = 0; l < nl; ++l) maxc = std::max(maxc, h.step(j)->salient_count(s.seq, l));
    auto yf = [&](int c) {
        return s.lsal_log_y ? std::log1p(float(c)) / std::log1p(float(maxc)) : float(c) / float(maxc);
    };
    const ImVec2 avail  = ImGui::GetContentRegionAvail();
    ImDrawList*  dl     = ImGui::GetWindowDrawList();
    const float  bars_w = avail.x * 0.32f;

    // ---- bars at step k ----
    PlotArea        a  = plot_area("##lsalbars", bars_w - 8, avail.y - 16);
    const StepData* sd = h.step(k);
    const float     bw = a.w() / nl;
    for (int l = 0; l < nl; ++l) {
        const int c = sd ? sd->salient_count(s.seq, l) : -1;
        if (c < 0) continue;
        const float x0 = a.p0.x + l * bw;
        dl->AddRectFilled(ImVec2(x0 + 1, a.p1.y - yf(c) * (a.h() - 2)), ImVec2(x0 + bw - 1, a.p1.y),
                          to_col(viridis_on_dark(nl > 1 ? float(l) / (nl - 1) : 0.f)));
    }
    dl->AddRect(a.p0, a.p1, kColAxis);
    // Captions shortened, then left out, where the plot is narrower than them (1280x720 puts this panel beside the
    // salient map, about 220 px wide): they must not run into the other plot.
    char lbl[64], lbl_short[32];
    std::snprintf(lbl, sizeof lbl, "layers 0..%d at step %d", nl - 1, k);
    std::snprintf(lbl_short, sizeof lbl_short, "step %d", k);
    fit_text(dl, ImVec2(a.p0.x, a.p1.y + 1), a.w(), IM_COL32(150, 150, 150, 255), {lbl, lbl_short, ""});
    if (a.hovered && sd) {
        const int   l   = std::clamp(int((a.mouse.x - a.p0.x) / bw), 0, nl - 1);
        const auto* rec = sd->layer(s.seq, l);
        if (rec)
            ImGui::SetTooltip("layer %d, step %d: |S_l| = %d of %d rows tested\nFFN rows %d, K/V rows %d", l, k,
                              rec->n_salient, rec->n_rows, rec->ffn_rows, rec->kv_rows);
        else
            ImGui::SetTooltip("layer %d, step %d: no cosine test (dense step)", l, k);
    }

    // ---- lines over steps ----
    ImGui::SameLine();
    PlotArea  b    = plot_area("##lsallines", avail.x - bars_w - 4, avail.y - 16);
    const int n_x  = std::max(ns, 2);
    auto      x_of = [&](int step) { return b.p0.x + (step - 1) * b.w() / (n_x - 1); };
    auto      y_of = [&](int c) { return b.p1.y - yf(c) * (b.h() - 4) - 2; };
    for (int l = 0; l < nl; ++l) {
        const ImU32 col = to_col(viridis_on_dark(nl > 1 ? float(l) / (nl - 1) : 0.f), 0.85f);
        ImVec2      prev;
        bool        have = false;
        for (int j = 1; j <= ns; ++j) {
            const int c = h.step(j)->salient_count(s.seq, l);
            if (c < 0) {
                have = false;
                continue;
            }
            const ImVec2 p(x_of(j), y_of(c));
            if (have) dl->AddLine(prev, p, col, 1.5f);
            prev = p;
            have = true;
        }
    }
    if (k >= 1) dl->AddLine(ImVec2(x_of(k), b.p0.y), ImVec2(x_of(k), b.p1.y), kColCursor);
    dl->AddRect(b.p0, b.p1, kColAxis);
    // Layer legend in the lines' colours, top left: every layer where it fits, else the two ends of the colour ramp.
    {
        auto  layer_col = [&](int l) { return to_col(viridis_on_dark(nl > 1 ? float(l) / (nl - 1) : 0.f)); };
        float all_w     = 0;
        char  t[16];
        for (int l = 0; l < nl; ++l) {
            std::snprintf(t, sizeof t, "L%d ", l);
            all_w += ImGui::CalcTextSize(t).x;
        }
        ImVec2 p(b.p0.x + 4, b.p0.y + 2);
        if (all_w < b.w() - 8) {
            for (int l = 0; l < nl; ++l) {
                std::snprintf(t, sizeof t, "L%d ", l);
                dl->AddText(p, layer_col(l), t);
                p.x += ImGui::CalcTextSize(t).x;
            }
        } else if (nl > 1) {
            std::snprintf(t, sizeof t, "L0");
            dl->AddText(p, layer_col(0), t);
            p.x += ImGui::CalcTextSize("L0 ").x;
            dl->AddText(p, IM_COL32(170, 170, 170, 255), "..");
            p.x += ImGui::CalcTextSize(".. ").x;
            std::snprintf(t, sizeof t, "L%d", nl - 1);
            dl->AddText(p, layer_col(nl - 1), t);
        }
    }
    std::snprintf(lbl, sizeof lbl, "|S_l| over steps 1..%d (max %d)%s", ns, maxc, s.lsal_log_y ? ", log" : "");
    std::snprintf(lbl_short, sizeof lbl_short, "|S_l|, max %d", maxc);
    fit_text(dl, ImVec2(b.p0.x, b.p1.y + 1), b.w(), IM_COL32(150, 150, 150, 255), {lbl, lbl_short, ""});
    if (b.hovered && ns > 0) {
        const int j = std::clamp(1 + int(std::lround((b.mouse.x - b.p0.x) / b.w() * (n_x - 1))), 1, ns);
        ImGui::BeginTooltip();
        ImGui::Text("step %d (%s)", j, step_kind_name(h.step(j)->kind));
        for (int l = 0; l < nl; ++l) {
            const int c = h.step(j)->salient_count(s.seq, l);
            if (c >= 0) ImGui::Text("L%-2d |S| = %d", l, c);
        }
        ImGui::TextDisabled("click: show this step everywhere");
        ImGui::EndTooltip();
        if (b.clicked) {
            s.follow_live = false;
            s.view_step   = j;
        }
    }
    (void)r;
}

}  // namespace dyllm::app
