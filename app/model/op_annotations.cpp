// Op names and preempted flags of a run for the exporters (app/model/op_annotations.h).
#include "app/model/op_annotations.h"

#include <map>
#include <vector>

#include "app/model/op_names.h"
#include "app/model/op_preempt.h"
#include "app/model/op_stats.h"

namespace dyllm::app {

ExportOptions export_options(const RunHistory& h, bool close_step_gaps) {
    ExportOptions opt;
    opt.close_step_gaps = close_step_gaps;
    const int n_embd    = run_n_embd(h);
    // Names follow from the order of one step's ops (name_ops); the stream holds each step's ops in that order.
    std::map<int32_t, std::vector<NamedOp>> names;
    std::map<int32_t, size_t>               next;
    for (const EventRecord& r : h.events()) {
        const auto* o = std::get_if<OpTiming>(&r);
        if (!o) continue;
        auto it = names.find(o->step);
        if (it == names.end()) {
            const StepData* s = h.step(o->step);
            it                = names.emplace(o->step, s ? name_ops(s->ops, n_embd) : std::vector<NamedOp>{}).first;
        }
        const size_t i = next[o->step]++;
        OpAnnotation a;
        a.name      = i < it->second.size() ? op_name_text(it->second[i].name) : op_class_name(o->op);
        a.preempted = op_preempted(*o);
        opt.ops.push_back(std::move(a));
    }
    return opt;
}

}  // namespace dyllm::app
