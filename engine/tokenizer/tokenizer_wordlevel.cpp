// WordLevel tokenizer model: whole pre-tokens looked up in the vocabulary, unknown ones mapped to unk_token.
#include "engine/tokenizer/tokenizer_json.h"
#include "engine/tokenizer/tokenizer_model.h"

namespace dyllm {

namespace {

class WordLevelModel final : public TokenizerModel {
public:
    WordLevelModel(Vocab vocab, std::string unk) : vocab_(std::move(vocab)), unk_(std::move(unk)) {
        unk_id_ = vocab_.find(unk_);
    }
    void encode_piece(std::string_view piece, std::vector<int32_t>& out) const override {
        if (piece.empty()) return;
        int32_t id = vocab_.find(piece);
        if (id < 0) id = unk_id_;
        if (id < 0)  // HF fails the same way (WordLevel "missing unk token")
            throw InputError("WordLevel tokenizer: '" + std::string(piece) +
                             "' is not in the vocabulary and the unk "
                             "token '" +
                             unk_ + "' is not either");
        out.push_back(id);
    }
    const std::string* id_to_token(int32_t id) const override { return vocab_.token(id); }
    int32_t            token_to_id(std::string_view tok) const override { return vocab_.find(tok); }
    int32_t            max_id() const override { return int32_t(vocab_.by_id.size()) - 1; }

private:
    Vocab       vocab_;
    std::string unk_;
    int32_t     unk_id_ = -1;
};

}  // namespace

std::unique_ptr<TokenizerModel> make_wordlevel_model(const tokjson::json& model, const std::string& where) {
    Vocab       vocab = parse_vocab(tokjson::require(model, "vocab", where), where + ".vocab");
    std::string unk   = tokjson::get_string(model, "unk_token", where);
    const bool  given = !unk.empty();
    if (!given) unk = "<unk>";  // HF's default for WordLevel
    if (given && vocab.find(unk) < 0) throw LoadError(where + ".unk_token: '" + unk + "' is not in the vocabulary");
    return std::make_unique<WordLevelModel>(std::move(vocab), std::move(unk));
}

}  // namespace dyllm
