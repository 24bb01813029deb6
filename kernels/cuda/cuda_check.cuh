// CUDA_CHECK / CUBLAS_CHECK built from one generic macro (ggml's CUDA_CHECK_GEN) that keeps the statement text,
// the function, file, line and the library's error name and string. The exception type is DYLLM_CUDA_ERROR, which
// the engine defines as ::dyllm::BackendError before including this header; elsewhere it is dyllm::cuda::CudaError.
#pragma once
#include <cublas_api.h>
#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace dyllm::cuda {

// Thrown by CUDA_CHECK outside the engine (tests, benchmarks).
struct CudaError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

inline std::string check_message(const char* lib, const char* err_name, const char* err_str, const char* stmt,
                                 const char* func, const char* file, int line) {
    return std::string(lib) + " error " + err_name + " (" + err_str + ") in " + func + " at " + file + ":" +
           std::to_string(line) + ": " + stmt;
}

}  // namespace dyllm::cuda

#ifndef DYLLM_CUDA_ERROR
#define DYLLM_CUDA_ERROR ::dyllm::cuda::CudaError
#endif

#define DYLLM_CHECK_GEN(stmt, success, name_fn, str_fn, lib)                                                     \
    do {                                                                                                         \
        const auto dyllm_check_err_ = (stmt);                                                                    \
        if (dyllm_check_err_ != (success))                                                                       \
            throw DYLLM_CUDA_ERROR(::dyllm::cuda::check_message(                                                 \
                lib, name_fn(dyllm_check_err_), str_fn(dyllm_check_err_), #stmt, __func__, __FILE__, __LINE__)); \
    } while (0)

#define CUDA_CHECK(stmt) DYLLM_CHECK_GEN(stmt, cudaSuccess, cudaGetErrorName, cudaGetErrorString, "CUDA")
#define CUBLAS_CHECK(stmt) \
    DYLLM_CHECK_GEN(stmt, CUBLAS_STATUS_SUCCESS, cublasGetStatusName, cublasGetStatusString, "cuBLAS")
