// Small ImDrawList plotting kit for the studio panels (ImPlot is not available; Tracy draws its plots the same way):
// colour conversion, reserved plot areas with hover, axes, colour bars and number formatting.
#pragma once
#include <imgui.h>

#include <initializer_list>
#include <string>

#include "app/model/colormap.h"

namespace dyllm::app {

inline ImU32 to_col(const Rgb& c, float a = 1.f) {
    return ImU32(pack_rgba(c, a));
}
ImU32 text_on(ImU32 bg);  // black or white text, whichever reads better on bg

// Colours shared by all panels.
constexpr ImU32 kColMasked = IM_COL32(70, 72, 78, 255);
constexpr ImU32 kColGrid   = IM_COL32(255, 255, 255, 28);
constexpr ImU32 kColAxis   = IM_COL32(200, 200, 200, 120);
// "Salient" is this one orange everywhere (canvas bars, salient map, histogram bins, per-layer bars, legends): no
// viridis hue comes near it, so it never reads as an unmask step. "Stable" (tested, cached) is this one blue.
constexpr ImU32 kColSalient  = IM_COL32(245, 145, 45, 255);
constexpr ImU32 kColStable   = IM_COL32(62, 108, 175, 255);
constexpr ImU32 kColUntested = IM_COL32(34, 36, 42, 255);
constexpr ImU32 kColTau      = IM_COL32(255, 90, 70, 255);
constexpr ImU32 kColCursor   = IM_COL32(255, 255, 255, 170);
ImU32           op_class_color(int op_class);
// The step time outside every timed op (app/model/step_gaps.h): a grey no op class uses, in bars, tables, timeline.
constexpr ImU32 kColOutsideOps = IM_COL32(112, 112, 124, 255);

// Reserves w x h pixels at the cursor (an invisible button, so clicks and hover belong to the plot).
struct PlotArea {
    ImVec2 p0, p1;
    bool   hovered = false, clicked = false, active = false;
    ImVec2 mouse;
    float  w() const { return p1.x - p0.x; }
    float  h() const { return p1.y - p0.y; }
};
PlotArea plot_area(const char* id, float w, float h);

// Horizontal colour bar with end labels.
void colorbar(ImDrawList* dl, ImVec2 p0, ImVec2 size, Rgb (*map)(float), const char* lo, const char* hi);
// Draws the first of the texts that fits in width w (the last one regardless: "" to draw nothing then).
void fit_text(ImDrawList* dl, ImVec2 p, float w, ImU32 col, std::initializer_list<const char*> texts);
// Centered "nothing to show" text in an area.
void empty_note(const PlotArea& a, const char* text);

// The one definition of tokens/s, stated wherever a tokens/s is shown (Controls, Summary, Compare).
inline constexpr const char* kTokensPerSecondDefinition =
    "engine tok/s: response tokens (gen length x sequences; those decoded so far while running)\n"
    "over the summed wall time of the denoising steps: every op plus the time outside ops,\n"
    "without the play-speed wait between steps or the model load";

std::string fmt_si(double v, const char* unit = "");  // 1.23 G, 456 k ...
std::string fmt_ms(double seconds);

}  // namespace dyllm::app
