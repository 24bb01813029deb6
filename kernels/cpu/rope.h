// Optimised rotate-half RoPE.
#pragma once
#include "kernels/cpu/mat.h"
#include "kernels/cpu/thread_pool.h"

namespace dyllm::cpu {

// In place on every head of x: [n, n_head * head_dim]; same angles as ref::rope (fp32, kernels/common/scalar_math.h).
// Rows are split over `pool` (contiguous row ranges) from ThreadPool::parallel_for_warm's bound; each element is
// computed the same way on any thread.
void rope(MatF x, const int32_t* positions, int n_head, int head_dim, float theta, ThreadPool& pool);

}  // namespace dyllm::cpu
