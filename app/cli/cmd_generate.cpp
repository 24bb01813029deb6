// `dyllm generate`: one lock-step batch of prompts through a Session, with a progress line on a terminal, the texts
// on stdout, and a llama.cpp-style perf summary on stderr (or one JSON object on stdout with --json).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "app/cli/cli_common.h"
#include "app/cli/command.h"
#include "app/cli/progress.h"
#include "engine/engine.h"
#include "engine/errors.h"
#include "instrumentation/drift_tally.h"

namespace dyllm::cli {
namespace {

struct GenerateOptions {
    ModelOptions     model;
    DiffusionOptions diffusion;
    PromptOptions    prompt;
    bool             json = false;
};

// Steps the progress bar counts to. Confidence-threshold decoding ignores the step budget (engine/README.md §a.9 step
// 5) but takes at least one token per step, so gen_length bounds it.
int expected_steps(const DiffusionParams& p) {
    return std::isnan(p.conf_threshold) ? p.steps : p.gen_length;
}

void print_summary(const Model& model, const DiffusionParams& p, const GenerationResult& r) {
    const double denoise_ms  = r.denoise_seconds * 1e3;
    const size_t n_steps     = r.steps.size();
    const double tps         = r.denoise_seconds > 0 ? double(r.generated_tokens) / r.denoise_seconds : 0.0;
    const double non_eos_tps = r.denoise_seconds > 0 ? double(r.non_eos_tokens) / r.denoise_seconds : 0.0;
    std::fprintf(stderr, "\n");
    std::fprintf(stderr, "model:          %s (%s, %s backend)\n", model.name().c_str(),
                 family_name(model.config().family), model.backend().name());
    std::fprintf(stderr, "method:         %s", method_name(p.method));
    if (p.method == Method::DyLLM) std::fprintf(stderr, " (tau %.4g)", effective_tau(p, model.config().family));
    std::fprintf(stderr, "\n");
    std::fprintf(stderr, "load time     = %10.2f ms\n", model.load_seconds() * 1e3);
    std::fprintf(stderr, "denoise time  = %10.2f ms / %zu steps (%8.2f ms per step, %8.2f steps/s)\n", denoise_ms,
                 n_steps, n_steps ? denoise_ms / double(n_steps) : 0.0,
                 r.denoise_seconds > 0 ? double(n_steps) / r.denoise_seconds : 0.0);
    std::fprintf(stderr, "forward passes= %10d\n", r.forward_passes);
    std::fprintf(stderr,
                 "tokens/s      = %10.2f generated (%lld tokens in %zu sequences), %.2f non-EOS (%lld tokens)\n", tps,
                 static_cast<long long>(r.generated_tokens), r.sequences.size(), non_eos_tps,
                 static_cast<long long>(r.non_eos_tokens));
    if (p.method != Method::Original) {
        std::fprintf(stderr, "recompute     = %10.3f (mean share of rows x layers through the FFN vs dense)\n",
                     r.recompute_fraction);
        std::fprintf(stderr, "cache         = %10.2f MB\n", r.cache_bytes / (1024.0 * 1024.0));
    }
    if (r.total_dense_flops > 0)
        std::fprintf(stderr, "flops         = %10.3g (%.3f of dense)\n", r.total_flops,
                     r.total_flops / r.total_dense_flops);
}

// Per layer: the DriftTally's sums (--measure-drift).
nlohmann::ordered_json drift_json(const DriftTally& t) {
    nlohmann::ordered_json a = nlohmann::ordered_json::array();
    for (const LayerDriftTally& l : t.layers())
        a.push_back({{"approx_rows", l.approx_rows},
                     {"below_tau", l.below_tau},
                     {"stable_below_tau", l.stable_below},
                     {"min_cos", l.min},
                     {"mean_cos", l.approx_rows ? l.sum / double(l.approx_rows) : 1.0}});
    return a;
}

nlohmann::ordered_json result_to_json(const Model& model, const DiffusionParams& p,
                                      const std::vector<PromptInput>& prompts, const GenerationResult& r, bool chat) {
    nlohmann::ordered_json j;
    j["model"]                  = model.name();
    j["model_dir"]              = model.dir().string();  // where a built-in name resolved to (install checks read it)
    j["family"]                 = family_name(model.config().family);
    j["backend"]                = model.backend().name();
    j["kernels"]                = model.backend().description();  // goes with every figure of the run
    j["method"]                 = method_name(p.method);
    j["params"]                 = params_to_json(p, model.config().family);
    j["params"]["chat"]         = chat;
    j["load_s"]                 = model.load_seconds();
    j["denoise_s"]              = r.denoise_seconds;
    j["tokens_per_s"]           = r.denoise_seconds > 0 ? double(r.generated_tokens) / r.denoise_seconds : 0.0;
    j["non_eos_tokens_per_s"]   = r.denoise_seconds > 0 ? double(r.non_eos_tokens) / r.denoise_seconds : 0.0;
    j["forward_passes"]         = r.forward_passes;
    j["generated_tokens"]       = r.generated_tokens;
    j["non_eos_tokens"]         = r.non_eos_tokens;
    nlohmann::ordered_json seqs = nlohmann::ordered_json::array();
    for (size_t i = 0; i < r.sequences.size(); ++i) {
        const SequenceResult&  s = r.sequences[i];
        nlohmann::ordered_json js;
        js["prompt"]          = i < prompts.size() ? prompts[i].text : std::string();
        js["prompt_tokens"]   = s.prompt_ids.size();
        js["text"]            = s.text;
        js["token_ids"]       = s.token_ids;
        js["unmask_step"]     = s.unmask_step;
        js["steps_run"]       = s.steps_run;
        js["finished_by_eos"] = s.finished_by_eos;
        js["masks_left"]      = s.masks_left;
        seqs.push_back(std::move(js));
    }
    j["sequences"]  = std::move(seqs);
    j["accounting"] = accounting_to_json(r);
    return j;
}

int run_generate(const GenerateOptions& o) {
    // Model-independent checks first, so a bad flag is reported before a (possibly slow) model load.
    const DiffusionParams params = to_diffusion_params(o.diffusion);
    (void)read_prompt_texts(o.prompt);

    std::unique_ptr<Model>   model   = load_model_for_cli(o.model);
    std::vector<PromptInput> prompts = read_prompts(o.prompt, *model);
    validate_params(params, model->config());
    check_prompt_lengths(prompts, params, model->config());

    std::vector<std::vector<int32_t>> ids;
    ids.reserve(prompts.size());
    for (const auto& p : prompts) ids.push_back(p.ids);

    DriftTally drift;  // --measure-drift: the engine reports drift through a sink; this one sums it per layer
    Session    session(*model, params.measure_drift ? &drift : nullptr);
    session.start(ids, params);
    {
        ProgressLine progress(stderr, !o.json && is_terminal(stderr));
        const int    n = expected_steps(params);
        progress.update(0, n);
        while (session.step()) progress.update(session.current_step(), n);
        progress.update(session.current_step(), std::max(n, session.current_step()));
    }
    const GenerationResult result = session.result();

    if (o.json) {
        nlohmann::ordered_json j = result_to_json(*model, params, prompts, result, !o.prompt.no_chat);
        if (params.measure_drift) j["drift"] = drift_json(drift);
        const std::string out = j.dump();
        std::fprintf(stdout, "%s\n", out.c_str());
        std::fflush(stdout);
    } else {
        for (size_t i = 0; i < result.sequences.size(); ++i) {
            if (result.sequences.size() > 1) std::fprintf(stdout, "--- sequence %zu ---\n", i);
            std::fprintf(stdout, "%s\n", result.sequences[i].text.c_str());
        }
        std::fflush(stdout);
        print_summary(*model, params, result);
        if (params.measure_drift)
            std::fprintf(stderr, "\ndrift: approx-vs-exact context cosine of the approximated rows (tau %.4g)\n%s",
                         effective_tau(params, model->config().family), drift.table().c_str());
    }
    // A run that ends with masked positions and no end of text did not finish decoding: say so, exit non-zero.
    for (size_t i = 0; i < result.sequences.size(); ++i) {
        const SequenceResult& s = result.sequences[i];
        if (s.masks_left > 0 && !s.finished_by_eos) {
            std::fprintf(stderr, "error: sequence %zu ended after %d steps with %d masked positions left\n", i,
                         s.steps_run, s.masks_left);
            return 1;
        }
    }
    return 0;
}

const CommandRegistrar kRegistrar{Command{
    "generate", [](CLI::App& app) -> std::function<int()> {
        app.description("generate a response for one prompt or a lock-step batch of prompts");
        auto o = std::make_shared<GenerateOptions>();
        add_model_options(app, o->model);
        add_prompt_options(app, o->prompt);
        add_diffusion_options(app, o->diffusion);
        app.add_flag("--json", o->json, "print one JSON object (texts, timings, per-step accounting) on stdout");
        return [o] { return run_generate(*o); };
    }}};

}  // namespace
}  // namespace dyllm::cli
