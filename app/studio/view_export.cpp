// Export window: PNG of the window (read back after rendering), CSV of the plots (histograms, per-step timings, ops
// of the shown step, salient counts, canvas), Chrome trace JSON and JSONL of the whole run (instrumentation/).
#include <imgui.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "app/model/csv_export.h"
#include "app/model/op_annotations.h"
#include "app/model/op_stats.h"
#include "app/studio/studio.h"
#include "engine/io/atomic_file.h"
#include "instrumentation/chrome_trace.h"
#include "instrumentation/jsonl.h"

namespace dyllm::app {

namespace {

std::string stamp() {
    const std::time_t t = std::time(nullptr);
    char              buf[32];
    std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", std::localtime(&t));
    return buf;
}

// dir/name as an absolute path, so the notice says exactly where the files went.
std::filesystem::path export_path(const std::string& dir, const std::string& name) {
    std::error_code ec;
    auto            p = std::filesystem::absolute(std::filesystem::path(dir.empty() ? "." : dir) / name, ec);
    return ec ? std::filesystem::path(dir) / name : p.lexically_normal();
}

// Renders body into memory and writes it through the atomic writer (engine/io/atomic_file.h): "" or the one-line
// reason ("FILE: No space left on device"); a failed export leaves no file, and an older file as it was.
template <class F>
std::string write_export(const std::filesystem::path& p, F&& body) {
    try {
        std::ostringstream os;
        body(os);
        write_file_atomic(p, os.str());
        return "";
    } catch (const std::exception& e) {  // LoadError from the writer, Interrupted, bad_alloc
        return e.what();
    }
}

template <class F>
void write_file(Studio& s, const std::string& name, F&& body) {
    const std::filesystem::path p   = export_path(s.export_dir, name);
    const std::string           err = write_export(p, body);
    if (!err.empty()) {
        s.message = "export: " + err;
        return;
    }
    s.show_notice("wrote " + p.string());
}

}  // namespace

void write_text_export(Studio& s, const std::string& name, const std::string& text) {
    write_file(s, name, [&](std::ostream& o) { o << text; });
}

std::string export_stamp() {
    return stamp();
}

void write_trace(std::ostream& os, const RunHistory& h) {
    // The studio plays at a watchable pace: the waits between its steps are cut, so the run slice is the work.
    write_chrome_trace(os, h.events(), {}, export_options(h, true));
}

std::vector<OpStat> shown_op_stats(const Studio& s, const RunHistory& h) {
    const int lo = s.stats_whole_run ? 1 : s.view_step, hi = s.stats_whole_run ? h.step_count() : s.view_step;
    return op_stats(h, lo, hi, s.stats_by_layer, s.stats_exclude_preempted, true);
}

std::vector<std::string> Studio::export_all(const std::string& dir, std::vector<std::string>* failed) {
    std::vector<std::string> written;
    RunEntry*                run = shown_run();
    if (!run || !run->history.has_run()) {
        message = "export: no run to export";
        if (failed) failed->push_back("no run to export");
        return written;
    }
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) {
        message = "export: cannot create " + dir + ": " + ec.message();
        if (failed) failed->push_back("cannot create " + dir + ": " + ec.message());
        return written;
    }
    const RunHistory& h   = run->history;
    const std::string tag = stamp();
    auto              put = [&](const std::string& name, auto&& body) {
        const std::string path = export_path(dir, name).string();
        if (const std::string err = write_export(path, body); !err.empty()) {
            message = "export: " + err;
            if (failed) failed->push_back(err);
            return;
        }
        written.push_back(path);
    };
    put("histograms-" + tag + ".csv", [&](std::ostream& o) { write_histograms_csv(o, h, -1); });
    put("step-timings-" + tag + ".csv", [&](std::ostream& o) { write_step_timings_csv(o, h); });
    put("ops-" + tag + ".csv", [&](std::ostream& o) { write_ops_csv(o, h, -1); });
    put("salient-counts-" + tag + ".csv", [&](std::ostream& o) { write_salient_counts_csv(o, h); });
    put("canvas-" + tag + ".csv", [&](std::ostream& o) { write_canvas_csv(o, h, seq); });
    put("op-stats-" + tag + ".csv", [&](std::ostream& o) { o << op_stats_csv(shown_op_stats(*this, h)); });
    put("trace-" + tag + ".json", [&](std::ostream& o) { write_trace(o, h); });
    put("steps-" + tag + ".jsonl", [&](std::ostream& o) { write_jsonl(o, h.events(), export_options(h, false)); });
    return written;
}

void draw_export(Studio& s) {
    // First placement: bottom right, inside the window whatever its size (it opened off-screen at 1280x720).
    const ImVec2 disp = ImGui::GetIO().DisplaySize;
    const ImVec2 size(std::min(520.f, disp.x - 20), std::min(360.f, disp.y - 80));
    ImGui::SetNextWindowSize(size, ImGuiCond_FirstUseEver);
    ImGui::SetNextWindowPos(ImVec2(disp.x - size.x - 10, disp.y - size.y - 50), ImGuiCond_FirstUseEver);
    if (!ImGui::Begin("Export", &s.show_export, ImGuiWindowFlags_NoSavedSettings)) {
        ImGui::End();
        return;
    }
    ImGui::SetNextItemWidth(-60);
    ImGui::InputText("folder", s.export_dir, sizeof s.export_dir);
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("every export goes here (created when missing); relative paths start at\n%s",
                          std::filesystem::current_path().string().c_str());
    if (s.notice.visible()) ImGui::TextColored(ImVec4(0.5f, 0.9f, 0.5f, 1), "%s", s.notice.text().c_str());
    RunEntry*         run = s.shown_run();
    const std::string tag = stamp();
    if (ImGui::Button("PNG of the window", ImVec2(-1, 0)))
        s.png_request = export_path(s.export_dir, "dyllm-studio-" + tag + ".png").string();
    ImGui::BeginDisabled(!run || !run->history.has_run());
    if (ImGui::Button("everything below (CSV + trace + JSONL)", ImVec2(-1, 0))) {
        const auto files = s.export_all(s.export_dir);
        if (!files.empty())
            s.show_notice("wrote " + std::to_string(files.size()) + " files to " +
                          export_path(s.export_dir, "").parent_path().string());
    }
    ImGui::Separator();
    ImGui::TextDisabled("CSV of a plot (the shown run, step %d)", s.view_step);
    if (run) {
        const RunHistory& h = run->history;
        if (ImGui::Button("cosine histograms (this step)", ImVec2(-1, 0)))
            write_file(s, "histograms-step" + std::to_string(s.view_step) + "-" + tag + ".csv",
                       [&](std::ostream& o) { write_histograms_csv(o, h, s.view_step); });
        if (ImGui::Button("cosine histograms (all steps)", ImVec2(-1, 0)))
            write_file(s, "histograms-" + tag + ".csv", [&](std::ostream& o) { write_histograms_csv(o, h, -1); });
        if (ImGui::Button("time per step by op class", ImVec2(-1, 0)))
            write_file(s, "step-timings-" + tag + ".csv", [&](std::ostream& o) { write_step_timings_csv(o, h); });
        if (ImGui::Button("op timeline (this step)", ImVec2(-1, 0)))
            write_file(s, "ops-step" + std::to_string(s.view_step) + "-" + tag + ".csv",
                       [&](std::ostream& o) { write_ops_csv(o, h, s.view_step); });
        if (ImGui::Button("L_sal per layer and step", ImVec2(-1, 0)))
            write_file(s, "salient-counts-" + tag + ".csv", [&](std::ostream& o) { write_salient_counts_csv(o, h); });
        if (ImGui::Button("Op stats table (as the tab shows it)", ImVec2(-1, 0)))
            write_file(s, "op-stats-" + tag + ".csv",
                       [&](std::ostream& o) { o << op_stats_csv(shown_op_stats(s, h)); });
        if (ImGui::Button("canvas tokens", ImVec2(-1, 0)))
            write_file(s, "canvas-" + tag + ".csv", [&](std::ostream& o) { write_canvas_csv(o, h, s.seq); });
        ImGui::Separator();
        ImGui::TextDisabled("traces of the whole run (with environment metadata)");
        if (ImGui::Button("Chrome trace JSON (Perfetto, chrome://tracing)", ImVec2(-1, 0)))
            write_file(s, "trace-" + tag + ".json", [&](std::ostream& o) { write_trace(o, h); });
        if (ImGui::Button("JSONL, one record per step", ImVec2(-1, 0)))
            write_file(s, "steps-" + tag + ".jsonl",
                       [&](std::ostream& o) { write_jsonl(o, h.events(), export_options(h, false)); });
    }
    ImGui::EndDisabled();
    ImGui::End();
}

}  // namespace dyllm::app
