// `dyllm bench`: llama-bench-style sweep over methods x tau x steps x block length x batch. Each configuration runs one
// warm-up and REPS timed generations on the same prompts; rows report the median tokens/s and its spread, the
// speed-up against `original` measured in the same run with the same other knobs, forward passes, the share of rows
// recomputed, and roofline figures: FLOPs per token, FLOPs vs a dense forward,
// achieved GFLOP/s (whole run, dense steps, cached steps) and their share of the machine's sgemm rate, measured on the
// model's GEMM shapes around every repetition (bench_probes.cpp, bench_run.cpp). Output: markdown table, CSV or JSON,
// to stdout or to a file (-o FILE.csv; bench_format.cpp). With --task: a sweep of tau and methods on a task suite
// (bench_task.cpp). This file: the options, the configurations they expand to, and the run.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/cli/bench.h"
#include "app/cli/command.h"
#include "engine/errors.h"
#include "engine/io/atomic_file.h"

namespace dyllm::cli {
namespace {

using namespace bench;

std::vector<Config> expand_configs(const Model& model, const BenchOptions& o) {
    if (o.reps < 1) throw InputError("-r/--reps must be at least 1 (got " + std::to_string(o.reps) + ")");
    const int gen = o.fixed.params.gen_length;
    if (gen <= 0) throw InputError("-n must be positive (got " + std::to_string(gen) + ")");

    std::vector<Method> methods;
    bool                want_original = false;
    for (const auto& name : split_list("--methods", o.methods)) {
        std::vector<Method> named;
        if (name == "all") {
            named.assign(all_methods().begin(), all_methods().end());
        } else if (const auto m = parse_method(name)) {
            named.push_back(*m);
        } else {
            throw InputError("--methods: unknown method '" + name + "' (expected all or " + method_names() + ")");
        }
        for (Method m : named) {
            if (m == Method::Original)
                want_original = true;
            else if (std::find(methods.begin(), methods.end(), m) == methods.end())
                methods.push_back(m);
        }
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

OutputTarget parse_output(const std::string& o) {
    if (o == "-") return {"md", ""};  // stdout, as a file-writing command spells it
    if (o == "md" || o == "csv" || o == "json") return {o, ""};
    const std::string ext = std::filesystem::path(o).extension().string();
    if (ext == ".md" || ext == ".csv" || ext == ".json") return {ext.substr(1), o};
    throw InputError("-o/--output must be md, csv, json or a file name ending in .md, .csv or .json (got '" + o + "')");
}

int run_bench(const BenchOptions& o) {
    const OutputTarget target = parse_output(o.output);
    if (o.task.empty() && o.limit != -1) throw InputError("--limit needs --task");
    if (o.task.empty() && o.shots_given) throw InputError("--shots needs --task");
    // Opened before the runs, so a bad path fails in a second, not after the sweep; written under a temporary name and
    // renamed into place only when complete, so a failed or interrupted sweep leaves an existing file as it was.
    std::unique_ptr<AtomicFile> file = open_output_file(target);
    if (!o.task.empty()) return run_task_sweep(o, target, file.get());
    std::unique_ptr<Model>    model = load_model_for_cli(o.model, o.json || target.format == "json");
    const std::vector<Config> cfgs  = expand_configs(*model, o);  // validates every configuration before any run

    std::fprintf(stderr, "bench: model %s (%s), backend %s, %zu configurations, %d reps + 1 warm-up each\n",
                 model->name().c_str(), family_name(model->config().family), model->backend().description().c_str(),
                 cfgs.size(), o.reps);
    BenchProbes probes = measure_probes(
        *model, int64_t(bench_prompts(*model, o, 1, cfgs.front().gen_length).front().size()) + cfgs.front().gen_length);
    const app::ThreadScaling& scaling = probes.scaling;

    const bool            tty = is_terminal(stderr);
    std::vector<Row>      rows_out;
    std::optional<double> baseline;
    for (size_t i = 0; i < cfgs.size(); ++i) {
        const Config& c = cfgs[i];
        if (tty)
            std::fprintf(stderr, "\rbench: %zu/%zu %-12s steps %d block %d batch %d   ", i + 1, cfgs.size(),
                         method_name(c.method), c.steps, c.block_length, c.batch);
        Row row = run_config(*model, o, c, probes);
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
        commit_output_file(*file, format(target.format));
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
                                       "comma-separated methods, or all (every method); original always runs first per "
                                       "group (for speed-ups) but is printed only when listed. With --task: the "
                                       "methods of the sweep, dyllm "
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
        return [o, methods, taus, batches, reps, shots, &app] {  // after parsing: which list flags the user gave
            o->methods_given = methods->count() > 0;
            o->taus_given    = taus->count() > 0;
            o->batches_given = batches->count() > 0;
            o->reps_given    = reps->count() > 0;
            o->shots_given   = shots->count() > 0;
            // A list flag given empty (--tau "") would read as "not given": refused through the one list parser.
            for (auto [flag, text] : {std::pair<const char*, const std::string*>{"--methods", &o->methods},
                                      {"--tau", &o->taus},
                                      {"--steps", &o->steps},
                                      {"--block-length", &o->blocks},
                                      {"--batch", &o->batches}})
                if (app.get_option(flag)->count() > 0 && text->empty()) (void)split_list(flag, *text);
            return run_bench(*o);
        };
    }}};

}  // namespace
}  // namespace dyllm::cli
