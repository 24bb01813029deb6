// Salient map panel: which rows each layer found salient (cos < tau, recomputed) - layers x positions at the shown
// step, or steps x positions for one chosen layer. A strip on top shows the canvas state of every position.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "app/studio/plot.h"
#include "app/studio/studio.h"

namespace dyllm::app {

namespace {

// Per position of one layer record: 0 not tested, 1 stable, 2 salient; cosines where sent.
void fill_states(const LayerSaliencyRecord* rec, int n_pos, std::vector<uint8_t>& st, std::vector<float>& cs) {
    st.assign(size_t(n_pos), 0);
    cs.assign(size_t(n_pos), NAN);
    if (!rec) return;
    for (size_t i = 0; i < rec->row_positions.size(); ++i) {
        const int p = rec->row_positions[i];
        if (p < 0 || p >= n_pos) continue;
        st[p] = 1;
        if (i < rec->cosines.size()) cs[p] = rec->cosines[i];
    }
    for (int p : rec->salient_positions)
        if (p >= 0 && p < n_pos) st[p] = 2;
}

}  // namespace

void draw_salient(Studio& s, const Rect& r) {
    // The view as two radio buttons where the whole control row fits, else as a combo (at 1280x720 the map stands
    // beside the L_sal panel, about 330 px wide); the checkbox wraps to a second line rather than run out of the panel.
    const ImGuiStyle& style    = ImGui::GetStyle();
    auto              toggle_w = [&](const char* label) {
        return ImGui::GetFrameHeight() + style.ItemInnerSpacing.x + ImGui::CalcTextSize(label, nullptr, true).x;
    };
    const char *const kLayersView = "layers x positions", *const kStepsView = "steps x positions, layer";
    const char* const kResponseOnly = "response only";
    help_marker("Salient map");
    ImGui::SameLine();
    const float slider_w = 90.f * s.ui_scale;
    const bool  roomy    = ImGui::GetContentRegionAvail().x >= toggle_w(kLayersView) + toggle_w(kStepsView) + slider_w +
                                                               toggle_w(kResponseOnly) + 3 * style.ItemSpacing.x;
    if (roomy) {
        ImGui::RadioButton(kLayersView, &s.salient_mode, 0);
        ImGui::SameLine();
        ImGui::RadioButton(kStepsView, &s.salient_mode, 1);
    } else {
        ImGui::SetNextItemWidth(ImGui::CalcTextSize("steps x positions").x + ImGui::GetFrameHeight() +
                                2 * style.FramePadding.x);
        ImGui::Combo("##salmode", &s.salient_mode, "layers x positions\0steps x positions\0");
    }
    RunEntry* run = s.shown_run();
    if (!run || !run->history.has_run() || run->history.n_layer() <= 0) return;
    const RunHistory& h  = run->history;
    const int         nl = h.n_layer();
    if (s.salient_mode == 1) {
        ImGui::SameLine();
        ImGui::SetNextItemWidth(roomy ? slider_w : slider_w * 0.7f);
        ImGui::SliderInt("##layer", &s.salient_layer, 0, nl - 1);
    }
    s.salient_layer = std::clamp(s.salient_layer, 0, nl - 1);
    const int P = h.prompt_len(s.seq), R = h.gen_length();
    bool&     response_only = s.salient_response_only;
    ImGui::SameLine();
    if (ImGui::GetContentRegionAvail().x < toggle_w(kResponseOnly)) ImGui::NewLine();
    ImGui::Checkbox(kResponseOnly, &response_only);
    const int first = response_only ? P : 0, n_pos = P + R, cols = n_pos - first;
    if (cols <= 0) return;

    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float  left = 44.f, strip = 8.f, bottom = 16.f;
    PlotArea     a   = plot_area("##salmap", avail.x, avail.y);
    ImDrawList*  dl  = ImGui::GetWindowDrawList();
    const float  gx0 = a.p0.x + left, gy0 = a.p0.y + strip + 3, gw = a.w() - left, gh = a.h() - strip - 3 - bottom;
    const float  cw = gw / cols;
    const int    k  = s.view_step;

    // Canvas strip: prompt grey, response masked darker, unmasked in the canvas colour of its step.
    const auto cells = h.canvas_at(s.seq, k);
    const int  total = std::max(h.info().steps, h.step_count());
    for (int p = first; p < n_pos; ++p) {
        ImU32 col = IM_COL32(110, 110, 120, 255);
        if (p >= P) {
            const auto& c = cells[size_t(p - P)];
            col           = c.masked() ? kColMasked
                                       : to_col(viridis_on_dark(total > 1 ? float(c.unmask_step - 1) / (total - 1) : 0.f));
        }
        const float x0 = gx0 + (p - first) * cw;
        dl->AddRectFilled(ImVec2(x0, a.p0.y), ImVec2(x0 + std::max(cw, 1.f), a.p0.y + strip), col);
    }

    const int            n_rows = s.salient_mode == 0 ? nl : std::max(h.step_count(), 1);
    const float          ch     = gh / n_rows;
    std::vector<uint8_t> st;
    std::vector<float>   cs;
    int                  hover_row = -1, hover_pos = -1;
    if (a.hovered && a.mouse.x >= gx0 && a.mouse.y >= gy0 && a.mouse.y < gy0 + gh) {
        hover_pos = first + int((a.mouse.x - gx0) / cw);
        hover_row = int((a.mouse.y - gy0) / ch);
        if (hover_pos >= n_pos || hover_row >= n_rows) hover_pos = hover_row = -1;
    }
    float   hover_cos   = NAN;
    uint8_t hover_state = 0;
    for (int row = 0; row < n_rows; ++row) {
        const LayerSaliencyRecord* rec = nullptr;
        if (s.salient_mode == 0) {
            if (const StepData* sd = h.step(k)) rec = sd->layer(s.seq, row);
        } else if (const StepData* sd = h.step(row + 1)) {
            rec = sd->layer(s.seq, s.salient_layer);
        }
        fill_states(rec, n_pos, st, cs);
        const float y0 = gy0 + row * ch;
        // Runs of equal state drawn as one rectangle each, without a row background underneath: keeps big grids cheap
        // in vertices and in overdraw (software GL is fill-bound).
        int p = first;
        while (p < n_pos) {
            const uint8_t v = st[p];
            int           q = p + 1;
            while (q < n_pos && st[q] == v) ++q;
            {
                const float x0 = gx0 + (p - first) * cw, x1 = gx0 + (q - first) * cw;
                dl->AddRectFilled(
                    ImVec2(x0, y0),
                    ImVec2(std::max(x1 - (cw > 4 ? 1.f : 0.f), x0 + 1), y0 + std::max(ch - (ch > 4 ? 1.f : 0.f), 1.f)),
                    v == 2   ? kColSalient
                    : v == 1 ? kColStable
                             : kColUntested);
            }
            p = q;
        }
        if (row == hover_row && hover_pos >= 0) {
            hover_cos   = cs[hover_pos];
            hover_state = st[hover_pos];
        }
    }
    // Row labels.
    const int label_every = std::max(1, int(14.f / std::max(ch, 0.1f)) + 1);
    for (int row = 0; row < n_rows; row += label_every) {
        char lbl[16];
        std::snprintf(lbl, sizeof lbl, s.salient_mode == 0 ? "L%d" : "s%d", s.salient_mode == 0 ? row : row + 1);
        dl->AddText(ImVec2(a.p0.x + 2, gy0 + row * ch + std::max(0.f, (ch - 13) * 0.5f)), IM_COL32(190, 190, 190, 255),
                    lbl);
    }
    if (s.salient_mode == 1 && k >= 1 && k <= n_rows)  // current step marker
        dl->AddRect(ImVec2(gx0 - 1, gy0 + (k - 1) * ch), ImVec2(gx0 + gw + 1, gy0 + k * ch), kColCursor);
    if (!response_only && P > 0 && P < n_pos) {  // prompt | response boundary
        const float xb = gx0 + (P - first) * cw;
        dl->AddLine(ImVec2(xb, a.p0.y), ImVec2(xb, gy0 + gh), IM_COL32(255, 255, 255, 140), 1.f);
    }
    char axis[128];
    std::snprintf(axis, sizeof axis, "%spositions %d..%d  (%s)",
                  h.info().method == "original" ? "original, what DyLLM would mark: " : "", first, n_pos - 1,
                  response_only ? "response" : "prompt | response");
    dl->AddText(ImVec2(gx0, gy0 + gh + 2), IM_COL32(150, 150, 150, 255), axis);
    // Legend swatches in the colours the cells use (right-aligned on the axis line).
    {
        const struct {
            ImU32       col;
            const char* text;
        } keys[] = {{kColSalient, "salient"}, {kColStable, "stable"}, {kColUntested, "not tested"}};
        float x  = a.p1.x;
        for (int i = 2; i >= 0; --i) {
            const float tw = ImGui::CalcTextSize(keys[i].text).x;
            x -= tw + 18;
            if (x < gx0 + ImGui::CalcTextSize(axis).x + 8) break;
            dl->AddRectFilled(ImVec2(x, gy0 + gh + 5), ImVec2(x + 11, gy0 + gh + 14), keys[i].col);
            dl->AddRect(ImVec2(x, gy0 + gh + 5), ImVec2(x + 11, gy0 + gh + 14), kColAxis);
            dl->AddText(ImVec2(x + 14, gy0 + gh + 2), IM_COL32(170, 170, 170, 255), keys[i].text);
            x -= 6;
        }
    }

    if (hover_pos >= 0) {
        const int step_shown = s.salient_mode == 0 ? k : hover_row + 1;
        const int layer      = s.salient_mode == 0 ? hover_row : s.salient_layer;
        ImGui::BeginTooltip();
        ImGui::Text("step %d, layer %d, position %d (%s %d)", step_shown, layer, hover_pos,
                    hover_pos < P ? "prompt" : "response", hover_pos < P ? hover_pos : hover_pos - P);
        const auto& prompt_ids = h.prompt_tokens(s.seq);
        int32_t     id         = -1;
        if (hover_pos < P && size_t(hover_pos) < prompt_ids.size()) id = prompt_ids[hover_pos];
        if (hover_pos >= P && cells[size_t(hover_pos - P)].token >= 0) id = cells[size_t(hover_pos - P)].token;
        if (id >= 0 && s.vocab) ImGui::Text("token '%s'", s.vocab->display(id).c_str());
        ImGui::TextUnformatted(hover_state == 2   ? "salient: recomputed (FFN, exact attention)"
                               : hover_state == 1 ? "stable: cached context reused"
                                                  : "not tested at this step");
        if (std::isfinite(hover_cos)) ImGui::Text("cos %.7f  (1-cos %.2e)", double(hover_cos), 1.0 - double(hover_cos));
        if (s.salient_mode == 1) ImGui::TextDisabled("click: show this step everywhere");
        ImGui::EndTooltip();
        if (a.clicked && s.salient_mode == 1) {
            s.follow_live = false;
            s.view_step   = step_shown;
        }
        if (a.clicked && s.salient_mode == 0 && hover_pos >= P) {
            s.selected_token   = hover_pos - P;
            s.token_grid_steps = -1;
        }
    }
    (void)r;
}

}  // namespace dyllm::app
