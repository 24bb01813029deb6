// The CPU backend (CpuBackend in engine/backend_cpu.cpp): every Backend op on host memory with the optimised kernels
// of kernels/cpu (OpenBLAS sgemm, a small thread pool for attention, scoring and weight widening).
#pragma once
#include <memory>
#include <string_view>

#include "engine/backend.h"

namespace dyllm {

// n_threads 0 = std::thread::hardware_concurrency(). Sets OpenBLAS (process-wide) to one thread: the backend splits
// GEMMs over its own pool (engine/README.md §t).
std::unique_ptr<Backend> make_cpu_backend(int n_threads = 0);

// The instruction set of the quantized-weight products, process-wide (kernels/cpu/quant_matmul.h): "auto" (the best
// this CPU runs, AMX included), "amx" (AVX-512 with the AMX paths), "avx512" (without them), "avx-vnni", "avx2" or
// "baseline" (decoders only). Forcing a smaller one on a wide CPU measures what a CPU without the wider one runs (the
// other ops keep their own dispatch). InputError for an unknown name or one this CPU lacks. Set before the products
// run: a run in flight may mix the two.
void set_cpu_quant_isa(std::string_view name);
// The one in use, with "+amx" where the AMX paths run: "avx512+amx", "avx2".
std::string cpu_quant_isa_name();

}  // namespace dyllm
