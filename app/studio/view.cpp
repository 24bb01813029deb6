// The studio frame: fixed panel windows at the rectangles of compute_layout(), plus the floating windows
// (token history, Explain, Compare, Export).
#include <imgui.h>

#include <cmath>

#include "app/studio/studio.h"

namespace dyllm::app {

namespace {

constexpr ImGuiWindowFlags kPanelFlags = ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize |
                                         ImGuiWindowFlags_NoCollapse | ImGuiWindowFlags_NoSavedSettings |
                                         ImGuiWindowFlags_NoBringToFrontOnFocus;

template <class F>
void panel(const char* name, const Rect& r, ImGuiWindowFlags extra, F&& body) {
    ImGui::SetNextWindowPos(ImVec2(r.x, r.y));
    ImGui::SetNextWindowSize(ImVec2(r.w, r.h));
    if (ImGui::Begin(name, nullptr, kPanelFlags | extra)) body();
    ImGui::End();
}

}  // namespace

void draw_studio(Studio& s, float width, float height) {
    const StudioLayout L = compute_layout(width, height, !s.message.empty());
    panel("##controls", L.controls, ImGuiWindowFlags_NoTitleBar | ImGuiWindowFlags_NoScrollbar,
          [&] { draw_controls(s, L.controls); });
    panel("Prompt", L.prompt, 0, [&] { draw_prompt(s, L.prompt); });
    panel("Canvas", L.canvas, 0, [&] { draw_canvas(s, L.canvas); });
    panel("Summary", L.summary, 0, [&] { draw_summary(s, L.summary); });
    // A run that measured drift gives the lower part of the cosine band to the drift lines.
    const RunEntry* shown  = s.shown_run();
    const bool      drift  = shown && drift_measured(shown->history);
    Rect            cosine = L.cosine, lines = L.cosine;
    if (drift) cosine.h = std::floor(L.cosine.h * 0.55f), lines.y += cosine.h, lines.h -= cosine.h;
    panel("Cosine histograms", cosine, ImGuiWindowFlags_NoScrollbar, [&] { draw_cosine(s, cosine); });
    if (drift) panel("Drift over steps", lines, ImGuiWindowFlags_NoScrollbar, [&] { draw_drift(s, lines); });
    panel("Salient map", L.salient, ImGuiWindowFlags_NoScrollbar, [&] { draw_salient(s, L.salient); });
    panel("L_sal per layer", L.lsal, ImGuiWindowFlags_NoScrollbar, [&] { draw_lsal(s, L.lsal); });
    panel("Time", L.time, ImGuiWindowFlags_NoScrollbar, [&] { draw_time(s, L.time); });
    panel("##scrubber", L.scrubber, ImGuiWindowFlags_NoTitleBar | ImGuiWindowFlags_NoScrollbar,
          [&] { draw_scrubber(s, L.scrubber); });
    draw_token_history(s);
    if (s.show_explain) draw_explain(s);
    if (s.show_compare) draw_compare(s);
    if (s.show_export) draw_export(s);
}

}  // namespace dyllm::app
