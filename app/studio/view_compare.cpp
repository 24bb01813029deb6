// Compare: two runs of the same prompt (original vs current settings, or two taus) in the layout's place of the lower
// bands. Replay: one lock-step slider shows both canvases and both salient maps at the same step, differing tokens
// outlined. Op times: per-op-class time of A and B with the per-step spread and the ratio. Summary: speed and work.
#include <imgui.h>

#include <algorithm>
#include <tuple>
#include <cmath>
#include <cstdio>

#include "app/model/canvas_chips.h"
#include "app/model/compare_reps.h"
#include "app/model/op_diff.h"
#include "app/model/op_name_diff.h"
#include "app/model/run_compare.h"
#include "app/studio/plot.h"
#include "app/studio/studio.h"
#include "app/studio/tau_field.h"

namespace dyllm::app {

namespace {

// The canvas of h after step k as chips; a chip differing from the other run is red and outlined, one unmasked at
// this very step has a white outline. Returns the height used.
void canvas_chips_at(const Studio& s, const RunHistory& h, int k, const RunCompare& c, const char* id, float height) {
    ImGui::BeginChild(id, ImVec2(0, height), true);
    ImDrawList*   dl     = ImGui::GetWindowDrawList();
    const ImVec2  origin = ImGui::GetCursorScreenPos();
    const float   avail  = ImGui::GetContentRegionAvail().x;
    const float   pad = 3.f, gap = 3.f, ch = ImGui::GetTextLineHeight() + 4.f;
    float         x = 0, y = 0;
    const auto    cells  = h.canvas_at(s.seq, k);
    const int32_t eos_id = s.vocab ? s.vocab->eos_id : -1;
    const EosStop stop   = eos_stop(h, s.seq, eos_id);
    const auto    sal    = h.salient_layers(s.seq, k);
    for (const CanvasChip& chip : canvas_chips(cells, eos_id, stop.step > 0 && k >= stop.step ? stop.position : -1)) {
        const CanvasCell& cell   = cells[size_t(chip.first)];
        const bool        masked = cell.masked() && !chip.end_run;
        std::string       text;
        if (chip.end_run)
            text = end_chip_text(chip);
        else if (!masked)
            text = cell.token == eos_id ? "<eos>"
                   : s.vocab            ? s.vocab->display(cell.token)
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
        dl->AddRectFilled(p0, p1, bg);
        if (!masked)
            dl->AddText(ImVec2(p0.x + pad, p0.y + 2),
                        chip.end_run ? IM_COL32(190, 190, 195, 255) : IM_COL32(235, 235, 235, 255), text.c_str());
        if (diff)
            dl->AddRect(p0, p1, IM_COL32(255, 90, 70, 255), 0.f, 0, 1.5f);
        else if (!chip.end_run && !masked && cell.unmask_step == k && k > 0)
            dl->AddRect(p0, p1, IM_COL32(255, 255, 255, 230), 0.f, 0, 1.5f);
        // Recomputed (salient in some layer) at this step: the salient colour under the chip, as on the Canvas.
        if (!chip.end_run && size_t(chip.first) < sal.size() && sal[size_t(chip.first)] > 0)
            dl->AddRectFilled(ImVec2(p0.x, p1.y - 3), p1, kColSalient);
        x += w + gap;
    }
    ImGui::Dummy(ImVec2(avail, y + ch));
    ImGui::EndChild();
}

// Layers x response positions of h at step k: salient, stable (tested, cached) or not tested, as the Salient map.
void salient_strip(const Studio& s, const RunHistory& h, int k, const char* id, float height) {
    const int   nl = h.n_layer(), R = h.gen_length(), P = h.prompt_len(s.seq);
    PlotArea    a  = plot_area(id, ImGui::GetContentRegionAvail().x, height);
    ImDrawList* dl = ImGui::GetWindowDrawList();
    if (nl <= 0 || R <= 0) return;
    const StepData* sd   = h.step(k);
    const float     left = 28.f, cw = (a.w() - left) / R, rh = a.h() / nl;
    bool            any = false;
    for (int l = 0; l < nl; ++l) {
        const LayerSaliencyRecord* rec = sd ? sd->layer(s.seq, l) : nullptr;
        const float                y0  = a.p0.y + l * rh;
        dl->AddRectFilled(ImVec2(a.p0.x + left, y0), ImVec2(a.p1.x, y0 + std::max(rh - 1.f, 1.f)), kColUntested);
        if (!rec) continue;
        any       = true;
        auto cell = [&](int p, ImU32 col) {
            if (p < P || p >= P + R) return;
            const float x0 = a.p0.x + left + (p - P) * cw;
            dl->AddRectFilled(ImVec2(x0, y0),
                              ImVec2(x0 + std::max(cw - (cw > 4 ? 1.f : 0.f), 1.f), y0 + std::max(rh - 1.f, 1.f)), col);
        };
        for (int p : rec->row_positions) cell(p, kColStable);
        for (int p : rec->salient_positions) cell(p, kColSalient);
    }
    for (int l = 0; l < nl; l += std::max(1, int(14.f / std::max(rh, 0.1f)) + 1)) {
        char lbl[16];
        std::snprintf(lbl, sizeof lbl, "L%d", l);
        dl->AddText(ImVec2(a.p0.x, a.p0.y + l * rh), IM_COL32(190, 190, 190, 255), lbl);
    }
    if (!any) empty_note(a, k == 0 ? "step 0: nothing tested yet" : "no cosine test at this step (dense step)");
}

// "12.3 [10.1-15.0]" in ms: median and p10-p90 of per-step times.
std::string spread_text(const Spread& sp) {
    if (sp.n == 0) return "-";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3f [%.3f-%.3f]", sp.median * 1e3, sp.p10 * 1e3, sp.p90 * 1e3);
    return buf;
}

// Per op name (q, gate, up, down...) or per op name and layer: each run's total, samples and median, and B/A.
void op_names_table(const RunHistory& A, const RunHistory& B, bool by_layer) {
    const auto rows = op_name_diff(A, B, by_layer);
    if (rows.empty()) {
        ImGui::TextDisabled("no op timings recorded in either run yet");
        return;
    }
    const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_ScrollY |
                                  ImGuiTableFlags_SizingStretchProp;
    if (!ImGui::BeginTable("##opnamediff", 8, flags, ImVec2(0, ImGui::GetContentRegionAvail().y))) return;
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn(by_layer ? "op and layer" : "op", 0, 1.0f);
    ImGui::TableSetupColumn("A n", 0, 0.5f);
    ImGui::TableSetupColumn("A total", 0, 0.9f);
    ImGui::TableSetupColumn("A median", 0, 0.9f);
    ImGui::TableSetupColumn("B n", 0, 0.5f);
    ImGui::TableSetupColumn("B total", 0, 0.9f);
    ImGui::TableSetupColumn("B median", 0, 0.9f);
    ImGui::TableSetupColumn("B/A", 0, 0.6f);
    ImGui::TableHeadersRow();
    ImGuiListClipper clip;  // a layer table of an 8-layer model has ~150 rows: draw the visible ones
    clip.Begin(int(rows.size()));
    while (clip.Step())
        for (int i = clip.DisplayStart; i < clip.DisplayEnd; ++i) {
            const OpNameDiff& d = rows[size_t(i)];
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(op_class_color(int(op_name_class(d.name)))), "%s",
                               d.label.c_str());
            for (const auto& [n, total, median] :
                 {std::tuple{d.count_a, d.total_a, d.median_a}, std::tuple{d.count_b, d.total_b, d.median_b}}) {
                ImGui::TableNextColumn();
                ImGui::Text("%d", n);
                ImGui::TableNextColumn();
                ImGui::TextUnformatted(n > 0 ? fmt_ms(total).c_str() : "-");
                ImGui::TableNextColumn();
                ImGui::TextUnformatted(n > 0 ? fmt_ms(median).c_str() : "-");
            }
            ImGui::TableNextColumn();
            if (d.ratio > 0)
                ImGui::Text("%.2fx", d.ratio);
            else
                ImGui::TextDisabled(d.total_b > 0 ? "B only" : "-");
        }
    ImGui::EndTable();
}

void op_times_tab(Studio& s, const RunHistory& A, const RunHistory& B) {
    const char* groupings[] = {"per op class", "per op name", "per op and layer"};
    ImGui::SetNextItemWidth(ImGui::CalcTextSize("per op and layer").x + ImGui::GetFrameHeight() * 1.5f);
    ImGui::Combo("##cmpgroup", &s.cmp_op_grouping, groupings, IM_ARRAYSIZE(groupings));
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("op class: the engine's classes with per-step spreads; op name: q, k, v, gate, up, down...");
    ImGui::SameLine();
    if (s.cmp_op_grouping > 0) {
        ImGui::TextDisabled("each run's op time per %s: samples, total, median per sample; B/A below 1: B is faster",
                            s.cmp_op_grouping == 2 ? "op and layer" : "op name");
        op_names_table(A, B, s.cmp_op_grouping == 2);
        return;
    }
    const auto rows = op_class_diff(A, B);
    if (rows.empty()) {
        ImGui::TextDisabled("no op timings recorded in either run yet");
        return;
    }
    ImGui::TextDisabled(
        "time per op class, outside ops (wall minus ops) and step wall (what tok/s uses); per step: median "
        "[p10-p90] ms over the steps where it ran. B/A below 1: B is faster");
    const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_ScrollY |
                                  ImGuiTableFlags_SizingStretchProp;
    if (!ImGui::BeginTable("##opdiff", 7, flags, ImVec2(0, ImGui::GetContentRegionAvail().y))) return;
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("op class", 0, 1.0f);
    ImGui::TableSetupColumn("A total", 0, 0.9f);
    ImGui::TableSetupColumn("B total", 0, 0.9f);
    ImGui::TableSetupColumn("B/A", 0, 0.6f);
    ImGui::TableSetupColumn("A per step (ms)", 0, 1.7f);
    ImGui::TableSetupColumn("B per step (ms)", 0, 1.7f);
    ImGui::TableSetupColumn("median B/A", 0, 0.8f);
    ImGui::TableHeadersRow();
    for (const OpClassDiff& d : rows) {
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        if (d.row == DiffRow::OutsideOps)
            ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(kColOutsideOps), "%s", diff_row_name(d.row));
        else if (d.row != DiffRow::Class)
            ImGui::TextUnformatted(diff_row_name(d.row));
        else
            ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(op_class_color(int(d.op))), "%s", op_class_name(d.op));
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(d.a.n > 0 ? fmt_ms(d.total_a).c_str() : "-");  // the class never ran in A
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(d.b.n > 0 ? fmt_ms(d.total_b).c_str() : "-");
        ImGui::TableNextColumn();
        if (d.ratio > 0)
            ImGui::Text("%.2fx", d.ratio);
        else
            ImGui::TextDisabled(d.total_b > 0 ? "B only" : "-");
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(spread_text(d.a).c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(spread_text(d.b).c_str());
        ImGui::TableNextColumn();
        if (d.median_ratio > 0)
            ImGui::Text("%.2fx", d.median_ratio);
        else
            ImGui::TextDisabled("-");
        if (ImGui::IsItemHovered() && d.ratio > 0)
            ImGui::SetTooltip(
                "the median ratio is robust to a preempted step; when it and B/A of the totals\n"
                "disagree, a few slow steps carry the total");
    }
    ImGui::EndTable();
}

void summary_tab(Studio& s, const RunCompare& c, const RunEntry& EA, const RunEntry& EB) {
    const RunHistory& A = EA.history;
    const RunHistory& B = EB.history;
    if (!ImGui::BeginTable("##cmp", 3, ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV)) return;
    ImGui::TableSetupColumn("");
    ImGui::TableSetupColumn(run_label(A).c_str());
    ImGui::TableSetupColumn(run_label(B).c_str());
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
    line("engine tok/s", a, b);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", kTokensPerSecondDefinition);
    // The speed-up only between two complete runs; otherwise greyed, with the reason.
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextDisabled("speed-up B/A");
    ImGui::TableNextColumn();
    ImGui::TableNextColumn();
    // The first pair of a repeated comparison: the median and range over every pair that ended.
    const bool repeated = s.compare_rep_labels.size() > 1 && s.compare_rep_labels.front().first == EA.label &&
                          s.compare_rep_labels.front().second == EB.label;
    const RepeatedSpeedup rep = repeated ? repeated_speedup(s.runs, s.compare_rep_labels) : RepeatedSpeedup{};
    if (rep.counted > 1) {
        ImGui::Text("%.2fx median, range %.2f-%.2fx over %d pairs", rep.median, rep.lo, rep.hi, rep.counted);
        if (ImGui::IsItemHovered()) {
            std::string each;
            for (double v : rep.speedups) {
                char t[24];
                std::snprintf(t, sizeof t, "%s%.2fx", each.empty() ? "" : ", ", v);
                each += t;
            }
            ImGui::SetTooltip("each pair (A then B, at full speed): %s\nthis pair alone: %.2fx%s", each.c_str(),
                              c.speedup,
                              rep.counted < rep.pairs ? "\n(pairs still running or aborted are left out)" : "");
        }
    } else if (c.speedup_valid())
        ImGui::Text("%.2fx", c.speedup);
    else if (c.speedup > 0)
        ImGui::TextDisabled("(%.2fx) %s: no speed-up", c.speedup, c.speedup_note.c_str());
    else
        ImGui::TextDisabled("%s", c.speedup_note.empty() ? "-" : c.speedup_note.c_str());
    line("denoise time", fmt_ms(c.a.denoise_seconds), fmt_ms(c.b.denoise_seconds));
    line("  outside ops", fmt_ms(c.a.outside_ops_seconds), fmt_ms(c.b.outside_ops_seconds));
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("of the denoise time, the part no timed op covers (scheduler, waits, hand-offs)");
    std::snprintf(a, sizeof a, "%.1f%%", 100.0 * c.a.recompute_fraction);
    std::snprintf(b, sizeof b, "%.1f%%", 100.0 * c.b.recompute_fraction);
    line("rows recomputed", a, b);
    std::snprintf(a, sizeof a, "%s (%.0f%%)", fmt_si(c.a.flops).c_str(), 100.0 * c.a.flops_fraction);
    std::snprintf(b, sizeof b, "%s (%.0f%%)", fmt_si(c.b.flops).c_str(), 100.0 * c.b.flops_fraction);
    line("FLOPs (vs dense)", a, b);
    ImGui::EndTable();
    ImGui::Text("final tokens: %d same, %d different, %d still masked (of %d)", c.same, c.differ, c.masked,
                c.positions);
}

// Lock-step replay: one slider (with play), both canvases and salient maps at that step.
void replay_tab(Studio& s, const RunEntry& A, const RunEntry& B) {
    const LockStep end = lockstep(A.history, B.history, 1 << 30);
    // Playback at the studio's play speed (4 steps/s when unlimited): a replay is for watching.
    if (s.cmp_playing) {
        const double t = now_s(), rate = s.ui.speed > 0 ? s.ui.speed : 4.0;
        if (s.cmp_play_t == 0) s.cmp_play_t = t;
        const int adv = int((t - s.cmp_play_t) * rate);
        if (adv > 0) {
            s.cmp_step = std::min((s.cmp_step < 0 ? end.last : s.cmp_step) + adv, end.last);
            s.cmp_play_t += adv / rate;
        }
        if (s.cmp_step >= end.last) s.cmp_playing = false;
    }
    int k = s.cmp_step < 0 ? end.last : std::min(s.cmp_step, end.last);
    if (ImGui::Button(s.cmp_playing ? "pause##cmp" : "replay##cmp")) {
        s.cmp_playing = !s.cmp_playing;
        s.cmp_play_t  = 0;
        if (s.cmp_playing && k >= end.last) s.cmp_step = k = 0;
    }
    ImGui::SameLine();
    if (ImGui::ArrowButton("##cprev", ImGuiDir_Left) && k > 0) {
        s.cmp_step    = --k;
        s.cmp_playing = false;
    }
    ImGui::SameLine();
    ImGui::SetNextItemWidth(std::max(120.f, ImGui::GetContentRegionAvail().x * 0.45f));
    char fmt[48];
    std::snprintf(fmt, sizeof fmt, "step %%d / %d", end.last);
    if (ImGui::SliderInt("##cmpstep", &k, 0, std::max(end.last, 1), fmt)) {
        s.cmp_step    = k;
        s.cmp_playing = false;
    }
    ImGui::SameLine();
    if (ImGui::ArrowButton("##cnext", ImGuiDir_Right) && k < end.last) {
        s.cmp_step    = ++k;
        s.cmp_playing = false;
    }
    ImGui::SameLine();
    if (ImGui::Checkbox("follow newest", &s.cmp_follow) && s.cmp_follow) {
        s.cmp_step    = -1;
        s.cmp_playing = false;
    }
    if (s.cmp_step >= 0) s.cmp_follow = false;
    const LockStep   ls = lockstep(A.history, B.history, k);
    const RunCompare c  = compare_runs(A.history, B.history, s.seq, k);
    ImGui::SameLine();
    ImGui::TextDisabled("  %d same, %d differ, %d masked", c.same, c.differ, c.masked);

    const float col_w   = (ImGui::GetContentRegionAvail().x - ImGui::GetStyle().ItemSpacing.x) * 0.5f;
    const float avail_h = ImGui::GetContentRegionAvail().y - ImGui::GetTextLineHeightWithSpacing();
    // The salient map gets up to 14 px per layer (readable rows), at most 45% of the height; the chips the rest.
    const float map_h = std::clamp(avail_h * 0.45f, 24.f, 14.f * A.history.n_layer() + 8.f);
    const float chips_h =
        std::max(40.f, avail_h - map_h - ImGui::GetTextLineHeightWithSpacing() - ImGui::GetStyle().ItemSpacing.y * 2);
    auto column = [&](const RunEntry& e, int step, char which) {
        ImGui::BeginGroup();
        ImGui::PushID(which);
        const std::string note = run_state_note(e.history);
        ImGui::TextColored(which == 'A' ? ImVec4(0.6f, 0.8f, 1, 1) : ImVec4(1, 0.8f, 0.55f, 1), "%c: %s", which,
                           run_label(e.history).c_str());
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip("#%llu %s", (unsigned long long)e.serial, run_context(e, 120).c_str());
        ImGui::SameLine();
        if (step < k)
            ImGui::TextDisabled("at its last step %d%s%s", step, note.empty() ? "" : ", ", note.c_str());
        else
            ImGui::TextDisabled("step %d%s%s", step, note.empty() ? "" : ", ", note.c_str());
        canvas_chips_at(s, e.history, step, c, "##chips", chips_h);
        ImGui::TextDisabled("%s at step %d: layers x response positions",
                            e.history.info().method == "original" ? "what DyLLM would mark" : "salient map", step);
        salient_strip(s, e.history, step, "##sal", map_h);
        ImGui::PopID();
        ImGui::EndGroup();
    };
    ImGui::BeginChild("##colA", ImVec2(col_w, 0), false, ImGuiWindowFlags_NoScrollbar);
    column(A, ls.a, 'A');
    ImGui::EndChild();
    ImGui::SameLine();
    ImGui::BeginChild("##colB", ImVec2(0, 0), false, ImGuiWindowFlags_NoScrollbar);
    column(B, ls.b, 'B');
    ImGui::EndChild();
}

}  // namespace

void draw_compare(Studio& s) {
    // ---- start a comparison ----
    float&     tau_b = s.cmp_tau_b;
    const bool idle  = !s.compare_queued && s.status.state != WorkerState::Loading;
    ImGui::BeginDisabled(!idle);
    if (ImGui::Button("Run original vs current settings")) {
        s.start_compare(true, NAN);
        s.cmp_follow = true;
    }
    ImGui::SameLine();
    if (ImGui::Button("Run current tau vs tau B")) {
        s.start_compare(false, tau_b);
        s.cmp_follow = true;
    }
    ImGui::SameLine();
    ImGui::TextUnformatted("tau B");
    ImGui::SameLine(0, 4);
    std::string tau_error;
    tau_field("tauB", &tau_b, 64, 90, &tau_error, &s.arrows_taken);
    if (!tau_error.empty()) s.message = tau_error;
    ImGui::EndDisabled();
    if (s.cmp_follow) s.cmp_step = -1;
    ImGui::SameLine();
    ImGui::BeginDisabled(!idle);
    ImGui::TextUnformatted("pairs");
    ImGui::SameLine(0, 4);
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 5.5f);
    if (ImGui::InputInt("##reps", &s.compare_reps)) s.compare_reps = std::clamp(s.compare_reps, 1, 10);
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            "repetitions: the pair runs this many times (A, B, A, B...) at full speed; the Summary shows the\n         "
            "   "
            "median speed-up and its range over the pairs, the replay and the other tabs the first pair");
    ImGui::EndDisabled();
    if (s.compare_queued || s.compare_more_reps()) {
        ImGui::SameLine();
        ImGui::TextDisabled("pair %d of %d: %s...", s.compare_rep + 1, s.compare_reps_active,
                            s.compare_queued ? "running A" : "running B");
    }

    // ---- the two runs: the comparison just started (as its runs begin), a pair picked by hand, or the newest pair
    // ----
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
        t += "  (" + run_context(e) + ")";  // model and prompt: two runs of different models read apart
        return t;
    };
    auto run_combo = [&](const char* label, int idx, bool is_a) {
        ImGui::SetNextItemWidth(std::min(360.f, ImGui::GetContentRegionAvail().x * 0.5f - 60));
        if (ImGui::BeginCombo(label, entry_text(idx).c_str())) {
            for (int i = 0; i < n; ++i) {
                const bool aborted =
                    s.runs[size_t(i)].history.finished() && s.runs[size_t(i)].history.run_end().cancelled;
                if (aborted) ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.f, 0.55f, 0.45f, 1));
                if (ImGui::Selectable(entry_text(i).c_str(), i == idx)) {
                    const std::string& other = s.runs[size_t(is_a ? pair.b : pair.a)].label;
                    if (is_a)
                        s.cmp_pick.choose(s.runs[size_t(i)].label, other);
                    else
                        s.cmp_pick.choose(other, s.runs[size_t(i)].label);
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
    if (A.request.prompt != B.request.prompt) {
        ImGui::SameLine();
        ImGui::TextColored(ImVec4(1, 0.7f, 0.3f, 1), "different prompts!");
    }
    if (ImGui::BeginTabBar("##cmptabs")) {
        if (ImGui::BeginTabItem("Replay side by side")) {
            replay_tab(s, A, B);
            ImGui::EndTabItem();
        }
        if (ImGui::BeginTabItem("Op times")) {
            op_times_tab(s, A.history, B.history);
            ImGui::EndTabItem();
        }
        if (ImGui::BeginTabItem("Summary")) {
            summary_tab(s, compare_runs(A.history, B.history, s.seq), A, B);
            ImGui::EndTabItem();
        }
        ImGui::EndTabBar();
    }
}

}  // namespace dyllm::app
