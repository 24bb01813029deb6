// Explain: short teaching text for every panel (what a salient token is, why cosines sit near 1, what tau does), as a
// tab of the bottom band (a list of topics beside the chosen one's text) and as the "(?)" tooltip of each panel.
#include <imgui.h>

#include <algorithm>
#include <cstring>

#include "app/studio/studio.h"

namespace dyllm::app {

namespace {

struct Entry {
    const char* panel;
    const char* text;
};

constexpr Entry kEntries[] = {
    {"Prompt",
     "The user message. The model's chat template is applied around it (toggle in the Controls bar). Task-suite "
     "examples come with their expected answer, so the Summary can score the response."},
    {"Canvas",
     "A masked diffusion LM starts from a response made only of [MASK] tokens (grey) and, at every denoising step, "
     "commits the n_u most confident predictions inside the current semi-autoregressive block. Colour = the step "
     "that unmasked a token (early = dark, late = bright); washed-out cells had a low score. White outline: committed "
     "at the shown step. Click a token for its saliency history."},
    {"Cosine histograms",
     "DyLLM compares each token's attention context (the attention output before o_proj) with the one it had at the "
     "previous step. Most contexts barely move between steps, so their cosine similarity sits very close to 1: that "
     "is why the x axis is log10(1 - cos) - the left edge is 1 - cos = 1e-7, the right edge cos <= 0. Tokens right of "
     "the red tau line (cos < tau) are salient: their FFN and exact attention are recomputed; the rest reuse cached "
     "results. Drag the line to change tau; it applies from the next step."},
    {"Drift over steps",
     "With 'measure drift' on, every sparse layer also computes exact attention for the rows whose context DyLLM "
     "approximated (the rows not recomputed at the previous layer) and measures the cosine between the approximate "
     "and the exact context; it is only measured, the decode is unchanged. The histograms beside the cosine "
     "histograms show it per layer at the shown step; the lines show the lowest (or mean) cosine per layer over the "
     "steps. Rows below the red tau line carry a context that is off by more than the cosine test tolerates, yet the "
     "test compares it with the previous step's cached (also approximate) context and cannot see that: the error "
     "accumulates."},
    {"Salient map",
     "Which rows each layer recomputed. Layer 0 starts from the tokens unmasked in the previous step; a token that is "
     "salient at layer l also gets fresh K/V at layer l+1, so changes propagate upward only where they matter; a "
     "layer after one with no salient row has no K/V to refresh, so its contexts cannot change and it skips Q and "
     "attention (its lane in the Time tab shows o_proj alone). Orange = salient, blue = tested and stable (cached), "
     "dark = not a query this step (response-only steps skip "
     "the prompt)."},
    {"L_sal per layer",
     "|S_l|, the number of salient rows per layer: bars at the shown step, lines over the whole run. Lower tau -> "
     "fewer salient rows -> less work, at some risk to quality."},
    {"Time",
     "Where the time goes: per-step stacked bars by op class (QKV, attention exact/approximate, o_proj, FFN, norms, "
     "lm_head, sampling...), the op timeline of the shown step (one lane per layer) and the top op classes. FULL "
     "steps are tall; sparse steps shrink with the salient share. Each step's tooltip gives its GFLOP/s and the GB/s "
     "of weights it streamed (every GEMM's weight matrix read once, over the step's wall time): at a few dozen rows "
     "a step is bound by reading the weights. Every op also records its thread's CPU time; an op on one thread whose "
     "wall time is well above its CPU time (wall > 1.5 x CPU + 0.2 ms) lost the CPU - preempted, or waiting on a "
     "page fault - and gets a red corner; Op stats can leave those samples out. On a GPU, GPU kernels lists the "
     "CUPTI kernel records under the engine op that launched them."},
    {"Summary",
     "engine tok/s = response tokens over the engine's denoising time (not the play speed). Speed-up compares with an "
     "'original' (every step dense) run of "
     "the same prompt: use Compare to make one. Rows recomputed and FLOPs are measured against a dense forward over "
     "the same sequences."},
    {"Compare",
     "Runs the same prompt twice on the worker, one after the other (e.g. original vs dyllm, or two taus). Replay: one "
     "step slider shows both canvases and both salient maps at the same step, the differing tokens outlined in red. "
     "Op times: each op class's time in A and B, the ratio B/A, and per step the median and p10-p90, so one preempted "
     "step cannot pass for a speed-up. Summary: forward passes, tokens/s, rows recomputed and FLOPs."},
    {"Why",
     "Where each method's work goes, by step kind, over the steps of three runs of the same prompt: original (every "
     "step dense), Fast-dLLM's dual cache (a dense block refresh at every block start, cached steps in between) and "
     "DyLLM (T_full dense steps, then sparse steps, a full-query sparse step every fullq_every steps). The curves are "
     "cumulative FLOPs and wall time after each step; the table sums each step kind. Every number is the engine's own "
     "accounting (each step's FLOP counter, wall time and kind). With short answers Fast-dLLM has one or two blocks "
     "to refresh and wins; over a long response of many blocks its refreshes add up past DyLLM's dense and full-query "
     "steps. The 'paper regime' preset sets that case up."},
    {"tau",
     "tau is the cosine threshold. A token is salient when cos(C_new, C_old) < tau. tau -> 1 recomputes almost "
     "everything (exact but slow); smaller tau skips more work. The paper uses 0.99-0.995 for LLaDA and 0.995-0.9975 "
     "for Dream."},
};

}  // namespace

const char* explain_text(const char* panel) {
    for (const auto& e : kEntries)
        if (std::strcmp(e.panel, panel) == 0) return e.text;
    return "";
}

void help_marker(const char* panel) {
    ImGui::TextDisabled("(?)");
    if (ImGui::IsItemHovered()) {
        ImGui::BeginTooltip();
        ImGui::PushTextWrapPos(ImGui::GetFontSize() * 34.0f);
        ImGui::TextUnformatted(explain_text(panel));
        ImGui::PopTextWrapPos();
        ImGui::EndTooltip();
    }
}

void draw_explain(Studio& s) {
    // Topics on the left, the chosen one's text on the right: the band is wide and low, so one text at a time reads
    // better than every section stacked (the band may be 230 px high at 1280x720).
    constexpr int n      = int(sizeof kEntries / sizeof kEntries[0]);
    const float   list_w = std::min(ImGui::GetFontSize() * 11, ImGui::GetContentRegionAvail().x * 0.3f);
    s.explain_entry      = std::clamp(s.explain_entry, -1, n - 1);
    ImGui::BeginChild("##explain_topics", ImVec2(list_w, 0), true);
    if (ImGui::Selectable("DyLLM in one line", s.explain_entry < 0)) s.explain_entry = -1;
    for (int i = 0; i < n; ++i)
        if (ImGui::Selectable(kEntries[i].panel, s.explain_entry == i)) s.explain_entry = i;
    ImGui::EndChild();
    ImGui::SameLine();
    ImGui::BeginChild("##explain_text", ImVec2(0, 0), true);
    const float wrap = std::min(ImGui::GetContentRegionAvail().x, ImGui::GetFontSize() * 60);  // ~100 characters
    ImGui::PushTextWrapPos(ImGui::GetCursorPosX() + wrap);
    if (s.explain_entry < 0) {
        ImGui::TextUnformatted(
            "DyLLM accelerates masked diffusion LMs by recomputing only the 'salient' tokens - those whose attention "
            "context changed since the previous denoising step - and reusing cached results for the rest. Pick a "
            "panel on the left; every panel's (?) shows the same text on hover.");
    } else {
        ImGui::TextColored(ImVec4(0.95f, 0.8f, 0.45f, 1), "%s", kEntries[s.explain_entry].panel);
        ImGui::TextUnformatted(kEntries[s.explain_entry].text);
    }
    ImGui::PopTextWrapPos();
    ImGui::EndChild();
}

}  // namespace dyllm::app
