// PackedGemm without a provider (the build found no libdnnl-dev): it packs nothing, so every weight stays on the
// OpenBLAS path of kernels/cpu/matmul.cpp.
#include <cstdio>
#include <cstdlib>

#include "kernels/cpu/packed_gemm.h"

namespace dyllm::cpu {

struct PackedWeight::Impl {};
PackedWeight::PackedWeight(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PackedWeight::~PackedWeight() = default;
int64_t PackedWeight::rows() const {
    return 0;
}
int64_t PackedWeight::cols() const {
    return 0;
}
ElemType PackedWeight::type() const {
    return ElemType::F32;
}
int PackedWeight::slices() const {
    return 0;
}
size_t PackedWeight::bytes() const {
    return 0;
}

struct PackedGemm::Impl {};
PackedGemm::PackedGemm(int) {}
PackedGemm::~PackedGemm() = default;
std::string PackedGemm::provider() {
    return "";
}
bool PackedGemm::supports(ElemType) {
    return false;
}
bool PackedGemm::small_gemm_for_all_rows() {
    return false;
}

size_t PackedGemm::primitives() const {
    return 0;
}

std::shared_ptr<const PackedWeight> PackedGemm::pack(ConstMat, ThreadPool&, std::string* error) const {
    if (error) *error = "no GEMM provider in this build (libdnnl-dev was not found at configure time)";
    return nullptr;
}

void PackedGemm::matmul(CMatF, const PackedWeight&, ConstMat, MatF, ThreadPool&) const {
    std::fprintf(stderr, "packed_gemm: matmul called in a build without a GEMM provider\n");  // pack() gave nothing
    std::abort();
}

}  // namespace dyllm::cpu
