// Writing a checkpoint as a GGUF file in llama.cpp's layout ("llada" / "dream" metadata and tensor names, the
// tokenizer and chat template), at one of the file types `dyllm quantize` offers.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "engine/io/checkpoint.h"
#include "engine/io/checkpoint_layout.h"

namespace dyllm {

enum class GgufFileType : uint8_t { F32, F16, BF16, Q8_0, Q4_0, Q4_K_M };

// "f32", "f16", "bf16", "q8_0", "q4_0", "q4_k_m" (any case); false for anything else.
bool        parse_gguf_file_type(const std::string& s, GgufFileType* out);
const char* gguf_file_type_name(GgufFileType t);
const char* gguf_file_type_choices();  // "f32, f16, bf16, q8_0, q4_0, q4_k_m"
// llama.cpp's general.file_type value (llama_ftype).
uint32_t gguf_llama_ftype(GgufFileType t);

// The stored type of one tensor at file type t, by llama.cpp's rules: 1-D tensors F32; q4_k_m is Q4_K with Q6_K for
// the output head (the tied embedding with it) and for attn_v and ffn_down on the layers llama.cpp's use_more_bits
// picks (the first and last eighth, and every third between); q4_0 keeps the head at Q6_K as llama.cpp does. A row
// length that is not a whole number of blocks falls back (Q4_K -> Q4_0, Q6_K -> Q8_0, then F16), as llama.cpp falls
// back, except that its Q5_0 becomes Q4_0 here (a type this engine reads).
DType gguf_tensor_dtype(GgufFileType t, TensorRole role, int layer, int n_layer, const std::vector<int64_t>& hf_shape,
                        bool tied);

struct GgufExportProgress {
    size_t      done = 0, total = 0;  // tensors written so far / in all
    std::string tensor;               // the GGUF name of the tensor just written
    DType       dtype = DType::F32;
};

// Writes ck (every tensor, converted or quantized to its stored type; LLaDA's q/k rows permuted as llama.cpp's
// converter does) with the tokenizer of tokenizer_json when that path is not empty, to `out` under a temporary name
// renamed on success. Throws LoadError for a tokenizer GGUF cannot describe or a write failure.
void export_gguf(const Checkpoint& ck, const std::filesystem::path& tokenizer_json, const std::filesystem::path& out,
                 GgufFileType type, const std::string& model_name,
                 const std::function<void(const GgufExportProgress&)>& progress = {});

}  // namespace dyllm
