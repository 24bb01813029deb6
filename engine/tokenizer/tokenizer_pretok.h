// HF tokenizer.json normalizers and pre-tokenizers (Split, ByteLevel, Digits, Whitespace, WhitespaceSplit,
// Sequence; NFC), built from their JSON objects.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace dyllm {

// Text -> normalized text, applied to each stretch of text between added tokens.
class TokenizerNormalizer {
public:
    virtual ~TokenizerNormalizer()                         = default;
    virtual std::string apply(std::string_view text) const = 0;
};

// Pieces -> finer pieces. Input pieces are UTF-8; after a ByteLevel step they are byte-level strings (each byte as
// its GPT-2 code point). Empty pieces never come out.
class PreTokenizer {
public:
    virtual ~PreTokenizer()                                    = default;
    virtual void apply(std::vector<std::string>& pieces) const = 0;
    // True if this step (or one inside a Sequence) is ByteLevel, i.e. the model sees byte-level strings.
    virtual bool byte_level() const { return false; }
};

// Build from the "normalizer" / "pre_tokenizer" JSON value; nullptr for JSON null. `where` names the file and key
// for errors ("tokenizer.json: pre_tokenizer"). Throws LoadError for an unknown type, a missing or ill-typed field,
// or a regex that fails to compile.
std::unique_ptr<TokenizerNormalizer> make_normalizer(const nlohmann::json& j, const std::string& where,
                                                     int depth = 0);  // depth: Sequence nesting so far
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const nlohmann::json& j, const std::string& where, int depth = 0);

}  // namespace dyllm
