// Controls bar: model/backend, method and every diffusion knob (tau is live, the rest apply on restart), transport
// buttons (play, pause, step, restart), speed, backend label and tokens/s; the red message bar below when an error
// is pending.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <string_view>
#include <variant>

#include "app/model/method_controls.h"
#include "app/model/tau_scale.h"
#include "app/studio/plot.h"
#include "engine/params.h"
#include "app/studio/studio.h"
#include "app/studio/tau_field.h"

namespace dyllm::app {

namespace {

// Label first, then the field (ImGui puts labels after widgets, which reads badly in a row of knobs).
bool knob_int(const char* label, int* v, int lo, int hi, float width, const char* help = nullptr) {
    ImGui::TextUnformatted(label);
    ImGui::SameLine(0, 4);
    ImGui::SetNextItemWidth(width);
    char id[32];
    std::snprintf(id, sizeof id, "##%s", label);
    const bool changed = ImGui::DragInt(id, v, 0.25f, lo, hi);
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("%s%sdrag or double-click to edit; applies on restart", help ? help : "", help ? "\n" : "");
    if (changed) *v = *v < lo ? lo : *v > hi ? hi : *v;
    return changed;
}

// One generic control for a param table row, editing p's member (ints and floats in the row's range).
bool knob_from_table(const ParamSpec& spec, std::string_view label, DiffusionParams& p) {
    char id[64];
    std::snprintf(id, sizeof id, "%.*s##knob", int(label.size()), label.data());
    bool changed = false;
    if (const auto* mi = std::get_if<int DiffusionParams::*>(&spec.member)) {
        ImGui::SetNextItemWidth(90);
        int& v  = p.*(*mi);
        changed = ImGui::DragInt(id, &v, 0.25f, int(spec.lo), int(std::min(spec.hi, 1e9)));
        if (changed) v = int(std::clamp(double(v), spec.lo, spec.hi));
    } else if (const auto* mf = std::get_if<float DiffusionParams::*>(&spec.member)) {
        ImGui::SetNextItemWidth(90);
        float& v = p.*(*mf);
        changed  = ImGui::DragFloat(id, &v, 0.01f, float(spec.lo), float(spec.hi), "%.3f");
        if (changed) v = float(std::clamp(double(v), spec.lo, spec.hi));
    } else if (const auto* mb = std::get_if<bool DiffusionParams::*>(&spec.member)) {
        changed = ImGui::Checkbox(id, &(p.*(*mb)));
    }
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("%.*s (%.*s); applies on restart", int(spec.help.size()), spec.help.data(),
                          int(spec.flag().size()), spec.flag().data());
    return changed;
}

// The selected method's knobs without a dedicated control of the bar (app/model/method_controls.cpp), in a popup.
bool method_knobs_popup(Method m, DiffusionParams& p) {
    bool any = false;
    for (std::string_view key : method_knobs(m)) {
        const KnobControl* c = find_knob_control(key);
        any                  = any || (c && !c->dedicated);
    }
    if (!any) return false;
    ImGui::SameLine(0, 12);
    if (ImGui::Button("knobs")) ImGui::OpenPopup("##method_knobs");
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s's other settings", method_name(m));
    bool changed = false;
    if (ImGui::BeginPopup("##method_knobs")) {
        for (std::string_view key : method_knobs(m)) {
            const KnobControl* c    = find_knob_control(key);
            const ParamSpec*   spec = find_param(key);
            if (c && !c->dedicated && spec) changed = knob_from_table(*spec, c->label, p) || changed;
        }
        ImGui::EndPopup();
    }
    return changed;
}

}  // namespace

void draw_controls(Studio& s, const Rect& r) {
    const bool busy_loading = s.status.state == WorkerState::Loading;
    // ---- row 1: model, method, knobs ----
    ImGui::AlignTextToFramePadding();
    ImGui::TextUnformatted("model");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(110);
    const char* models[] = {"tiny-llada", "tiny-dream", "path..."};
    if (ImGui::Combo("##model", &s.ui.model_idx, models, 3) && s.ui.model_idx != 2) {
        s.load_selected_model();
        s.restart(true);
    }
    if (s.ui.model_idx == 2) {
        ImGui::SameLine();
        ImGui::SetNextItemWidth(200);
        const bool enter = ImGui::InputTextWithHint("##path", "checkpoint directory or .gguf file", s.ui.model_path,
                                                    sizeof s.ui.model_path, ImGuiInputTextFlags_EnterReturnsTrue);
        ImGui::SameLine();
        if (ImGui::Button("Load") || enter) {
            s.load_selected_model();
            s.restart(true);
        }
    }
    ImGui::SameLine();
    ImGui::SetNextItemWidth(64);
    const char* backends[] = {"cpu", "cuda", "auto"};
    if (ImGui::Combo("##backend", &s.ui.backend_idx, backends, 3)) {
        s.load_selected_model();
        s.restart(true);
    }
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("backend (reloads the model)");

    ImGui::SameLine(0, 16);
    ImGui::TextUnformatted("method");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(100);
    const auto methods = method_combo_items();
    if (ImGui::Combo("##method", &s.ui.method_idx, methods.data(), int(methods.size()))) s.params_dirty = true;

    ImGui::SameLine(0, 16);
    ImGui::TextUnformatted("tau");
    ImGui::SameLine();
    // Typed values go to tau itself; the slider beside it is on log(1 - tau) (app/model/tau_scale.h): 0.9, 0.99,
    // 0.999 evenly apart. Range: 0.9 is already far below the paper's settings (0.98-0.9975); 0.99999 makes nearly
    // every token salient.
    std::string tau_error;
    if (tau_field("tau", &s.ui.tau, 64, 110, &tau_error, &s.arrows_taken)) {
        s.ui.tau_set = true;
        s.worker.set_tau(s.ui.tau);  // live: applies from the next step
    }
    if (!tau_error.empty()) s.message = tau_error;
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            "cosine threshold: a token whose attention context moved (cos < tau) is salient and\n"
            "recomputed. Live: applies from the next step. Drag the red line in a histogram too.\n"
            "Left/Right step tau exactly on this log axis (Shift: finer); type a value in the field.");

    ImGui::SameLine(0, 16);
    if (knob_int("T_full", &s.ui.full_steps, 1, 1024, 44,
                 "T_full: DyLLM runs the FIRST T_full steps dense (FULL: every row recomputed, the caches\n"
                 "filled); every later step is sparse: only salient tokens are recomputed (a full-query\n"
                 "sparse step every fullq_every steps re-tests every row)"))
        s.params_dirty = true;
    ImGui::SameLine();
    if (knob_int("gen", &s.ui.gen_length, 1, 4096, 48, "gen: response length in tokens (all start as [MASK])"))
        s.params_dirty = true;
    ImGui::SameLine();
    if (knob_int("steps", &s.ui.steps, 1, 4096, 48, "steps: denoising steps for the whole response"))
        s.params_dirty = true;
    ImGui::SameLine(0, 4);
    ImGui::TextDisabled("(n_u %s)", s.ui.steps > 0 && s.ui.gen_length % s.ui.steps == 0
                                        ? std::to_string(s.ui.gen_length / s.ui.steps).c_str()
                                        : "?");
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            "n_u = gen / steps: tokens unmasked per step (the most confident masked ones).\n"
            "'?' when gen is not a multiple of steps (the engine refuses such a run)");
    ImGui::SameLine();
    if (knob_int("block", &s.ui.block_length, 1, 4096, 44,
                 "block: semi-autoregressive block length; tokens are unmasked block by block, left to right"))
        s.params_dirty = true;
    if (s.method_ui() == Method::DyLLM) {
        ImGui::SameLine(0, 12);
        ImGui::SetNextItemWidth(ImGui::CalcTextSize("exact (ablation)").x + ImGui::GetFrameHeight() * 1.6f);
        if (ImGui::Combo("##update", &s.ui.update_idx, kStableUpdateNames, IM_ARRAYSIZE(kStableUpdateNames)))
            s.params_dirty = true;
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip(
                "How stable (non-salient) rows get their attention output (engine/README.md §a.13).\n"
                "authors' approx: the cached output plus the salient tokens' value changes weighted\n"
                "  by a softmax over every key (the authors' code; drifts on small models).\n"
                "incremental: only the salient keys' columns, their old terms swapped for the new\n"
                "  ones and renormalised: exact for an unchanged query, cheapest that keeps answers.\n"
                "columns (paper): the paper's text, normaliser frozen at the last exact attention.\n"
                "exact (ablation): the paper's 'Salient' ablation, exact attention for every query.");
    }
    if (method_knobs_popup(s.method_ui(), s.ui.base)) s.params_dirty = true;
    ImGui::SameLine(0, 12);
    if (ImGui::Checkbox("conf", &s.ui.use_threshold)) s.params_dirty = true;
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            "conf: confidence-threshold parallel decoding (Fast-dLLM semantics): besides the n_u\n"
            "tokens of a step, also unmask every token whose confidence is above the threshold,\n"
            "so runs need fewer steps");
    if (s.ui.use_threshold) {
        ImGui::SameLine();
        ImGui::SetNextItemWidth(70);
        if (ImGui::SliderFloat("##conf", &s.ui.conf_threshold, 0.5f, 1.0f, "%.2f")) s.params_dirty = true;
    }

    // ---- row 2: transport, speed, status ----
    const bool playing = s.status.state == WorkerState::Playing;
    ImGui::BeginDisabled(busy_loading);
    if (playing) {
        if (ImGui::Button("|| pause", ImVec2(72, 0))) s.worker.pause();
        if (ImGui::IsItemHovered()) ImGui::SetTooltip("pause (Space)");
    } else {
        if (ImGui::Button("> play", ImVec2(72, 0))) s.play();
        if (ImGui::IsItemHovered()) ImGui::SetTooltip("play (Space); a finished run or changed knobs start a new run");
    }
    ImGui::SameLine();
    if (ImGui::Button(">| step")) s.step();
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("one denoising step (N)");
    ImGui::SameLine();
    if (s.params_dirty) ImGui::PushStyleColor(ImGuiCol_Button, ImVec4(0.55f, 0.35f, 0.08f, 1.f));
    if (ImGui::Button("restart")) s.restart_or_explain();
    if (s.params_dirty) ImGui::PopStyleColor();
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("%s", s.params_dirty ? "knobs changed: restart to apply them (R)" : "restart the run (R)");
    ImGui::EndDisabled();
    ImGui::SameLine(0, 16);
    ImGui::TextUnformatted("speed");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(130);
    if (ImGui::SliderFloat("##speed", &s.ui.speed, 0.f, 60.f, s.ui.speed <= 0 ? "max" : "%.1f steps/s"))
        s.worker.set_speed(s.ui.speed);
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            "play speed limit (steps per second); far left = max, as fast as the engine goes.\n"
            "Timings are per step and do not include the wait between steps.");
    ImGui::SameLine(0, 16);
    ImGui::BeginDisabled(busy_loading);
    if (ImGui::Button("paper regime")) {
        if (!s.explain_no_model()) s.apply_paper_regime(kPaperRegimeNu[size_t(s.preset_nu_idx)]);
    }
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            "DyLLM's case where it is true: gen %d over blocks of %d (Fast-dLLM refreshes its cache at\n"
            "every block start), a %d-shot prompt from the task suites, n_u from the box beside,\n"
            "decoding past the end of text (--ignore-eos) so every block runs.\n"
            "Runs original, fast-dual and dyllm one after another and opens the Why tab: FLOPs and\n"
            "time per step kind, from the engine's own step accounting (--preset paper-regime).\n"
            "The built-in models were trained on short answers: their long answers here are poor.\n"
            "The accuracy is not the point of this view; the cost is.",
            kPaperRegime.gen_length, kPaperRegime.block_length, kPaperRegime.shots);
    ImGui::SameLine(0, 4);
    ImGui::SetNextItemWidth(ImGui::CalcTextSize("n_u 4").x + ImGui::GetFrameHeight() * 1.4f);
    const char* nu_items[] = {"n_u 1", "n_u 2", "n_u 4"};
    static_assert(std::size(nu_items) == std::size(kPaperRegimeNu));
    ImGui::Combo("##preset_nu", &s.preset_nu_idx, nu_items, IM_ARRAYSIZE(nu_items));
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("the preset's tokens per step (steps = %d / n_u)", kPaperRegime.gen_length);
    ImGui::EndDisabled();
    ImGui::SameLine(0, 16);
    ImGui::Checkbox("chat template", &s.ui.chat);
    ImGui::SameLine();
    ImGui::Checkbox("measure cosines", &s.ui.measure_cosine);
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            "for methods without saliency (original, Fast-dLLM, dLLM-Cache): also measure the\n"
            "attention-context cosines so the histograms show what DyLLM would decide");
    ImGui::SameLine();
    if (ImGui::Checkbox("past EOS", &s.ui.base.ignore_eos)) s.params_dirty = true;
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            "keep decoding after the end-of-text token (--ignore-eos): every position and block\n"
            "is decoded; the paper-regime preset turns it on");

    // Right side: state, backend, tok/s.
    char            right[256];
    const RunEntry* lv  = s.live();
    double          tps = lv ? lv->history.summary().tokens_per_s : 0.0;
    std::snprintf(right, sizeof right, "%s   backend: %s   tok/s %.0f", worker_state_name(s.status.state),
                  s.status.backend.empty() ? "-" : s.status.backend.c_str(), tps);
    // After the row's last item, never over it (at --ui-scale 1.4 the text ran over the checkboxes): the backend moves
    // to the tooltip when the whole line does not fit.
    const float after = ImGui::GetItemRectMax().x - ImGui::GetWindowPos().x + 10;
    if (ImGui::CalcTextSize(right).x > r.w - after - 14)
        std::snprintf(right, sizeof right, "%s   tok/s %.0f", worker_state_name(s.status.state), tps);
    const float tw = ImGui::CalcTextSize(right).x;
    ImGui::SameLine(std::max(after, r.w - tw - 14));
    ImGui::TextUnformatted(right);
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("backend: %s%s%s\n%s", s.status.backend.empty() ? "-" : s.status.backend.c_str(),
                          s.status.backend_note.empty() ? "" : "\n", s.status.backend_note.c_str(),
                          kTokensPerSecondDefinition);

    // ---- message bar ----
    if (!s.message.empty()) {
        ImDrawList*  dl = ImGui::GetWindowDrawList();
        const ImVec2 p0(r.x, r.y + kControlsHeight);
        const ImVec2 p1(r.x + r.w, p0.y + kMessageBarHeight);
        dl->AddRectFilled(p0, p1, IM_COL32(150, 30, 30, 255));
        ImGui::SetCursorScreenPos(ImVec2(p0.x + 8, p0.y + 4));
        ImGui::TextUnformatted(s.message.c_str());
        ImGui::SameLine();
        ImGui::SetCursorScreenPos(ImVec2(p1.x - 60, p0.y + 2));
        if (ImGui::SmallButton("dismiss")) s.message.clear();
    }
}

}  // namespace dyllm::app
