// Byte-pair-encoding model: merges applied by rank (lowest first, leftmost among equal ranks) within one pre-token,
// exactly as HF tokenizers' Word::merge_all; a cache for repeated words.
#pragma once
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "engine/tokenizer/tokenizer_model.h"

namespace dyllm {

struct BpeOptions {
    std::string unk_token;              // "" = none: characters absent from the vocabulary are dropped (HF)
    bool        fuse_unk      = false;  // consecutive unknowns become one unk id
    bool        byte_fallback = false;  // unknown characters become <0xXX> byte tokens when those exist
    bool        ignore_merges = false;  // a pre-token that is itself in the vocabulary maps to it directly (Llama-3)
};

class BpeModel final : public TokenizerModel {
public:
    // merges: in rank order (index = rank). Throws LoadError (prefixed by where) for a merge naming a token absent
    // from the vocabulary, or whose concatenation is absent.
    BpeModel(Vocab vocab, const std::vector<std::pair<std::string, std::string>>& merges, BpeOptions opt,
             const std::string& where);

    void               encode_piece(std::string_view piece, std::vector<int32_t>& out) const override;
    const std::string* id_to_token(int32_t id) const override { return vocab_.token(id); }
    int32_t            token_to_id(std::string_view tok) const override { return vocab_.find(tok); }
    int32_t            max_id() const override { return int32_t(vocab_.by_id.size()) - 1; }

    // The merge algorithm without the cache (exposed for tests).
    void merge_word(std::string_view piece, std::vector<int32_t>& out) const;

private:
    struct Merge {
        int32_t rank;
        int32_t new_id;
    };
    static uint64_t pair_key(int32_t a, int32_t b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }

    Vocab                               vocab_;
    std::unordered_map<uint64_t, Merge> merges_;
    BpeOptions                          opt_;
    int32_t                             unk_id_ = -1;

    mutable std::mutex                                            cache_mutex_;
    mutable std::unordered_map<std::string, std::vector<int32_t>> cache_;
};

// From tokenizer.json's model object (type BPE): vocab, merges as "a b" strings or ["a", "b"] pairs, options.
std::unique_ptr<BpeModel> make_bpe_model(const nlohmann::json& model, const std::string& where);

}  // namespace dyllm
