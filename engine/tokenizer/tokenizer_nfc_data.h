// Unicode canonical data for NFC (generated into engine/tokenizer_nfc_data.cpp): combining classes and the
// one-level canonical decompositions, flagged where the pair recomposes (primary composites).
#pragma once
#include <cstddef>
#include <cstdint>

namespace dyllm::nfc {

struct CccRange {
    char32_t first, last;  // inclusive code point range with one canonical combining class
    uint8_t  ccc;
};
struct Decomp {
    char32_t cp, a, b;  // cp -> a b (b == 0 for a singleton decomposition)
    uint8_t  composes;  // 1: NFC composes a+b back into cp (not excluded, not a non-starter decomposition)
};

extern const CccRange kCcc[];  // sorted by first, non-zero classes only
extern const size_t   kCccCount;
extern const Decomp   kDecomp[];  // sorted by cp; Hangul syllables are algorithmic and not listed
extern const size_t   kDecompCount;

}  // namespace dyllm::nfc
