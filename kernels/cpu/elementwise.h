// Optimised elementwise add and sub.
#pragma once
#include "kernels/cpu/mat.h"
#include "kernels/cpu/thread_pool.h"

namespace dyllm::cpu {

// y = a + b, y = a - b; all [n, w]; y may alias a or b.
void add(CMatF a, CMatF b, MatF y);
void sub(CMatF a, CMatF b, MatF y);
// The same with the rows split over `pool` (contiguous row ranges) from ThreadPool::parallel_for_warm's bound.
void add(CMatF a, CMatF b, MatF y, ThreadPool& pool);
void sub(CMatF a, CMatF b, MatF y, ThreadPool& pool);

}  // namespace dyllm::cpu
