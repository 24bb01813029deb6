// The tensor layout of each family's HF checkpoint (names and shapes derived from the config), shared by the loader,
// which checks a file against it, and the writer, which produces it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/io/config.h"

namespace dyllm {

enum class TensorRole : uint8_t {
    TokEmbd,
    AttnNorm,
    Wq,
    Wk,
    Wv,
    Wo,
    Bq,
    Bk,
    Bv,
    FfnNorm,
    WGate,
    WUp,
    WDown,
    OutNorm,
    LmHead
};

struct TensorSpec {
    std::string          name;
    std::vector<int64_t> shape;  // outermost first, HF [out, in]
    std::string origin;  // the config keys that give the shape, e.g. "[n_heads=32 x head_dim=128, d_model=4096]"
    TensorRole  role  = TensorRole::TokEmbd;
    int         layer = -1;  // -1 outside the blocks
};

// Every tensor the family's checkpoint must hold for cfg, in file order (embedding, blocks, final norm, head).
// The LM head is absent when embeddings are tied.
std::vector<TensorSpec> expected_tensor_specs(const ModelConfig& cfg);

struct ModelWeights;
struct TensorView;
// The member of `w` that a tensor of this role (and block, for the per-layer roles) fills; w.layers must already hold
// that block.
TensorView& weight_slot(ModelWeights& w, TensorRole role, int layer);

}  // namespace dyllm
