// Helpers of the checkpoint writer beyond checkpoint.h: small random-model configs, the byte-level tokenizer.json
// that goes with them, and the deterministic values write_random_checkpoint stores (so tests can check a round trip).
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/io/checkpoint_layout.h"
#include "engine/io/config.h"

namespace dyllm {

// Number of special tokens write_byte_level_tokenizer_json adds for the family (LLaDA 6, Dream 4). Byte tokens take
// ids 0..255, so a model needs n_vocab >= 256 + this.
int byte_level_special_count(Family f);

// A small config of the family for random-weight checkpoints (tests, benchmarks, `dyllm make-model`). Special ids
// follow the byte-level layout: LLaDA 256 <|startoftext|> (bos), 257 <|endoftext|> (eos, pad), 258-260 header/eot,
// 261 <|mdm_mask|>; Dream 256 <|endoftext|> (bos, eos, pad), 257 <|im_start|>, 258 <|im_end|>, 259 <|mask|>.
// LLaDA: rope_theta 5e5, eps 1e-5, no biases, untied (engine/README.md §c.1); Dream: rope_theta 1e6, eps 1e-6,
// qkv biases (§c.2).
// Throws InputError when n_vocab is below 256 + byte_level_special_count(f).
ModelConfig small_config(Family f, int n_layer, int n_embd, int n_head, int n_kv_head, int n_ff, int n_vocab);

// Writes a standard HF tokenizer.json: byte-level BPE with the 256 byte tokens (GPT-2 byte-to-unicode alphabet, id =
// byte value), no merges, ByteLevel pre-tokenizer and decoder, and the family's special tokens as added_tokens (mask,
// eos, bos at the config's ids, the chat-template tokens at the next free ids >= 256). Throws InputError when a
// config id collides with a byte token or lies outside n_vocab, or n_vocab is too small.
void write_byte_level_tokenizer_json(const std::filesystem::path& path, const ModelConfig& cfg);

// The float values write_random_checkpoint draws for one tensor (before conversion to the stored dtype): norm
// weights 1, everything else N(0, weight_std) from a Box-Muller stream over std::mt19937_64 seeded by (seed, tensor
// name), so values do not depend on sharding or on the order tensors are written in.
std::vector<float> random_tensor_values(const TensorSpec& spec, uint64_t seed, float weight_std = 0.02f);

}  // namespace dyllm
