// Summary panel: tokens/s, speed-up against an original run of the same prompt, rows recomputed (overall and per
// layer), FLOPs done vs dense, forward passes by step kind, cache memory, decoded text and accuracy for task-suite
// prompts.
#include <imgui.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>

#include "app/model/run_compare.h"
#include "app/studio/plot.h"
#include "app/studio/studio.h"

namespace dyllm::app {

namespace {

// Newest finished "original" run of the same prompt and length (the baseline every speed-up is measured against).
const RunEntry* find_baseline(const Studio& s, const RunEntry& run) {
    for (size_t i = s.runs.size(); i-- > 0;) {
        const RunEntry& e = s.runs[i];
        if (&e == &run || !run_state_note(e.history).empty() || e.history.info().method != "original") continue;
        if (e.request.prompt == run.request.prompt && e.history.gen_length() == run.history.gen_length()) return &e;
    }
    return nullptr;
}

void row(const char* label, const char* fmt, ...) IM_FMTARGS(2);
void row(const char* label, const char* fmt, ...) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextDisabled("%s", label);
    ImGui::TableNextColumn();
    va_list args;
    va_start(args, fmt);
    ImGui::PushTextWrapPos(0.f);  // wrap at the column's edge instead of running out of the panel
    ImGui::TextV(fmt, args);
    ImGui::PopTextWrapPos();
    va_end(args);
}

}  // namespace

void draw_summary(Studio& s, const Rect& r) {
    help_marker("Summary");
    RunEntry* run = s.shown_run();
    if (!run || !run->history.has_run()) {
        ImGui::SameLine();
        ImGui::TextDisabled("no run yet");
        return;
    }
    const RunHistory& h   = run->history;
    const RunSummary  sum = h.summary(s.view_step);
    ImGui::SameLine();
    ImGui::TextDisabled("%s, %s%s", run_label(h).c_str(), h.finished() ? "finished" : "running",
                        s.view_step < h.step_count() ? " (up to the shown step)" : "");
    if (ImGui::BeginTable("##sum", 2, ImGuiTableFlags_SizingStretchProp)) {
        // Labels at their full width (they were cut at 1280x720); values take the rest and wrap.
        ImGui::TableSetupColumn("k", ImGuiTableColumnFlags_WidthFixed, ImGui::CalcTextSize("rows recomputed").x + 4);
        ImGui::TableSetupColumn("v", ImGuiTableColumnFlags_WidthStretch);
        row("tokens/s", "%.1f  (%d tokens, %s)", sum.tokens_per_s, int(sum.tokens_committed),
            fmt_ms(sum.denoise_seconds).c_str());
        const std::string note = run_state_note(h);
        if (h.finished() && h.run_end().cancelled) {
            row("speed-up", "%s", ("none: this run was " + note).c_str());  // a partial run's tok/s is no speed
        } else if (const RunEntry* base = find_baseline(s, *run); base && h.info().method != "original") {
            const RunSummary b = base->history.summary();
            row("speed-up", "%.2fx vs original (%.1f tok/s)", b.tokens_per_s > 0 ? sum.tokens_per_s / b.tokens_per_s : 0.0,
                b.tokens_per_s);
        } else {
            row("speed-up", "%s", h.info().method == "original" ? "baseline run" : "run Compare for a baseline");
        }
        row("forward passes", "%d  (%d full, %d sparse/cached)", sum.forward_passes,
            sum.steps_by_kind[size_t(StepKind::Full)] + sum.steps_by_kind[size_t(StepKind::BlockRefresh)] +
                sum.steps_by_kind[size_t(StepKind::CacheRefresh)],
            sum.forward_passes - sum.steps_by_kind[size_t(StepKind::Full)] -
                sum.steps_by_kind[size_t(StepKind::BlockRefresh)] - sum.steps_by_kind[size_t(StepKind::CacheRefresh)]);
        row("rows recomputed", "%.1f%% of dense (%lld / %lld)", 100.0 * sum.recompute_fraction,
            (long long)sum.ffn_rows, (long long)sum.dense_rows);
        if (ImGui::IsItemHovered()) ImGui::SetTooltip("FFN rows x layers, over what a dense forward would process");
        row("FLOPs", "%s done vs %s dense (%.1f%%)", fmt_si(sum.flops).c_str(), fmt_si(sum.dense_flops).c_str(),
            100.0 * sum.flops_fraction);
        if (h.finished()) row("cache memory", "%s", fmt_si(h.run_end().cache_bytes, "B").c_str());
        else row("cache memory", "%s", "at the end of the run");
        row("events dropped", "%llu", (unsigned long long)s.worker.sink().dropped());
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip("engine events lost because the UI queue was full (a fast model outruns the frames);\n"
                              "the canvas is repaired from snapshots, but histograms and timings of those events\n"
                              "are missing. 0 means every panel shows every event.");
        ImGui::EndTable();
    }
    // Per-layer recompute share as a row of tiny bars.
    const int nl = int(sum.layer_recompute_fraction.size());
    if (nl > 0) {
        ImGui::TextDisabled("rows recomputed per layer");
        PlotArea    a  = plot_area("##layerfrac", ImGui::GetContentRegionAvail().x, 28);
        ImDrawList* dl = ImGui::GetWindowDrawList();
        const float bw = a.w() / nl;
        for (int l = 0; l < nl; ++l) {
            const float f = float(std::clamp(sum.layer_recompute_fraction[l], 0.0, 1.0));
            dl->AddRectFilled(ImVec2(a.p0.x + l * bw + 1, a.p1.y - f * a.h()), ImVec2(a.p0.x + (l + 1) * bw - 1, a.p1.y),
                              kColSalient);
        }
        if (a.hovered) {
            const int l = std::clamp(int((a.mouse.x - a.p0.x) / bw), 0, nl - 1);
            ImGui::SetTooltip("layer %d: %.1f%% of a dense run's FFN rows", l, 100.0 * sum.layer_recompute_fraction[l]);
        }
    }
    if (h.finished() && !h.run_end().texts.empty()) {
        const std::string& text   = h.run_end().texts[0];
        const std::string& answer = run->request.answer;
        if (!answer.empty()) {
            const bool ok = answer_matches(text, answer);
            ImGui::TextColored(ok ? ImVec4(0.4f, 0.9f, 0.4f, 1) : ImVec4(1, 0.45f, 0.4f, 1),
                               "accuracy: %s (expected %s)", ok ? "correct" : "wrong", answer.c_str());
        }
        if (h.run_end().cancelled) ImGui::TextDisabled("decoded response (cancelled after step %d):", h.run_end().steps);
        else ImGui::TextDisabled("decoded response:");
        ImGui::TextWrapped("%s", text.c_str());
    }
    (void)r;
}

}  // namespace dyllm::app
