// GPT-2's reversible byte <-> printable-code-point table used by byte-level BPE (LLaDA, Llama-3, Qwen2/Dream).
#pragma once
#include <array>
#include <string>
#include <string_view>

namespace dyllm {

// byte -> code point: printable Latin-1 bytes ('!'..'~', '¡'..'¬', '®'..'ÿ') map to themselves, the other 68 bytes
// to U+0100, U+0101, ... in byte order (GPT-2 encoder.py bytes_to_unicode).
const std::array<char32_t, 256>& byte_to_unicode_table();
// Inverse of the table; -1 for a code point that no byte maps to.
int unicode_to_byte(char32_t cp);

// Each byte of `bytes` as its table code point, UTF-8 encoded ("hi there" -> "hiĠthere").
std::string bytes_to_unicode_string(std::string_view bytes);
// Inverse: appends the bytes of a byte-level token string to out; false (out unchanged) if some code point of
// `token` is not in the table or `token` is not valid UTF-8.
bool unicode_string_to_bytes(std::string_view token, std::string& out);

}  // namespace dyllm
