// History scrubber: step k of N over the recorded run (replays every panel), a "live" toggle that follows the engine,
// keyboard stepping, the run picker, and the Explain / Compare / Export buttons with frame-time readout.
#include <imgui.h>

#include <cstdio>

#include "app/model/run_compare.h"
#include "app/model/key_routing.h"
#include "app/studio/studio.h"

namespace dyllm::app {

void draw_scrubber(Studio& s, const Rect& r) {
    RunEntry* run = s.shown_run();
    const int n   = run ? run->history.step_count() : 0;
    ImGui::AlignTextToFramePadding();
    ImGui::TextUnformatted("history");
    ImGui::SameLine();
    if (ImGui::Checkbox("live", &s.follow_live) && s.follow_live) s.shown_run_idx = -1;
    ImGui::SameLine();
    if (ImGui::ArrowButton("##prev", ImGuiDir_Left) && s.view_step > 0) {
        s.follow_live = false;
        --s.view_step;
    }
    ImGui::SameLine();
    // What follows the slider on this row, measured at the current text scale (a fixed width cut the row at 1.4x).
    const ImGuiStyle& st    = ImGui::GetStyle();
    const float       run_w = 150.f * s.ui_scale;
    auto button = [&](const char* t) { return ImGui::CalcTextSize(t).x + 2 * st.FramePadding.x + st.ItemSpacing.x; };
    const float right_w = ImGui::GetFrameHeight() + 2 * st.ItemSpacing.x + run_w + st.ItemSpacing.x +
                          button("Explain") + button("Compare") + button("Export") + button("View") +
                          ImGui::CalcTextSize("99.9 ms/frame").x + st.WindowPadding.x + 4;
    ImGui::SetNextItemWidth(std::max(80.f, r.w - ImGui::GetCursorPosX() - right_w));
    int  k = s.view_step;
    char fmt[48];
    std::snprintf(fmt, sizeof fmt, "step %%d / %d", n);
    if (ImGui::SliderInt("##step", &k, 0, std::max(n, 1), fmt)) {
        s.follow_live = false;
        s.view_step   = std::min(k, n);
    }
    ImGui::SameLine();
    if (ImGui::ArrowButton("##next", ImGuiDir_Right) && s.view_step < n) {
        s.follow_live = false;
        ++s.view_step;
    }
    // Keyboard: left/right scrub (unless a tau slider under the mouse took them), space play/pause (when no text field
    // has focus).
    // Keyboard navigation (Tab) takes Space and the arrows while it is on (app/model/key_routing.h).
    {
        if (studio_takes(StudioKey::Arrow, key_context(s)) && !s.arrows_taken) {
            if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_LeftArrow)) && s.view_step > 0) {
                s.follow_live = false;
                --s.view_step;
            }
            if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_RightArrow)) && s.view_step < n) {
                s.follow_live = false;
                ++s.view_step;
            }
        }
        if (studio_takes(StudioKey::Space, key_context(s)) &&
            ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Space), false)) {
            if (s.status.state == WorkerState::Playing)
                s.worker.pause();
            else
                s.play();
        }
    }
    ImGui::SameLine();
    ImGui::SetNextItemWidth(run_w);
    const std::string preview   = run ? run_label(run->history) + (s.shown_run_idx < 0 ? " (live)" : "") : "no run";
    const bool        open_runs = ImGui::BeginCombo("##run", preview.c_str());
    if (run && ImGui::IsItemHovered())
        ImGui::SetTooltip("#%llu %s", (unsigned long long)run->serial, run_context(*run).c_str());
    if (open_runs) {
        if (ImGui::Selectable("live run", s.shown_run_idx < 0)) {
            s.shown_run_idx = -1;
            s.follow_live   = true;
        }
        for (size_t i = 0; i < s.runs.size(); ++i) {
            char              label[256];
            const RunEntry&   e    = s.runs[i];
            const std::string note = run_state_note(e.history);
            std::snprintf(label, sizeof label, "#%llu %s%s%s%s%s%s  (%s)", (unsigned long long)e.serial,
                          run_label(e.history).c_str(), e.request.tag.empty() ? "" : " ", e.request.tag.c_str(),
                          note.empty() ? "" : "  [", note.c_str(), note.empty() ? "" : "]", run_context(e).c_str());
            if (ImGui::Selectable(label, int(i) == s.shown_run_idx)) {
                s.shown_run_idx  = int(i);
                s.follow_live    = false;
                s.view_step      = e.history.step_count();
                s.selected_token = -1;
            }
        }
        ImGui::EndCombo();
    }
    ImGui::SameLine();
    // Explain and Compare are tabs of the bottom band: the buttons select them (again: back to Time).
    auto tab_button = [&](const char* label, BottomTab t) {
        if (ImGui::Button(label)) s.select_tab(s.bottom_tab == t ? BottomTab::Time : t);
    };
    tab_button("Explain", BottomTab::Explain);
    ImGui::SameLine();
    tab_button("Compare", BottomTab::Compare);
    ImGui::SameLine();
    if (ImGui::Button("Export")) s.show_export = !s.show_export;
    ImGui::SameLine();
    if (ImGui::Button("View")) ImGui::OpenPopup("##viewmenu");
    if (ImGui::BeginPopup("##viewmenu")) {
        if (ImGui::MenuItem("Larger text", "Ctrl +", false, s.ui_scale < kUiScaleMax))
            set_ui_scale(s, s.ui_scale + 0.1f);
        if (ImGui::MenuItem("Smaller text", "Ctrl -", false, s.ui_scale > kUiScaleMin))
            set_ui_scale(s, s.ui_scale - 0.1f);
        if (ImGui::MenuItem("Reset text size", "Ctrl 0")) set_ui_scale(s, 1.f);
        if (ImGui::MenuItem("Reset bottom band height", "double-click its border")) s.bottom_frac = kBottomDefault;
        ImGui::EndPopup();
    }
    ImGui::SameLine();
    if (s.notice.visible()) {
        // The full path is in the Export window and the tooltip; here the end of it, which says the most.
        const std::string& t     = s.notice.text();
        const float        avail = ImGui::GetContentRegionAvail().x;
        size_t             cut   = 0;
        while (cut + 8 < t.size() && ImGui::CalcTextSize(t.c_str() + cut).x + ImGui::CalcTextSize("...").x > avail)
            ++cut;
        ImGui::TextColored(ImVec4(0.5f, 0.9f, 0.5f, 1), "%s%s", cut > 0 ? "..." : "", t.c_str() + cut);
        if (cut > 0 && ImGui::IsItemHovered()) ImGui::SetTooltip("%s", t.c_str());
    } else if (s.keyboard_nav) {
        ImGui::TextColored(ImVec4(0.95f, 0.8f, 0.45f, 1), "nav: Esc ends");  // the frame time's width
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip("keyboard navigation: arrows move the focus, Space activates, Escape or a click ends it");
    } else {
        ImGui::TextDisabled("%.1f ms/frame", double(s.frame_ms_avg));
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip("Tab: keyboard navigation (arrows move the focus, Space activates)");
    }
}

}  // namespace dyllm::app
