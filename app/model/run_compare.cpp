// compare_runs(): per-position token diff plus summary ratios of two runs.
#include "app/model/run_compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

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
    char              buf[32];
    if (!tau.empty()) {
        char* end = nullptr;
        const double v = std::strtod(tau.c_str(), &end);
        if (end != tau.c_str()) std::snprintf(buf, sizeof buf, " tau=%.6g", v);
        else std::snprintf(buf, sizeof buf, " tau=%.20s", tau.c_str());
        label += buf;
    } else if (const auto* s = h.step(1); s && std::isfinite(s->tau)) {
        std::snprintf(buf, sizeof buf, " tau=%.6g", double(s->tau));
        label += buf;
    }
    if (h.env("approx") == "false") label += " exact-attn";  // DyLLM's "Salient" ablation
    return label;
}

}  // namespace dyllm::app
