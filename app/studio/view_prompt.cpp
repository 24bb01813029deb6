// Prompt panel: the editable user message and the task-suite examples (assets/tasks/*.jsonl) with their answers.
#include <imgui.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "app/studio/studio.h"

namespace dyllm::app {

void draw_prompt(Studio& s, const Rect& r) {
    help_marker("Prompt");
    ImGui::SameLine();
    if (!s.examples.items.empty()) {
        ImGui::SetNextItemWidth(-1);
        const char* preview =
            s.example_idx >= 0 ? s.examples.items[size_t(s.example_idx)].source.c_str() : "task-suite examples...";
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
    // The expected answer wraps under its label; when that leaves the prompt box too little room (1280x720: four
    // lines left Generate below the panel), it is one line cut with "..." and the whole answer in its tooltip.
    const std::string* answer = s.example_idx >= 0 ? &s.examples.items[size_t(s.example_idx)].answer : nullptr;
    const char*        label  = "expected answer:";
    const float        avail  = ImGui::GetContentRegionAvail().y - ImGui::GetFrameHeightWithSpacing();
    const float        wrap_w =
        ImGui::GetContentRegionAvail().x - ImGui::CalcTextSize(label).x - ImGui::GetStyle().ItemSpacing.x;
    float answer_h = 0;
    bool  one_line = false;
    if (answer) {
        answer_h = ImGui::CalcTextSize(answer->c_str(), nullptr, false, std::max(wrap_w, 20.f)).y +
                   ImGui::GetStyle().ItemSpacing.y;
        if (avail - answer_h < 3 * ImGui::GetTextLineHeightWithSpacing()) {
            one_line = true;
            answer_h = ImGui::GetTextLineHeightWithSpacing();
        }
    }
    const float h = avail - answer_h;
    if (ImGui::InputTextMultiline("##prompt", s.prompt, sizeof s.prompt, ImVec2(-1, std::max(h, 40.f)))) {
        s.example_idx  = -1;  // edited: no longer the suite's item, so no accuracy
        s.params_dirty = true;
    }
    if (answer) {
        ImGui::TextDisabled("%s", label);
        ImGui::SameLine();
        if (!one_line) {
            ImGui::TextWrapped("%s", answer->c_str());
        } else {
            std::string t = *answer;
            for (char& c : t)
                if (c == '\n') c = ' ';
            while (t.size() > 4 && ImGui::CalcTextSize((t + "...").c_str()).x > wrap_w) t.pop_back();
            if (t.size() < answer->size()) t += "...";
            ImGui::TextUnformatted(t.c_str());
            if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", answer->c_str());
        }
    }
    if (ImGui::Button("Generate", ImVec2(90, 0))) s.restart(true);
    ImGui::SameLine();
    ImGui::TextDisabled("%zu chars", std::strlen(s.prompt));
    (void)r;
}

}  // namespace dyllm::app
