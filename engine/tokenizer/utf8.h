// UTF-8 helpers for the tokenizer: decoding one code point, encoding, and lossy repair of invalid byte sequences
// (U+FFFD per maximal ill-formed subpart, Unicode 15 ch. 3.9 "U+FFFD Substitution of Maximal Subparts").
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace dyllm {

inline constexpr char32_t kReplacementChar = 0xFFFD;

// Decodes the well-formed code point starting at s[i] and advances i past it. On an ill-formed sequence returns
// false and advances i past the maximal subpart (at least one byte), leaving cp = U+FFFD.
bool utf8_next(std::string_view s, size_t& i, char32_t& cp);

// Appends cp's UTF-8 encoding (surrogates and values above U+10FFFF become U+FFFD).
void utf8_append(std::string& out, char32_t cp);

bool utf8_valid(std::string_view s);

// Copy of s with every maximal ill-formed subpart replaced by U+FFFD (the same output as Rust's
// String::from_utf8_lossy, which HF tokenizers uses when decoding byte-level tokens).
std::string utf8_sanitize(std::string_view s);

// Number of code points; each ill-formed subpart counts as one.
size_t utf8_length(std::string_view s);

}  // namespace dyllm
