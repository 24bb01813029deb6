// The Tune panel's tau sweep: the current prompt run once with `original` (the reference answer) and then with dyllm
// at each tau; each finished run becomes a point (FLOPs vs dense, agreement with the reference) and the Pareto points
// (least work for the agreement reached) are marked.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace dyllm::app {

// The taus a sweep runs by default: a decade apart on log(1 - tau) around the paper's settings.
std::vector<float> default_sweep_taus();

struct SweepPoint {
    bool                 reference      = false;  // the `original` run
    float                tau            = 0;      // NaN for the reference
    double               flops_fraction = 1;      // accounted FLOPs over a dense forward's
    double               tokens_per_s   = 0;
    std::string          text;    // decoded response (sequence 0)
    std::vector<int32_t> tokens;  // response token ids (sequence 0)
    bool                 cancelled = false;
    // Filled by score_sweep():
    bool   same_answer = false;  // text equals the reference's
    double agreement   = 0;      // share of response positions with the reference's token
    bool   pareto      = false;
};

// Compares every point with the reference (the first point marked reference) and marks the Pareto front over
// (flops_fraction lower is better, agreement higher is better) among the non-cancelled points.
void score_sweep(std::vector<SweepPoint>& pts);

// The sequencing of one sweep: labels of the runs in order; next() hands out the index of the run to start.
class TauSweep {
public:
    void  begin(std::vector<float> taus);  // clears the points; run 0 is the reference, then one run per tau
    bool  active() const { return begun_ && (next_ < runs() || waiting_); }  // false before the first begin()
    int   runs() const { return int(taus_.size()) + 1; }
    float tau_of(int run) const;  // NaN for run 0 (the reference)
    // The run to start now, or -1 while one is running or when all have run.
    int next();
    // The run started last has finished (or was refused): its point, nullptr when refused.
    void                           finished(const SweepPoint* p);
    void                           cancel() { next_ = runs(), waiting_ = false; }
    const std::vector<SweepPoint>& points() const { return points_; }

private:
    std::vector<float>      taus_;
    std::vector<SweepPoint> points_;
    int                     next_    = 0;
    bool                    waiting_ = false, begun_ = false;
};

}  // namespace dyllm::app
