// Dense vs cached split of a run's step records (app/model/roofline.h).
#include "app/model/roofline.h"

namespace dyllm::app {

RooflineSplit split_steps(std::span<const StepRecord> steps) {
    RooflineSplit out;
    for (const StepRecord& r : steps) {
        WorkTime& part = is_dense_step(r.kind) ? out.dense : out.cached;
        for (WorkTime* w : {&out.all, &part}) {
            w->flops += r.flops;
            w->seconds += r.seconds;
            w->steps += 1;
        }
    }
    return out;
}

double percent_of(double achieved_gflops, double peak_gflops) {
    return achieved_gflops > 0 && peak_gflops > 0 ? 100.0 * achieved_gflops / peak_gflops : 0.0;
}

}  // namespace dyllm::app
