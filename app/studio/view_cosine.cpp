// Cosine histograms panel: per-layer small multiples of the attention-context cosine between consecutive steps on the
// log10(1 - cos) bins of events.h, tau as a red line you can drag (sets tau live), salient side shaded, log-y toggle;
// with drift measured, each layer's approx-vs-exact cosine histogram beside it (and the checkbox that turns it on).
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "app/model/tau_scale.h"
#include "app/studio/plot.h"
#include "app/studio/studio.h"

namespace dyllm::app {

namespace {

// Plot x axis in units of log10(1 - cos): bin b covers [-7.5 + 0.5 b, -7 + 0.5 b); bin 0 (1 - cos < 1e-7) is drawn
// as [-7.5, -7) and the last bin (cos <= 0) as [0, 0.5), so every bin is half a decade wide.
constexpr float kXMin = -7.5f, kXMax = 0.5f;

float tau_to_x(float tau) {
    const double d = 1.0 - double(tau);
    if (!(d > 0)) return kXMin;
    return std::clamp(float(std::log10(d)), kXMin, kXMax);
}

// Latest step <= k that has saliency records for sequence seq (FULL steps have none).
int step_with_saliency(const RunHistory& h, int seq, int k) {
    for (int j = std::min(k, h.step_count()); j >= 1; --j) {
        const StepData* st = h.step(j);
        for (int l = 0; l < h.n_layer(); ++l)
            if (st->layer(seq, l)) return j;
    }
    return 0;
}

// Bars of one histogram in plot area a: colour lo for the bins left of x_tau, hi for those right of it.
void draw_bins(ImDrawList* dl, const PlotArea& a, const CosineHistogram& hist, float x_tau, bool log_y, ImU32 lo,
               ImU32 hi) {
    auto     x_of = [&](float xv) { return a.p0.x + (xv - kXMin) / (kXMax - kXMin) * a.w(); };
    uint32_t maxc = 1;
    for (auto c : hist) maxc = std::max(maxc, c);
    auto y_of = [&](uint32_t c) {
        const float f = log_y ? std::log1p(float(c)) / std::log1p(float(maxc)) : float(c) / float(maxc);
        return a.p1.y - f * (a.h() - 2);
    };
    for (int b = 0; b < kCosineBins; ++b) {
        if (hist[b] == 0) continue;
        const float x0 = x_of(kXMin + 0.5f * b), x1 = x_of(kXMin + 0.5f * (b + 1));
        dl->AddRectFilled(ImVec2(x0 + 1, y_of(hist[b])), ImVec2(x1 - 1, a.p1.y),
                          kXMin + 0.5f * (b + 0.5f) > x_tau ? hi : lo);
    }
}

// Shaded side of tau, decade grid and the tau line of a histogram area.
void draw_frame(ImDrawList* dl, const PlotArea& a, float x_tau, ImU32 shade) {
    auto x_of = [&](float xv) { return a.p0.x + (xv - kXMin) / (kXMax - kXMin) * a.w(); };
    dl->AddRectFilled(ImVec2(x_of(x_tau), a.p0.y), a.p1, shade);
    for (float dec = -7.f; dec <= 0.f; dec += 1.f)
        dl->AddLine(ImVec2(x_of(dec), a.p0.y), ImVec2(x_of(dec), a.p1.y), kColGrid);
}

// The drift histogram of one layer (approx-vs-exact context cosine of its approximated rows) in cell [c0, c0 + size).
void draw_drift_hist(Studio& s, int l, const LayerSaliencyRecord* rec, ImVec2 c0, ImVec2 size, float x_tau) {
    ImDrawList* dl = ImGui::GetWindowDrawList();
    char        t[3][64];
    if (rec && rec->drift_count > 0) {
        const double pct = 100.0 * drift_below_tau(*rec) / rec->drift_count;
        std::snprintf(t[0], sizeof t[0], "drift %.0f%% < tau, min %.3f", pct, double(rec->drift_min));
        std::snprintf(t[1], sizeof t[1], "drift %.0f%% < tau", pct);
        std::snprintf(t[2], sizeof t[2], "%.0f%% < tau", pct);
    } else {
        std::snprintf(t[0], sizeof t[0], "%s", rec ? "drift: none approximated" : "drift: not tested");
        std::snprintf(t[1], sizeof t[1], "%s", rec ? "drift: none" : "drift: -");
        std::snprintf(t[2], sizeof t[2], "%s", rec ? "exact" : "-");
    }
    fit_text(dl, ImVec2(c0.x + 4, c0.y), size.x - 8, IM_COL32(230, 150, 180, 255), {t[0], t[1], t[2]});
    const float title_h = ImGui::GetTextLineHeight() + 2;
    ImGui::SetCursorScreenPos(ImVec2(c0.x + 4, c0.y + title_h));
    char id[16];
    std::snprintf(id, sizeof id, "##d%d", l);
    const PlotArea a = plot_area(id, size.x - 10, size.y - title_h - 6);
    draw_frame(dl, a, x_tau, IM_COL32(230, 60, 110, 24));
    if (rec && rec->drift_count > 0)
        draw_bins(dl, a, rec->drift_hist, x_tau, s.hist_log_y, IM_COL32(110, 190, 170, 255),
                  IM_COL32(230, 70, 120, 255));
    else
        empty_note(a, rec ? "exact" : "-");
    const float x = a.p0.x + (x_tau - kXMin) / (kXMax - kXMin) * a.w();
    dl->AddLine(ImVec2(x, a.p0.y), ImVec2(x, a.p1.y), kColTau, 2.f);
    dl->AddRect(a.p0, a.p1, kColAxis);
    if (a.hovered && rec && rec->drift_count > 0) {
        const int     b     = std::clamp(int((a.mouse.x - a.p0.x) / a.w() * kCosineBins), 0, kCosineBins - 1);
        const int32_t below = drift_below_tau(*rec);
        ImGui::SetTooltip(
            "layer %d drift, bin %d: approx-vs-exact cos in [%.7f, %.7f)\n%u of %d approximated rows "
            "(%.1f%%)\nbelow tau: %d rows (%.1f%%); min %.5f, mean %.5f\nthe approximation served these "
            "rows; exact attention was computed only to measure it",
            l, b, cosine_bin_lower_cos(b), cosine_bin_upper_cos(b), rec->drift_hist[b], rec->drift_count,
            100.0 * rec->drift_hist[b] / rec->drift_count, below, 100.0 * below / rec->drift_count,
            double(rec->drift_min), double(rec->drift_mean));
    }
}

}  // namespace

void draw_cosine(Studio& s, const Rect& r) {
    help_marker("Cosine histograms");
    ImGui::SameLine();
    ImGui::Checkbox("log y", &s.hist_log_y);
    ImGui::SameLine();
    // Applies to the next run (restart): the flags' --measure-drift is the starting value.
    if (ImGui::Checkbox("measure drift (exact attention for approximated rows)", &s.ui.base.measure_drift))
        s.params_dirty = true;
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            "DyLLM: every sparse layer also computes exact attention for the rows whose context the\n"
            "approximation served, and shows the cosine between the approximate and the exact context\n"
            "(histograms beside these, lines in 'Drift over steps'). Measured only: the decode and the\n"
            "FLOP count stay the same; the steps take longer. Applies from the next run (restart).");
    RunEntry* run = s.shown_run();
    if (!run || !run->history.has_run() || run->history.n_layer() <= 0) {
        ImGui::SameLine();
        ImGui::TextDisabled("no run yet");
        return;
    }
    const RunHistory& h   = run->history;
    const int         k   = step_with_saliency(h, s.seq, s.view_step);
    const float       tau = std::isfinite(s.tau_drag) ? s.tau_drag : s.ui.tau;
    ImGui::SameLine();
    if (k == 0) {
        ImGui::TextDisabled("step %d: no cosine test yet (FULL steps recompute every row; sparse steps test them)",
                            s.view_step);
        return;
    }
    // The original method recomputes every row: its cosines only say what DyLLM would have marked.
    if (h.info().method == "original") {
        ImGui::TextColored(ImVec4(1.f, 0.85f, 0.45f, 1.f), "original: what DyLLM would mark");
        ImGui::SameLine();
    }
    if (k != s.view_step)
        ImGui::TextDisabled("showing step %d (step %d is a %s step without a cosine test)", k, s.view_step,
                            h.step(s.view_step) ? step_kind_name(h.step(s.view_step)->kind) : "?");
    else if (std::fabs(h.step(k)->tau - tau) > 1e-7f)
        ImGui::TextDisabled("step %d (%s) ran with tau %s; red line = new tau %s (from the next step)", k,
                            step_kind_name(h.step(k)->kind), tau_text(h.step(k)->tau).c_str(), tau_text(tau).c_str());
    else
        ImGui::TextDisabled("step %d (%s)  tau %s", k, step_kind_name(h.step(k)->kind), tau_text(tau).c_str());
    // The axis note only where it fits (at 1280x720 it ran out of the panel); the tooltip of (?) says it too.
    const char* axis_note = "   x: 1-cos, 1e-7 (left) .. 1 (right); red = tau, drag it to set tau";
    ImGui::SameLine();
    if (ImGui::CalcTextSize(axis_note).x < ImGui::GetContentRegionAvail().x)
        ImGui::TextDisabled("%s", axis_note);
    else if (ImGui::CalcTextSize("  drag red = tau").x < ImGui::GetContentRegionAvail().x)
        ImGui::TextDisabled("  drag red = tau");
    else
        ImGui::NewLine();

    const StepData* st    = h.step(k);
    const int       nl    = h.n_layer();
    const bool      drift = drift_measured(h);  // each cell: saliency histogram | drift histogram
    const ImVec2    avail = ImGui::GetContentRegionAvail();
    // Grid: cells about 1.7x wider than tall (readable bars), with few empty cells (chosen from screenshots).
    int   cols = 1;
    float best = 1e9f;
    for (int c = 1; c <= nl; ++c) {
        const int   rr    = (nl + c - 1) / c;
        const float ratio = (avail.x / c) / std::max(avail.y / rr, 1.f);
        const float score = std::fabs(std::log(ratio / (drift ? 3.4f : 1.7f))) + 1.5f * float(rr * c - nl) / float(nl);
        if (score < best) {
            best = score;
            cols = c;
        }
    }
    const int    rows = (nl + cols - 1) / cols;
    const float  cw = avail.x / cols, chh = avail.y / rows;
    const float  hw     = drift ? cw * 0.5f : cw;  // width of one histogram
    const ImVec2 origin = ImGui::GetCursorScreenPos();
    ImDrawList*  dl     = ImGui::GetWindowDrawList();
    const float  x_tau  = tau_to_x(tau);

    for (int l = 0; l < nl; ++l) {
        const int    cx = l % cols, cy = l / cols;
        const ImVec2 c0(origin.x + cx * cw, origin.y + cy * chh);
        const auto*  rec = st->layer(s.seq, l);
        char         title[3][96];
        if (rec && rec->n_rows > 0) {
            const double pct = 100.0 * rec->n_salient / rec->n_rows;
            std::snprintf(title[0], sizeof title[0], "L%d  %.0f%% salient (%d/%d)", l, pct, rec->n_salient,
                          rec->n_rows);
            std::snprintf(title[1], sizeof title[1], "L%d  %.0f%% salient", l, pct);
            std::snprintf(title[2], sizeof title[2], "L%d %.0f%%", l, pct);
        } else {
            std::snprintf(title[0], sizeof title[0], "L%d  (not tested)", l);
            std::snprintf(title[1], sizeof title[1], "L%d", l);
            std::snprintf(title[2], sizeof title[2], "L%d", l);
        }
        fit_text(dl, ImVec2(c0.x + 4, c0.y), hw - 8, IM_COL32(220, 220, 220, 255), {title[0], title[1], title[2]});
        const float title_h = ImGui::GetTextLineHeight() + 2;
        ImGui::SetCursorScreenPos(ImVec2(c0.x + 4, c0.y + title_h));
        char id[16];
        std::snprintf(id, sizeof id, "##h%d", l);
        // The bottom row carries the x tick labels (1 - cos at 1e-6, 1e-4, 0.01, 1) when its cells have the room.
        const float lh    = ImGui::GetTextLineHeight();
        const bool  ticks = cy == rows - 1 && chh - title_h - 6 - lh > 2.5f * lh;
        PlotArea    a     = plot_area(id, hw - 10, chh - title_h - 6 - (ticks ? lh : 0.f));
        auto        x_of  = [&](float xv) { return a.p0.x + (xv - kXMin) / (kXMax - kXMin) * a.w(); };
        // Salient side of tau (1 - cos > 1 - tau) shaded in the salient colour; bins in the stable / salient colours.
        draw_frame(dl, a, x_tau, (kColSalient & 0x00FFFFFFu) | (28u << 24));
        if (rec)
            draw_bins(dl, a, rec->hist, x_tau, s.hist_log_y, kColStable, kColSalient);
        else
            empty_note(a, "not tested");
        dl->AddLine(ImVec2(x_of(x_tau), a.p0.y), ImVec2(x_of(x_tau), a.p1.y), kColTau, 2.f);
        dl->AddRect(a.p0, a.p1, kColAxis);
        if (ticks) {
            const std::pair<float, const char*> kTicks[] = {{-6.f, "1e-6"}, {-4.f, "1e-4"}, {-2.f, "0.01"}, {0.f, "1"}};
            const bool                          room     = a.w() > 4 * (ImGui::CalcTextSize("1e-6").x + 6);
            for (const auto& [xv, txt] : kTicks) {
                if (!room && xv != -6.f && xv != 0.f) continue;  // narrow cells: the ends only
                const float tw = ImGui::CalcTextSize(txt).x;
                const float x  = x_of(xv);
                dl->AddLine(ImVec2(x, a.p1.y), ImVec2(x, a.p1.y + 3), kColAxis);
                dl->AddText(ImVec2(std::clamp(x - tw * 0.5f, a.p0.x, a.p1.x - tw), a.p1.y + 1),
                            IM_COL32(160, 160, 160, 255), txt);
            }
        }

        // Drag anywhere in a histogram to move tau; it is sent to the engine on release (applies next step).
        if (a.active) {
            const float xv = std::clamp(kXMin + (a.mouse.x - a.p0.x) / a.w() * (kXMax - kXMin), -7.f, -1.f);
            s.tau_drag     = float(1.0 - std::pow(10.0, double(xv)));
        } else if (a.hovered && rec) {
            const int b = std::clamp(int((a.mouse.x - a.p0.x) / a.w() * kCosineBins), 0, kCosineBins - 1);
            ImGui::SetTooltip(
                "layer %d, bin %d: cos in [%.7f, %.7f)\n%u of %d rows (%.1f%%)\nsalient at this step: "
                "%d rows (%.1f%%)\ndrag to set tau",
                l, b, cosine_bin_lower_cos(b), cosine_bin_upper_cos(b), rec->hist[b], rec->n_rows,
                rec->n_rows ? 100.0 * rec->hist[b] / rec->n_rows : 0.0, rec->n_salient,
                rec->n_rows ? 100.0 * rec->n_salient / rec->n_rows : 0.0);
        }
        if (ImGui::IsItemDeactivated() && std::isfinite(s.tau_drag)) {
            s.ui.tau     = s.tau_drag;
            s.ui.tau_set = true;
            s.worker.set_tau(s.ui.tau);
            s.tau_drag = NAN;
        }
        if (drift) draw_drift_hist(s, l, rec, ImVec2(c0.x + hw, c0.y), ImVec2(hw, chh), x_tau);
    }
    (void)r;
}

}  // namespace dyllm::app
