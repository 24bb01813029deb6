// compare_runs(): per-position token diff plus summary ratios of two runs.
#include "app/model/run_compare.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "instrumentation/number_text.h"

namespace dyllm::app {

RunCompare compare_runs(const RunHistory& a, const RunHistory& b, int seq) {
    RunCompare  c;
    const auto& ta = a.tokens(seq);
    const auto& tb = b.tokens(seq);
    c.positions    = int32_t(std::min(ta.size(), tb.size()));
    c.differs.assign(size_t(c.positions), 0);
    for (int32_t r = 0; r < c.positions; ++r) {
        if (ta[r].unmask_step == 0 || tb[r].unmask_step == 0) {
            ++c.masked;
        } else if (ta[r].token == tb[r].token) {
            ++c.same;
        } else {
            ++c.differ;
            c.differs[r] = 1;
        }
    }
    c.a           = a.summary();
    c.b           = b.summary();
    c.speedup     = c.a.tokens_per_s > 0 ? c.b.tokens_per_s / c.a.tokens_per_s : 0.0;
    c.flops_ratio = c.a.flops > 0 ? c.b.flops / c.a.flops : 0.0;
    return c;
}

std::string run_label(const RunHistory& h) {
    if (!h.has_run()) return "(no run)";
    std::string label = h.info().method;
    const std::string tau = h.env("tau");
    if (!tau.empty()) {
        // The engine writes tau with std::to_string ("0.990000"): shown as the float it was.
        char*       end = nullptr;
        const float v   = std::strtof(tau.c_str(), &end);
        label += " tau=" + (end != tau.c_str() ? number_text(v) : tau.substr(0, 20));
    } else if (const auto* s = h.step(1); s && std::isfinite(s->tau)) {
        label += " tau=" + number_text(s->tau);
    }
    if (h.env("approx") == "false") label += " exact-attn";  // DyLLM's "Salient" ablation
    return label;
}

}  // namespace dyllm::app
