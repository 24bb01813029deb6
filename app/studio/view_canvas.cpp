// Canvas panel: the response as a wrapped grid of token cells at the shown step. Masked = grey; colour = step that
// unmasked the token (viridis, legend on top); fill strength = sampler score; white outline = unmasked at this step.
// Hover: token, step, score. Click: that token's saliency history. Above the chips, the text decoded so far in large
// type (masks as boxes); under a chip, a bar in the salient colour when a layer recomputed it at this step.
#include <imgui.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>

#include "app/model/canvas_chips.h"
#include "app/model/decoded_text.h"
#include "app/studio/plot.h"
#include "app/studio/studio.h"
#include "app/studio/theme.h"

namespace dyllm::app {

namespace {

// Score in [0, 1] for the tint: LLaDA confidence is a probability already; Dream's score is a negative entropy
// (<= 0), mapped with exp so 0 (certain) -> 1.
float score_unit(float s) {
    if (!std::isfinite(s)) return 0.5f;
    return s >= 0 ? std::min(s, 1.f) : std::exp(s);
}

}  // namespace

void draw_canvas(Studio& s, const Rect& r) {
    RunEntry* run = s.shown_run();
    help_marker("Canvas");
    ImGui::SameLine();
    if (!run || !run->history.has_run()) {
        if (s.status.state != WorkerState::Loading) {
            ImGui::TextDisabled("no run yet: press play");
            return;
        }
        const LoadProgress& p = s.status.load;
        char                text[160];
        if (p.tensors_total > 0) {
            std::snprintf(text, sizeof text, "loading the model: weights %d/%d (%.2f of %.2f GB)", p.tensors_done,
                          p.tensors_total, double(p.bytes_done) * 1e-9, double(p.bytes_total) * 1e-9);
            ImGui::TextDisabled("%s", text);
            ImGui::ProgressBar(p.bytes_total ? float(double(p.bytes_done) / double(p.bytes_total)) : 0.f,
                               ImVec2(std::min(r.w - 20, 480.f), 0), p.tensor.c_str());
        } else {
            ImGui::TextDisabled("loading the model...");
        }
        return;
    }
    const RunHistory& h      = run->history;
    const int         total  = std::max(h.info().steps, h.step_count());
    const int         k      = s.view_step;
    const auto        cells  = h.canvas_at(s.seq, k);
    int               masked = 0;
    for (const auto& c : cells) masked += c.masked() ? 1 : 0;
    const Vocab*  vocab   = s.vocab.get();
    const int32_t eos_id  = vocab ? vocab->eos_id : -1;
    const EosStop stop    = eos_stop(h, s.seq, eos_id);
    const bool    stopped = stop.step > 0 && k >= stop.step;
    if (stopped)
        ImGui::Text("step %d / %d   stopped at end of text at step %d", k, total, stop.step);
    else
        ImGui::Text("step %d / %d   %d of %zu tokens masked", k, total, masked, cells.size());
    if (stopped && ImGui::IsItemHovered())
        ImGui::SetTooltip(
            "the sampler ends a sequence once an end-of-text token has no [MASK] before it:\n"
            "the %d positions still masked after it are never decoded",
            masked);
    if (h.n_seq() > 1) {
        ImGui::SameLine();
        ImGui::SetNextItemWidth(80);
        ImGui::SliderInt("seq", &s.seq, 0, h.n_seq() - 1);
    }
    // Legend: colour = unmask step.
    ImDrawList* dl = ImGui::GetWindowDrawList();
    // Only where it fits right of the status line (at --ui-scale 1.4 it ran over it).
    if (const float bar_w = 160.f * s.ui_scale, lbl_w = ImGui::CalcTextSize("unmasked at step 1").x;
        ImGui::GetWindowPos().x + r.w - bar_w - 70 * s.ui_scale - lbl_w - 8 > ImGui::GetItemRectMax().x) {
        const ImVec2 p(ImGui::GetWindowPos().x + r.w - bar_w - 70 * s.ui_scale,
                       ImGui::GetItemRectMin().y + (ImGui::GetItemRectSize().y - 10) * 0.5f);
        char         hi[16];
        std::snprintf(hi, sizeof hi, "%d", std::max(total, 1));
        colorbar(dl, p, ImVec2(bar_w, 10), viridis_on_dark, "unmasked at step 1", hi);
        // The salient colour's key, left of the colour bar: the bar under a chip.
        const char*  key = "recomputed now";
        const ImVec2 kz  = ImGui::CalcTextSize(key);
        const float  kx  = p.x - ImGui::CalcTextSize("unmasked at step 1").x - 16 - kz.x - 18;
        if (kx > ImGui::GetItemRectMax().x + 8) {
            dl->AddRectFilled(ImVec2(kx, p.y + 6), ImVec2(kx + 14, p.y + 10), kColSalient);
            dl->AddText(ImVec2(kx + 18, p.y + (10 - kz.y) * 0.5f), IM_COL32(220, 220, 220, 255), key);
        }
    }
    ImGui::Separator();

    // The text decoded so far, large enough to read from the back of a room; its height is bounded so the chips
    // below keep at least half of the panel.
    if (vocab) {
        const std::string text  = decoded_so_far(cells, *vocab, stopped ? stop.position : -1);
        ImFont*           font  = large_font();
        const float       px    = std::clamp(r.h * 0.09f, 18.f * s.ui_scale, kLargeFontPx);
        const float       wrap  = ImGui::GetContentRegionAvail().x - 8;
        const ImVec2      sz    = font->CalcTextSizeA(px, FLT_MAX, wrap, text.c_str());
        const float       h_max = std::max(px * 1.2f, ImGui::GetContentRegionAvail().y * 0.45f);
        ImGui::BeginChild("##decoded", ImVec2(0, std::min(sz.y + 8, h_max)), false);
        const ImVec2 p0 = ImGui::GetCursorScreenPos();
        ImGui::GetWindowDrawList()->AddText(font, px, ImVec2(p0.x + 2, p0.y + 2), IM_COL32(240, 240, 240, 255),
                                            text.c_str(), nullptr, wrap);
        ImGui::Dummy(ImVec2(wrap, sz.y + 4));
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip(
                "the response decoded so far; a box is a position still masked (\xE2\x96\xA1\xC3\x97N: N in a "
                "row)");
        ImGui::EndChild();
    }

    const float pad = 4.f, gap = 3.f, cell_h = ImGui::GetTextLineHeight() + 6.f;
    ImGui::BeginChild("##cells", ImVec2(0, 0), false);
    if (k == 0) {  // the first screen: say what the grey boxes are and what play does
        const int32_t steps = h.info().steps;
        const int32_t n_u   = steps > 0 ? h.gen_length() / steps : 0;
        ImGui::TextColored(ImVec4(1.f, 0.85f, 0.45f, 1.f),
                           "grey cells are [MASK]; press play to denoise, one step = %d token%s", n_u,
                           n_u == 1 ? "" : "s");
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip(
                "n_u = gen / steps tokens are unmasked per step (with 'conf' on, every token above\n"
                "the confidence threshold too); colour then says at which step each token appeared");
    }
    const ImVec2 origin = ImGui::GetCursorScreenPos();
    const float  avail  = ImGui::GetContentRegionAvail().x;
    float        x = 0, y = 0;
    int          hovered   = -1;
    const ImVec2 mouse     = ImGui::GetIO().MousePos;
    dl                     = ImGui::GetWindowDrawList();
    int        hovered_end = -1;  // index into chips of a hovered end-of-text chip
    const auto chips       = canvas_chips(cells, eos_id, stopped ? stop.position : -1);
    const auto sal         = h.salient_layers(s.seq, k);
    for (size_t ci = 0; ci < chips.size(); ++ci) {
        const CanvasChip& chip = chips[ci];
        const size_t      i    = size_t(chip.first);
        const CanvasCell& c    = cells[i];
        std::string       text;
        if (chip.end_run)
            text = end_chip_text(chip);
        else if (c.masked())
            text = "";
        else if (c.token == eos_id)
            text = "<eos>";  // the full name (<|endoftext|>) is in the tooltip
        else
            text = vocab ? vocab->display(c.token) : "#" + std::to_string(c.token);
        if (!chip.end_run && text.size() > 24) text = text.substr(0, 22) + "..";
        const float tw = c.masked() && !chip.end_run ? 14.f : ImGui::CalcTextSize(text.c_str()).x;
        const float w  = tw + 2 * pad;
        if (x > 0 && x + w > avail) {
            x = 0;
            y += cell_h + gap;
        }
        const ImVec2 p0(origin.x + x, origin.y + y), p1(p0.x + w, p0.y + cell_h);
        const bool   in =
            mouse.x >= p0.x && mouse.x < p1.x && mouse.y >= p0.y && mouse.y < p1.y && ImGui::IsWindowHovered();
        x += w + gap;
        if (chip.end_run) {
            dl->AddRectFilled(p0, p1, IM_COL32(50, 52, 58, 255), 6.f);
            dl->AddRect(p0, p1, IM_COL32(120, 124, 135, 255), 6.f);
            dl->AddText(ImVec2(p0.x + pad, p0.y + 3), IM_COL32(190, 190, 195, 255), text.c_str());
            if (in) hovered_end = int(ci);
            continue;
        }
        ImU32 bg;
        if (c.masked()) {
            bg = kColMasked;
        } else {
            const float t = total > 1 ? float(c.unmask_step - 1) / float(total - 1) : 0.f;
            // Fill strength follows the score, so low-confidence tokens look washed out (0.6 floor keeps the hue
            // readable on the dark background; chosen from screenshots).
            bg = to_col(viridis_on_dark(t), 0.6f + 0.4f * score_unit(c.score));
        }
        dl->AddRectFilled(p0, p1, bg);
        if (!c.masked()) {
            dl->AddText(ImVec2(p0.x + pad, p0.y + 3), text_on(bg | IM_COL32(0, 0, 0, 255)), text.c_str());
            if (c.unmask_step == k) dl->AddRect(p0, p1, IM_COL32(255, 255, 255, 230), 0.f, 0, 2.f);
        }
        if (i < sal.size() && sal[i] > 0) dl->AddRectFilled(ImVec2(p0.x, p1.y - 3), p1, kColSalient);
        if (int(i) == s.selected_token) dl->AddRect(p0, p1, IM_COL32(80, 220, 255, 255), 0.f, 0, 2.5f);
        if (in) hovered = int(i);
    }
    if (hovered_end >= 0) {
        const CanvasChip& chip = chips[size_t(hovered_end)];
        ImGui::SetTooltip("positions %d..%d: end of text\n%d x '%s'%s", chip.first, chip.first + chip.count - 1,
                          chip.n_eos, vocab ? vocab->display(eos_id).c_str() : "eos",
                          chip.n_masked > 0 ? "\nthe masked ones come after the sequence stopped: never decoded" : "");
    }
    ImGui::Dummy(ImVec2(avail, y + cell_h + 4));
    if (hovered >= 0) {
        const CanvasCell& c   = cells[size_t(hovered)];
        const auto&       tok = h.tokens(s.seq)[size_t(hovered)];
        ImGui::BeginTooltip();
        ImGui::Text("position %d (sequence position %d)", hovered, h.prompt_len(s.seq) + hovered);
        if (c.masked()) {
            ImGui::TextUnformatted("[MASK] at this step");
            if (tok.unmask_step > 0) ImGui::TextDisabled("unmasked later, at step %d", tok.unmask_step);
        } else {
            ImGui::Text("token %d  '%s'", c.token, vocab ? vocab->display(c.token).c_str() : "?");
            ImGui::Text("unmasked at step %d, score %.4f", c.unmask_step, double(c.score));
        }
        if (size_t(hovered) < sal.size() && sal[size_t(hovered)] > 0)
            ImGui::Text("salient at this step in %d of %d layers (recomputed)", sal[size_t(hovered)], h.n_layer());
        ImGui::TextDisabled("click: saliency history (steps x layers)");
        ImGui::EndTooltip();
        if (ImGui::IsMouseClicked(ImGuiMouseButton_Left)) {
            s.selected_token   = hovered;
            s.token_grid_steps = -1;
        }
    }
    ImGui::EndChild();
}

void draw_token_history(Studio& s) {
    RunEntry* run = s.shown_run();
    if (s.selected_token >= 0 && run && s.selected_token >= int(run->history.tokens(s.seq).size()))
        s.selected_token = -1;
    if (s.selected_token < 0 || !run) {
        ImGui::TextDisabled("click a token in the Canvas (or a cell of the Salient map) to see its saliency history");
        return;
    }
    const RunHistory& h = run->history;
    if (s.token_grid_steps != h.step_count()) {  // recompute only when new steps arrived
        s.token_grid       = h.token_saliency(s.seq, s.selected_token);
        s.token_grid_steps = h.step_count();
    }
    const auto& g = s.token_grid;
    {
        const auto& tok = h.tokens(s.seq)[size_t(s.selected_token)];
        ImGui::Text("token %d '%s'   unmasked at step %d", s.selected_token,
                    s.vocab ? s.vocab->display(tok.token).c_str() : "?", tok.unmask_step);
        ImGui::SameLine();
        ImGui::TextDisabled("  rows = layers, columns = steps;  orange salient, blue tested & stable, dark not tested");
        if (g.steps == 0 || g.layers == 0) {
            ImGui::TextDisabled("no steps yet");
        } else {
            const ImVec2 avail = ImGui::GetContentRegionAvail();
            const float  left  = 34.f;
            const float  lh    = ImGui::GetTextLineHeight();
            PlotArea     a     = plot_area("##tokgrid", avail.x, avail.y - 18 - lh);  // a line for the step numbers
            ImDrawList*  dl    = ImGui::GetWindowDrawList();
            const float  cw = (a.w() - left) / g.steps, ch = a.h() / g.layers;
            // Step numbers under the columns: 1, then every 1/2/5 x 10^k steps, as many as fit.
            const float num_w = ImGui::CalcTextSize("000").x + 6;
            int         every = 1;
            for (int m : {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000})
                if ((every = m) * cw >= num_w) break;
            for (int st = 1; st <= g.steps; st = (st == 1 && every > 1) ? every : st + every) {
                char        num[16];
                const int   n  = std::snprintf(num, sizeof num, "%d", st);
                const float tw = ImGui::CalcTextSize(num, num + n).x;
                const float xc = a.p0.x + left + (st - 0.5f) * cw;
                dl->AddLine(ImVec2(xc, a.p1.y), ImVec2(xc, a.p1.y + 3), kColAxis);
                dl->AddText(ImVec2(std::min(xc - tw * 0.5f, a.p1.x - tw), a.p1.y + 2), IM_COL32(170, 170, 170, 255),
                            num);
            }
            for (int st = 1; st <= g.steps; ++st) {
                for (int l = 0; l < g.layers; ++l) {
                    const TokenSal v   = g.at(st, l);
                    const ImU32    col = v == TokenSal::Salient  ? kColSalient
                                         : v == TokenSal::Stable ? kColStable
                                                                 : kColUntested;
                    const ImVec2   p0(a.p0.x + left + (st - 1) * cw, a.p0.y + l * ch);
                    dl->AddRectFilled(p0, ImVec2(p0.x + cw - (cw > 3 ? 1 : 0), p0.y + ch - (ch > 3 ? 1 : 0)), col);
                }
            }
            for (int l = 0; l < g.layers; l += std::max(1, g.layers / 8)) {
                char lbl[16];
                std::snprintf(lbl, sizeof lbl, "L%d", l);
                dl->AddText(ImVec2(a.p0.x, a.p0.y + l * ch + (ch - 13) * 0.5f), IM_COL32(200, 200, 200, 255), lbl);
            }
            if (tok.unmask_step > 0) {  // mark the step that unmasked it
                const float xs = a.p0.x + left + (tok.unmask_step - 0.5f) * cw;
                dl->AddLine(ImVec2(xs, a.p0.y), ImVec2(xs, a.p1.y), IM_COL32(255, 255, 255, 200), 1.5f);
            }
            if (a.hovered && a.mouse.x > a.p0.x + left) {
                const int st = 1 + int((a.mouse.x - a.p0.x - left) / cw);
                const int l  = int((a.mouse.y - a.p0.y) / ch);
                if (st >= 1 && st <= g.steps && l >= 0 && l < g.layers) {
                    const TokenSal v = g.at(st, l);
                    ImGui::SetTooltip("step %d, layer %d: %s\ncos %.6f", st, l,
                                      v == TokenSal::Salient  ? "salient (recomputed)"
                                      : v == TokenSal::Stable ? "stable (cached)"
                                                              : "not tested",
                                      double(g.cos_at(st, l)));
                    if (a.clicked) {
                        s.follow_live = false;
                        s.view_step   = st;
                    }
                }
            }
            ImGui::Dummy(ImVec2(1, lh));
            ImGui::TextDisabled(
                "columns: steps (numbered below); white line: the step that unmasked it. Click a cell to show that "
                "step everywhere.");
        }
    }
}

}  // namespace dyllm::app
