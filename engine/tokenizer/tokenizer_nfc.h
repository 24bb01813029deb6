// Unicode Normalization Form C (UAX #15) of UTF-8 text, for the tokenizer.json "NFC" normalizer.
#pragma once
#include <string>
#include <string_view>

namespace dyllm {

// NFC of valid UTF-8 text (ill-formed bytes are first replaced by U+FFFD). ASCII-only text is returned as is.
// ICU's normalizer and data (Unicode 15.0 in ICU 72; engine/README.md, "Tokenizer").
std::string nfc_normalize(std::string_view text);

}  // namespace dyllm
