// The duration histogram of one op (the row selected in Op stats): its samples over a range of steps, binned on a
// log axis, since an op's times spread over decades (a dense step's GEMM next to a sparse step's few rows, a
// preempted sample far out).
#pragma once
#include <span>
#include <vector>

#include "app/model/op_stats.h"

namespace dyllm::app {

// The durations (seconds) of every sample of op `name` over steps [lo, hi]: at `layer`, or every layer for -2
// (OpStat::layer's convention); name OpName::Count: the time outside ops, one sample per ended step. preempted, when
// given, gets one flag per sample (app/model/op_preempt.h); exclude_preempted drops those samples.
std::vector<double> op_durations(const RunHistory& h, int lo, int hi, OpName name, int layer,
                                 bool exclude_preempted = false, std::vector<bool>* preempted = nullptr);

struct DurationHistogram {
    double           lo_s = 0, hi_s = 0;  // the edges of the first and last bins (lo_s == hi_s: every sample equal)
    std::vector<int> counts;              // per bin; bin b covers [lo * r^b, lo * r^(b+1)) with r = (hi/lo)^(1/bins)
    int              total = 0;
    double           bin_lo(int b) const;  // lower edge of bin b (seconds)
    double           bin_hi(int b) const { return bin_lo(b + 1); }
    int              bin_of(double v) const;  // the bin a sample falls in (clamped to the bins)
};

// Log-spaced bins from the smallest to the largest positive sample, the largest in the last bin; samples <= 0 go to
// bin 0. An empty sample gives no bins; equal samples one bin.
DurationHistogram duration_histogram(std::span<const double> samples, int bins);

}  // namespace dyllm::app
