// Model configuration for both families, parsed from an HF config.json (LLaDA keys or Qwen2/Dream keys).
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace dyllm {

enum class Family : uint8_t { LLaDA, Dream };
const char* family_name(Family f);

struct ModelConfig {
    Family               family = Family::LLaDA;
    std::string          model_type;          // as written in config.json
    int                  n_embd         = 0;  // d_model / hidden_size
    int                  n_layer        = 0;
    int                  n_head         = 0;
    int                  n_kv_head      = 0;  // == n_head for MHA
    int                  head_dim       = 0;  // n_embd / n_head unless config has head_dim
    int                  n_ff           = 0;  // mlp_hidden_size / intermediate_size
    int                  n_vocab        = 0;  // rows of the embedding and LM head (LLaDA: embedding_size)
    int                  vocab_size     = 0;  // config vocab_size (<= n_vocab)
    float                rope_theta     = 0;
    float                norm_eps       = 0;
    int                  max_position   = 4096;
    bool                 qkv_bias       = false;  // Dream: q/k/v have biases
    bool                 tie_embeddings = false;
    int32_t              mask_id        = -1;
    int32_t              eos_id         = -1;
    int32_t              pad_id         = -1;
    int32_t              bos_id         = -1;
    std::vector<int32_t> extra_eos_ids;  // e.g. <|eot_id|>, <|im_end|> when the tokenizer names them

    int64_t q_dim() const { return int64_t(n_head) * head_dim; }
    int64_t kv_dim() const { return int64_t(n_kv_head) * head_dim; }
    // Parameters in the weights (embedding, layers, final norm, head).
    int64_t n_params() const;
};

// Upper bounds of config.json sizes, checked before anything is allocated from them. Far above released models
// (LLaDA-8B: 32 layers, d_model 4096, vocab 126464; the largest open models: ~128 layers, d_model 16384, vocab 256k)
// and low enough that every weight-count product of them fits in int64.
inline constexpr int64_t kMaxConfigLayers    = 4096;
inline constexpr int64_t kMaxConfigEmbd      = 1 << 18;
inline constexpr int64_t kMaxConfigHeads     = 4096;
inline constexpr int64_t kMaxConfigHeadDim   = 4096;
inline constexpr int64_t kMaxConfigFf        = 1 << 20;
inline constexpr int64_t kMaxConfigVocab     = 1 << 24;
inline constexpr int64_t kMaxConfigPositions = 1 << 24;

// Parses config.json (through the bounded JSON reader: regular file, size cap, depth cap). Throws LoadError naming
// the file and the key for a missing, invalid or out-of-limit value.
ModelConfig parse_config(const std::filesystem::path& config_json);

}  // namespace dyllm
