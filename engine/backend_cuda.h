// Factory of the CUDA backend (implemented in engine/backend_cuda.cpp, built only with DYLLM_CUDA=ON). Without CUDA,
// engine/backend.cpp defines a fallback that throws BackendError("CUDA backend not compiled in (DYLLM_CUDA=OFF)").
#pragma once
#include <memory>

#include "engine/backend.h"

namespace dyllm {

// A backend on CUDA device `device`. Throws BackendError naming the reason when there is no usable device.
std::unique_ptr<Backend> make_cuda_backend(int device = 0);

}  // namespace dyllm
