// Tokenizer::load for HF tokenizer.json (+ tokenizer_config.json) and the HF-compatible tokenizer built from it:
// added tokens first, then normalizer -> pre-tokenizer -> model (BPE/WordLevel); decode through the decoder.
#include "engine/tokenizer/tokenizer.h"

#include "engine/io/json_file.h"
#include "engine/tokenizer/byte_unicode.h"
#include "engine/tokenizer/tokenizer_added.h"
#include "engine/tokenizer/tokenizer_json.h"
#include "engine/tokenizer/tokenizer_model.h"
#include "engine/tokenizer/tokenizer_pretok.h"
#include "engine/tokenizer/utf8.h"

namespace dyllm {

using tokjson::json;

namespace {

// The decoders in use by byte-level BPE files (ByteLevel) and the HF default when "decoder" is null.
enum class DecoderKind { JoinWithSpace, ByteLevel };

DecoderKind parse_decoder(const json& j, const std::string& where, int depth = 0) {
    if (j.is_null()) return DecoderKind::JoinWithSpace;  // HF: tokens joined with " " when no decoder is set
    if (depth >= tokjson::kMaxNesting) throw LoadError(where + ": Sequence decoders nested too deep");
    const std::string type = tokjson::require_string(j, "type", where);
    if (type == "ByteLevel") return DecoderKind::ByteLevel;
    if (type == "Sequence") {
        const json& ds = tokjson::require(j, "decoders", where);
        if (ds.is_array() && ds.size() == 1) return parse_decoder(ds[0], where + ".decoders[0]", depth + 1);
        throw LoadError(where + ": only a Sequence holding a single supported decoder is supported");
    }
    throw LoadError(where + ": unsupported decoder type '" + text_excerpt(type) + "' (supported: ByteLevel, none)");
}

// A key that may be absent: null when it is (a reference into root, never a copy of the sub-object).
const json& optional_key(const json& root, const char* key) {
    static const json kNull;
    auto              it = root.find(key);
    return it == root.end() ? kNull : *it;
}

class HfTokenizer final : public Tokenizer {
public:
    std::unique_ptr<TokenizerModel>      model;
    std::unique_ptr<TokenizerNormalizer> normalizer;
    std::unique_ptr<PreTokenizer>        pre_tokenizer;
    DecoderKind                          decoder = DecoderKind::JoinWithSpace;
    std::vector<AddedToken>              added;        // in file order
    std::vector<int32_t>                 added_index;  // id -> index into added, -1 where none
    AddedTokenMatcher                    matcher;

    std::vector<int32_t> encode(std::string_view text) const override {
        // HF takes Rust strings, which are valid UTF-8 by construction; invalid bytes reaching us (CLI arguments,
        // files) are replaced by U+FFFD per maximal ill-formed subpart before anything else.
        std::string owned;
        if (!utf8_valid(text)) {
            owned = utf8_sanitize(text);
            text  = owned;
        }
        std::vector<int32_t>     ids;
        std::vector<std::string> pieces;
        for (const auto& seg : matcher.split(text)) {
            if (seg.id >= 0) {
                ids.push_back(seg.id);
                continue;
            }
            const std::string_view plain = text.substr(seg.b, seg.e - seg.b);
            pieces.clear();
            pieces.emplace_back(normalizer ? normalizer->apply(plain) : std::string(plain));
            if (pre_tokenizer) pre_tokenizer->apply(pieces);
            for (const auto& p : pieces) model->encode_piece(p, ids);
        }
        return ids;
    }

    const AddedToken* added_token(int32_t id) const {
        return id >= 0 && size_t(id) < added_index.size() && added_index[id] >= 0 ? &added[added_index[id]] : nullptr;
    }

    std::string decode(std::span<const int32_t> ids, bool skip_special) const override {
        std::string out;
        bool        first = true;
        for (int32_t id : ids) {
            const std::string* tok = nullptr;
            if (const AddedToken* a = added_token(id)) {
                if (skip_special && a->special) continue;
                tok = &a->content;
            } else {
                tok = model->id_to_token(id);
            }
            if (!tok) continue;  // unknown id: contributes nothing
            if (decoder == DecoderKind::ByteLevel) {
                // HF ByteLevel decoder: a token whose characters are all in the byte table becomes those bytes,
                // any other token (e.g. an added token with non-Latin-1 text) is kept as its UTF-8 text.
                if (!unicode_string_to_bytes(*tok, out)) out += *tok;
            } else {
                if (!first) out += ' ';
                out += *tok;
            }
            first = false;
        }
        // A token sequence may end (or be cut) inside a multi-byte character: like HF (String::from_utf8_lossy),
        // each maximal ill-formed byte subsequence becomes one U+FFFD, so the result is always valid UTF-8.
        return utf8_valid(out) ? out : utf8_sanitize(out);
    }

    std::string token_text(int32_t id) const override {
        if (!added_token(id) && !model->id_to_token(id)) return {};
        const int32_t one[1] = {id};
        return decode(one, false);
    }

    int32_t token_id(std::string_view token) const override {
        for (const auto& a : added)
            if (a.content == token) return a.id;
        return model->token_to_id(token);
    }

    bool is_special(int32_t id) const override {
        const AddedToken* a = added_token(id);
        return a && a->special;
    }

    int vocab_size() const override { return std::max<int>(model->max_id() + 1, int(added_index.size())); }

    void add_token(AddedToken t, const std::string& where) {
        if (t.id < 0 || t.id > kMaxTokenId)
            throw LoadError(where + ": added token '" + text_excerpt(t.content) + "' has id " + std::to_string(t.id) +
                            ", outside [0, " + std::to_string(kMaxTokenId) + "]");
        if (size_t(t.id) >= added_index.size()) added_index.resize(size_t(t.id) + 1, -1);
        if (added_index[t.id] >= 0)
            throw LoadError(where + ": duplicate id " + std::to_string(t.id) + " for added tokens '" +
                            text_excerpt(added[added_index[t.id]].content) + "' and '" + text_excerpt(t.content) + "'");
        added_index[t.id] = int32_t(added.size());
        added.push_back(std::move(t));
    }
};

AddedToken parse_added_token(const json& j, int64_t id, const std::string& where) {
    AddedToken t;
    t.content     = tokjson::require_string(j, "content", where);
    t.id          = int32_t(std::clamp<int64_t>(id, -1, kMaxTokenId + 1));  // range checked by add_token
    t.special     = tokjson::get_bool(j, "special", false, where);
    t.lstrip      = tokjson::get_bool(j, "lstrip", false, where);
    t.rstrip      = tokjson::get_bool(j, "rstrip", false, where);
    t.single_word = tokjson::get_bool(j, "single_word", false, where);
    return t;
}

// tokenizer_config.json (transformers): added_tokens_decoder may list tokens tokenizer.json lacks; eos_token and
// additional_special_tokens mark tokens special. Everything here is optional.
void apply_tokenizer_config(HfTokenizer& tok, const std::filesystem::path& path) {
    const json        cfg = read_json_file(path, kMaxTokenizerConfigJsonBytes, "tokenizer_config.json");
    const std::string f   = path.string();
    if (!cfg.is_object()) throw LoadError(f + ": expected a JSON object, got " + cfg.type_name());
    if (auto it = cfg.find("added_tokens_decoder"); it != cfg.end() && it->is_object()) {
        for (auto e = it->begin(); e != it->end(); ++e) {
            const std::string where = f + ": added_tokens_decoder." + text_excerpt(e.key());
            int64_t           id    = -1;
            try {
                size_t used = 0;
                id          = std::stoll(e.key(), &used);
                if (used != e.key().size()) id = -1;
            } catch (const std::exception&) {
            }
            if (id < 0) throw LoadError(where + ": key is not a token id");
            if (tok.added_token(int32_t(std::min<int64_t>(id, kMaxTokenId + 1)))) continue;  // tokenizer.json wins
            AddedToken t = parse_added_token(e.value(), id, where);
            if (const std::string* existing = tok.model->id_to_token(int32_t(std::min<int64_t>(id, kMaxTokenId))))
                if (*existing == t.content && !t.special) continue;  // already an ordinary vocabulary token
            tok.add_token(std::move(t), where);
        }
    }
    auto mark_special = [&](const json& v) {
        std::string name;
        if (v.is_string()) {
            name = v.get<std::string>();
        } else if (v.is_object()) {
            auto c = v.find("content");
            if (c != v.end() && c->is_string()) name = c->get<std::string>();
        }
        for (auto& a : tok.added)
            if (!name.empty() && a.content == name) a.special = true;
    };
    for (const char* key : {"eos_token", "bos_token", "pad_token", "unk_token", "mask_token"})
        if (auto it = cfg.find(key); it != cfg.end()) mark_special(*it);
    if (auto it = cfg.find("additional_special_tokens"); it != cfg.end() && it->is_array())
        for (const auto& v : *it) mark_special(v);
}

// The tokenizer of a tokenizer.json root object, without tokenizer_config.json and before the matcher is built.
std::unique_ptr<HfTokenizer> build_from_json(const json& root, const std::string& f) {
    if (!root.is_object()) throw LoadError(f + ": expected a JSON object at the top level, got " + root.type_name());
    auto tok           = std::make_unique<HfTokenizer>();
    tok->model         = make_tokenizer_model(tokjson::require(root, "model", f), f + ": model");
    tok->normalizer    = make_normalizer(optional_key(root, "normalizer"), f + ": normalizer");
    tok->pre_tokenizer = make_pre_tokenizer(optional_key(root, "pre_tokenizer"), f + ": pre_tokenizer");
    tok->decoder       = parse_decoder(optional_key(root, "decoder"), f + ": decoder");

    if (auto it = root.find("added_tokens"); it != root.end() && !it->is_null()) {
        if (!it->is_array()) throw LoadError(f + ": added_tokens: expected an array, got " + it->type_name());
        for (size_t k = 0; k < it->size(); ++k) {
            const json&       a     = (*it)[k];
            const std::string where = f + ": added_tokens[" + std::to_string(k) + "]";
            const json&       jid   = tokjson::require(a, "id", where);
            if (!jid.is_number_integer()) throw LoadError(where + ".id: expected an integer, got " + json_excerpt(jid));
            tok->add_token(parse_added_token(a, jid.get<int64_t>(), where), where);
        }
    }
    return tok;
}

}  // namespace

std::unique_ptr<Tokenizer> Tokenizer::load(const std::filesystem::path& tokenizer_json) {
    const std::string f = tokenizer_json.string();
    std::error_code   ec;
    // read_json_file refuses directories, FIFOs, devices, symlink loops and oversized files with one line each.
    auto       tok = build_from_json(read_json_file(tokenizer_json, kMaxTokenizerJsonBytes, "tokenizer.json"), f);
    const auto cfg = tokenizer_json.parent_path() / "tokenizer_config.json";
    // Present in any form (a FIFO, a directory, a dangling link): read, so that the reader refuses it with one line.
    if (std::filesystem::exists(std::filesystem::symlink_status(cfg, ec))) apply_tokenizer_config(*tok, cfg);
    tok->matcher = AddedTokenMatcher(tok->added);
    return tok;
}

std::unique_ptr<Tokenizer> Tokenizer::from_json(const nlohmann::json& root, const std::string& label) {
    auto tok     = build_from_json(root, label);
    tok->matcher = AddedTokenMatcher(tok->added);
    return tok;
}

}  // namespace dyllm
