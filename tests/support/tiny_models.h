// Test helpers: tiny configs of both families and random-weight checkpoint directories (config.json, safetensors,
// byte-level tokenizer.json) written into unique temporary directories that are removed when the test process exits.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/io/config.h"
#include "engine/tensor.h"

namespace dyllm::test {

// LLaDA: MHA (4 heads), no biases, 2 layers. Dream: GQA 4:2 with q/k/v biases, 3 layers. Both n_embd 64 (head_dim
// 16), ffn 128, vocab 300, special ids inside the vocab laid out for the byte-level tokenizer (small_config).
ModelConfig tiny_config(Family f);

// A fresh, unique directory under the system temp dir ("dyllm-<tag>-XXXXXX"), removed at process exit unless the
// environment sets DYLLM_KEEP_TEST_DIRS=1.
std::filesystem::path make_temp_dir(const std::string& tag);

// Writes a random checkpoint of tiny_config(f) (weights from `seed`, stored as dtype, in n_shards files) plus a
// byte-level tokenizer.json into a new temp dir and returns it.
std::filesystem::path make_tiny_checkpoint(Family f, DType dtype = DType::F32, int n_shards = 1, uint64_t seed = 1);

// Same with any config (e.g. tied embeddings). The tokenizer is written only when cfg's vocabulary can hold it.
std::filesystem::path make_checkpoint(const ModelConfig& cfg, DType dtype, int n_shards, uint64_t seed);

// Writes the byte-level tokenizer.json of cfg's family into dir (see write_byte_level_tokenizer_json).
void write_tiny_tokenizer(const std::filesystem::path& dir, const ModelConfig& cfg);

// n pseudo-random token ids of cfg's vocabulary (never [MASK] or EOS), a fixed function of seed.
std::vector<int32_t> random_prompt(const ModelConfig& cfg, int n, uint32_t seed);

}  // namespace dyllm::test
