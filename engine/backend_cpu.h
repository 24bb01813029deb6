// The CPU backend (CpuBackend in engine/backend_cpu.cpp): every Backend op on host memory with the optimised kernels
// of kernels/cpu (OpenBLAS sgemm, a small thread pool for attention, scoring and weight widening).
#pragma once
#include <memory>

#include "engine/backend.h"

namespace dyllm {

// n_threads 0 = std::thread::hardware_concurrency(). Sets OpenBLAS (process-wide) to one thread: the backend splits
// GEMMs over its own pool (engine/README.md §t).
std::unique_ptr<Backend> make_cpu_backend(int n_threads = 0);

}  // namespace dyllm
