// `dyllm trace`: runs one generation with a RecordingSink (plus CUPTI kernel records and NVTX ranges on CUDA) and
// writes a Chrome trace (Perfetto, chrome://tracing) and optionally the per-step JSONL; prints a one-line summary.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "app/cli/cli_common.h"
#include "app/cli/command.h"
#include "app/model/op_annotations.h"
#include "engine/engine.h"
#include "engine/errors.h"
#include "engine/io/atomic_file.h"
#include "instrumentation/chrome_trace.h"
#include "instrumentation/gpu_capture.h"
#include "instrumentation/jsonl.h"
#include "instrumentation/recorder.h"

namespace dyllm::cli {
namespace {

struct TraceOptions {
    ModelOptions     model;
    DiffusionOptions diffusion;
    PromptOptions    prompt;
    std::string      output;
    std::string      jsonl;
    bool             no_cosines = false;
    bool             no_cupti   = false;
    int              warmup     = 1;
};

// An output file opened before the (possibly long) run, so a bad path fails at once with the path and the reason;
// "-" is stdout. The file is written under a temporary name and renamed into place only once complete.
struct Output {
    Output(const std::string& path, const char* flag) : flag_(flag) {
        if (path == "-") return;
        try {
            file_ = std::make_unique<AtomicFile>(path);
        } catch (const LoadError& e) {
            throw InputError(std::string(flag) + " " + e.what());
        }
    }
    std::ostream& stream() { return file_ ? static_cast<std::ostream&>(file_->stream()) : std::cout; }

    // Renames the file into place (or flushes stdout), checked.
    void commit() {
        if (!file_) {
            std::cout.flush();
            if (!std::cout) throw InputError(std::string(flag_) + " -: writing stdout failed");
            return;
        }
        try {
            file_->commit();
        } catch (const LoadError& e) {
            throw InputError(std::string(flag_) + " " + e.what());
        }
    }

private:
    const char*                 flag_;
    std::unique_ptr<AtomicFile> file_;
};

int run_trace(const TraceOptions& o) {
    // Model-independent checks first (bad flags and unwritable outputs before a possibly slow model load).
    const DiffusionParams params = to_diffusion_params(o.diffusion);
    (void)read_prompt_texts(o.prompt);
    if (o.warmup < 0) throw InputError("--warmup must be 0 or more (got " + std::to_string(o.warmup) + ")");
    if (o.output == "-" && o.jsonl == "-") throw InputError("-o - and --jsonl -: only one of them can be stdout");
    Output                  trace_out(o.output, "-o");
    std::unique_ptr<Output> jsonl_out;
    if (!o.jsonl.empty()) jsonl_out = std::make_unique<Output>(o.jsonl, "--jsonl");

    std::unique_ptr<Model>   model   = load_model_for_cli(o.model);
    std::vector<PromptInput> prompts = read_prompts(o.prompt, *model);
    validate_params(params, model->config());
    check_prompt_lengths(prompts, params, model->config());
    std::vector<std::vector<int32_t>> ids;
    for (const auto& p : prompts) ids.push_back(p.ids);
    // Untraced runs of the same generation first: the first run of a shape builds the backend's GEMM primitives (a
    // fraction of a millisecond per row count on the CPU), touches its buffers and finds every weight in memory, not
    // in cache, none of which the runs a user times afterwards pay.
    for (int i = 0; i < o.warmup; ++i) {
        Session warm(*model, nullptr);
        warm.start(ids, params);
        warm.run();
    }

    RecordingSink recorder;
    recorder.set_wants_cosines(!o.no_cosines);
    std::vector<EventSink*> sinks{&recorder};

    // GPU side: CUPTI activity records correlated to engine ops, NVTX ranges for Nsight Systems (the studio's worker
    // starts the same GpuCapture).
    GpuCapture gpu;
    gpu.start(model->backend().device() == Device::Cuda, !o.no_cupti);
    if (gpu.cupti_status().rfind("CUPTI unavailable", 0) == 0)
        std::fprintf(stderr, "trace: %s; writing engine ops only\n", gpu.cupti_status().c_str());
    for (EventSink* s : gpu.sinks()) sinks.push_back(s);
    TeeSink tee(sinks);

    Session session(*model, &tee);
    session.set_label(std::string("trace ") + method_name(params.method));  // the exports' run label
    session.start(ids, params);
    session.run();
    gpu.stop();
    const std::vector<KernelRecord> kernels = gpu.take_completed();
    const GenerationResult          result  = session.result();

    // The session's RunBegin carries the engine's parameters; add what only the trace command knows.
    std::vector<EventRecord> events = recorder.snapshot();
    for (auto& e : events)
        if (auto* rb = std::get_if<RunBegin>(&e)) {
            gpu.add_env(rb->env, kernels.size());
            rb->env.emplace_back("threads", std::to_string(o.model.threads));
            rb->env.emplace_back("warmup_runs", std::to_string(o.warmup));
            rb->env.emplace_back("chat", o.prompt.no_chat ? "false" : "true");
            rb->env.emplace_back("compiler", __VERSION__);
            for (size_t i = 0; i < prompts.size(); ++i)
                rb->env.emplace_back("prompt_" + std::to_string(i), prompts[i].text);
            break;
        }

    // The ops' model names (gate, up, down...) and preempted flags, as the studio's exports carry them.
    app::RunHistory history;
    for (const auto& e : events) history.apply(e);
    const ExportOptions names = app::export_options(history, false);
    write_chrome_trace(trace_out.stream(), events, kernels, names);
    if (jsonl_out) write_jsonl(jsonl_out->stream(), events, names);
    trace_out.commit();
    if (jsonl_out) jsonl_out->commit();

    size_t n_ops = 0, n_layers = 0;
    for (const auto& e : events) {
        n_ops += record_kind(e) == RecordKind::OpTiming;
        n_layers += record_kind(e) == RecordKind::LayerSaliency;
    }
    // The summary goes to stderr when the trace itself is on stdout.
    std::fprintf(o.output == "-" || o.jsonl == "-" ? stderr : stdout,
                 "trace: %s %s, %zu steps, %zu events (%zu ops, %zu layer saliency), %zu GPU records, "
                 "%.2f tokens/s -> %s%s%s\n",
                 model->name().c_str(), method_name(params.method), result.steps.size(), events.size(), n_ops, n_layers,
                 kernels.size(), result.tokens_per_s, o.output.c_str(), o.jsonl.empty() ? "" : ", ", o.jsonl.c_str());
    return 0;
}

const CommandRegistrar kRegistrar{Command{
    "trace", [](CLI::App& app) -> std::function<int()> {
        app.description(
            "run one generation and export its events: Chrome trace JSON (Perfetto, chrome://tracing) "
            "and per-step JSONL");
        auto o = std::make_shared<TraceOptions>();
        add_model_options(app, o->model);
        add_prompt_options(app, o->prompt);
        add_diffusion_options(app, o->diffusion);
        app.add_option("-o,--output", o->output, "Chrome trace JSON file to write (- for stdout)")->required();
        app.add_option("--jsonl", o->jsonl,
                       "also write one JSON record per denoising step to this file (- for stdout)");
        app.add_flag("--no-cosines", o->no_cosines, "leave the per-row cosines out (histograms are always kept)");
        app.add_flag("--no-cupti", o->no_cupti, "on CUDA, do not collect CUPTI kernel records");
        app.add_option("--warmup", o->warmup,
                       "untraced runs of the same generation before the traced one (0: trace the first run, with its "
                       "one-time costs)")
            ->capture_default_str();
        return [o] { return run_trace(*o); };
    }}};

}  // namespace
}  // namespace dyllm::cli
