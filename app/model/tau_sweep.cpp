// Tau sweep sequencing, scoring and Pareto front (app/model/tau_sweep.h).
#include "app/model/tau_sweep.h"

#include "app/model/pareto_front.h"

#include <algorithm>
#include <cmath>

namespace dyllm::app {

std::vector<float> default_sweep_taus() {
    return {0.9f, 0.95f, 0.98f, 0.99f, 0.995f, 0.999f};
}

void score_sweep(std::vector<SweepPoint>& pts) {
    const SweepPoint* ref = nullptr;
    for (const auto& p : pts)
        if (p.reference && !p.cancelled) {
            ref = &p;
            break;
        }
    for (auto& p : pts) {
        p.same_answer = ref && p.text == ref->text;
        size_t same   = 0;
        if (ref)
            for (size_t i = 0; i < p.tokens.size() && i < ref->tokens.size(); ++i)
                same += p.tokens[i] == ref->tokens[i];
        p.agreement = ref && !ref->tokens.empty() ? double(same) / double(ref->tokens.size()) : 0.0;
    }
    // Less work is better: the front over (-FLOPs fraction, agreement).
    std::vector<ParetoInput> in;
    for (const auto& p : pts) in.push_back({-p.flops_fraction, p.agreement, !p.cancelled});
    const std::vector<bool> front = pareto_front(in);
    for (size_t i = 0; i < pts.size(); ++i) pts[i].pareto = front[i];
}

void TauSweep::begin(std::vector<float> taus) {
    taus_ = std::move(taus);
    points_.clear();
    next_    = 0;
    waiting_ = false;
    begun_   = true;
}

float TauSweep::tau_of(int run) const {
    return run >= 1 && run <= int(taus_.size()) ? taus_[size_t(run - 1)] : NAN;
}

int TauSweep::next() {
    if (!begun_ || waiting_ || next_ >= runs()) return -1;
    waiting_ = true;
    return next_++;
}

void TauSweep::finished(const SweepPoint* p) {
    if (!waiting_) return;
    waiting_ = false;
    if (p) {
        points_.push_back(*p);
        score_sweep(points_);
    } else if (next_ == 1) {
        cancel();  // the reference was refused: nothing to compare against
    }
}

}  // namespace dyllm::app
