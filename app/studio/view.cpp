// The studio frame: fixed panel windows at the rectangles of compute_layout(), a splitter above the bottom band, the
// UI scale keys (Ctrl +/-/0). The bottom band's tabs hold Time, Op stats, Tune, GPU kernels, Compare, the token history
// and Explain; the Compare tab widens the band over the plot bands, so nothing floats over a plot (only Export's
// small dialog is a window).
#include <GLFW/glfw3.h>
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <iterator>

#include "app/model/key_routing.h"
#include "app/studio/studio.h"

namespace dyllm::app {

namespace {

constexpr ImGuiWindowFlags kPanelFlags = ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize |
                                         ImGuiWindowFlags_NoCollapse | ImGuiWindowFlags_NoSavedSettings |
                                         ImGuiWindowFlags_NoBringToFrontOnFocus;

template <class F>
void panel(const char* name, const Rect& r, ImGuiWindowFlags extra, F&& body, bool* open = nullptr) {
    ImGui::SetNextWindowPos(ImVec2(r.x, r.y));
    ImGui::SetNextWindowSize(ImVec2(r.w, r.h));
    if (ImGui::Begin(name, open, kPanelFlags | extra)) body();
    ImGui::End();
}

// The layout at 1/scale, scaled back up: the fixed bars grow with the text, the bands keep their shares.
StudioLayout scaled_layout(const Studio& s, float width, float height) {
    const float  k = s.ui_scale;
    StudioLayout L = compute_layout(width / k, height / k, !s.message.empty(), s.bottom_frac);
    for (Rect* r :
         {&L.controls, &L.prompt, &L.canvas, &L.summary, &L.cosine, &L.salient, &L.lsal, &L.time, &L.scrubber})
        *r = Rect{r->x * k, r->y * k, r->w * k, r->h * k};
    return L;
}

// Drag the border above the bottom band to give Time / Op stats / Tune more or less height.
void bottom_splitter(Studio& s, const StudioLayout& L) {
    const float grip = 6.f;
    ImGui::SetNextWindowPos(ImVec2(L.time.x, L.time.y - grip * 0.5f));
    ImGui::SetNextWindowSize(ImVec2(L.time.w, grip));
    ImGui::PushStyleVar(ImGuiStyleVar_WindowPadding, ImVec2(0, 0));
    ImGui::PushStyleVar(ImGuiStyleVar_WindowMinSize, ImVec2(1, 1));
    if (ImGui::Begin(
            "##bottom_split", nullptr,
            kPanelFlags | ImGuiWindowFlags_NoTitleBar | ImGuiWindowFlags_NoBackground | ImGuiWindowFlags_NoScrollbar)) {
        ImGui::InvisibleButton("##split", ImVec2(L.time.w, grip));
        if (ImGui::IsItemHovered() || ImGui::IsItemActive()) ImGui::SetMouseCursor(ImGuiMouseCursor_ResizeNS);
        if (ImGui::IsItemActive()) {
            const float body = L.scrubber.y - L.prompt.y;
            s.bottom_frac =
                std::clamp(s.bottom_frac - ImGui::GetIO().MouseDelta.y / std::max(body, 1.f), kBottomMin, kBottomMax);
        }
        if (ImGui::IsItemHovered() && ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left))
            s.bottom_frac = kBottomDefault;
    }
    ImGui::End();
    ImGui::PopStyleVar(2);
}

}  // namespace

KeyContext key_context(const Studio& s) {
    const ImGuiIO& io = ImGui::GetIO();
    return KeyContext{io.WantTextInput, s.keyboard_nav, io.KeyCtrl || io.KeyAlt};
}

void set_ui_scale(Studio& s, float scale) {
    s.ui_scale                     = std::clamp(scale, kUiScaleMin, kUiScaleMax);
    ImGui::GetIO().FontGlobalScale = s.ui_scale;
}

void draw_studio(Studio& s, float width, float height) {
    const ImGuiIO& io = ImGui::GetIO();
    s.arrows_taken    = false;
    if (io.KeyCtrl) {  // GLFW key codes: the ImGui 1.86 GLFW backend indexes KeysDown by them
        if (ImGui::IsKeyPressed(GLFW_KEY_EQUAL) || ImGui::IsKeyPressed(GLFW_KEY_KP_ADD))
            set_ui_scale(s, s.ui_scale + 0.1f);
        if (ImGui::IsKeyPressed(GLFW_KEY_MINUS) || ImGui::IsKeyPressed(GLFW_KEY_KP_SUBTRACT))
            set_ui_scale(s, s.ui_scale - 0.1f);
        if (ImGui::IsKeyPressed(GLFW_KEY_0)) set_ui_scale(s, 1.f);
    }
    // Keyboard navigation (app/model/key_routing.h): Tab turns ImGui's NavEnableKeyboard on, Escape or a click off.
    const bool nav = keyboard_nav_next(s.keyboard_nav, ImGui::IsKeyPressed(GLFW_KEY_TAB, false) && !io.KeyCtrl,
                                       ImGui::IsKeyPressed(GLFW_KEY_ESCAPE, false),
                                       ImGui::IsMouseClicked(0) || ImGui::IsMouseClicked(1), io.WantTextInput);
    if (nav && !s.keyboard_nav) ImGui::SetWindowFocus("##controls");  // the focus starts in the Controls bar
    s.keyboard_nav = nav;
    ImGuiIO& mio   = ImGui::GetIO();  // takes effect from the next frame's NewFrame
    if (nav)
        mio.ConfigFlags |= ImGuiConfigFlags_NavEnableKeyboard;
    else
        mio.ConfigFlags &= ~ImGuiConfigFlags_NavEnableKeyboard;
    // Keys while no text field has focus (Space plays and pauses, Left/Right scrub: view_scrubber.cpp): N one step,
    // R restart, 1..8 the bottom band's tabs in tab-bar order.
    if (studio_takes(StudioKey::Letter, key_context(s))) {
        if (ImGui::IsKeyPressed(GLFW_KEY_N, false)) s.step();
        if (ImGui::IsKeyPressed(GLFW_KEY_R, false)) s.restart_or_explain();
        for (int i = 0; i < int(std::size(kBottomTabs)) && i < 9; ++i)
            if (ImGui::IsKeyPressed(GLFW_KEY_1 + i, false)) s.select_tab(kBottomTabs[size_t(i)].tab);
    }
    const StudioLayout L = scaled_layout(s, width, height);
    // A token picked in the Canvas or the Salient map opens its saliency history in the bottom band.
    if (s.selected_token >= 0 && s.selected_token != s.token_tab_for) s.select_tab(BottomTab::Token);
    s.token_tab_for = s.selected_token;
    panel("##controls", L.controls, ImGuiWindowFlags_NoTitleBar | ImGuiWindowFlags_NoScrollbar,
          [&] { draw_controls(s, L.controls); });
    panel("Prompt", L.prompt, 0, [&] { draw_prompt(s, L.prompt); });
    panel("Canvas", L.canvas, 0, [&] { draw_canvas(s, L.canvas); });
    panel("Summary", L.summary, 0, [&] { draw_summary(s, L.summary); });
    constexpr ImGuiWindowFlags kBottomFlags = ImGuiWindowFlags_NoTitleBar | ImGuiWindowFlags_NoScrollbar;
    if (wide_tab(s.bottom_tab)) {
        // Compare needs two canvases and two salient maps, Why three runs' curves: the tab takes the lower bands (the
        // canvas stays above).
        const Rect r{L.cosine.x, L.cosine.y, L.time.right() - L.cosine.x, L.time.bottom() - L.cosine.y};
        panel("##bottom", r, kBottomFlags, [&] { draw_time(s, r); });
        panel("##scrubber", L.scrubber, ImGuiWindowFlags_NoTitleBar | ImGuiWindowFlags_NoScrollbar,
              [&] { draw_scrubber(s, L.scrubber); });
        if (s.show_export) draw_export(s);
        return;
    }
    // A run that measured drift gives the lower part of the cosine band to the drift lines.
    const RunEntry* shown  = s.shown_run();
    const bool      drift  = shown && drift_measured(shown->history);
    Rect            cosine = L.cosine, lines = L.cosine;
    if (drift) {
        cosine.h = std::floor(L.cosine.h * 0.55f);
        lines.y += cosine.h;
        lines.h -= cosine.h;
    }
    panel("Cosine histograms", cosine, ImGuiWindowFlags_NoScrollbar, [&] { draw_cosine(s, cosine); });
    if (drift) panel("Drift over steps", lines, ImGuiWindowFlags_NoScrollbar, [&] { draw_drift(s, lines); });
    panel("Salient map", L.salient, ImGuiWindowFlags_NoScrollbar, [&] { draw_salient(s, L.salient); });
    panel("L_sal per layer", L.lsal, ImGuiWindowFlags_NoScrollbar, [&] { draw_lsal(s, L.lsal); });
    panel("##bottom", L.time, kBottomFlags, [&] { draw_time(s, L.time); });
    panel("##scrubber", L.scrubber, ImGuiWindowFlags_NoTitleBar | ImGuiWindowFlags_NoScrollbar,
          [&] { draw_scrubber(s, L.scrubber); });
    bottom_splitter(s, L);
    if (s.show_export) draw_export(s);
}

}  // namespace dyllm::app
