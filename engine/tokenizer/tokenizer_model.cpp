// Vocabulary parsing (ids unique and bounded) and the choice of tokenizer model from tokenizer.json's "model".
#include "engine/tokenizer/tokenizer_model.h"

#include "engine/io/json_file.h"
#include "engine/tokenizer/bpe.h"
#include "engine/tokenizer/tokenizer_json.h"

namespace dyllm {

using tokjson::json;

void Vocab::add(const std::string& tok, int64_t id, const std::string& where) {
    if (id < 0 || id > kMaxTokenId)
        throw LoadError(where + ": token '" + text_excerpt(tok) + "' has id " + std::to_string(id) + ", outside [0, " +
                        std::to_string(kMaxTokenId) + "]");
    if (size_t(id) >= by_id.size()) {
        by_id.resize(size_t(id) + 1);
        present.resize(size_t(id) + 1, 0);
    }
    if (present[id])
        throw LoadError(where + ": duplicate id " + std::to_string(id) + " for tokens '" + text_excerpt(by_id[id]) +
                        "' and '" + text_excerpt(tok) + "'");
    by_id[id]   = tok;
    present[id] = 1;
    to_id.emplace(tok, int32_t(id));
}

Vocab parse_vocab(const json& vocab, const std::string& where) {
    if (!vocab.is_object()) throw LoadError(where + ": expected an object {token: id}, got " + vocab.type_name());
    // HF refuses to encode anything with an empty vocabulary; so does this loader, at load time.
    if (vocab.empty()) throw LoadError(where + ": the vocabulary is empty");
    Vocab v;
    v.to_id.reserve(vocab.size());
    for (auto it = vocab.begin(); it != vocab.end(); ++it) {
        if (!it.value().is_number_integer())
            throw LoadError(where + ": token '" + text_excerpt(it.key()) + "' has a non-integer id " +
                            json_excerpt(it.value()));
        v.add(it.key(), it.value().get<int64_t>(), where);
    }
    return v;
}

std::unique_ptr<TokenizerModel> make_tokenizer_model(const json& model, const std::string& where) {
    if (!model.is_object()) throw LoadError(where + ": expected an object, got " + model.type_name());
    std::string type = tokjson::get_string(model, "type", where);
    if (type.empty() && model.contains("merges")) type = "BPE";
    if (type == "BPE") return make_bpe_model(model, where);
    if (type == "WordLevel") return make_wordlevel_model(model, where);
    throw LoadError(where + ".type: unsupported model type '" + text_excerpt(type) + "' (supported: BPE, WordLevel)");
}

}  // namespace dyllm
