// Drift over steps panel (runs with measure_drift): per layer, the min or mean cosine between the approximate context
// of the approximated rows and exact attention, over the steps, on a log10(1 - cos) axis with tau drawn per step.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "app/studio/plot.h"
#include "app/studio/studio.h"

namespace dyllm::app {

namespace {

// y axis in log10(1 - cos), fitted to the run's values and tau: at most from 1 - cos = 1e-7 (fp32 rounding of a
// context that matches exact attention) down to cos = -1 (1 - cos = 2).
constexpr float kYMin = -7.f, kYMax = 0.30103f;

float cos_to_y(double cos) {
    const double d = 1.0 - cos;
    if (!(d > 1e-7)) return kYMin;
    return std::clamp(float(std::log10(d)), kYMin, kYMax);
}

// The layer's drift value at a step (min or mean), NaN when nothing was approximated there.
double drift_value(const StepData* st, int seq, int l, bool mean) {
    const LayerSaliencyRecord* rec = st ? st->layer(seq, l) : nullptr;
    if (!rec || rec->drift_count <= 0) return NAN;
    return mean ? rec->drift_mean : rec->drift_min;
}

}  // namespace

bool drift_measured(const RunHistory& h) {
    return h.has_run() && h.env("measure_drift") == "true";
}

int32_t drift_below_tau(const LayerSaliencyRecord& rec) {
    int32_t n = 0;
    if (!rec.drift.empty()) {
        for (float v : rec.drift) n += v < rec.tau;  // NaN (exact rows) compares false
        return n;
    }
    // Without per-row values: the bins wholly below tau (a lower bound).
    for (int b = 0; b < kCosineBins; ++b)
        if (cosine_bin_upper_cos(b) <= double(rec.tau)) n += int32_t(rec.drift_hist[size_t(b)]);
    return n;
}

void draw_drift(Studio& s, const Rect& r) {
    help_marker("Drift over steps");
    ImGui::SameLine();
    ImGui::RadioButton("min", &s.drift_mean, 0);
    ImGui::SameLine();
    ImGui::RadioButton("mean", &s.drift_mean, 1);
    RunEntry* run = s.shown_run();
    if (!run || !drift_measured(run->history) || run->history.n_layer() <= 0) return;
    const RunHistory& h  = run->history;
    const int         nl = h.n_layer(), ns = h.step_count(), k = s.view_step;
    const bool        mean = s.drift_mean != 0;
    ImGui::SameLine();
    ImGui::TextDisabled(
        "%s approx-vs-exact cosine of the approximated rows, per layer (colours as in L_sal); "
        "red = tau; lower = worse",
        mean ? "mean" : "lowest");

    // Fit the y range (whole decades) to the values and tau of the whole run, so the lines use the panel's height.
    float lo = 0.f, hi = -3.f;  // at least 1 - cos in [1e-3, 1]
    for (int j = 1; j <= ns; ++j) {
        const StepData* st = h.step(j);
        if (st && std::isfinite(st->tau)) {
            lo = std::min(lo, cos_to_y(st->tau));
            hi = std::max(hi, cos_to_y(st->tau));
        }
        for (int l = 0; l < nl; ++l)
            if (const double v = drift_value(st, s.seq, l, mean); !std::isnan(v)) {
                lo = std::min(lo, cos_to_y(v));
                hi = std::max(hi, cos_to_y(v));
            }
    }
    const float y_top = std::floor(lo), y_bottom = std::min(std::ceil(hi), kYMax);

    const ImVec2 avail   = ImGui::GetContentRegionAvail();
    ImDrawList*  dl      = ImGui::GetWindowDrawList();
    const float  label_w = ImGui::CalcTextSize("0.999999").x + 6;
    const ImVec2 org     = ImGui::GetCursorScreenPos();
    ImGui::SetCursorScreenPos(ImVec2(org.x + label_w, org.y));
    PlotArea  a    = plot_area("##driftlines", avail.x - label_w - 4, avail.y - 2);
    const int n_x  = std::max(ns, 2);
    auto      x_of = [&](int step) { return a.p0.x + (step - 1) * a.w() / (n_x - 1); };
    auto      y_of = [&](float yv) { return a.p0.y + 3 + (yv - y_top) / (y_bottom - y_top) * (a.h() - 6); };

    // Decades of 1 - cos as grid lines, labelled in cosine units (as many as fit).
    const float line_h = ImGui::GetTextLineHeight();
    const int   every  = std::max(1, int(std::ceil(line_h * 1.1f / std::max(y_of(1.f) - y_of(0.f), 1.f))));
    for (int dec = int(y_top); dec <= int(std::floor(y_bottom)); ++dec) {
        const float y = y_of(float(dec));
        dl->AddLine(ImVec2(a.p0.x, y), ImVec2(a.p1.x, y), kColGrid);
        if ((dec - int(y_top)) % every != 0) continue;
        char lbl[16];
        std::snprintf(lbl, sizeof lbl, "%.*f", std::max(0, -dec), 1.0 - std::pow(10.0, dec));
        const ImVec2 sz = ImGui::CalcTextSize(lbl);
        dl->AddText(ImVec2(a.p0.x - sz.x - 4, std::clamp(y - sz.y * 0.5f, a.p0.y, a.p1.y - sz.y)),
                    IM_COL32(150, 150, 150, 255), lbl);
    }
    // tau as it was in force at each step (it can be changed live).
    ImVec2 tprev;
    bool   thave = false;
    for (int j = 1; j <= ns; ++j) {
        const StepData* st = h.step(j);
        if (!st || !std::isfinite(st->tau)) continue;
        const ImVec2 p(x_of(j), y_of(cos_to_y(st->tau)));
        if (thave) {  // a step line: the old tau holds until the step that changed it
            dl->AddLine(tprev, ImVec2(p.x, tprev.y), kColTau, 1.5f);
            dl->AddLine(ImVec2(p.x, tprev.y), p, kColTau, 1.5f);
        }
        tprev = p;
        thave = true;
    }
    // One line per layer; FULL steps and layers without approximated rows leave gaps (dots keep lone points visible).
    bool any = false;
    for (int l = 0; l < nl; ++l) {
        const ImU32 col = to_col(viridis_on_dark(nl > 1 ? float(l) / (nl - 1) : 0.f), 0.9f);
        ImVec2      prev;
        bool        have = false;
        for (int j = 1; j <= ns; ++j) {
            const double v = drift_value(h.step(j), s.seq, l, mean);
            if (std::isnan(v)) {
                have = false;
                continue;
            }
            const ImVec2 p(x_of(j), y_of(cos_to_y(v)));
            if (have) dl->AddLine(prev, p, col, 1.5f);
            dl->AddCircleFilled(p, 2.f, col);
            prev = p;
            have = any = true;
        }
    }
    if (!any) empty_note(a, "no approximated rows yet (FULL steps and exact layers have no drift)");
    if (k >= 1) dl->AddLine(ImVec2(x_of(k), a.p0.y), ImVec2(x_of(k), a.p1.y), kColCursor);
    dl->AddRect(a.p0, a.p1, kColAxis);
    char lbl[64];
    std::snprintf(lbl, sizeof lbl, "steps 1..%d", ns);
    const ImVec2 lsz = ImGui::CalcTextSize(lbl);
    dl->AddText(ImVec2(a.p1.x - lsz.x - 4, a.p1.y - lsz.y - 1), IM_COL32(150, 150, 150, 255), lbl);

    if (a.hovered && ns > 0) {
        const int j = std::clamp(1 + int(std::lround((a.mouse.x - a.p0.x) / a.w() * (n_x - 1))), 1, ns);
        ImGui::BeginTooltip();
        ImGui::Text("step %d (%s), tau %.5f", j, step_kind_name(h.step(j)->kind), double(h.step(j)->tau));
        bool listed = false;
        for (int l = 0; l < nl; ++l) {
            const LayerSaliencyRecord* rec = h.step(j)->layer(s.seq, l);
            if (!rec || rec->drift_count <= 0) continue;
            ImGui::Text("L%-2d %4d approximated, %4d below tau (%.0f%%), min %.5f, mean %.5f", l, rec->drift_count,
                        drift_below_tau(*rec), 100.0 * drift_below_tau(*rec) / rec->drift_count, double(rec->drift_min),
                        double(rec->drift_mean));
            listed = true;
        }
        if (!listed) ImGui::TextDisabled("no approximated rows at this step");
        ImGui::TextDisabled("click: show this step everywhere");
        ImGui::EndTooltip();
        if (a.clicked) {
            s.follow_live = false;
            s.view_step   = j;
        }
    }
    (void)r;
}

}  // namespace dyllm::app
