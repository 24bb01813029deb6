// The tokenizer stored in a GGUF file's metadata (tokenizer.ggml.*, llama.cpp's keys): read into the engine's
// HF-compatible byte-level BPE tokenizer, and written from an HF tokenizer.json.
#pragma once
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/io/config.h"
#include "engine/io/gguf.h"
#include "engine/tokenizer/tokenizer.h"

namespace dyllm {

// The byte-level pre-tokenizers llama.cpp names in tokenizer.ggml.pre that this engine reproduces.
// "llama-bpe" (Llama-3 regex, ignore_merges), "qwen2" (Qwen2 regex, NFC normalizer), "gpt-2" (GPT-2 regex).
const char* gguf_supported_pre_names();

// The tokenizer of a GGUF file: tokenizer.ggml.model "gpt2" (byte-level BPE) with tokens, token types (CONTROL ->
// special added token, USER_DEFINED -> added token, UNUSED -> absent), merges and the pre-tokenizer by name.
// nullptr when the file has no tokenizer.ggml.model. Throws LoadError "<label>: metadata '<key>': ..." otherwise.
std::unique_ptr<Tokenizer> tokenizer_from_gguf(const GgufContents& g, const std::string& label);

// The tokenizer.* metadata of an HF tokenizer.json (and tokenizer_config.json's chat_template beside it), as
// llama.cpp's converter writes it: n_rows tokens (the embedding's rows; ids without a token padded as "[PADi]",
// UNUSED), the token types, merges as "left right", the pre-tokenizer's name, the config's special ids, the chat
// template (the family's own when the config has none). Also the engine's own keys dyllm.tokenizer.normalizer and
// dyllm.tokenizer.ignore_merges, so a tokenizer whose normalizer or merge option differs from its pre-tokenizer's
// usual one reads back exactly. Throws LoadError naming the file for a tokenizer GGUF cannot describe.
std::vector<std::pair<std::string, GgufValue>> gguf_tokenizer_metadata(const std::filesystem::path& tokenizer_json,
                                                                       const ModelConfig&           cfg);

// The family's chat template in Jinja (the same text apply_chat_template produces for one user turn).
std::string family_chat_template_jinja(Family family);

}  // namespace dyllm
