// The tau entry: typed field plus log-axis slider with arrow-key steps (app/studio/tau_field.h).
#include "app/studio/tau_field.h"

#include <imgui.h>

#include <cstdio>

#include "app/model/fine_drag.h"
#include "app/model/tau_scale.h"

namespace dyllm::app {

bool tau_field(const char* id, float* tau, float input_w, float slider_w, std::string* error, bool* arrows_taken) {
    bool changed = false;
    ImGui::PushID(id);
    // The field shows the shortest text that gives tau back (0.9999 and 0.99999 read apart); while it is being edited
    // ImGui keeps its own copy, so formatting it every frame never fights the typing.
    char buf[32];
    std::snprintf(buf, sizeof buf, "%s", tau_text(*tau).c_str());
    ImGui::SetNextItemWidth(input_w);
    if (ImGui::InputText("##typed", buf, sizeof buf,
                         ImGuiInputTextFlags_EnterReturnsTrue | ImGuiInputTextFlags_CharsScientific |
                             ImGuiInputTextFlags_AutoSelectAll)) {
        float v = *tau;
        if (parse_tau(buf, &v, error)) {
            changed = v != *tau;
            *tau    = v;
        }
    }
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("type a tau and press Enter (any value from -1 to 2)");
    ImGui::SameLine(0, 4);
    ImGui::SetNextItemWidth(slider_w);
    // The slider's own Ctrl+click input would take the typed number as its log position (0.99 became 0.90): the field
    // beside it takes typed values instead.
    float u = tau_to_slider(*tau);
    // Shift or Alt while dragging: the slider sees a pointer moving a tenth as far (app/model/fine_drag.h). One drag
    // at a time, so one state serves every tau field; it belongs to the field dragged last frame.
    static FineDrag drag;
    static ImGuiID  dragged = 0;
    ImGuiIO&        io      = ImGui::GetIO();
    const ImGuiID   slider  = ImGui::GetID("##log");
    const float     real_x  = io.MousePos.x;
    if (dragged == slider) io.MousePos.x = drag.pointer_x(real_x, io.KeyShift || io.KeyAlt, true);
    const bool moved =
        ImGui::SliderFloat("##log", &u, kTauSliderMin, kTauSliderMax,
                           drag.fine() && dragged == slider ? "fine (1/10)" : "log(1-tau)", ImGuiSliderFlags_NoInput);
    io.MousePos.x = real_x;
    if (ImGui::IsItemActive()) {
        if (dragged != slider) drag.pointer_x(real_x, io.KeyShift || io.KeyAlt, true);  // anchored at the click
        dragged = slider;
    } else if (dragged == slider) {
        drag.pointer_x(real_x, false, false);
        dragged = 0;
    }
    if (moved) {
        *tau    = slider_to_tau(u);
        changed = true;
    }
    const bool on_slider = ImGui::IsItemHovered() || ImGui::IsItemActive();
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            "tau on a log(1 - tau) axis: 0.9, 0.99, 0.999, 0.9999 evenly apart.\n"
            "Left/Right (or Down/Up) step exactly: 0.99 -> 0.991 ... 0.999 -> 0.9991;\n"
            "with Shift a tenth of that (0.995 -> 0.9951).\n"
            "Drag with Shift or Alt held: ten times finer.");
    // Keyboard navigation (Tab) moves the focus with the arrows: they step tau only outside it.
    if (on_slider && !io.WantTextInput && !(io.ConfigFlags & ImGuiConfigFlags_NavEnableKeyboard)) {
        int dir = 0;
        if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_RightArrow)) ||
            ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_UpArrow)))
            dir = 1;
        if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_LeftArrow)) ||
            ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_DownArrow)))
            dir = -1;
        if (dir != 0) {
            *tau    = tau_step(*tau, dir, io.KeyShift);
            changed = true;
        }
        *arrows_taken = true;
    }
    ImGui::PopID();
    return changed;
}

}  // namespace dyllm::app
