// Roofline figures of a run: FLOPs and time split into dense steps (a full forward over every row) and cached steps
// (the method reuses caches), achieved GFLOP/s, and the share of a measured sgemm rate (`dyllm bench`, Time panel).
#pragma once
#include <span>

#include "engine/engine.h"

namespace dyllm::app {

// Which steps are dense: is_dense_step (instrumentation/events.h, from instrumentation/step_kinds.def).
using dyllm::is_dense_step;

struct WorkTime {
    double flops = 0, seconds = 0;
    int    steps = 0;
    double gflops_per_s() const { return seconds > 0 ? flops / seconds * 1e-9 : 0.0; }
};

struct RooflineSplit {
    WorkTime all, dense, cached;
};

// Sums the steps' accounted FLOPs and step wall times by kind.
RooflineSplit split_steps(std::span<const StepRecord> steps);

// achieved / peak in percent; 0 when either is not positive.
double percent_of(double achieved_gflops, double peak_gflops);

}  // namespace dyllm::app
