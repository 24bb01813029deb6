// `dyllm bench`: llama-bench-style sweep over methods x tau x steps x block length x batch. Each configuration runs one
// warm-up and REPS timed generations on the same prompts; rows report the median tokens/s and its spread, the
// speed-up against `original` measured in the same run with the same other knobs, forward passes, the share of rows
// recomputed, and roofline figures: FLOPs per token, FLOPs vs a dense forward,
// achieved GFLOP/s (whole run, dense steps, cached steps) and their share of the machine's sgemm rate, measured on the
// model's GEMM shapes around every repetition (each repetition's share is of the rate measured just before and just
// after it; the row reports the median share). Output: markdown table, CSV or JSON, to stdout or to a file (-o
// FILE.csv). With --task: a sweep of tau and methods on a task suite (app/model/suite_sweep.h), scored as `dyllm eval`
// scores it: accuracy, engine tokens/s and FLOPs per (method, tau), original and fast-dual as references, the Pareto
// front.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "instrumentation/json_number.h"
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "app/cli/cli_common.h"
#include "app/cli/command.h"
#include "engine/engine.h"
#include "engine/errors.h"
#include "app/model/roofline.h"
#include "app/model/core_latency.h"
#include "app/model/sgemm_probe.h"
#include "app/model/suite_sweep.h"
#include "app/model/task_suite.h"

namespace dyllm::cli {
namespace {

struct BenchOptions {
    ModelOptions             model;
    DiffusionOptions         fixed;  // knobs that are not swept (full steps, seed, threshold, ...), and -n
    std::string              methods = "original,dyllm";
    std::string              taus;    // "" = family default
    std::string              steps;   // "" = gen length
    std::string              blocks;  // "" = min(32, gen length)
    std::string              batches = "1";
    int                      reps    = 3;     // llama-bench uses 5; 3 keeps a CPU sweep short (the spread is reported)
    std::string              output  = "md";  // md | csv | json, or a file name ending in .md/.csv/.json
    std::string              task;
    int                      limit = -1;  // --task: items per task (-1: not given = every item)
    int                      shots = -1;  // --task: solved examples per prompt (-1 = each item's own prompt)
    std::vector<std::string> prompts;     // overrides the built-in prompt
    bool                     no_chat = false;
    bool                     json    = false;  // stdout: JSON instead of the markdown table
    // Which list flags were given (a --task sweep has its own defaults for them).
    bool methods_given = false, taus_given = false, reps_given = false, batches_given = false;
    bool shots_given = false;
};

// The prompt used without --task: a few-shot arithmetic context in the shape of the GSM8K prompts the paper benchmarks
// (engine/README.md §g: "Question: ...\nAnswer:" few-shot examples), so that the prompt is longer than the response as
// in the paper's setting.
constexpr const char* kDefaultPrompt =
    "Question: Tom has 3 apples and buys 5 more. How many apples does he have?\nAnswer: 3 + 5 = 8. #### 8\n\n"
    "Question: A box holds 12 pens. Sara uses 4 of them. How many pens are left?\nAnswer: 12 - 4 = 8. #### 8\n\n"
    "Question: Each of 6 bags has 7 marbles. How many marbles are there in all?\nAnswer: 6 * 7 = 42. #### 42\n\n"
    "Question: Ben reads 9 pages a day for 4 days. How many pages does he read?\nAnswer:";

struct Config {
    Method          method;
    float           tau;  // NaN: not a DyLLM row (tau does not apply)
    int             gen_length, steps, block_length, batch;
    DiffusionParams params;
    bool            print = true;  // false: the `original` baseline run only for speed-ups
};

struct Row {
    Config                cfg{};
    double                tps_median = 0, tps_sd = 0, tps_min = 0, tps_max = 0;
    double                non_eos_tps = 0, denoise_s = 0;
    int                   nfe       = 0;
    double                recompute = 1, cache_bytes = 0;
    std::optional<double> speedup;
    std::optional<double> accuracy;
    // Roofline (app/model/roofline.h): medians over the reps of the achieved rates; FLOPs are deterministic.
    double flops_per_token = 0, flops_vs_dense = 1;
    double gflops = 0, gflops_dense = 0, gflops_cached = 0;
    int    dense_steps = 0, cached_steps = 0;
    // The sgemm rate around the repetitions (median) and the medians of each repetition's own shares of it.
    double sgemm = 0, pct = 0, pct_dense = 0, pct_cached = 0;
    // The same for the system BLAS's sgemm on plain weights (app::ProbeWeights::Plain), on a CPU backend; NaN
    // elsewhere.
    double blas_sgemm = NAN, pct_blas_dense = NAN;
    struct Sample {
        double tokens_per_s, gflops, gflops_dense, gflops_cached, sgemm;
        double blas_sgemm;     // NaN: not measured
        double cross_core_ns;  // around the repetition (app/model/core_latency.h); NaN: not measured
    };
    double              cross_core_ns = NAN;  // median of the samples' (NaN: none measured)
    std::vector<Sample> samples;              // one per timed repetition, in order
};

double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double sample_sd(const std::vector<double>& v) {
    if (v.size() < 2) return 0;
    double mean = 0;
    for (double x : v) mean += x;
    mean /= double(v.size());
    double ss = 0;
    for (double x : v) ss += (x - mean) * (x - mean);
    return std::sqrt(ss / double(v.size() - 1));
}

// Prompt token ids for the run: copies of the default (or -p) prompt, one per batch slot. The prompt is cut from the
// front when prompt + response would not fit the model's positions (tiny models have a short max_position).
std::vector<std::vector<int32_t>> bench_prompts(const Model& model, const BenchOptions& o, int batch, int gen_length) {
    std::vector<std::vector<int32_t>> base;
    const std::vector<std::string>    texts = o.prompts.empty() ? std::vector<std::string>{kDefaultPrompt} : o.prompts;
    for (const auto& t : texts) {
        std::vector<int32_t> ids;
        if (model.tokenizer()) {
            ids = encode_prompt(model, t, !o.no_chat);
        } else {
            // Weight-only checkpoint: a deterministic id pattern of the same length as the text, avoiding the
            // special ids so the model sees ordinary tokens.
            const ModelConfig& c = model.config();
            for (size_t i = 0; i < t.size(); ++i) {
                int32_t id = static_cast<int32_t>((static_cast<unsigned char>(t[i]) + 7 * i) % size_t(c.vocab_size));
                while (id == c.mask_id || id == c.eos_id || id == c.pad_id || id == c.bos_id)
                    id = (id + 1) % c.vocab_size;
                ids.push_back(id);
            }
        }
        const int room = model.config().max_position - gen_length;
        if (room < 1)
            throw InputError("-n " + std::to_string(gen_length) + " leaves no room for a prompt within max_position " +
                             std::to_string(model.config().max_position));
        if (int(ids.size()) > room) ids.erase(ids.begin(), ids.end() - room);
        base.push_back(std::move(ids));
    }
    std::vector<std::vector<int32_t>> out;
    for (int b = 0; b < batch; ++b) out.push_back(base[size_t(b) % base.size()]);
    return out;
}

// Totals of one repetition: every chunk of `batch` prompts run as one lock-step session.
struct RepTotals {
    int64_t            generated = 0, non_eos = 0;
    double             denoise_s = 0, recompute_weighted = 0, cache_bytes = 0;
    double             flops = 0, dense_flops = 0;
    app::RooflineSplit split;
    int                nfe = 0, n = 0;
};

// The sgemm rate measured between repetitions: 50 ms and at least 3 calls per shape (~0.15 s on the built-in models, a
// few seconds on an 8B one, whose repetitions take minutes).
constexpr double kRepProbeSeconds = 0.05;

// Like the sgemm rate, the cross-core hand-off time is measured around every repetition on a multi-thread CPU run:
// a VM's vCPUs move between near and far placements within minutes. 4 batches of 2000 round trips (the first
// untimed): 0.6-2.8 ms on a 2-core VM.
app::CoreLatency rep_core_latency(bool measure) {
    return measure ? app::measure_core_latency(2000, 3, 50.0) : app::CoreLatency{};
}

// blas_probe: the plain-weight probe (null: none, a GPU run).
Row run_config(const Model& model, const BenchOptions& o, const Config& cfg, app::GemmProbe& probe,
               app::GemmProbe* blas_probe, bool measure_cores) {
    const std::vector<std::vector<int32_t>> prompts = bench_prompts(model, o, cfg.batch, cfg.gen_length);
    auto                                    run_rep = [&] {
        RepTotals t;
        for (size_t b0 = 0; b0 < prompts.size(); b0 += size_t(cfg.batch)) {
            const size_t b1 = std::min(prompts.size(), b0 + size_t(cfg.batch));
            Session      s(model);
            s.start({prompts.begin() + long(b0), prompts.begin() + long(b1)}, cfg.params);
            s.run();
            const GenerationResult r = s.result();
            t.generated += r.generated_tokens;
            t.non_eos += r.non_eos_tokens;
            t.denoise_s += r.denoise_seconds;
            t.recompute_weighted += r.recompute_fraction * double(r.sequences.size());
            t.cache_bytes = std::max(t.cache_bytes, r.cache_bytes);
            t.nfe += r.forward_passes;
            t.flops += r.total_flops;
            t.dense_flops += r.total_dense_flops;
            const app::RooflineSplit sp = app::split_steps(r.steps);
            for (auto [acc, part] : {std::pair{&t.split.all, &sp.all}, std::pair{&t.split.dense, &sp.dense},
                                     std::pair{&t.split.cached, &sp.cached}}) {
                acc->flops += part->flops;
                acc->seconds += part->seconds;
                acc->steps += part->steps;
            }
            t.n += int(r.sequences.size());
        }
        return t;
    };
    (void)run_rep();  // warm-up: first-touch of weights and caches, thread pool start
    std::vector<double> tps, non_eos, denoise, gf, gf_dense, gf_cached, sgemm, pct, pct_dense, pct_cached;
    std::vector<double> blas, pct_blas_dense;
    Row                 row;
    row.cfg                           = cfg;
    double              recompute_sum = 0;
    double              sgemm_before  = probe.measure(kRepProbeSeconds).gflops_per_s;
    double              blas_before   = blas_probe ? blas_probe->measure(kRepProbeSeconds).gflops_per_s : NAN;
    app::CoreLatency    cores_before  = rep_core_latency(measure_cores);
    std::vector<double> cross_core;
    for (int r = 0; r < o.reps; ++r) {
        const RepTotals        t           = run_rep();
        const double           sgemm_after = probe.measure(kRepProbeSeconds).gflops_per_s;
        const double           sgemm_rep   = 0.5 * (sgemm_before + sgemm_after);
        const double           blas_after  = blas_probe ? blas_probe->measure(kRepProbeSeconds).gflops_per_s : NAN;
        const double           blas_rep    = 0.5 * (blas_before + blas_after);
        const app::CoreLatency cores_after = rep_core_latency(measure_cores);
        const double           cores_rep   = cores_before.measured && cores_after.measured
                                                 ? 0.5 * (cores_before.one_way_ns + cores_after.one_way_ns)
                                                 : NAN;
        sgemm_before = sgemm_after, blas_before = blas_after, cores_before = cores_after;
        if (!std::isnan(cores_rep)) cross_core.push_back(cores_rep);
        tps.push_back(t.denoise_s > 0 ? double(t.generated) / t.denoise_s : 0.0);
        non_eos.push_back(t.denoise_s > 0 ? double(t.non_eos) / t.denoise_s : 0.0);
        denoise.push_back(t.denoise_s);
        recompute_sum += t.n ? t.recompute_weighted / double(t.n) : 1.0;
        row.nfe         = t.nfe;
        row.cache_bytes = std::max(row.cache_bytes, t.cache_bytes);
        // Whole run: accounted FLOPs over the denoising time (the tokens/s clock); dense/cached: over their steps.
        gf.push_back(t.denoise_s > 0 ? t.flops / t.denoise_s * 1e-9 : 0.0);
        gf_dense.push_back(t.split.dense.gflops_per_s());
        gf_cached.push_back(t.split.cached.gflops_per_s());
        sgemm.push_back(sgemm_rep);
        pct.push_back(app::percent_of(gf.back(), sgemm_rep));
        pct_dense.push_back(app::percent_of(gf_dense.back(), sgemm_rep));
        pct_cached.push_back(app::percent_of(gf_cached.back(), sgemm_rep));
        if (blas_probe) {
            blas.push_back(blas_rep);
            pct_blas_dense.push_back(app::percent_of(gf_dense.back(), blas_rep));
        }
        row.samples.push_back(
            {tps.back(), gf.back(), gf_dense.back(), gf_cached.back(), sgemm_rep, blas_rep, cores_rep});
        row.flops_per_token = t.generated > 0 ? t.flops / double(t.generated) : 0.0;
        row.flops_vs_dense  = t.dense_flops > 0 ? t.flops / t.dense_flops : 1.0;
        row.dense_steps     = t.split.dense.steps;
        row.cached_steps    = t.split.cached.steps;
    }
    row.gflops        = median(gf);
    row.gflops_dense  = median(gf_dense);
    row.gflops_cached = median(gf_cached);
    row.sgemm         = median(sgemm);
    if (blas_probe) row.blas_sgemm = median(blas), row.pct_blas_dense = median(pct_blas_dense);
    if (!cross_core.empty()) row.cross_core_ns = median(cross_core);
    row.pct         = median(pct);
    row.pct_dense   = median(pct_dense);
    row.pct_cached  = median(pct_cached);
    row.tps_median  = median(tps);
    row.tps_sd      = sample_sd(tps);
    row.tps_min     = *std::min_element(tps.begin(), tps.end());
    row.tps_max     = *std::max_element(tps.begin(), tps.end());
    row.non_eos_tps = median(non_eos);
    row.denoise_s   = median(denoise);
    row.recompute   = recompute_sum / double(o.reps);
    return row;
}

std::vector<Config> expand_configs(const Model& model, const BenchOptions& o) {
    if (o.reps < 1) throw InputError("-r/--reps must be at least 1 (got " + std::to_string(o.reps) + ")");
    const int gen = o.fixed.params.gen_length;
    if (gen <= 0) throw InputError("-n must be positive (got " + std::to_string(gen) + ")");

    std::vector<Method> methods;
    bool                want_original = false;
    for (const auto& name : split_list("--methods", o.methods)) {
        const auto m = parse_method(name);
        if (!m)
            throw InputError("--methods: unknown method '" + name +
                             "' (expected original, dyllm, fast-prefix, fast-dual or dllm-cache)");
        if (*m == Method::Original) {
            want_original = true;
            continue;
        }
        if (std::find(methods.begin(), methods.end(), *m) == methods.end()) methods.push_back(*m);
    }
    std::vector<double> taus;
    if (!o.taus.empty())
        for (const auto& t : split_list("--tau", o.taus)) {
            const double v = parse_double_arg("--tau", t);
            // NaN would silently mean "family default" below; an explicit value must be a real threshold.
            if (!std::isfinite(v)) throw InputError("--tau must be a finite number (got " + t + ")");
            taus.push_back(v);
        }
    else
        taus.push_back(NAN);
    auto int_list = [](const std::string& what, const std::string& text, int dflt) {
        std::vector<int> v;
        if (text.empty()) return std::vector<int>{dflt};
        for (const auto& s : split_list(what, text)) {
            const int64_t x = parse_int_arg(what, s);
            if (x <= 0 || x > INT32_MAX) throw InputError(what + ": values must be positive (got " + s + ")");
            v.push_back(int(x));
        }
        return v;
    };
    const auto steps_list  = int_list("--steps", o.steps, gen);
    const auto blocks_list = int_list("--block-length", o.blocks, std::min(32, gen));
    const auto batch_list  = int_list("--batch", o.batches, 1);

    std::vector<Config> out;
    for (int steps : steps_list)
        for (int block : blocks_list)
            for (int batch : batch_list) {
                // The baseline of this group first (engine/README.md decision 6: original = every step dense).
                auto make = [&](Method m, double tau, bool print) {
                    DiffusionOptions d = o.fixed;
                    d.set(&DiffusionParams::steps, "steps", steps);
                    d.set(&DiffusionParams::block_length, "block_length", block);
                    d.method     = method_name(m);
                    d.params.tau = float(tau);  // NaN: the family default
                    Config c{m, NAN, gen, steps, block, batch, to_diffusion_params(d), print};
                    validate_params(c.params, model.config());
                    if (m == Method::DyLLM) c.tau = effective_tau(c.params, model.config().family);
                    return c;
                };
                out.push_back(make(Method::Original, NAN, want_original));
                for (Method m : methods) {
                    if (m == Method::DyLLM)
                        for (double t : taus) out.push_back(make(m, t, true));
                    else
                        out.push_back(make(m, NAN, true));
                }
            }
    return out;
}

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

// "a / b" of the dense and cached parts, "-" for a part the method never ran.
std::string pair_text(const char* f, bool has_a, double a, bool has_b, double b) {
    return (has_a ? fmt(f, a) : std::string("-")) + " / " + (has_b ? fmt(f, b) : std::string("-"));
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

// -o: a format name prints to stdout; a file name picks the format by its extension (the markdown table still goes to
// stdout, so a terminal run shows the result).
struct OutputTarget {
    std::string format;  // md | csv | json
    std::string file;    // "" = stdout only
};

OutputTarget parse_output(const std::string& o) {
    if (o == "md" || o == "csv" || o == "json") return {o, ""};
    const std::string ext = std::filesystem::path(o).extension().string();
    if (ext == ".md" || ext == ".csv" || ext == ".json") return {ext.substr(1), o};
    throw InputError("-o/--output must be md, csv, json or a file name ending in .md, .csv or .json (got '" + o + "')");
}

// ---- --task: the task-suite sweep ----

// Everything a --task sweep refuses, checked before the model loads. Returns the swept taus and methods.
struct TaskSweepArgs {
    std::vector<float>            taus;     // empty: the family default
    std::vector<app::SweepMethod> methods;  // the dyllm entries and any others (references added when not given)
};

TaskSweepArgs check_task_args(const BenchOptions& o) {
    if (o.limit != -1 && o.limit < 1)
        throw InputError("--limit must be at least 1 (got " + std::to_string(o.limit) + ")");
    if (o.shots_given && o.shots < 0) throw InputError("--shots must be >= 0 (got " + std::to_string(o.shots) + ")");
    if (!o.prompts.empty()) throw InputError("-p and --task exclude each other");
    if (o.no_chat)
        throw InputError("--no-chat: a --task sweep builds its prompts as `dyllm eval` does (chat template)");
    if (o.reps < 1) throw InputError("-r/--reps must be at least 1 (got " + std::to_string(o.reps) + ")");
    for (const auto& [flag, text] : {std::pair<const char*, std::string>{"--steps", o.steps},
                                     {"--block-length", o.blocks},
                                     {"--batch", o.batches}})
        if (text.find(',') != std::string::npos)
            throw InputError(std::string(flag) + " " + text +
                             ": a --task sweep takes one value (it sweeps --tau and "
                             "--methods; run one sweep per value)");
    TaskSweepArgs a;
    if (o.taus_given) a.taus = app::parse_sweep_taus("--tau", o.taus);
    if (o.methods_given)
        a.methods = app::parse_sweep_methods("--methods", o.methods);
    else
        a.methods = {{Method::DyLLM, ""}};
    return a;
}

// One value of --steps / --block-length / --batch, or its default.
int single_int(const char* flag, const std::string& text, int dflt) {
    if (text.empty()) return dflt;
    const int64_t v = parse_int_arg(flag, text);
    if (v <= 0 || v > INT32_MAX) throw InputError(std::string(flag) + " must be positive (got " + text + ")");
    return int(v);
}

// -r N: each run N times; accuracy and FLOPs over all of them, tokens/s the median (greedy decoding repeats itself,
// so only the time varies).
app::SuitePoint combine_reps(const std::vector<app::SuitePoint>& reps) {
    app::SuitePoint p = reps.front();
    if (reps.size() == 1) return p;
    std::vector<double> tps, den;
    p.items = p.correct = 0;
    double fpt = 0, fvd = 0;
    for (const auto& r : reps) {
        p.items += r.items;
        p.correct += r.correct;
        tps.push_back(r.tokens_per_s);
        den.push_back(r.denoise_s);
        fpt += r.flops_per_token;
        fvd += r.flops_vs_dense;
    }
    p.accuracy        = p.items ? double(p.correct) / p.items : 0.0;
    p.items           = reps.front().items;  // items per repetition, as the table says
    p.correct         = int(std::lround(p.accuracy * p.items));
    p.tokens_per_s    = median(tps);
    p.denoise_s       = median(den);
    p.flops_per_token = fpt / double(reps.size());
    p.flops_vs_dense  = fvd / double(reps.size());
    return p;
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

int run_task_sweep(const BenchOptions& o, const OutputTarget& target, std::ofstream& file) {
    const TaskSweepArgs    args  = check_task_args(o);
    std::unique_ptr<Model> model = load_model_for_cli(o.model, o.json || target.format == "json");
    if (!model->tokenizer())
        throw LoadError(model->dir().string() + ": no tokenizer.json (--task needs text prompts and answers)");
    const std::filesystem::path dir = find_tasks_dir(model->dir());
    if (dir.empty())
        throw LoadError("--task " + o.task + ": no task directory next to " + model->dir().string() +
                        " or under DYLLM_SOURCE_DIR/assets/tasks");
    const std::vector<TaskSuite> suites = load_tasks(dir, o.task);  // an unknown task names the known ones

    DiffusionOptions d   = o.fixed;
    const int        gen = d.params.gen_length;
    if (gen <= 0) throw InputError("-n must be positive (got " + std::to_string(gen) + ")");
    if (!o.steps.empty()) d.set(&DiffusionParams::steps, "steps", single_int("--steps", o.steps, gen));
    if (!o.blocks.empty())
        d.set(&DiffusionParams::block_length, "block_length", single_int("--block-length", o.blocks, 32));
    const DiffusionParams            base = to_diffusion_params(d);
    const std::vector<app::SuiteRun> runs =
        app::suite_runs(base, model->config().family, args.methods, args.taus, !o.methods_given);
    for (const auto& r : runs) validate_params(r.params, model->config());  // every run checked before the first
    app::SuiteOptions so;
    so.limit       = o.limit == -1 ? 0 : o.limit;  // 0: every item (eval_task)
    so.shots       = o.shots;
    so.batch       = o.batches_given ? single_int("--batch", o.batches, 16) : 16;  // `dyllm eval`'s batch by default
    const int reps = o.reps_given ? o.reps : 1;                                    // the items already average the time

    size_t n_items = 0;
    for (const auto& s : suites) n_items += so.limit > 0 ? std::min(s.items.size(), size_t(so.limit)) : s.items.size();
    std::fprintf(stderr, "bench: model %s (%s), backend %s, task %s (%zu items), %zu runs x %d rep%s, batch %d\n",
                 model->name().c_str(), family_name(model->config().family), model->backend().description().c_str(),
                 o.task.c_str(), n_items, runs.size(), reps, reps == 1 ? "" : "s", so.batch);
    {  // warm-up: first touch of the weights and the thread pool start would otherwise land in the first run's time
        app::SuiteOptions w = so;
        w.limit             = 1;
        (void)app::run_suite_point(*model, {suites.front()}, runs.front(), w);
    }
    std::vector<app::SuitePoint> pts;
    for (size_t i = 0; i < runs.size(); ++i) {
        std::vector<app::SuitePoint> rep;
        for (int r = 0; r < reps; ++r) rep.push_back(app::run_suite_point(*model, suites, runs[i], so));
        pts.push_back(combine_reps(rep));
        const app::SuitePoint& p = pts.back();
        std::fprintf(stderr, "bench: %zu/%zu %s: accuracy %.3f (%d/%d), %.1f tok/s, FLOPs vs dense %.3f\n", i + 1,
                     runs.size(), runs[i].label().c_str(), p.accuracy, p.correct, p.items, p.tokens_per_s,
                     p.flops_vs_dense);
    }
    app::mark_pareto(pts);

    const app::SuiteContext ctx{o.task, model->name(), model->backend().name(), o.shots, so.batch};
    auto                    format = [&](const std::string& f) {
        if (f == "json") {
            nlohmann::ordered_json arr = nlohmann::ordered_json::array();
            for (const auto& p : pts) arr.push_back(point_json(p, ctx));
            return arr.dump(2) + "\n";
        }
        if (f == "csv") {
            std::ostringstream os;
            app::write_csv(os, app::suite_csv(pts, ctx));
            return os.str();
        }
        return task_table(pts);
    };
    const std::string shown = o.json ? "json" : target.file.empty() ? target.format : "md";
    if (!target.file.empty()) {
        file << format(target.format);
        file.close();
        if (!file) throw InputError("-o " + target.file + ": write failed");
        std::fprintf(stderr, "bench: wrote %s\n", target.file.c_str());
    }
    std::fputs(format(shown).c_str(), stdout);
    std::fflush(stdout);
    return 0;
}

int run_bench(const BenchOptions& o) {
    const OutputTarget target = parse_output(o.output);
    if (o.task.empty() && o.limit != -1) throw InputError("--limit needs --task");
    if (o.task.empty() && o.shots_given) throw InputError("--shots needs --task");
    std::ofstream file;
    if (!target.file.empty()) {  // opened before the runs, so a bad path fails in a second, not after the sweep
        file.open(target.file, std::ios::binary | std::ios::trunc);
        if (!file)
            throw InputError("-o " + target.file + ": cannot open for writing (" +
                             std::error_code(errno, std::generic_category()).message() + ")");
    }
    if (!o.task.empty()) return run_task_sweep(o, target, file);
    std::unique_ptr<Model>    model = load_model_for_cli(o.model, o.json || target.format == "json");
    const std::vector<Config> cfgs  = expand_configs(*model, o);  // validates every configuration before any run

    std::fprintf(stderr, "bench: model %s (%s), backend %s, %zu configurations, %d reps + 1 warm-up each\n",
                 model->name().c_str(), family_name(model->config().family), model->backend().description().c_str(),
                 cfgs.size(), o.reps);
    // The peak the GFLOP/s columns are a share of: the dense step's GEMMs (rows = prompt + response of one sequence)
    // through the same backend and threads, 0.2 s per shape (a few hundred calls on tiny models, a handful on 8B).
    const int64_t rows =
        int64_t(bench_prompts(*model, o, 1, cfgs.front().gen_length).front().size()) + cfgs.front().gen_length;
    const auto            shapes = app::model_gemm_shapes(model->config(), rows);
    app::GemmProbe        gemm_probe(model->backend(), shapes);
    const app::SgemmProbe probe = gemm_probe.measure(0.2);
    std::string           detail;
    for (const auto& g : probe.shapes)
        detail += (detail.empty() ? "" : ", ") + g.shape.name + " " + std::to_string(g.shape.m) + "x" +
                  std::to_string(g.shape.n) + "x" + std::to_string(g.shape.k) + " " + fmt("%.1f", g.gflops_per_s());
    std::fprintf(stderr,
                 "bench: sgemm rate %.1f GFLOP/s (fp32, the backend's matmul on prepared weights as the engine runs "
                 "it; m x n x k: %s; measured again around every repetition)\n",
                 probe.gflops_per_s, detail.c_str());
    // On the CPU, the same shapes through the system BLAS's sgemm with plain weights: the rate a program that calls the
    // BLAS gets (the usual reference for a dense step), beside the packed rate the % columns are a share of.
    const bool                      cpu = model->backend().device() == Device::Cpu;
    std::unique_ptr<app::GemmProbe> blas_probe;
    if (cpu) {
        blas_probe = std::make_unique<app::GemmProbe>(model->backend(), shapes, app::ProbeWeights::Plain);
        std::fprintf(stderr,
                     "bench: system BLAS sgemm on the same shapes, weights not packed: %.1f GFLOP/s (JSON "
                     "blas_sgemm_gflops, pct_blas_sgemm_dense; measured again around every repetition)\n",
                     blas_probe->measure(kRepProbeSeconds).gflops_per_s);
    }
    // With several CPU threads, the same probe on one: whether the threads really have cores of their own right now.
    app::ThreadScaling scaling{model->backend().host_threads(), 0, probe.gflops_per_s};
    const bool         measure_cores = cpu && scaling.threads > 1;
    if (measure_cores) {
        const auto one            = make_backend(BackendKind::Cpu, 1);
        scaling.one_thread_gflops = app::measure_sgemm(*one, shapes, 0.2).gflops_per_s;
        std::fprintf(stderr, "bench: the same probe on 1 thread: %.1f GFLOP/s (%d threads: %.2fx)\n",
                     scaling.one_thread_gflops, scaling.threads, scaling.speedup());
        if (scaling.shared_cores())
            std::fprintf(stderr,
                         "bench: warning: %d threads run the probe only %.2fx as fast as one: they share cores "
                         "(hyperthreads of one core, or a busy host); the %d-thread figures below are not those of "
                         "%d free cores\n",
                         scaling.threads, scaling.speedup(), scaling.threads, scaling.threads);
        const app::CoreLatency cores = app::measure_core_latency();
        if (!cores.measured)
            std::fprintf(stderr, "bench: cross-core hand-off: not measured (two threads never ran at the same time)\n");
        else
            std::fprintf(stderr,
                         "bench: cross-core hand-off %.0f ns one way (two threads passing a cache line; measured again "
                         "around every repetition)%s\n",
                         cores.one_way_ns,
                         cores.far() ? ": the cores sit far apart right now, and every line a split op moves between "
                                       "them costs that (a VM's vCPUs can move between placements within minutes)"
                                     : "");
    }

    const bool            tty = is_terminal(stderr);
    std::vector<Row>      rows_out;
    std::optional<double> baseline;
    for (size_t i = 0; i < cfgs.size(); ++i) {
        const Config& c = cfgs[i];
        if (tty)
            std::fprintf(stderr, "\rbench: %zu/%zu %-12s steps %d block %d batch %d   ", i + 1, cfgs.size(),
                         method_name(c.method), c.steps, c.block_length, c.batch);
        Row row = run_config(*model, o, c, gemm_probe, blas_probe.get(), measure_cores);
        if (c.method == Method::Original)
            baseline = row.tps_median > 0 ? std::optional<double>(row.tps_median) : std::nullopt;
        if (baseline) row.speedup = row.tps_median / *baseline;
        if (c.print) rows_out.push_back(row);
    }
    if (tty) std::fprintf(stderr, "\n");

    auto format = [&](const std::string& f) {
        if (f == "json") {
            nlohmann::ordered_json arr = nlohmann::ordered_json::array();
            for (const Row& r : rows_out) arr.push_back(row_json(r, *model, scaling));
            return arr.dump(2) + "\n";
        }
        if (f == "csv") return format_csv(rows_out, *model, scaling);
        return format_md(rows_out, o.reps);
    };
    if (target.file.empty()) {
        std::fputs(format(o.json ? "json" : target.format).c_str(), stdout);
    } else {
        file << format(target.format);
        file.close();
        if (!file) throw InputError("-o " + target.file + ": write failed");
        std::fputs(format(o.json ? "json" : "md").c_str(), stdout);
        std::fprintf(stderr, "bench: wrote %s\n", target.file.c_str());
    }
    std::fflush(stdout);
    return 0;
}

const CommandRegistrar kRegistrar{Command{
    "bench", [](CLI::App& app) -> std::function<int()> {
        app.description("llama-bench style throughput sweep: methods x tau x steps x block length x batch");
        auto o = std::make_shared<BenchOptions>();
        add_model_options(app, o->model);
        app.add_option("--type", o->model.type,
                       "re-store the checkpoint's weights in memory at load: f32 | f16 | bf16 | q8_0 | q4_0 | q4_k_m "
                       "(Q4_K with Q6_K for the LM head and some wv / w_down, as llama.cpp's Q4_K_M); not given: as "
                       "stored");
        add_diffusion_options(app, o->fixed, DiffusionFlags::FixedOnly);
        auto* methods = app.add_option("--methods", o->methods,
                                       "comma-separated methods; original always runs first per group (for speed-ups) "
                                       "but is printed only when listed. With --task: the methods of the sweep, dyllm "
                                       "with an optional stable-row update (dyllm:incremental, dyllm:columns, "
                                       "dyllm:exact); not given: original and fast-dual as references, then dyllm")
                            ->capture_default_str();
        auto* taus = app.add_option("--tau", o->taus,
                                    "comma-separated tau values, a sweep: one dyllm row per tau (default: family "
                                    "default; with --task each in (0, 1))");
        app.add_option("--steps", o->steps, "comma-separated step counts (default: gen length; one with --task)");
        app.add_option("--block-length", o->blocks,
                       "comma-separated block lengths (default: min(32, gen); one with --task)");
        auto* batches = app.add_option("--batch", o->batches,
                                       "comma-separated batch sizes (copies of the prompt); with --task one value, "
                                       "items per lock-step session (default 16, as dyllm eval)")
                            ->capture_default_str();
        auto* reps = app.add_option("-r,--reps", o->reps,
                                    "timed repetitions per configuration (plus one warm-up); with --task default 1 "
                                    "(tokens/s: the median)")
                         ->capture_default_str();
        app.add_option("-o,--output", o->output,
                       "md | csv | json (stdout), or FILE.md / FILE.csv / FILE.json (the table in that format; the "
                       "markdown table still goes to stdout)")
            ->capture_default_str();
        app.add_flag("--json", o->json, "print JSON on stdout instead of the markdown table");
        app.add_option("--task", o->task,
                       "sweep tau and methods on a task suite (add, sort, word, rev or all; assets/tasks), scored as "
                       "dyllm eval: accuracy, tokens/s, FLOPs per run, the Pareto front");
        app.add_option("--limit", o->limit, "with --task: items per task (default: every item)");
        auto* shots = app.add_option("--shots", o->shots,
                                     "with --task: solved examples per prompt, from the preceding items (default: "
                                     "each item's own prompt)");
        app.add_option("-p,--prompt", o->prompts, "prompt text instead of the built-in one (repeatable)")
            ->allow_extra_args(false);
        app.add_flag("--no-chat", o->no_chat, "do not apply the chat template");
        return [o, methods, taus, batches, reps, shots] {  // after parsing: which list flags the user gave
            o->methods_given = methods->count() > 0;
            o->taus_given    = taus->count() > 0;
            o->batches_given = batches->count() > 0;
            o->reps_given    = reps->count() > 0;
            o->shots_given   = shots->count() > 0;
            return run_bench(*o);
        };
    }}};

}  // namespace
}  // namespace dyllm::cli
