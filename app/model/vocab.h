// An immutable copy of a model's vocabulary made on the engine worker after a load, so the UI thread can show token
// text without touching engine memory (widgets never read engine memory).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace dyllm::app {

struct Vocab {
    std::vector<std::string> text;     // token_text(id) per id
    std::vector<uint8_t>     special;  // 1 for special/added tokens
    int32_t                  mask_id = -1, eos_id = -1;
    bool                     has_tokenizer = false;  // false: weight-only checkpoint, ids shown as "#id"

    // Text for display in one cell: control characters made visible, never empty.
    std::string display(int32_t id) const;
    bool        is_special(int32_t id) const { return id >= 0 && size_t(id) < special.size() && special[id]; }
};

// Makes whitespace and control bytes visible: '\n' -> "\\n", '\t' -> "\\t", a token of spaces -> middle dots.
std::string visible_token_text(const std::string& s);

}  // namespace dyllm::app
