// The op-test table of tests/unit/test_backend_ops.cpp compiled into test_cuda, restricted to the CUDA backend, so
// that `ctest -L cuda` on a machine with a GPU runs every op of the table on CUDA against kernels/cpu/ref.
#define DYLLM_OPS_CUDA_ONLY
#include "unit/test_backend_ops.cpp"
