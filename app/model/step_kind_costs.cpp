// Per-step-kind FLOPs and time of a run, from its StepBegin kinds and StepEnd counters (app/model/step_kind_costs.h).
#include "app/model/step_kind_costs.h"

#include <algorithm>
#include <sstream>

#include "instrumentation/number_text.h"

namespace dyllm::app {

StepKindCosts step_kind_costs(const RunHistory& h) {
    StepKindCosts c;
    if (h.has_run()) c.method = h.info().method;
    for (int k = 1; k <= h.step_count(); ++k) {
        const StepData* s = h.step(k);
        if (!s || !s->ended) continue;
        const double flops   = s->end.flops;
        const double seconds = s->wall_seconds();
        c.flops += flops;
        c.seconds += seconds;
        c.dense_flops += s->end.dense_flops;
        if (size_t(s->kind) < kStepKinds) {
            KindCost& kc = c.by_kind[size_t(s->kind)];
            ++kc.steps;
            kc.flops += flops;
            kc.seconds += seconds;
        }
        c.kind.push_back(s->kind);
        c.step.push_back(k);
        c.cum_flops.push_back(c.flops);
        c.cum_seconds.push_back(c.seconds);
        ++c.steps;
    }
    return c;
}

double cumulative_at(const StepKindCosts& c, const std::vector<double>& curve, int step) {
    // c.step is ascending: the last counted step <= step.
    const auto it = std::upper_bound(c.step.begin(), c.step.end(), step);
    if (it == c.step.begin()) return 0.0;
    const size_t i = size_t(it - c.step.begin()) - 1;
    return i < curve.size() ? curve[i] : 0.0;
}

int overtakes_from(const StepKindCosts& a, const std::vector<double>& a_curve, const StepKindCosts& b,
                   const std::vector<double>& b_curve) {
    if (a.step.empty() || b.step.empty()) return -1;
    const int last = std::min(a.step.back(), b.step.back());
    int       from = -1;
    for (int k = 1; k <= last; ++k) {
        const bool above = cumulative_at(a, a_curve, k) > cumulative_at(b, b_curve, k);
        if (!above)
            from = -1;
        else if (from < 0)
            from = k;
    }
    return from;
}

std::string step_kind_costs_csv(const std::vector<const StepKindCosts*>& runs) {
    std::ostringstream os;
    os << "step_kind";
    for (const StepKindCosts* r : runs)
        os << ',' << r->method << "_steps," << r->method << "_gflop," << r->method << "_ms";
    os << "\n";
    auto cells = [&](const KindCost& k) {
        os << ',' << k.steps << ',' << number_text(k.flops * 1e-9, 9) << ',' << number_text(k.seconds * 1e3, 9);
    };
    for (size_t k = 0; k < kStepKinds; ++k) {
        const bool ran =
            std::any_of(runs.begin(), runs.end(), [&](const StepKindCosts* r) { return r->by_kind[k].steps > 0; });
        if (!ran) continue;
        os << step_kind_name(StepKind(k));
        for (const StepKindCosts* r : runs) cells(r->by_kind[k]);
        os << "\n";
    }
    os << "total";
    for (const StepKindCosts* r : runs) cells(KindCost{r->steps, r->flops, r->seconds});
    os << "\n";
    return os.str();
}

}  // namespace dyllm::app
