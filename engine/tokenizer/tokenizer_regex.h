// PCRE2 regex (UTF + UCP, JIT when available) used by the tokenizer's Split/ByteLevel/Whitespace pre-tokenizers.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dyllm {

class TokenizerRegex {
public:
    // Compiles `pattern` (HF/Oniguruma syntax such as \p{L}, (?i:...), (?!\S) is PCRE2 syntax too). Throws LoadError
    // "<where>: regex failed to compile at offset N: <PCRE2 message>: <pattern>".
    TokenizerRegex(std::string_view pattern, const std::string& where);
    ~TokenizerRegex();
    TokenizerRegex(const TokenizerRegex&)            = delete;
    TokenizerRegex& operator=(const TokenizerRegex&) = delete;

    // [begin, end) byte ranges of the successive leftmost non-overlapping non-empty matches in `text`, which must be
    // valid UTF-8 (the tokenizer sanitizes its input first). Thread-safe. Throws InputError if PCRE2 fails at match
    // time (resource limits on pathological input).
    std::vector<std::pair<size_t, size_t>> find_all(std::string_view text) const;

    const std::string& pattern() const { return pattern_; }

private:
    std::string pattern_;
    void*       code_ = nullptr;  // pcre2_code_8*, kept opaque so PCRE2's header stays out of this one
    bool        jit_  = false;
};

}  // namespace dyllm
