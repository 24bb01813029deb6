// Compare: two runs of the same prompt side by side (original vs dyllm, or two taus). The second run is started on the
// worker after the first finishes; the window shows both canvases with differing tokens outlined, and forward passes,
// tokens/s, rows recomputed and FLOPs of each.
#include <imgui.h>

#include <algorithm>
#include <cstdio>

#include "app/model/run_compare.h"
#include "app/studio/plot.h"
#include "app/studio/studio.h"

namespace dyllm::app {

namespace {

void token_row(const Studio& s, const RunHistory& h, const RunCompare& c, const char* id, float height) {
    ImGui::BeginChild(id, ImVec2(0, height), true);
    ImDrawList*  dl     = ImGui::GetWindowDrawList();
    const ImVec2 origin = ImGui::GetCursorScreenPos();
    const float  avail  = ImGui::GetContentRegionAvail().x;
    const float  pad = 3.f, gap = 3.f, ch = ImGui::GetTextLineHeight() + 4.f;
    float        x = 0, y = 0;
    const auto&  toks = h.tokens(s.seq);
    for (size_t i = 0; i < toks.size(); ++i) {
        const bool  masked = toks[i].unmask_step == 0;
        std::string text   = masked ? "" : (s.vocab ? s.vocab->display(toks[i].token) : "#" + std::to_string(toks[i].token));
        if (text.size() > 20) text = text.substr(0, 18) + "..";
        const float w = (masked ? 12.f : ImGui::CalcTextSize(text.c_str()).x) + 2 * pad;
        if (x > 0 && x + w > avail) {
            x = 0;
            y += ch + gap;
        }
        const ImVec2 p0(origin.x + x, origin.y + y), p1(p0.x + w, p0.y + ch);
        const bool   diff = i < c.differs.size() && c.differs[i];
        dl->AddRectFilled(p0, p1, masked ? kColMasked : diff ? IM_COL32(150, 40, 40, 255) : IM_COL32(45, 70, 55, 255), 2.f);
        if (!masked) dl->AddText(ImVec2(p0.x + pad, p0.y + 2), IM_COL32(235, 235, 235, 255), text.c_str());
        if (diff) dl->AddRect(p0, p1, IM_COL32(255, 90, 70, 255), 2.f, 0, 1.5f);
        x += w + gap;
    }
    ImGui::Dummy(ImVec2(avail, y + ch));
    ImGui::EndChild();
}

}  // namespace

void draw_compare(Studio& s) {
    ImGui::SetNextWindowSize(ImVec2(980, 600), ImGuiCond_FirstUseEver);
    ImGui::SetNextWindowPos(ImVec2(300, 140), ImGuiCond_FirstUseEver);
    if (!ImGui::Begin("Compare", &s.show_compare, ImGuiWindowFlags_NoSavedSettings)) {
        ImGui::End();
        return;
    }
    // ---- start a comparison ----
    static float tau_b = 0.98f;
    const bool   idle  = !s.compare_queued && s.status.state != WorkerState::Loading;
    ImGui::BeginDisabled(!idle);
    if (ImGui::Button("Run original vs current settings")) s.start_compare(true, NAN);
    ImGui::SameLine();
    if (ImGui::Button("Run current tau vs tau B")) s.start_compare(false, tau_b);
    ImGui::SameLine();
    ImGui::SetNextItemWidth(140);
    ImGui::SliderFloat("tau B", &tau_b, 0.9f, 0.99999f, "%.5f");
    ImGui::EndDisabled();
    if (s.compare_queued) {
        ImGui::SameLine();
        ImGui::TextDisabled("running A, then B...");
    }

    // ---- pick the two runs: the newest compare-a/compare-b pair by default ----
    const int n = int(s.runs.size());
    if (s.cmp_a < 0 || s.cmp_b < 0 || s.cmp_a >= n || s.cmp_b >= n) {
        for (int i = n - 1; i >= 1; --i)
            if (s.runs[size_t(i)].request.tag == "compare-b" && s.runs[size_t(i - 1)].request.tag == "compare-a") {
                s.cmp_a = i - 1;
                s.cmp_b = i;
                break;
            }
        if ((s.cmp_a < 0 || s.cmp_b < 0) && n >= 2) {
            s.cmp_a = n - 2;
            s.cmp_b = n - 1;
        }
    }
    if (n < 2 || s.cmp_a < 0 || s.cmp_b < 0) {
        ImGui::TextDisabled("needs two runs: start one of the comparisons above");
        ImGui::End();
        return;
    }
    auto run_combo = [&](const char* label, int* idx) {
        ImGui::SetNextItemWidth(300);
        char prev[128];
        std::snprintf(prev, sizeof prev, "#%llu %s", (unsigned long long)s.runs[size_t(*idx)].serial,
                      run_label(s.runs[size_t(*idx)].history).c_str());
        if (ImGui::BeginCombo(label, prev)) {
            for (int i = 0; i < n; ++i) {
                char item[128];
                std::snprintf(item, sizeof item, "#%llu %s %s", (unsigned long long)s.runs[size_t(i)].serial,
                              run_label(s.runs[size_t(i)].history).c_str(), s.runs[size_t(i)].request.tag.c_str());
                if (ImGui::Selectable(item, i == *idx)) *idx = i;
            }
            ImGui::EndCombo();
        }
    };
    run_combo("run A", &s.cmp_a);
    ImGui::SameLine();
    run_combo("run B", &s.cmp_b);

    const RunEntry& A = s.runs[size_t(s.cmp_a)];
    const RunEntry& B = s.runs[size_t(s.cmp_b)];
    const RunCompare c = compare_runs(A.history, B.history, s.seq);
    if (A.request.prompt != B.request.prompt)
        ImGui::TextColored(ImVec4(1, 0.7f, 0.3f, 1), "note: the two runs used different prompts");
    if (ImGui::BeginTable("##cmp", 3, ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV)) {
        ImGui::TableSetupColumn("");
        ImGui::TableSetupColumn(run_label(A.history).c_str());
        ImGui::TableSetupColumn(run_label(B.history).c_str());
        ImGui::TableHeadersRow();
        auto line = [&](const char* k, const std::string& va, const std::string& vb) {
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            ImGui::TextDisabled("%s", k);
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(va.c_str());
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(vb.c_str());
        };
        char a[64], b[64];
        line("forward passes", std::to_string(c.a.forward_passes), std::to_string(c.b.forward_passes));
        std::snprintf(a, sizeof a, "%.1f", c.a.tokens_per_s);
        std::snprintf(b, sizeof b, "%.1f  (%.2fx)", c.b.tokens_per_s, c.speedup);
        line("tokens/s", a, b);
        line("denoise time", fmt_ms(c.a.denoise_seconds), fmt_ms(c.b.denoise_seconds));
        std::snprintf(a, sizeof a, "%.1f%%", 100.0 * c.a.recompute_fraction);
        std::snprintf(b, sizeof b, "%.1f%%", 100.0 * c.b.recompute_fraction);
        line("rows recomputed", a, b);
        std::snprintf(a, sizeof a, "%s (%.0f%%)", fmt_si(c.a.flops).c_str(), 100.0 * c.a.flops_fraction);
        std::snprintf(b, sizeof b, "%s (%.0f%%)", fmt_si(c.b.flops).c_str(), 100.0 * c.b.flops_fraction);
        line("FLOPs (vs dense)", a, b);
        ImGui::EndTable();
    }
    ImGui::Text("token diff: %d same, %d different, %d still masked (of %d)", c.same, c.differ, c.masked, c.positions);
    const float hgt = std::max(60.f, (ImGui::GetContentRegionAvail().y - 2 * ImGui::GetTextLineHeightWithSpacing()) / 2);
    ImGui::TextDisabled("A: %s", run_label(A.history).c_str());
    token_row(s, A.history, c, "##cmpA", hgt);
    ImGui::TextDisabled("B: %s   (red = differs from A)", run_label(B.history).c_str());
    token_row(s, B.history, c, "##cmpB", hgt);
    ImGui::End();
}

}  // namespace dyllm::app
