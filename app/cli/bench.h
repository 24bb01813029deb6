// `dyllm bench`'s shared pieces: the options, the swept configurations and their result rows, and the functions the
// command's files share (bench_run.cpp: one configuration's repetitions; bench_probes.cpp: the rates the roofline
// columns are a share of; bench_format.cpp: markdown, CSV and JSON; bench_task.cpp: the --task sweep).
#pragma once
#include <cmath>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "app/cli/cli_common.h"
#include "app/model/sgemm_probe.h"
#include "app/model/suite_sweep.h"
#include "engine/engine.h"
#include "engine/io/atomic_file.h"

namespace dyllm::cli::bench {

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

// -o: a format name prints to stdout; a file name picks the format by its extension (the markdown table still goes to
// stdout, so a terminal run shows the result).
struct OutputTarget {
    std::string format;  // md | csv | json
    std::string file;    // "" = stdout only
};

// The backend's matmul rate on the model's GEMM shapes (the % sgemm columns), on a CPU the system BLAS's beside it, and
// on several CPU threads the same probe on one: measured before the sweep and again around every repetition.
struct BenchProbes {
    std::unique_ptr<app::GemmProbe> gemm;
    std::unique_ptr<app::GemmProbe> blas;  // null: not a CPU backend
    app::ThreadScaling              scaling;
    bool                            measure_cores = false;  // the cross-core hand-off around every repetition
};

// The sgemm rate measured between repetitions: 50 ms and at least 3 calls per shape (~0.15 s on the built-in models, a
// few seconds on an 8B one, whose repetitions take minutes).
constexpr double kRepProbeSeconds = 0.05;

double                            median(std::vector<double> v);
std::vector<std::vector<int32_t>> bench_prompts(const Model& model, const BenchOptions& o, int batch, int gen_length);

// bench_probes.cpp. `rows`: the rows of the dense step's GEMMs (prompt + response of one sequence). Prints each rate.
BenchProbes measure_probes(const Model& model, int64_t rows);
// bench_run.cpp: one configuration's warm-up and timed repetitions.
Row run_config(const Model& model, const BenchOptions& o, const Config& cfg, BenchProbes& probes);

// bench_format.cpp.
std::string            fmt(const char* f, double v);
nlohmann::ordered_json row_json(const Row& r, const Model& model, const app::ThreadScaling& sc);
std::string            format_md(const std::vector<Row>& rows, int reps);
std::string            format_csv(const std::vector<Row>& rows, const Model& model, const app::ThreadScaling& sc);
nlohmann::ordered_json point_json(const app::SuitePoint& p, const app::SuiteContext& c);
std::string            task_table(const std::vector<app::SuitePoint>& pts);

// -o FILE: the atomic output file (null for stdout), and its one write + commit; errors name -o and the file.
std::unique_ptr<AtomicFile> open_output_file(const OutputTarget& target);
void                        commit_output_file(AtomicFile& file, const std::string& text);

// bench_task.cpp: the --task sweep (`file`: opened by the caller when target.file is set).
int run_task_sweep(const BenchOptions& o, const OutputTarget& target, AtomicFile* file);

}  // namespace dyllm::cli::bench
