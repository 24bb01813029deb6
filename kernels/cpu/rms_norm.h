// Optimised RMSNorm.
#pragma once
#include "kernels/cpu/mat.h"
#include "kernels/cpu/thread_pool.h"

namespace dyllm::cpu {

// y = x * rsqrt(mean(x^2) + eps) * w, fp32 math. x, y: [n, d] (may alias); w: [1, d] any type.
// Rows are split over `pool` (contiguous row ranges) from ThreadPool::parallel_for_warm's bound; each row is computed
// the same way on any thread.
void rms_norm(CMatF x, ConstMat w, float eps, MatF y, ThreadPool& pool);

}  // namespace dyllm::cpu
