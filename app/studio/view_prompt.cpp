// Prompt panel: the editable user message and the task-suite examples (assets/tasks/*.jsonl) with their answers.
#include <imgui.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "app/studio/studio.h"

namespace dyllm::app {

void draw_prompt(Studio& s, const Rect& r) {
    help_marker("Prompt");
    ImGui::SameLine();
    if (!s.examples.items.empty()) {
        ImGui::SetNextItemWidth(-1);
        const char* preview = s.example_idx >= 0 ? s.examples.items[size_t(s.example_idx)].source.c_str()
                                                 : "task-suite examples...";
        if (ImGui::BeginCombo("##examples", preview, ImGuiComboFlags_HeightLarge)) {
            for (size_t i = 0; i < s.examples.items.size(); ++i) {
                const auto& ex = s.examples.items[i];
                char        label[160];
                std::snprintf(label, sizeof label, "%s  [%d-shot]  %.60s##%zu", ex.task.c_str(), ex.shots,
                              ex.prompt.c_str(), i);
                for (char* c = label; *c; ++c)
                    if (*c == '\n') *c = ' ';
                if (ImGui::Selectable(label, int(i) == s.example_idx)) {
                    s.example_idx = int(i);
                    std::snprintf(s.prompt, sizeof s.prompt, "%s", ex.prompt.c_str());
                    s.restart(true);
                }
            }
            ImGui::EndCombo();
        }
    } else {
        ImGui::TextDisabled("no task suite found (assets/tasks/*.jsonl)");
    }
    const float answer_h = s.example_idx >= 0 ? ImGui::GetTextLineHeightWithSpacing() * 2 : 0.f;
    const float h        = ImGui::GetContentRegionAvail().y - ImGui::GetFrameHeightWithSpacing() - answer_h;
    if (ImGui::InputTextMultiline("##prompt", s.prompt, sizeof s.prompt, ImVec2(-1, std::max(h, 40.f)))) {
        s.example_idx  = -1;  // edited: no longer the suite's item, so no accuracy
        s.params_dirty = true;
    }
    if (s.example_idx >= 0) {
        const auto& ex = s.examples.items[size_t(s.example_idx)];
        ImGui::TextDisabled("expected answer:");
        ImGui::SameLine();
        ImGui::TextWrapped("%s", ex.answer.c_str());
    }
    if (ImGui::Button("Generate", ImVec2(90, 0))) s.restart(true);
    ImGui::SameLine();
    ImGui::TextDisabled("%zu chars", std::strlen(s.prompt));
    (void)r;
}

}  // namespace dyllm::app
