// Vocab display helpers: token text with whitespace made visible, "#id" fallback without a tokenizer.
#include "app/model/vocab.h"

namespace dyllm::app {

std::string visible_token_text(const std::string& s) {
    if (s.empty()) return "\xE2\x88\x85";  // U+2205 empty set: an empty token is still something
    bool all_space = true;
    for (char ch : s) all_space = all_space && ch == ' ';
    std::string out;
    if (all_space) {
        for (size_t i = 0; i < s.size(); ++i) out += "\xC2\xB7";  // U+00B7 middle dot per space
        return out;
    }
    for (unsigned char ch : s) {
        if (ch == '\n') out += "\\n";
        else if (ch == '\t') out += "\\t";
        else if (ch == '\r') out += "\\r";
        else if (ch < 0x20 || ch == 0x7f) {
            static const char* kHex = "0123456789abcdef";
            out += "\\x";
            out += kHex[ch >> 4];
            out += kHex[ch & 15];
        } else out += char(ch);
    }
    return out;
}

std::string Vocab::display(int32_t id) const {
    if (id < 0) return "?";
    if (has_tokenizer && size_t(id) < text.size()) return visible_token_text(text[id]);
    return "#" + std::to_string(id);
}

}  // namespace dyllm::app
