// Unicode Normalization Form C (UAX #15): canonical decomposition, canonical ordering, canonical composition.
#pragma once
#include <string>
#include <string_view>

namespace dyllm {

// NFC of valid UTF-8 text (ill-formed bytes are first replaced by U+FFFD). ASCII-only text is returned as is.
// Data: Unicode 14.0 (engine/tokenizer_nfc_data.cpp), which HF's normalizer data predates or matches for every
// character assigned before 2021.
std::string nfc_normalize(std::string_view text);

}  // namespace dyllm
