// Compare: two runs of the same prompt side by side (original vs dyllm, or two taus). The second run is started on the
// worker after the first finishes; the window shows both canvases with differing tokens outlined, and forward passes,
// tokens/s, rows recomputed and FLOPs of each.
#include <imgui.h>

#include <algorithm>
#include <cstdio>

#include "app/model/canvas_chips.h"
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
    // The run's last canvas, end of text collapsed as on the Canvas panel.
    const auto    cells  = h.canvas_at(s.seq, h.step_count());
    const int32_t eos_id = s.vocab ? s.vocab->eos_id : -1;
    const EosStop stop   = eos_stop(h, s.seq, eos_id);
    for (const CanvasChip& chip : canvas_chips(cells, eos_id, stop.step > 0 ? stop.position : -1)) {
        const CanvasCell& cell   = cells[size_t(chip.first)];
        const bool        masked = cell.masked() && !chip.end_run;
        std::string       text;
        if (chip.end_run) text = end_chip_text(chip);
        else if (!masked) text = cell.token == eos_id ? "<eos>" : s.vocab ? s.vocab->display(cell.token)
                                                                          : "#" + std::to_string(cell.token);
        if (!chip.end_run && text.size() > 20) text = text.substr(0, 18) + "..";
        const float w = (masked ? 12.f : ImGui::CalcTextSize(text.c_str()).x) + 2 * pad;
        if (x > 0 && x + w > avail) {
            x = 0;
            y += ch + gap;
        }
        const ImVec2 p0(origin.x + x, origin.y + y), p1(p0.x + w, p0.y + ch);
        bool         diff = false;
        for (int32_t i = chip.first; i < chip.first + chip.count && size_t(i) < c.differs.size(); ++i)
            diff = diff || c.differs[size_t(i)];
        const ImU32 bg = chip.end_run ? IM_COL32(50, 52, 58, 255)
                         : masked     ? kColMasked
                         : diff       ? IM_COL32(150, 40, 40, 255)
                                      : IM_COL32(45, 70, 55, 255);
        dl->AddRectFilled(p0, p1, bg, chip.end_run ? 6.f : 2.f);
        if (!masked)
            dl->AddText(ImVec2(p0.x + pad, p0.y + 2),
                        chip.end_run ? IM_COL32(190, 190, 195, 255) : IM_COL32(235, 235, 235, 255), text.c_str());
        if (diff) dl->AddRect(p0, p1, IM_COL32(255, 90, 70, 255), 2.f, 0, 1.5f);
        x += w + gap;
    }
    ImGui::Dummy(ImVec2(avail, y + ch));
    ImGui::EndChild();
}

}  // namespace

void draw_compare(Studio& s) {
    // First placement inside the window whatever its size (at 1280x720 the bottom was cut off).
    const ImVec2 disp = ImGui::GetIO().DisplaySize;
    const ImVec2 size(std::min(980.f, disp.x - 40), std::min(600.f, disp.y - 150));
    ImGui::SetNextWindowSize(size, ImGuiCond_FirstUseEver);
    ImGui::SetNextWindowPos(ImVec2(std::min(300.f, disp.x - size.x - 20), std::min(140.f, disp.y - size.y - 50)),
                            ImGuiCond_FirstUseEver);
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

    // ---- the two runs: the comparison just started (as its runs begin), a pair picked by hand, or the newest pair ----
    const ComparePair pair = s.compare_pair();
    const int         n    = int(s.runs.size());
    if (pair.a < 0 || pair.b < 0) {
        if (pair.waiting) {
            const RunEntry* a = pair.a >= 0 ? &s.runs[size_t(pair.a)] : nullptr;
            ImGui::TextDisabled("waiting for run %s of the comparison (%s)...", a ? "B" : "A",
                                a ? run_label(a->history).c_str() : s.cmp_pick.label_a().c_str());
        } else {
            ImGui::TextDisabled("needs two runs: start one of the comparisons above");
        }
        ImGui::End();
        return;
    }
    // Picker entry: "#N dyllm tau 0.95->0.9999 compare-b  [aborted at step 9]".
    auto entry_text = [&](int i) {
        const RunEntry&   e    = s.runs[size_t(i)];
        const std::string note = run_state_note(e.history);
        std::string       t    = "#";  // appended piecewise: GCC 12 warns falsely (-Wrestrict) on "#" + string
        t += std::to_string(e.serial);
        t += ' ';
        t += run_label(e.history);
        if (!e.request.tag.empty()) t += " " + e.request.tag;
        if (!note.empty()) t += "  [" + note + "]";
        return t;
    };
    auto run_combo = [&](const char* label, int idx, bool is_a) {
        ImGui::SetNextItemWidth(std::min(340.f, ImGui::GetContentRegionAvail().x * 0.5f - 60));
        if (ImGui::BeginCombo(label, entry_text(idx).c_str())) {
            for (int i = 0; i < n; ++i) {
                const bool aborted = s.runs[size_t(i)].history.finished() && s.runs[size_t(i)].history.run_end().cancelled;
                if (aborted) ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.f, 0.55f, 0.45f, 1));
                if (ImGui::Selectable(entry_text(i).c_str(), i == idx)) {
                    const std::string& other = s.runs[size_t(is_a ? pair.b : pair.a)].label;
                    if (is_a) s.cmp_pick.choose(s.runs[size_t(i)].label, other);
                    else s.cmp_pick.choose(other, s.runs[size_t(i)].label);
                }
                if (aborted) ImGui::PopStyleColor();
            }
            ImGui::EndCombo();
        }
    };
    run_combo("run A", pair.a, true);
    ImGui::SameLine();
    run_combo("run B", pair.b, false);

    const RunEntry& A = s.runs[size_t(pair.a)];
    const RunEntry& B = s.runs[size_t(pair.b)];
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
        std::snprintf(b, sizeof b, "%.1f", c.b.tokens_per_s);
        line("tokens/s", a, b);
        // The speed-up only between two complete runs; otherwise greyed, with the reason.
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::TextDisabled("speed-up B/A");
        ImGui::TableNextColumn();
        ImGui::TableNextColumn();
        if (c.speedup_valid()) ImGui::Text("%.2fx", c.speedup);
        else if (c.speedup > 0) ImGui::TextDisabled("(%.2fx) %s: no speed-up", c.speedup, c.speedup_note.c_str());
        else ImGui::TextDisabled("%s", c.speedup_note.empty() ? "-" : c.speedup_note.c_str());
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
