// Summary panel: tokens/s, speed-up against an original run of the same settings, rows recomputed (overall and per
// layer), FLOPs done vs dense, forward passes by step kind, cache memory, decoded text and accuracy for task-suite
// prompts.
#include <imgui.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "app/model/baseline_match.h"
#include "app/model/run_compare.h"
#include "app/studio/plot.h"
#include "app/studio/studio.h"

namespace dyllm::app {

namespace {

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
    // The live run's state is the worker's, word for word the top bar's ("paused", "playing").
    const char* state = h.finished() ? "finished" : run == s.live() ? worker_state_name(s.status.state) : "unfinished";
    ImGui::TextDisabled("%s, %s%s", run_label(h).c_str(), state,
                        s.view_step < h.step_count() ? " (up to the shown step)" : "");
    // The answer first: it is what a class looks at.
    const bool         has_text = h.finished() && !h.run_end().texts.empty();
    const std::string& answer   = run->request.answer;
    if (has_text && !answer.empty()) {
        const bool ok = answer_matches(h.run_end().texts[0], answer);
        ImGui::PushStyleColor(ImGuiCol_Text, ok ? ImVec4(0.4f, 0.9f, 0.4f, 1) : ImVec4(1, 0.45f, 0.4f, 1));
        ImGui::TextWrapped("answer %s (expected %s)", ok ? "correct" : "wrong", answer.c_str());  // wraps, never cut
        ImGui::PopStyleColor();
    }
    // A narrow panel (1280x720) keeps one line per row: the details move to the row's tooltip.
    const bool narrow = r.w < 380.f * s.ui_scale;
    char       tip[384];
    auto       details = [&](const char* t) {
        if (narrow && ImGui::IsItemHovered()) ImGui::SetTooltip("%s", t);
    };
    if (ImGui::BeginTable("##sum", 2, ImGuiTableFlags_SizingStretchProp)) {
        // Labels at their full width (they were cut at 1280x720); values take the rest and wrap.
        ImGui::TableSetupColumn("k", ImGuiTableColumnFlags_WidthFixed, ImGui::CalcTextSize("rows recomputed").x + 4);
        ImGui::TableSetupColumn("v", ImGuiTableColumnFlags_WidthStretch);
        std::snprintf(tip, sizeof tip, "%d tokens in %s of denoising steps, %s of it outside ops",
                      int(sum.tokens_committed), fmt_ms(sum.denoise_seconds).c_str(),
                      fmt_ms(sum.outside_ops_seconds).c_str());
        // Before the first step ends there is nothing to rate: a placeholder, not "0.0" or "100% of dense (0 / 0)".
        const bool no_step = sum.steps == 0;
        if (no_step)
            row("engine tok/s", "%s", "- (no step yet)");
        else if (narrow)
            row("engine tok/s", "%.1f", sum.tokens_per_s);
        else
            row("engine tok/s", "%.1f  (%s)", sum.tokens_per_s, tip);
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip("%s%s%s", narrow ? tip : "", narrow ? "\n" : "", kTokensPerSecondDefinition);
        const std::string note = run_state_note(h);
        if (h.finished() && h.run_end().cancelled) {
            row("speed-up", "%s", ("none: this run was " + note).c_str());  // a partial run's tok/s is no speed
        } else if (h.info().method == "original") {
            row("speed-up", "%s", "baseline run");
        } else if (const RunEntry* base = find_baseline(s.runs, *run)) {
            // Only against an original run of the same model, prompt, lengths, steps, block, backend and threads
            // (app/model/baseline_match.h), and named, so a figure never borrows another model's baseline.
            const RunSummary  b    = base->history.summary();
            const std::string name = baseline_name(*base);
            std::snprintf(tip, sizeof tip,
                          "against %s: %.1f tok/s\nthe same model, prompt, lengths, steps, block and backend:\n%s",
                          name.c_str(), b.tokens_per_s, base->history.info().backend.c_str());
            const double x = b.tokens_per_s > 0 ? sum.tokens_per_s / b.tokens_per_s : 0.0;
            if (narrow)
                row("speed-up", "%.2fx vs #%llu", x, (unsigned long long)base->serial);
            else
                row("speed-up", "%.2fx vs %s (%.1f tok/s)", x, name.c_str(), b.tokens_per_s);
            if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tip);
        } else {
            row("speed-up", "%s", narrow ? "no match (Compare)" : "no matching baseline (run Compare)");
            if (ImGui::IsItemHovered())
                ImGui::SetTooltip(
                    "a speed-up needs a finished original run with the same model, prompt, lengths, steps,\n"
                    "block, backend and threads; Compare runs one");
        }
        int full = 0;
        for (int k = 0; k < int(StepKind::Count); ++k)
            if (is_dense_step(StepKind(k))) full += sum.steps_by_kind[size_t(k)];
        std::snprintf(tip, sizeof tip, "%d full, %d sparse/cached", full, sum.forward_passes - full);
        if (narrow)
            row("forward passes", "%d  (%d full)", sum.forward_passes, full);
        else
            row("forward passes", "%d  (%s)", sum.forward_passes, tip);
        details(tip);
        std::snprintf(tip, sizeof tip, "FFN rows x layers, over what a dense forward would process: %lld / %lld",
                      (long long)sum.ffn_rows, (long long)sum.dense_rows);
        if (no_step)
            row("rows recomputed", "%s", "-");
        else if (narrow)
            row("rows recomputed", "%.1f%% of dense", 100.0 * sum.recompute_fraction);
        else
            row("rows recomputed", "%.1f%% of dense (%lld / %lld)", 100.0 * sum.recompute_fraction,
                (long long)sum.ffn_rows, (long long)sum.dense_rows);
        if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tip);
        std::snprintf(tip, sizeof tip, "%s done vs %s dense", fmt_si(sum.flops).c_str(),
                      fmt_si(sum.dense_flops).c_str());
        if (no_step)
            row("FLOPs", "%s", "-");
        else if (narrow)
            row("FLOPs", "%s (%.1f%%)", fmt_si(sum.flops).c_str(), 100.0 * sum.flops_fraction);
        else
            row("FLOPs", "%s (%.1f%%)", tip, 100.0 * sum.flops_fraction);
        details(tip);
        if (h.finished())
            row("cache memory", "%s", fmt_si(h.run_end().cache_bytes, "B").c_str());
        else
            row("cache memory", "%s", narrow ? "at the end" : "at the end of the run");
        // The stored weights per tensor class (a Q4_K_M file mixes Q4_K and Q6_K) and what a forward pass streams.
        if (const std::string wt = h.env("weights"); !wt.empty()) {
            // fmt_si picks the unit: a built-in model streams about a megabyte, an 8B one gigabytes.
            const std::string bytes = fmt_si(std::atof(h.env("weight_bytes").c_str()), "B");
            if (narrow) {
                row("weights", "%s", bytes.c_str());
                std::snprintf(tip, sizeof tip, "%s", wt.c_str());
                details(tip);
            } else {
                row("weights", "%s (%s per forward pass)", wt.c_str(), bytes.c_str());
            }
        }
        // Only when something was lost: 0 means every panel shows every event.
        if (const unsigned long long dropped = s.worker.sink().dropped(); dropped > 0) {
            row("events dropped", "%llu", dropped);
            if (ImGui::IsItemHovered())
                ImGui::SetTooltip(
                    "engine events lost because the UI queue was full (a fast model outruns the frames);\n"
                    "the canvas is repaired from snapshots, but histograms and timings of those events\n"
                    "are missing.");
        }
        ImGui::EndTable();
    }
    // Per-layer recompute share as a row of tiny bars.
    const int nl = int(sum.layer_recompute_fraction.size());
    if (nl > 0 && sum.steps > 0) {
        ImGui::TextDisabled("rows recomputed per layer");
        PlotArea    a  = plot_area("##layerfrac", ImGui::GetContentRegionAvail().x, narrow ? 18.f : 28.f);
        ImDrawList* dl = ImGui::GetWindowDrawList();
        const float bw = a.w() / nl;
        for (int l = 0; l < nl; ++l) {
            const float f = float(std::clamp(sum.layer_recompute_fraction[l], 0.0, 1.0));
            dl->AddRectFilled(ImVec2(a.p0.x + l * bw + 1, a.p1.y - f * a.h()),
                              ImVec2(a.p0.x + (l + 1) * bw - 1, a.p1.y), kColSalient);
        }
        if (a.hovered) {
            const int l = std::clamp(int((a.mouse.x - a.p0.x) / bw), 0, nl - 1);
            ImGui::SetTooltip("layer %d: %.1f%% of a dense run's FFN rows", l, 100.0 * sum.layer_recompute_fraction[l]);
        }
    }
    if (has_text) {
        if (h.run_end().cancelled)
            ImGui::TextDisabled("decoded response (cancelled after step %d):", h.run_end().steps);
        else
            ImGui::TextDisabled("decoded response:");
        ImGui::TextWrapped("%s", h.run_end().texts[0].c_str());
    }
    (void)r;
}

}  // namespace dyllm::app
