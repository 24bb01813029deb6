// The chat templates of both families applied to a single user turn plus the assistant generation prompt.
#include <string>

#include "engine/tokenizer/tokenizer.h"

namespace dyllm {

namespace {
// Python str.strip(): the Jinja template's `| trim` strips Unicode whitespace; ASCII whitespace covers typed prompts.
std::string_view strip(std::string_view s) {
    const char*  ws = " \t\n\r\v\f";
    const size_t b  = s.find_first_not_of(ws);
    if (b == std::string_view::npos) return {};
    return s.substr(b, s.find_last_not_of(ws) - b + 1);
}
}  // namespace

std::string apply_chat_template(Family family, std::string_view user_message) {
    std::string out;
    if (family == Family::LLaDA) {
        // engine/README.md §c.1: LLaDA-8B-Instruct's tokenizer_config.json chat_template (Llama-3 header-id
        // style), which trims the message and opens with <|startoftext|> itself (add_bos_token is false, so no
        // second BOS).
        out += "<|startoftext|><|start_header_id|>user<|end_header_id|>\n\n";
        out += strip(user_message);
        out += "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n";
    } else {
        // engine/README.md §c.2: Dream uses Qwen2.5's ChatML template with its default system message; the
        // message is kept verbatim (no trim).
        out += "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n";
        out += user_message;
        out += "<|im_end|>\n<|im_start|>assistant\n";
    }
    return out;
}

}  // namespace dyllm
