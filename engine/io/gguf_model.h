// The model side of a GGUF file: llama.cpp's architecture names ("llada", "dream"), its hyper-parameter keys and
// tensor names for them, the model config read from the metadata, and the GGUF checkpoint (engine/io/checkpoint.h).
#pragma once
#include <filesystem>
#include <memory>
#include <string>

#include "engine/io/checkpoint.h"
#include "engine/io/checkpoint_layout.h"
#include "engine/io/gguf.h"

namespace dyllm {

// "llada" / "dream": general.architecture and the prefix of the hyper-parameter keys.
const char* gguf_arch_name(Family f);

// llama.cpp's tensor name for a role ("token_embd.weight", "blk.3.attn_q.weight", "output.weight", ...).
std::string gguf_tensor_name(TensorRole role, int layer);

// The GGUF shape (ggml order) of a tensor of the HF layout: [out, in] -> {in, out}, [n] -> {n}.
std::vector<int64_t> gguf_shape(const std::vector<int64_t>& hf_shape);

// llama.cpp's LLaDA converter stores q/k rows permuted for its interleaved ("normal") RoPE: within each head of
// head_dim rows, HF row t * head_dim/2 + j is stored at row 2j + t. These map one row of a [n_head * head_dim, ...]
// tensor between the two orders; the engine's RoPE rotates the HF halves, so the loader undoes the permutation and
// the writer applies it.
int64_t gguf_llada_qk_file_row(int64_t hf_row, int64_t head_dim);

// The model config from the metadata (architecture, block count, lengths, heads, RoPE base, eps, token ids) and the
// tensors (vocabulary rows, biases, tied head). Throws LoadError "<label>: metadata '<key>': ..." for a missing,
// ill-typed or out-of-limit value.
ModelConfig gguf_model_config(const GgufContents& g, const std::string& label);

// Opens a .gguf file as a checkpoint: every expected tensor present with the shape the metadata implies, 1-D tensors
// (norms, biases) stored as F32/F16/BF16; weight views may be quantized.
std::unique_ptr<Checkpoint> open_gguf_checkpoint(const std::filesystem::path& path);

}  // namespace dyllm
