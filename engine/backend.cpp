// Names of op and backend kinds, and the backend factory (make_backend), with the CPU fallback of the CUDA entry
// points when the project is built without CUDA (DYLLM_CUDA=OFF).
#include "engine/backend.h"

#include "engine/backend_cpu.h"
#include "engine/backend_cuda.h"
#include "engine/errors.h"

namespace dyllm {

const char* op_kind_name(OpKind k) {
    switch (k) {
        case OpKind::Embed:
            return "embed";
        case OpKind::MatMul:
            return "matmul";
        case OpKind::RmsNorm:
            return "rms_norm";
        case OpKind::Rope:
            return "rope";
        case OpKind::Add:
            return "add";
        case OpKind::Sub:
            return "sub";
        case OpKind::SiluMul:
            return "silu_mul";
        case OpKind::Attention:
            return "attention";
        case OpKind::AttentionApprox:
            return "attention_approx";
        case OpKind::AttentionCols:
            return "attention_cols";
        case OpKind::GatherRows:
            return "gather_rows";
        case OpKind::ScatterRows:
            return "scatter_rows";
        case OpKind::AddRows:
            return "add_rows";
        case OpKind::Cosine:
            return "cosine";
        case OpKind::ScoreLogits:
            return "score_logits";
        case OpKind::Copy:
            return "copy";
        case OpKind::Count:
            break;
    }
    return "?";
}

bool op_supports_dtype(OpKind op, DType dtype) {
    switch (op) {
        case OpKind::Embed:
        case OpKind::MatMul:
        case OpKind::RmsNorm:
        case OpKind::Add:
        case OpKind::Sub:
        case OpKind::Copy:
        case OpKind::GatherRows:
        case OpKind::ScatterRows:
        case OpKind::AddRows:
        case OpKind::Attention:
        case OpKind::AttentionApprox:
        case OpKind::AttentionCols:
        case OpKind::Cosine:
            return is_float(dtype);
        case OpKind::Rope:
        case OpKind::SiluMul:
        case OpKind::ScoreLogits:
            return dtype == DType::F32;
        case OpKind::Count:
            break;
    }
    return false;
}

const char* backend_kind_name(BackendKind k) {
    switch (k) {
        case BackendKind::Cpu:
            return "cpu";
        case BackendKind::Cuda:
            return "cuda";
        case BackendKind::Auto:
            return "auto";
    }
    return "?";
}

#ifndef DYLLM_HAVE_CUDA
namespace {
constexpr const char* kNoCudaReason = "CUDA backend not compiled in (DYLLM_CUDA=OFF)";
}

int cuda_device_count(std::string* why_none) {
    if (why_none) *why_none = kNoCudaReason;
    return 0;
}

std::unique_ptr<Backend> make_cuda_backend(int /*device*/) {
    throw BackendError(kNoCudaReason);
}
#endif

std::unique_ptr<Backend> make_backend(BackendKind kind, int n_threads, std::string* fallback_reason) {
    if (fallback_reason) fallback_reason->clear();
    switch (kind) {
        case BackendKind::Cpu:
            return make_cpu_backend(n_threads);
        case BackendKind::Cuda:
            return make_cuda_backend(0);
        case BackendKind::Auto: {
            std::string why;
            if (cuda_device_count(&why) > 0) return make_cuda_backend(0);
            if (fallback_reason) *fallback_reason = "no CUDA device (" + why + "): using the CPU backend";
            return make_cpu_backend(n_threads);
        }
    }
    throw BackendError("make_backend: unknown backend kind " + std::to_string(int(kind)));
}

}  // namespace dyllm
