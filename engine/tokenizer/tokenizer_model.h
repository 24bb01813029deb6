// The model stage of an HF tokenizer (pre-token -> ids): the shared vocabulary and the interface that BPE
// (engine/bpe.h) and WordLevel implement; make_tokenizer_model picks one from tokenizer.json's "model".
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace dyllm {

struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using TokenMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

// token <-> id, ids unique (not necessarily dense).
struct Vocab {
    TokenMap                 to_id;
    std::vector<std::string> by_id;    // "" where no token has the id
    std::vector<uint8_t>     present;  // 1 where by_id[id] is a token

    int32_t find(std::string_view tok) const {
        auto it = to_id.find(tok);
        return it == to_id.end() ? -1 : it->second;
    }
    const std::string* token(int32_t id) const {
        return id >= 0 && size_t(id) < by_id.size() && present[id] ? &by_id[id] : nullptr;
    }
    // Adds a token; throws LoadError (prefixed by where) for a negative or too large id or a duplicate id.
    void add(const std::string& tok, int64_t id, const std::string& where);
};

// Largest id accepted (16M): far above any real vocabulary (LLaDA 126k, Qwen2 152k), small enough that the id
// tables stay bounded when a corrupt file names a huge id.
inline constexpr int64_t kMaxTokenId = (int64_t(1) << 24) - 1;

// Parses the model's "vocab" object {token: id}. Throws LoadError naming `where` for a non-object, a non-integer id
// or a duplicate id.
Vocab parse_vocab(const nlohmann::json& vocab, const std::string& where);

class TokenizerModel {
public:
    virtual ~TokenizerModel() = default;
    // One pre-token (UTF-8, or a byte-level string after a ByteLevel pre-tokenizer) -> ids appended to out.
    virtual void               encode_piece(std::string_view piece, std::vector<int32_t>& out) const = 0;
    virtual const std::string* id_to_token(int32_t id) const           = 0;  // nullptr for an unknown id
    virtual int32_t            token_to_id(std::string_view tok) const = 0;  // -1 if absent
    virtual int32_t            max_id() const                          = 0;  // -1 for an empty vocabulary
};

// From tokenizer.json's "model" object: "BPE" or "WordLevel" (the type key may be absent for BPE files written by
// old versions, which HF also reads as BPE when "merges" is present). Throws LoadError naming `where`.
std::unique_ptr<TokenizerModel> make_tokenizer_model(const nlohmann::json& model, const std::string& where);

// WordLevel: each pre-token is looked up whole; unknown ones become unk_token (engine/tokenizer_wordlevel.cpp).
std::unique_ptr<TokenizerModel> make_wordlevel_model(const nlohmann::json& model, const std::string& where);

}  // namespace dyllm
