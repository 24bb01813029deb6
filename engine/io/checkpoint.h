// HF checkpoint directories: config.json + model.safetensors (or shards listed in model.safetensors.index.json),
// memory-mapped and validated before use; weights stay in their stored dtype (F32/F16/BF16) and are widened on the fly.
#pragma once
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "engine/io/config.h"
#include "engine/tensor.h"

namespace dyllm {

struct GgufContents;

// Host views of one decoder layer's weights (HF [out, in] layout). Biases are empty views when absent.
struct LayerWeights {
    TensorView attn_norm;             // [n_embd]
    TensorView wq, wk, wv, wo;        // [q_dim, n_embd], [kv_dim, n_embd] x2, [n_embd, q_dim]
    TensorView bq, bk, bv;            // [q_dim], [kv_dim], [kv_dim] (Dream only)
    TensorView ffn_norm;              // [n_embd]
    TensorView w_gate, w_up, w_down;  // [n_ff, n_embd] x2, [n_embd, n_ff]
};

struct ModelWeights {
    TensorView                tok_embd;  // [n_vocab, n_embd]
    std::vector<LayerWeights> layers;
    TensorView                out_norm;  // [n_embd]
    TensorView                lm_head;   // [n_vocab, n_embd] (tok_embd when tied)
};

class Checkpoint {
public:
    // Opens and validates a checkpoint directory, or a .gguf file (engine/io/gguf_model.h). Throws LoadError with one
    // precise message per failed check.
    static std::unique_ptr<Checkpoint> open(const std::filesystem::path& dir);
    virtual ~Checkpoint() = default;

    virtual const ModelConfig&           config() const       = 0;
    virtual const ModelWeights&          weights() const      = 0;
    virtual DType                        weight_dtype() const = 0;  // dtype of the projection weights
    virtual size_t                       file_bytes() const   = 0;  // total size of the mapped weight files
    virtual const std::filesystem::path& dir() const          = 0;  // the directory, or the .gguf file
    // The metadata of a GGUF checkpoint (its tokenizer lives there); nullptr for a checkpoint directory.
    virtual const GgufContents* gguf() const { return nullptr; }
};

// Tensor names of each family (the ones the loader expects and the writer produces).
std::vector<std::string> expected_tensor_names(const ModelConfig& cfg);

// Writes a checkpoint directory (config.json + safetensors) with random weights from `seed`, for tests, benchmarks and
// `dyllm make-model`. Weights ~ N(0, weight_std) (norm weights 1). n_shards > 1 writes model-0000i-of-0000n.safetensors
// and the index. dtype: F32, F16 or BF16. A larger weight_std gives peaked logits (fewer near-ties in tests).
// with_tokenizer: also the byte-level tokenizer.json (write_byte_level_tokenizer_json). Every file is written under a
// temporary name and renamed into place once all are complete, config.json last, and an earlier model's other weight
// files are removed after that: a failed or interrupted rewrite leaves the old model loadable.
void write_random_checkpoint(const std::filesystem::path& dir, const ModelConfig& cfg, uint64_t seed, DType dtype,
                             int n_shards = 1, float weight_std = 0.02f, bool with_tokenizer = false);

// Writes config.json for cfg in its family's key set.
void write_config_json(const std::filesystem::path& path, const ModelConfig& cfg);

}  // namespace dyllm
