// HF tokenizer.json: byte-level BPE (LLaDA, Qwen2/Dream and the built-in models) and WordLevel; added/special tokens
// matched before BPE; decoding back to exact UTF-8. Plus the chat templates of both families.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "engine/io/config.h"

namespace dyllm {

class Tokenizer {
public:
    // Loads tokenizer.json (and tokenizer_config.json beside it when present). Throws LoadError naming the file and
    // what is wrong (bad JSON, unknown model type, merge naming an unknown token, ...).
    static std::unique_ptr<Tokenizer> load(const std::filesystem::path& tokenizer_json);
    // The same from a tokenizer.json object held in memory (no tokenizer_config.json); `label` names it in errors.
    static std::unique_ptr<Tokenizer> from_json(const nlohmann::json& root, const std::string& label);
    virtual ~Tokenizer() = default;

    // Text -> ids. Added/special tokens written literally in the text are matched first (HF default behaviour).
    virtual std::vector<int32_t> encode(std::string_view text) const = 0;
    // Ids -> UTF-8 text. skip_special drops special tokens (HF skip_special_tokens=True).
    virtual std::string decode(std::span<const int32_t> ids, bool skip_special = false) const = 0;
    // The token's display text (decoded bytes, or the special token's content); "" for an unknown id.
    virtual std::string token_text(int32_t id) const           = 0;
    virtual int32_t     token_id(std::string_view token) const = 0;  // -1 if absent
    virtual bool        is_special(int32_t id) const           = 0;
    virtual int         vocab_size() const                     = 0;  // highest id + 1
};

// The family's chat template applied to one user message, with the assistant generation prompt
// (engine/README.md §c.1, §c.2):
// LLaDA: <|startoftext|><|start_header_id|>user<|end_header_id|>\n\n{msg}<|eot_id|><|start_header_id|>assistant...
// Dream: ChatML with the default system message.
std::string apply_chat_template(Family family, std::string_view user_message);

}  // namespace dyllm
