// A checkpoint whose weights are re-stored in memory at another type when it is opened (f32, f16, bf16, q8_0, q4_0,
// or q4_k_m's mix of Q4_K and Q6_K): `dyllm bench --type` measures any checkpoint at every storage type without
// writing a file.
#pragma once
#include <memory>
#include <string>

#include "engine/io/checkpoint.h"

namespace dyllm {

// The storage type of one weight under a --type name. `tensor` is the loader's class name ("tok_embd", "lm_head",
// "wq", "wk", "wv", "wo", "w_gate", "w_up", "w_down"), layer / n_layer its position. q4_k_m follows llama.cpp's
// Q4_K_M rule: Q6_K for the LM head, and for wv and w_down in the first and last eighth of the layers and every third
// layer between; Q4_K elsewhere. A row length that is not a whole number of the type's blocks falls back to Q8_0 (32)
// or, failing that, F16.
DType restored_dtype(const std::string& type, const std::string& tensor, int layer, int n_layer, int64_t cols);

// Throws InputError "--type: unknown value 'x' (expected f32, f16, bf16, q8_0, q4_0, q4_k_m)" for a bad name.
void check_restore_type(const std::string& type);

// base's projection weights, embedding and LM head re-stored at `type` (norms and biases are kept as they are), on
// n_threads threads (quantizing an 8B model takes minutes). The base checkpoint stays open underneath (its config,
// norms, biases and directory), its weight pages handed back as each weight is done.
std::unique_ptr<Checkpoint> restore_checkpoint(std::unique_ptr<Checkpoint> base, const std::string& type,
                                               int n_threads);

}  // namespace dyllm
