// `dyllm bench`: the result formats: the markdown table, CSV and JSON of the sweep's rows, and of the --task sweep's
// points.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "app/cli/bench.h"
#include "engine/errors.h"
#include "instrumentation/json_number.h"

namespace dyllm::cli::bench {
namespace {

// v where it was measured, JSON null where not: the row's and samples' fields that one run may lack (no dense step,
// no baseline, a GPU's missing CPU probes, NaN for "not measured").
nlohmann::ordered_json or_null(bool has, double v) {
    return has ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr);
}
nlohmann::ordered_json or_null(double v) {
    return or_null(!std::isnan(v), v);
}
nlohmann::ordered_json or_null(const std::optional<double>& v) {
    return or_null(v.has_value(), v.value_or(0.0));
}

// "a / b" of the dense and cached parts, "-" for a part the method never ran.
std::string pair_text(const char* f, bool has_a, double a, bool has_b, double b) {
    return (has_a ? fmt(f, a) : std::string("-")) + " / " + (has_b ? fmt(f, b) : std::string("-"));
}

}  // namespace

std::unique_ptr<AtomicFile> open_output_file(const OutputTarget& target) {
    if (target.file.empty()) return nullptr;
    try {
        return std::make_unique<AtomicFile>(target.file);
    } catch (const LoadError& e) {
        throw InputError(std::string("-o ") + e.what());
    }
}

void commit_output_file(AtomicFile& file, const std::string& text) {
    try {
        file.write(text);
        file.commit();
    } catch (const LoadError& e) {
        throw InputError(std::string("-o ") + e.what());
    }
}

nlohmann::ordered_json row_json(const Row& r, const Model& model, const app::ThreadScaling& sc) {
    nlohmann::ordered_json j;
    j["method"] = method_name(r.cfg.method);
    if (std::isnan(r.cfg.tau))
        j["tau"] = nullptr;
    else
        j["tau"] = json_float(r.cfg.tau);
    j["steps"]              = r.cfg.steps;
    j["gen_length"]         = r.cfg.gen_length;
    j["block_length"]       = r.cfg.block_length;
    j["batch"]              = r.cfg.batch;
    j["tokens_per_s"]       = r.tps_median;
    j["speedup"]            = or_null(r.speedup);
    j["nfe"]                = r.nfe;
    j["recompute_fraction"] = r.recompute;
    j["accuracy"]           = or_null(r.accuracy);
    j["flops_per_token"]    = r.flops_per_token;
    j["flops_vs_dense"]     = r.flops_vs_dense;
    j["gflops"]             = r.gflops;
    j["gflops_dense"]       = or_null(r.dense_steps != 0, r.gflops_dense);
    j["gflops_cached"]      = or_null(r.cached_steps != 0, r.gflops_cached);
    j["pct_sgemm"]          = r.pct;
    j["pct_sgemm_dense"]    = or_null(r.dense_steps != 0, r.pct_dense);
    j["pct_sgemm_cached"]   = or_null(r.cached_steps != 0, r.pct_cached);
    j["sgemm_gflops"]       = r.sgemm;
    // The system BLAS's sgemm on the same shapes with plain weights (app::ProbeWeights::Plain; null on a GPU) and the
    // dense steps' share of it.
    j["blas_sgemm_gflops"]    = or_null(r.blas_sgemm);
    j["pct_blas_sgemm_dense"] = or_null(r.dense_steps != 0 && !std::isnan(r.pct_blas_dense), r.pct_blas_dense);
    // The CPU threads the run's ops used, the probe on one thread (null on one thread or a GPU) and whether the threads
    // shared cores (app::ThreadScaling).
    j["threads"]              = sc.threads;
    j["sgemm_1thread_gflops"] = or_null(sc.one_thread_gflops > 0, sc.one_thread_gflops);
    j["threads_share_cores"]  = sc.shared_cores();
    // The cache line's one-way trip between two threads around the repetitions (null on one thread or a GPU).
    j["cross_core_ns"]             = or_null(r.cross_core_ns);
    j["dense_steps"]               = r.dense_steps;
    j["cached_steps"]              = r.cached_steps;
    j["tokens_per_s_sd"]           = r.tps_sd;
    j["tokens_per_s_min"]          = r.tps_min;
    j["tokens_per_s_max"]          = r.tps_max;
    j["non_eos_tokens_per_s"]      = r.non_eos_tps;
    j["denoise_s"]                 = r.denoise_s;
    j["cache_bytes"]               = r.cache_bytes;
    j["model"]                     = model.name();
    j["backend"]                   = model.backend().name();
    j["kernels"]                   = model.backend().description();
    nlohmann::ordered_json samples = nlohmann::ordered_json::array();
    for (const Row::Sample& x : r.samples) {
        nlohmann::ordered_json e;
        e["tokens_per_s"]      = x.tokens_per_s;
        e["gflops"]            = x.gflops;
        e["gflops_dense"]      = or_null(r.dense_steps != 0, x.gflops_dense);
        e["gflops_cached"]     = or_null(r.cached_steps != 0, x.gflops_cached);
        e["sgemm_gflops"]      = x.sgemm;
        e["blas_sgemm_gflops"] = or_null(x.blas_sgemm);
        e["cross_core_ns"]     = or_null(x.cross_core_ns);
        samples.push_back(e);
    }
    j["samples"] = samples;  // llama-bench's samples_ts, with the rates and the sgemm rate around each repetition
    return j;
}

std::string fmt(const char* f, double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, f, v);
    return buf;
}

std::string format_md(const std::vector<Row>& rows, int reps) {
    // A multi-thread CPU run also shows the cores' placement around its repetitions (the row's cross_core_ns): the
    // column that explains a row of the same code running 20-30% slower than the one before it on a VM.
    const bool cores = std::any_of(rows.begin(), rows.end(), [](const Row& r) { return !std::isnan(r.cross_core_ns); });
    std::string out;
    out += "| method | tau | gen | steps | block | batch | tok/s (median of " + std::to_string(reps) +
           ") | speed-up | nfe | recompute | FLOPs/tok | FLOPs vs dense | GFLOP/s | dense / cached GFLOP/s | "
           "sgemm GFLOP/s | % sgemm | dense / cached % sgemm | accuracy |" +
           std::string(cores ? " cross-core ns |" : "") + "\n";
    out += "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|" +
           std::string(cores ? "---:|" : "") + "\n";
    for (const Row& r : rows) {
        const bool d = r.dense_steps > 0, c = r.cached_steps > 0;
        char       line[768];
        std::snprintf(
            line, sizeof line,
            "| %s | %s | %d | %d | %d | %d | %s ± %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
            method_name(r.cfg.method), std::isnan(r.cfg.tau) ? "-" : fmt("%.4g", r.cfg.tau).c_str(), r.cfg.gen_length,
            r.cfg.steps, r.cfg.block_length, r.cfg.batch, fmt("%.2f", r.tps_median).c_str(),
            fmt("%.2f", r.tps_sd).c_str(), r.speedup ? fmt("%.2fx", *r.speedup).c_str() : "-", r.nfe,
            fmt("%.3f", r.recompute).c_str(), fmt("%.3g", r.flops_per_token).c_str(),
            fmt("%.3f", r.flops_vs_dense).c_str(), fmt("%.2f", r.gflops).c_str(),
            pair_text("%.2f", d, r.gflops_dense, c, r.gflops_cached).c_str(), fmt("%.1f", r.sgemm).c_str(),
            fmt("%.0f%%", r.pct).c_str(), pair_text("%.0f%%", d, r.pct_dense, c, r.pct_cached).c_str(),
            r.accuracy ? fmt("%.3f", *r.accuracy).c_str() : "-");
        out += line;
        if (cores) {
            out.pop_back();  // the newline: one more cell
            out += std::string(" ") + (std::isnan(r.cross_core_ns) ? "-" : fmt("%.0f", r.cross_core_ns)) + " |\n";
        }
    }
    return out;
}

std::string format_csv(const std::vector<Row>& rows, const Model& model, const app::ThreadScaling& sc) {
    std::string out;
    bool        header = false;
    for (const Row& r : rows) {
        auto j = row_json(r, model, sc);
        j.erase("samples");  // a list per row: JSON only
        if (!header) {
            std::string h;
            for (auto it = j.begin(); it != j.end(); ++it) h += (h.empty() ? "" : ",") + it.key();
            out += h + "\n";
            header = true;
        }
        std::string line;
        bool        first = true;
        for (auto it = j.begin(); it != j.end(); ++it) {
            if (!first) line += ",";
            first = false;
            if (it->is_null()) continue;
            if (it->is_string()) {
                // Quote strings (model paths may hold commas); double embedded quotes (RFC 4180).
                std::string s = it->get<std::string>(), q;
                for (char ch : s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
                line += "\"" + q + "\"";
            } else {
                line += it->dump();
            }
        }
        out += line + "\n";
    }
    return out;
}
nlohmann::ordered_json point_json(const app::SuitePoint& p, const app::SuiteContext& c) {
    nlohmann::ordered_json j;
    j["method"] = method_name(p.run.method);
    j["stable_rows"] =
        p.run.stable_rows.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(p.run.stable_rows);
    j["tau"] = std::isnan(p.run.tau) ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(json_float(p.run.tau));
    j["reference"]       = p.run.reference;
    j["pareto"]          = p.pareto;
    j["task"]            = c.task;
    j["items"]           = p.items;
    j["correct"]         = p.correct;
    j["accuracy"]        = p.accuracy;
    j["tokens_per_s"]    = p.tokens_per_s;
    j["flops_per_token"] = p.flops_per_token;
    j["flops_vs_dense"]  = p.flops_vs_dense;
    j["denoise_s"]       = p.denoise_s;
    j["nfe"]             = p.forward_passes;
    j["gen_length"]      = p.run.params.gen_length;
    j["steps"]           = p.run.params.steps;
    j["block_length"]    = p.run.params.block_length;
    j["batch"]           = c.batch;
    j["shots"]           = c.shots < 0 ? nlohmann::ordered_json("file") : nlohmann::ordered_json(c.shots);
    j["model"]           = c.model;
    j["backend"]         = c.backend;
    return j;
}

std::string task_table(const std::vector<app::SuitePoint>& pts) {
    double orig = 0;
    for (const auto& p : pts)
        if (p.run.method == Method::Original) orig = p.tokens_per_s;
    std::string out =
        "| method | update | tau | accuracy | items | tok/s | vs original | FLOPs/token | FLOPs vs dense "
        "| Pareto |\n|---|---|---:|---:|---:|---:|---:|---:|---:|:-:|\n";
    for (const auto& p : pts) {
        char line[512];
        std::snprintf(line, sizeof line, "| %s | %s | %s | %.3f | %d | %.1f | %s | %.3g | %.3f | %s |\n",
                      method_name(p.run.method), p.run.stable_rows.empty() ? "-" : p.run.stable_rows.c_str(),
                      std::isnan(p.run.tau) ? "-" : fmt("%.4g", p.run.tau).c_str(), p.accuracy, p.items, p.tokens_per_s,
                      orig > 0 ? fmt("%.2fx", p.tokens_per_s / orig).c_str() : "-", p.flops_per_token, p.flops_vs_dense,
                      p.pareto ? "*" : "");
        out += line;
    }
    return out;
}

}  // namespace dyllm::cli::bench
