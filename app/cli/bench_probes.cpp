// `dyllm bench`: the rates the roofline columns are a share of, measured on the model's GEMM shapes before the sweep:
// the backend's matmul on prepared weights, the system BLAS's on plain weights (CPU), the same probe on one thread
// and the cross-core hand-off (several CPU threads).
#include <cstdio>
#include <memory>
#include <string>

#include "app/cli/bench.h"
#include "app/model/core_latency.h"
#include "app/model/roofline.h"

namespace dyllm::cli::bench {

BenchProbes measure_probes(const Model& model, int64_t rows) {
    // The peak the GFLOP/s columns are a share of: the dense step's GEMMs (rows = prompt + response of one sequence)
    // through the same backend and threads, 0.2 s per shape (a few hundred calls on tiny models, a handful on 8B).
    const auto  shapes = app::model_gemm_shapes(model.config(), rows);
    BenchProbes p;
    p.gemm                      = std::make_unique<app::GemmProbe>(model.backend(), shapes);
    const app::SgemmProbe probe = p.gemm->measure(0.2);
    std::string           detail;
    for (const auto& g : probe.shapes)
        detail += (detail.empty() ? "" : ", ") + g.shape.name + " " + std::to_string(g.shape.m) + "x" +
                  std::to_string(g.shape.n) + "x" + std::to_string(g.shape.k) + " " + fmt("%.1f", g.gflops_per_s());
    std::fprintf(stderr,
                 "bench: sgemm rate %.1f GFLOP/s (fp32, the backend's matmul on prepared weights as the engine runs "
                 "it; m x n x k: %s; measured again around every repetition)\n",
                 probe.gflops_per_s, detail.c_str());
    // On the CPU, the same shapes through the system BLAS's sgemm with plain weights: the rate a program that calls the
    // BLAS gets (the usual reference for a dense step), beside the packed rate the % columns are a share of.
    const bool cpu = model.backend().device() == Device::Cpu;
    if (cpu) {
        p.blas = std::make_unique<app::GemmProbe>(model.backend(), shapes, app::ProbeWeights::Plain);
        std::fprintf(stderr,
                     "bench: system BLAS sgemm on the same shapes, weights not packed: %.1f GFLOP/s (JSON "
                     "blas_sgemm_gflops, pct_blas_sgemm_dense; measured again around every repetition)\n",
                     p.blas->measure(kRepProbeSeconds).gflops_per_s);
    }
    // With several CPU threads, the same probe on one: whether the threads really have cores of their own right now.
    app::ThreadScaling& scaling = p.scaling;
    scaling                     = {model.backend().host_threads(), 0, probe.gflops_per_s};
    p.measure_cores             = cpu && scaling.threads > 1;
    if (p.measure_cores) {
        const auto one            = make_backend(BackendKind::Cpu, 1);
        scaling.one_thread_gflops = app::measure_sgemm(*one, shapes, 0.2).gflops_per_s;
        std::fprintf(stderr, "bench: the same probe on 1 thread: %.1f GFLOP/s (%d threads: %.2fx)\n",
                     scaling.one_thread_gflops, scaling.threads, scaling.speedup());
        if (scaling.shared_cores())
            std::fprintf(stderr,
                         "bench: warning: %d threads run the probe only %.2fx as fast as one: they share cores "
                         "(hyperthreads of one core, or a busy host); the %d-thread figures below are not those of "
                         "%d free cores\n",
                         scaling.threads, scaling.speedup(), scaling.threads, scaling.threads);
        const app::CoreLatency cores = app::measure_core_latency();
        if (!cores.measured)
            std::fprintf(stderr, "bench: cross-core hand-off: not measured (two threads never ran at the same time)\n");
        else
            std::fprintf(stderr,
                         "bench: cross-core hand-off %.0f ns one way (two threads passing a cache line; measured again "
                         "around every repetition)%s\n",
                         cores.one_way_ns,
                         cores.far() ? ": the cores sit far apart right now, and every line a split op moves between "
                                       "them costs that (a VM's vCPUs can move between placements within minutes)"
                                     : "");
    }
    return p;
}

}  // namespace dyllm::cli::bench
