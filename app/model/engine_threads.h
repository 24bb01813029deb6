// How many CPU threads the studio's engine gets. The engine's pool hands every split op to all of its threads and
// waits for the ones that took a task; with as many engine threads as cores, the UI thread and the GL driver's
// threads (llvmpipe rasterises on every core) keep taking a core from a pool thread in the middle of a task, and the
// caller waits out the scheduler's time slice: under Xvfb on 2 cores the studio's engine ran tiny-llada's DyLLM ~6x
// slower at 2 threads than at 1. So by default it leaves one core to the UI. The command line keeps every core.
#pragma once

namespace dyllm::app {

// requested > 0: that many; 0: every hardware thread but one (at least 1). hardware_threads 0 (unknown) counts as 1.
int studio_engine_threads(int requested, unsigned hardware_threads);

}  // namespace dyllm::app
