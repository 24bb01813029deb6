// Per-op statistics of a run for the Time panel's table: count, total, mean, median, min, max, share of the timed
// total, GFLOP/s and GB/s, thread CPU time and preempted samples, grouped by op name (or by op name and layer) over a
// range of steps, sortable and filterable.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "app/model/op_names.h"
#include "app/model/run_history.h"

namespace dyllm::app {

struct OpStat {
    std::string label;  // "q", or "q L3" when grouped by layer
    OpName      name    = OpName::Other;
    int         layer   = -2;  // -2: every layer; -1: outside the layers
    int         count   = 0;
    double      total_s = 0, mean_s = 0, median_s = 0, min_s = 0, max_s = 0;
    double      sigma_s = 0, p90_s = 0;  // standard deviation (population) and 90th percentile (linear) of the samples
    int         max_step = 0;            // the step of the slowest sample (the table's jump target)
    double      share    = 0;  // of the summed time of every op (and outside ops when asked for) in the range, 0..1
    double      flops = 0, bytes = 0;
    int64_t     m = 0, n = 0, k = 0;  // GEMM shape of the largest call (0: not a GEMM)
    double      cpu_s     = 0;        // summed thread CPU time of the samples that have one
    int         cpu_count = 0;        // samples with a CPU time
    int         preempted = 0;        // samples flagged preempted (app/model/op_preempt.h), counted even when excluded
    int         split     = 0;        // samples the CPU pool split over threads
    double      cpu_mean_s() const { return cpu_count > 0 ? cpu_s / cpu_count : 0.0; }
    double      gflops_per_s() const { return total_s > 0 ? flops / total_s * 1e-9 : 0.0; }
    double      gbytes_per_s() const { return total_s > 0 ? bytes / total_s * 1e-9 : 0.0; }
};

// Stats over steps [lo, hi] (clamped to the run), in op-name order (then layer). exclude_preempted: preempted samples
// are left out of every time, count and rate (a group whose samples were all preempted keeps a row with count 0).
// outside_ops: a last row "outside ops" (name OpName::Count) with one sample per ended step, the step's wall time
// the ops do not cover (StepData::outside_ops_seconds); the shares are then of the wall time.
std::vector<OpStat> op_stats(const RunHistory& h, int lo, int hi, bool by_layer, bool exclude_preempted = false,
                             bool outside_ops = false);

enum class StatColumn : uint8_t {
    Label,
    Count,
    Total,
    Mean,
    Median,
    Min,
    Max,
    Share,
    GFlops,
    GBytes,
    CpuMean,
    Preempted,
    Sigma,
    P90
};
void sort_stats(std::vector<OpStat>& v, StatColumn c, bool ascending);

// Case-insensitive substring match of the filter against the label; "" matches everything.
bool stat_matches(const OpStat& s, std::string_view filter);
// The same match for one op of the timeline: its name, or its name and layer ("q L3"), contains the filter.
bool op_matches(OpName name, int layer, std::string_view filter);

// The table as CSV (one header line, one line per row; times in ms), for the clipboard and the exports.
std::string op_stats_csv(const std::vector<OpStat>& v);

// An Op stats label back to its row: "gate" (every layer: *layer = -2), "gate L3", "outside ops" (*name =
// OpName::Count). False for anything else; name and layer may be null.
bool parse_op_label(std::string_view label, int* name, int* layer);

// n_embd from the run's environment (RunBegin env "n_embd"); 0 when absent.
int run_n_embd(const RunHistory& h);

}  // namespace dyllm::app
