// Why tab: where the work of three runs of one prompt goes (original, Fast-dLLM's dual cache, DyLLM), by step kind and
// over the steps: cumulative FLOPs and wall time per run, a strip of each run's step kinds, and a table of FLOPs and
// time per kind. Every number is the engine's own step accounting (app/model/step_kind_costs.h).
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "app/model/axis_ticks.h"
#include "app/model/step_kind_costs.h"
#include "app/studio/plot.h"
#include "app/studio/studio.h"

namespace dyllm::app {

namespace {

// One colour per run of the trio (Studio::kWhyMethods order): original, fast-dual, dyllm.
constexpr ImU32 kRunCols[3] = {IM_COL32(200, 200, 205, 255), IM_COL32(90, 160, 240, 255), kColSalient};

// One colour per step kind (step_kinds.def order): dense kinds warm and dark, cached/sparse kinds light.
ImU32 step_kind_color(StepKind k) {
    static const ImU32 kCols[] = {
        IM_COL32(215, 60, 60, 255),    // full
        IM_COL32(245, 190, 60, 255),   // sparse-fullq
        IM_COL32(110, 200, 120, 255),  // sparse-response
        IM_COL32(165, 90, 220, 255),   // block-refresh
        IM_COL32(120, 190, 235, 255),  // block-cached
        IM_COL32(200, 80, 150, 255),   // cache-refresh
        IM_COL32(230, 160, 200, 255),  // cache-partial
        IM_COL32(160, 60, 60, 255),    // dkv-refresh
        IM_COL32(200, 140, 120, 255),  // dkv-cached
        IM_COL32(150, 40, 90, 255),    // d2-full
        IM_COL32(150, 210, 200, 255),  // d2-cached
        IM_COL32(185, 95, 40, 255),    // sdllm-full
        IM_COL32(120, 70, 150, 255),   // sdllm-evict
        IM_COL32(215, 215, 140, 255),  // sdllm-cached
        IM_COL32(120, 70, 30, 255),    // elastic-full
        IM_COL32(210, 200, 120, 255),  // elastic-cached
    };
    static_assert(sizeof(kCols) / sizeof(kCols[0]) == kStepKinds, "one colour per step kind");
    return size_t(k) < kStepKinds ? kCols[size_t(k)] : IM_COL32(128, 128, 128, 255);
}

// The steps that cost a dense forward or a full query set: Fast-dLLM's refreshes against DyLLM's full and full-query.
bool costly_kind(StepKind k) {
    return is_dense_step(k) || k == StepKind::SparseFullQuery;
}

struct WhyRun {
    const RunEntry* entry = nullptr;
    StepKindCosts   costs;
    int             idx = 0;  // into kWhyMethods / kRunCols
};

// Cumulative curves of every run over the steps, one plot; hover: each run's value and step kind at the step.
void cumulative_plot(const char* id, const std::vector<WhyRun>& runs, bool seconds, bool fit_cached, float w, float h) {
    const float lh     = ImGui::GetTextLineHeight();
    const float axis_w = ImGui::CalcTextSize("000000").x + 8;
    ImGui::TextUnformatted(seconds ? "cumulative wall time (ms) after each step" : "cumulative GFLOP after each step");
    ImGui::Dummy(ImVec2(axis_w, 1));
    ImGui::SameLine(0, 0);
    PlotArea    a    = plot_area(id, w - axis_w, h - 2 * lh - 6);
    ImDrawList* dl   = ImGui::GetWindowDrawList();
    int         last = 0;
    double      top  = 0;
    for (const WhyRun& r : runs) {
        if (r.costs.steps == 0) continue;
        last = std::max(last, r.costs.step.back());
        // fit_cached: the axis fits the cached methods; the original's dense curve runs off the top (clipped).
        if (fit_cached && Studio::kWhyMethods[r.idx] == Method::Original && runs.size() > 1) continue;
        top = std::max(top, seconds ? r.costs.seconds * 1e3 : r.costs.flops * 1e-9);
    }
    if (last == 0 || !(top > 0)) {
        empty_note(a, "no ended steps yet");
        return;
    }
    const double ytop = top * 1.05;
    auto         x_of = [&](double k) { return a.p0.x + float(k / last) * a.w(); };
    auto         y_of = [&](double v) { return a.p1.y - float(v / ytop) * a.h(); };
    for (double t : linear_ticks(ytop, 4)) {
        char lbl_buf[32];  // 4000 ms, not tick_label's "4e+03"
        std::snprintf(lbl_buf, sizeof lbl_buf, "%.6g", t);
        const std::string lbl = lbl_buf;
        dl->AddLine(ImVec2(a.p0.x, y_of(t)), ImVec2(a.p1.x, y_of(t)), kColGrid);
        dl->AddText(ImVec2(a.p0.x - 4 - ImGui::CalcTextSize(lbl.c_str()).x, y_of(t) - lh * 0.5f),
                    IM_COL32(170, 170, 170, 255), lbl.c_str());
    }
    for (double t : linear_ticks(last, 8)) {
        const std::string lbl = tick_label(t);
        dl->AddLine(ImVec2(x_of(t), a.p0.y), ImVec2(x_of(t), a.p1.y), kColGrid);
        dl->AddText(ImVec2(x_of(t) - ImGui::CalcTextSize(lbl.c_str()).x * 0.5f, a.p1.y + 1),
                    IM_COL32(170, 170, 170, 255), lbl.c_str());
    }
    dl->AddRect(a.p0, a.p1, kColAxis);
    std::vector<ImVec2> pts;
    dl->PushClipRect(a.p0, a.p1, true);
    for (const WhyRun& r : runs) {
        const std::vector<double>& c = seconds ? r.costs.cum_seconds : r.costs.cum_flops;
        const double               u = seconds ? 1e3 : 1e-9;
        pts.assign(1, ImVec2(x_of(0), y_of(0)));
        for (size_t i = 0; i < c.size(); ++i) pts.emplace_back(x_of(r.costs.step[i]), y_of(c[i] * u));
        dl->AddPolyline(pts.data(), int(pts.size()), kRunCols[r.idx], 0, 2.f);
        if (!c.empty() && c.back() * u > ytop) {  // off the scale: its total at the top
            char note[64];
            std::snprintf(note, sizeof note, "%s: %s at the end", r.costs.method.c_str(),
                          seconds ? fmt_ms(c.back()).c_str() : fmt_si(c.back(), "FLOP").c_str());
            dl->AddText(ImVec2(a.p0.x + 6, a.p0.y + 4), kRunCols[r.idx], note);
        }
    }
    dl->PopClipRect();
    ImGui::Dummy(ImVec2(w, lh));  // the step ticks' labels under the plot
    if (!a.hovered) return;
    const int k = std::clamp(int(std::lround((a.mouse.x - a.p0.x) / a.w() * last)), 1, last);
    dl->AddLine(ImVec2(x_of(k), a.p0.y), ImVec2(x_of(k), a.p1.y), kColCursor);
    std::string tip = "after step " + std::to_string(k);
    for (const WhyRun& r : runs) {
        const std::vector<double>& c    = seconds ? r.costs.cum_seconds : r.costs.cum_flops;
        const double               v    = cumulative_at(r.costs, c, k);
        const auto                 it   = std::lower_bound(r.costs.step.begin(), r.costs.step.end(), k);
        const char*                kind = it != r.costs.step.end() && *it == k
                                              ? step_kind_name(r.costs.kind[size_t(it - r.costs.step.begin())])
                                              : "-";
        char                       line[160];
        std::snprintf(line, sizeof line, "\n%-10s %s  (step %d: %s)", r.costs.method.c_str(),
                      seconds ? fmt_ms(v).c_str() : (fmt_si(v, "FLOP")).c_str(), k, kind);
        tip += line;
    }
    ImGui::SetTooltip("%s", tip.c_str());
}

// One strip per run: each step a cell in its step kind's colour (block refreshes and full-query steps stand out).
void kind_strips(const std::vector<WhyRun>& runs, float w) {
    const float lh      = ImGui::GetTextLineHeight();
    const float label_w = ImGui::CalcTextSize("fast-dual ").x;
    int         last    = 0;
    for (const WhyRun& r : runs)
        if (r.costs.steps > 0) last = std::max(last, r.costs.step.back());
    if (last == 0) return;
    ImDrawList* dl = ImGui::GetWindowDrawList();
    for (const WhyRun& r : runs) {
        const ImVec2 p = ImGui::GetCursorScreenPos();
        dl->AddText(p, kRunCols[r.idx], r.costs.method.c_str());
        const float x0 = p.x + label_w, sw = w - label_w;
        for (size_t i = 0; i < r.costs.step.size(); ++i) {
            const float a = x0 + sw * float(r.costs.step[i] - 1) / last, b = x0 + sw * float(r.costs.step[i]) / last;
            dl->AddRectFilled(ImVec2(a, p.y + 2), ImVec2(std::max(b, a + 1.f), p.y + lh - 1),
                              step_kind_color(r.costs.kind[i]));
        }
        ImGui::Dummy(ImVec2(w, lh));
    }
    // Legend: the kinds these runs ran.
    bool first = true;
    for (size_t k = 0; k < kStepKinds; ++k) {
        const bool ran =
            std::any_of(runs.begin(), runs.end(), [&](const WhyRun& r) { return r.costs.by_kind[k].steps > 0; });
        if (!ran) continue;
        if (!first) ImGui::SameLine();
        first = false;
        ImGui::ColorButton("##kind", ImGui::ColorConvertU32ToFloat4(step_kind_color(StepKind(k))),
                           ImGuiColorEditFlags_NoTooltip, ImVec2(10, 10));
        ImGui::SameLine(0, 3);
        ImGui::TextUnformatted(step_kind_name(StepKind(k)));
    }
}

// The costly steps of a run (dense or full query): their count, FLOPs and time.
KindCost costly(const StepKindCosts& c) {
    KindCost t;
    for (size_t k = 0; k < kStepKinds; ++k)
        if (costly_kind(StepKind(k))) {
            t.steps += c.by_kind[k].steps;
            t.flops += c.by_kind[k].flops;
            t.seconds += c.by_kind[k].seconds;
        }
    return t;
}

void kind_table(const std::vector<WhyRun>& runs) {
    constexpr ImGuiTableFlags kFlags =
        ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingStretchProp;
    const int cols = 1 + 3 * int(runs.size());
    if (!ImGui::BeginTable("##whykinds", cols, kFlags)) return;
    ImGui::TableSetupColumn("step kind", 0, 1.9f);
    for (const WhyRun& r : runs) {
        ImGui::TableSetupColumn(r.costs.method.c_str(), 0, 0.9f);  // its steps of the kind
        ImGui::TableSetupColumn("GFLOP", 0, 0.8f);
        ImGui::TableSetupColumn("ms", 0, 0.8f);
    }
    ImGui::TableHeadersRow();
    for (int c = 1; c < cols; ++c)
        if ((ImGui::TableGetColumnFlags(c) & ImGuiTableColumnFlags_IsHovered) && c % 3 == 1)
            ImGui::SetTooltip("steps of the kind in %s's run", runs[size_t(c / 3)].costs.method.c_str());
    auto cells = [](const KindCost& k) {
        ImGui::TableNextColumn();
        if (k.steps > 0) ImGui::Text("%d", k.steps);
        ImGui::TableNextColumn();
        if (k.steps > 0) ImGui::Text("%.3f", k.flops * 1e-9);
        ImGui::TableNextColumn();
        if (k.steps > 0) ImGui::Text("%.1f", k.seconds * 1e3);
    };
    for (size_t k = 0; k < kStepKinds; ++k) {
        const bool ran =
            std::any_of(runs.begin(), runs.end(), [&](const WhyRun& r) { return r.costs.by_kind[k].steps > 0; });
        if (!ran) continue;
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::ColorButton("##kc", ImGui::ColorConvertU32ToFloat4(step_kind_color(StepKind(k))),
                           ImGuiColorEditFlags_NoTooltip, ImVec2(10, 10));
        ImGui::SameLine();
        ImGui::TextUnformatted(step_kind_name(StepKind(k)));
        for (const WhyRun& r : runs) cells(r.costs.by_kind[k]);
    }
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted("dense + full-query");
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("the costly steps: dense forwards (full, block-refresh, ...) and DyLLM's full-query steps");
    for (const WhyRun& r : runs) cells(costly(r.costs));
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted("total");
    for (const WhyRun& r : runs) cells(KindCost{r.costs.steps, r.costs.flops, r.costs.seconds});
    ImGui::EndTable();
}

// The answer in words: Fast-dLLM's refreshes against DyLLM's dense and full-query steps, and where the time curves
// cross.
void verdict(const std::vector<WhyRun>& runs) {
    const WhyRun *fast = nullptr, *dy = nullptr;
    for (const WhyRun& r : runs) {
        if (Studio::kWhyMethods[r.idx] == Method::FastDual) fast = &r;
        if (Studio::kWhyMethods[r.idx] == Method::DyLLM) dy = &r;
    }
    if (!fast || !dy || fast->costs.steps == 0 || dy->costs.steps == 0) return;
    const KindCost f = costly(fast->costs), d = costly(dy->costs);
    ImGui::Text("fast-dual's %d block refreshes: %.3f GFLOP, %s", f.steps, f.flops * 1e-9, fmt_ms(f.seconds).c_str());
    ImGui::Text("dyllm's %d dense + full-query steps: %.3f GFLOP, %s", d.steps, d.flops * 1e-9,
                fmt_ms(d.seconds).c_str());
    ImGui::Text("-> the refreshes cost %s time and %s FLOPs than DyLLM's costly steps",
                f.seconds > d.seconds ? "more" : "less", f.flops > d.flops ? "more" : "fewer");
    ImGui::Text("the rest: fast-dual's cached steps %s, dyllm's sparse steps %s",
                fmt_ms(fast->costs.seconds - f.seconds).c_str(), fmt_ms(dy->costs.seconds - d.seconds).c_str());
    const int from = overtakes_from(fast->costs, fast->costs.cum_seconds, dy->costs, dy->costs.cum_seconds);
    const int back = overtakes_from(dy->costs, dy->costs.cum_seconds, fast->costs, fast->costs.cum_seconds);
    if (from > 0)
        ImGui::TextWrapped("time: fast-dual's total stays above dyllm's from step %d on (whole run: %s vs %s)", from,
                           fmt_ms(fast->costs.seconds).c_str(), fmt_ms(dy->costs.seconds).c_str());
    else if (back > 0)
        ImGui::TextWrapped("time: dyllm's total stays above fast-dual's from step %d on (whole run: %s vs %s)", back,
                           fmt_ms(dy->costs.seconds).c_str(), fmt_ms(fast->costs.seconds).c_str());
}

}  // namespace

void draw_why(Studio& s) {
    const bool busy = s.why_speed_pending;
    ImGui::BeginDisabled(busy || s.status.state == WorkerState::Loading);
    if (ImGui::Button("run original, fast-dual, dyllm")) {
        if (!s.explain_no_model()) s.start_why();
    }
    ImGui::EndDisabled();
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
        ImGui::SetTooltip(
            "the current prompt and Controls settings with each method, one after another at full speed;\n"
            "the 'paper regime' button of the Controls bar sets up the long-response case first");
    std::vector<WhyRun> runs;
    for (int i = 0; i < 3; ++i) {
        if (s.why_labels[i].empty()) continue;
        const RunEntry* e = s.runs.find(s.why_labels[i]);
        if (!e || !e->history.has_run()) continue;
        runs.push_back(WhyRun{e, step_kind_costs(e->history), i});
    }
    ImGui::SameLine();
    if (runs.empty()) {
        ImGui::TextDisabled(busy ? "starting..."
                                 : "no runs yet: press the button, or 'paper regime' in the Controls bar");
        return;
    }
    const RunHistory& h0 = runs.front().entry->history;
    ImGui::Text("%s%s gen %d, %d steps, block %s, prompt %d tokens", busy ? "running... " : "", h0.info().model.c_str(),
                h0.gen_length(), h0.info().steps, h0.env("block_length").c_str(), h0.prompt_len(0));
    ImGui::SameLine();
    if (ImGui::SmallButton("copy CSV##why")) {
        std::vector<const StepKindCosts*> v;
        for (const WhyRun& r : runs) v.push_back(&r.costs);
        ImGui::SetClipboardText(step_kind_costs_csv(v).c_str());
        s.show_notice("Why table copied as CSV");
    }
    for (const WhyRun& r : runs) {
        ImGui::SameLine(0, 12);
        ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(kRunCols[r.idx]), "-- %s #%llu", r.costs.method.c_str(),
                           (unsigned long long)r.entry->serial);
    }
    ImGui::SameLine(0, 16);
    ImGui::Checkbox("fit the cached runs", &s.why_fit_cached);
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("the y axes fit fast-dual and dyllm; the original's dense curve runs off the top");
    ImGui::SameLine(0, 16);
    ImGui::TextDisabled("(the cost is the point here: the built-in models' long answers are poor)");
    const ImVec2 avail   = ImGui::GetContentRegionAvail();
    const float  lh      = ImGui::GetTextLineHeightWithSpacing();
    const float  table_w = std::min(avail.x * 0.4f, ImGui::GetFontSize() * 46);
    const float  plot_w  = (avail.x - table_w - 24) * 0.5f;
    const float  strip_h = lh * float(runs.size() + 1) + 4;
    const float  plot_h  = std::max(avail.y - strip_h - lh, 80.f);
    ImGui::BeginGroup();
    ImGui::BeginGroup();
    cumulative_plot("##whyflops", runs, false, s.why_fit_cached, plot_w, plot_h);
    ImGui::EndGroup();
    ImGui::SameLine(0, 12);
    ImGui::BeginGroup();
    cumulative_plot("##whytime", runs, true, s.why_fit_cached, plot_w, plot_h);
    ImGui::EndGroup();
    kind_strips(runs, 2 * plot_w + 12);
    ImGui::EndGroup();
    ImGui::SameLine(0, 12);
    ImGui::BeginChild("##whytable", ImVec2(0, avail.y), false);
    kind_table(runs);
    verdict(runs);
    ImGui::TextDisabled("FLOPs, time and kinds: the engine's per-step accounting (StepEnd, StepBegin)");
    ImGui::EndChild();
}

}  // namespace dyllm::app
