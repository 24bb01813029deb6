// Added tokens (special or not) of an HF tokenizer and their matcher: they are found in the raw text before
// normalization/pre-tokenization, leftmost first and longest at a position (HF's LeftmostLongest Aho-Corasick).
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dyllm {

struct AddedToken {
    std::string content;
    int32_t     id          = -1;
    bool        special     = false;
    bool        lstrip      = false;  // the match also swallows whitespace on its left
    bool        rstrip      = false;  // ... and on its right
    bool        single_word = false;  // matches only when not inside a word
};

class AddedTokenMatcher {
public:
    // Tokens with empty content are ignored.
    explicit AddedTokenMatcher(const std::vector<AddedToken>& tokens = {});

    struct Segment {
        size_t  b = 0, e = 0;  // byte range in the text
        int32_t id = -1;       // the added token's id, or -1 for plain text to be tokenized normally
    };
    // Covers `text` with plain and added-token segments in order (plain segments are never empty). Whitespace
    // swallowed by lstrip/rstrip belongs to the token's segment.
    std::vector<Segment> split(std::string_view text) const;

private:
    std::vector<AddedToken>                tokens_;
    std::array<std::vector<uint32_t>, 256> by_first_byte_;  // indices into tokens_, longest content first
};

}  // namespace dyllm
