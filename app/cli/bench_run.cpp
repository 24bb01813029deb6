// `dyllm bench`: one configuration's runs: the prompts (the built-in few-shot prompt or -p), one warm-up and REPS timed
// repetitions, each between two measurements of the sgemm rate, and the row of medians and spreads they give.
#include <algorithm>
#include <cmath>

#include "app/cli/bench.h"
#include "app/model/core_latency.h"
#include "app/model/roofline.h"
#include "engine/errors.h"

namespace dyllm::cli::bench {
namespace {

// The prompt used without --task: a few-shot arithmetic context in the shape of the GSM8K prompts the paper benchmarks
// (engine/README.md §g: "Question: ...\nAnswer:" few-shot examples), so that the prompt is longer than the response as
// in the paper's setting.
constexpr const char* kDefaultPrompt =
    "Question: Tom has 3 apples and buys 5 more. How many apples does he have?\nAnswer: 3 + 5 = 8. #### 8\n\n"
    "Question: A box holds 12 pens. Sara uses 4 of them. How many pens are left?\nAnswer: 12 - 4 = 8. #### 8\n\n"
    "Question: Each of 6 bags has 7 marbles. How many marbles are there in all?\nAnswer: 6 * 7 = 42. #### 42\n\n"
    "Question: Ben reads 9 pages a day for 4 days. How many pages does he read?\nAnswer:";

double sample_sd(const std::vector<double>& v) {
    if (v.size() < 2) return 0;
    double mean = 0;
    for (double x : v) mean += x;
    mean /= double(v.size());
    double ss = 0;
    for (double x : v) ss += (x - mean) * (x - mean);
    return std::sqrt(ss / double(v.size() - 1));
}

// Totals of one repetition: every chunk of `batch` prompts run as one lock-step session.
struct RepTotals {
    int64_t            generated = 0, non_eos = 0;
    double             denoise_s = 0, recompute_weighted = 0, cache_bytes = 0;
    double             flops = 0, dense_flops = 0;
    app::RooflineSplit split;
    int                nfe = 0, n = 0;
};

// Like the sgemm rate, the cross-core hand-off time is measured around every repetition on a multi-thread CPU run:
// a VM's vCPUs move between near and far placements within minutes. 4 batches of 2000 round trips (the first
// untimed): 0.6-2.8 ms on a 2-core VM.
app::CoreLatency rep_core_latency(bool measure) {
    return measure ? app::measure_core_latency(2000, 3, 50.0) : app::CoreLatency{};
}

}  // namespace

double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
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

Row run_config(const Model& model, const BenchOptions& o, const Config& cfg, BenchProbes& probes) {
    app::GemmProbe&                         probe         = *probes.gemm;
    app::GemmProbe*                         blas_probe    = probes.blas.get();  // null: none, a GPU run
    const bool                              measure_cores = probes.measure_cores;
    const std::vector<std::vector<int32_t>> prompts       = bench_prompts(model, o, cfg.batch, cfg.gen_length);
    auto                                    run_rep       = [&] {
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

}  // namespace dyllm::cli::bench
