// DYLLM_HD: marks scalar functions compiled for both host and device (CUTLASS_HOST_DEVICE style).
// Under nvcc they become __host__ __device__ __forceinline__; in plain C++ they are ordinary inline functions.
#pragma once

#if defined(__CUDACC__)
#define DYLLM_HD __host__ __device__ __forceinline__
#else
#define DYLLM_HD inline
#endif
