// GGUF tokenizer metadata <-> the engine's tokenizer: the reader rebuilds the tokenizer.json object that the
// metadata describes (vocabulary, merges, added tokens, the named pre-tokenizer) and hands it to Tokenizer::from_json,
// so a GGUF tokenizer runs the same code as the HF file; the writer produces llama.cpp's keys from tokenizer.json.
#include "engine/tokenizer/tokenizer_gguf.h"

#include <cstring>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "engine/errors.h"
#include "engine/io/json_file.h"
#include "engine/tokenizer/tokenizer_model.h"

namespace dyllm {

namespace {

using json = nlohmann::json;

// llama.cpp's token types (llama_token_type).
enum TokenType : int32_t { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

// The regexes of the pre-tokenizers (as the HF tokenizer.json files of Llama-3 and Qwen2 write them).
constexpr const char* kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

struct PreSpec {
    const char* name;
    const char* regex;          // nullptr: GPT-2's regex inside the ByteLevel step
    bool        nfc;            // the usual normalizer of tokenizers with this pre-tokenizer
    bool        ignore_merges;  // the usual BPE option
};
constexpr PreSpec kPres[] = {
    {"llama-bpe", kLlama3Regex, false, true},
    {"qwen2", kQwen2Regex, true, false},
    {"gpt-2", nullptr, false, false},
};

const PreSpec* find_pre(const std::string& name) {
    for (const auto& p : kPres)
        if (name == p.name) return &p;
    // llama.cpp's aliases for the same regex. ("default", llama.cpp's fallback, is a regex set of its own.)
    if (name == "llama3" || name == "llama-v3") return &kPres[0];
    return nullptr;
}

json pre_tokenizer_json(const PreSpec& p) {
    if (!p.regex)
        return {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}};
    return {
        {"type", "Sequence"},
        {"pretokenizers",
         json::array(
             {{{"type", "Split"}, {"pattern", {{"Regex", p.regex}}}, {"behavior", "Isolated"}, {"invert", false}},
              {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}}})}};
}

// Which named pre-tokenizer a tokenizer.json's pre_tokenizer is (its Split regex, or GPT-2's ByteLevel regex).
const PreSpec* classify_pre(const json& pre) {
    if (!pre.is_object()) return nullptr;
    const std::string type = pre.value("type", "");
    if (type == "ByteLevel")
        return pre.value("use_regex", true) && !pre.value("add_prefix_space", true) ? &kPres[2] : nullptr;
    if (type != "Sequence") return nullptr;
    const auto it = pre.find("pretokenizers");
    if (it == pre.end() || !it->is_array() || it->size() != 2) return nullptr;
    const json& split = (*it)[0];
    const json& bl    = (*it)[1];
    if (!split.is_object() || split.value("type", "") != "Split" || split.value("behavior", "") != "Isolated" ||
        split.value("invert", false))
        return nullptr;
    if (!bl.is_object() || bl.value("type", "") != "ByteLevel" || bl.value("use_regex", true) ||
        bl.value("add_prefix_space", true))
        return nullptr;
    const auto pat = split.find("pattern");
    if (pat == split.end() || !pat->is_object() || !pat->contains("Regex") || !(*pat)["Regex"].is_string())
        return nullptr;
    const std::string re = (*pat)["Regex"].get<std::string>();
    for (const auto& p : kPres)
        if (p.regex && re == p.regex) return &p;
    return nullptr;
}

[[noreturn]] void fail(const std::string& label, const std::string& key, const std::string& what) {
    throw LoadError(label + ": metadata '" + key + "': " + what);
}

const GgufValue& require_strings(const GgufContents& g, const std::string& label, const char* key) {
    const GgufValue* v = g.find(key);
    if (!v) fail(label, key, "missing");
    if (v->type != GgufType::ARRAY || v->elem != GgufType::STRING)
        fail(label, key,
             std::string("type ") + gguf_type_name(v->type) +
                 (v->type == GgufType::ARRAY ? std::string(" of ") + gguf_type_name(v->elem) : std::string()) +
                 ", expected ARRAY of STRING");
    return *v;
}

int64_t int_of(const GgufValue& v) {
    switch (v.type) {
        case GgufType::I8:
        case GgufType::I16:
        case GgufType::I32:
        case GgufType::I64:
            return v.i;
        default:
            return v.u > uint64_t(INT64_MAX) ? -1 : int64_t(v.u);
    }
}

}  // namespace

const char* gguf_supported_pre_names() {
    return "llama-bpe, qwen2, gpt-2";
}

std::unique_ptr<Tokenizer> tokenizer_from_gguf(const GgufContents& g, const std::string& label) {
    const GgufValue* mv = g.find("tokenizer.ggml.model");
    if (!mv) return nullptr;
    if (mv->type != GgufType::STRING)
        fail(label, "tokenizer.ggml.model", std::string("type ") + gguf_type_name(mv->type) + ", expected STRING");
    if (mv->str != "gpt2")
        fail(label, "tokenizer.ggml.model",
             "'" + text_excerpt(mv->str) + "' is not supported (supported: gpt2, byte-level BPE)");
    const GgufValue& tokens = require_strings(g, label, "tokenizer.ggml.tokens");
    if (tokens.count == 0) fail(label, "tokenizer.ggml.tokens", "empty");
    if (tokens.count > uint64_t(kMaxTokenId) + 1)
        fail(label, "tokenizer.ggml.tokens",
             std::to_string(tokens.count) + " tokens exceed the limit " + std::to_string(kMaxTokenId + 1));
    const GgufValue* types = g.find("tokenizer.ggml.token_type");
    if (types) {
        if (types->type != GgufType::ARRAY ||
            !(types->elem == GgufType::I32 || types->elem == GgufType::U32 || types->elem == GgufType::I8 ||
              types->elem == GgufType::U8 || types->elem == GgufType::I16 || types->elem == GgufType::U16))
            fail(label, "tokenizer.ggml.token_type", "expected an ARRAY of INT32");
        if (types->count != tokens.count)
            fail(label, "tokenizer.ggml.token_type",
                 std::to_string(types->count) + " entries for " + std::to_string(tokens.count) + " tokens");
    }
    const GgufValue* pv = g.find("tokenizer.ggml.pre");
    if (!pv) fail(label, "tokenizer.ggml.pre", std::string("missing (supported: ") + gguf_supported_pre_names() + ")");
    if (pv->type != GgufType::STRING)
        fail(label, "tokenizer.ggml.pre", std::string("type ") + gguf_type_name(pv->type) + ", expected STRING");
    const std::string& pre_name = pv->str;
    const PreSpec*     pre      = find_pre(pre_name);
    if (!pre)
        fail(label, "tokenizer.ggml.pre",
             "'" + text_excerpt(pre_name) + "' is not supported (supported: " + gguf_supported_pre_names() + ")");
    bool nfc = pre->nfc, ignore_merges = pre->ignore_merges;
    if (const GgufValue* v = g.find("dyllm.tokenizer.normalizer")) {
        if (v->type != GgufType::STRING || (v->str != "none" && v->str != "nfc"))
            fail(label, "dyllm.tokenizer.normalizer", "expected the STRING 'none' or 'nfc'");
        nfc = v->str == "nfc";
    }
    if (const GgufValue* v = g.find("dyllm.tokenizer.ignore_merges")) {
        if (v->type != GgufType::BOOL) fail(label, "dyllm.tokenizer.ignore_merges", "expected a BOOL");
        ignore_merges = v->u != 0;
    }

    json vocab = json::object(), added = json::array();
    for (uint64_t id = 0; id < tokens.count; ++id) {
        const int64_t t = types ? int_of(types->at(id)) : int64_t(kNormal);
        if (t < kNormal || t > kByte)
            fail(label, "tokenizer.ggml.token_type",
                 "entry " + std::to_string(id) + " = " + std::to_string(t) + " is not a token type (1-6)");
        if (t == kUnused) continue;
        const std::string& s = tokens.strs[size_t(id)];
        if (t == kControl || t == kUserDefined) {
            added.push_back({{"id", id},
                             {"content", s},
                             {"special", t == kControl},
                             {"lstrip", false},
                             {"rstrip", false},
                             {"single_word", false},
                             {"normalized", t != kControl}});
        }
        // Every used token is in the BPE vocabulary too, so merges that build an added token's text still resolve.
        if (!vocab.contains(s)) vocab[s] = id;
    }
    json merges = json::array();
    if (const GgufValue* mg = g.find("tokenizer.ggml.merges")) {
        const GgufValue& m = require_strings(g, label, "tokenizer.ggml.merges");
        (void)mg;
        for (const auto& s : m.strs) merges.push_back(s);
    }
    json root;
    root["model"]         = {{"type", "BPE"},
                             {"vocab", std::move(vocab)},
                             {"merges", std::move(merges)},
                             {"ignore_merges", ignore_merges},
                             {"fuse_unk", false},
                             {"byte_fallback", false}};
    root["normalizer"]    = nfc ? json{{"type", "NFC"}} : json(nullptr);
    root["pre_tokenizer"] = pre_tokenizer_json(*pre);
    root["decoder"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}};
    root["added_tokens"] = std::move(added);
    return Tokenizer::from_json(root, label + ": tokenizer.ggml");
}

std::string family_chat_template_jinja(Family family) {
    if (family == Family::LLaDA)
        return "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
               "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + "
               "'<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content "
               "}}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' "
               "}}{% endif %}";
    return "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ "
           "'<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' }}{% endif %}{{ '<|im_start|>' + "
           "message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}{% endfor %}{% if "
           "add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";
}

std::vector<std::pair<std::string, GgufValue>> gguf_tokenizer_metadata(const std::filesystem::path& tokenizer_json,
                                                                       const ModelConfig&           cfg) {
    const std::string f    = tokenizer_json.string();
    const json        root = read_json_file(tokenizer_json, kMaxTokenizerJsonBytes, "tokenizer.json");
    if (!root.is_object() || !root.contains("model") || !root["model"].is_object())
        throw LoadError(f + ": model: expected an object");
    const json& model = root["model"];
    if (model.value("type", "BPE") != "BPE")
        throw LoadError(f + ": model.type: GGUF's byte-level tokenizer (gpt2) needs a BPE model, got '" +
                        text_excerpt(model.value("type", "")) + "'");
    const PreSpec* pre = classify_pre(root.value("pre_tokenizer", json()));
    if (!pre)
        throw LoadError(f + ": pre_tokenizer: not one of the byte-level pre-tokenizers GGUF can name (" +
                        gguf_supported_pre_names() + ")");
    const json& norm = root.contains("normalizer") ? root["normalizer"] : json();
    bool        nfc  = false;
    if (norm.is_object() && norm.value("type", "") == "NFC")
        nfc = true;
    else if (!norm.is_null())
        throw LoadError(f + ": normalizer: only none or NFC can be stored in a GGUF file");

    const int64_t            n = cfg.n_vocab;
    std::vector<std::string> tokens(static_cast<size_t>(n));
    std::vector<int32_t>     types(static_cast<size_t>(n), int32_t(kUnused));
    const json&              jv = model.contains("vocab") ? model["vocab"] : json();
    if (!jv.is_object()) throw LoadError(f + ": model.vocab: expected an object");
    auto place = [&](const std::string& tok, int64_t id, int32_t type, const std::string& where) {
        if (id < 0 || id >= n)
            throw LoadError(f + ": " + where + ": token '" + text_excerpt(tok) + "' has id " + std::to_string(id) +
                            ", outside the model's " + std::to_string(n) + " embedding rows");
        tokens[size_t(id)] = tok;
        types[size_t(id)]  = type;
    };
    for (auto it = jv.begin(); it != jv.end(); ++it) {
        if (!it.value().is_number_integer()) throw LoadError(f + ": model.vocab: non-integer id");
        place(it.key(), it.value().get<int64_t>(), kNormal, "model.vocab");
    }
    // Special marks from tokenizer_config.json (the same rules Tokenizer::load applies).
    std::set<std::string> special_names;
    std::string           chat_template;
    json                  cfg_added = json::object();
    const auto            cfg_path  = tokenizer_json.parent_path() / "tokenizer_config.json";
    std::error_code       ec;
    if (std::filesystem::exists(std::filesystem::symlink_status(cfg_path, ec))) {
        const json tc = read_json_file(cfg_path, kMaxTokenizerConfigJsonBytes, "tokenizer_config.json");
        if (tc.is_object()) {
            auto name_of = [](const json& v) -> std::string {
                if (v.is_string()) return v.get<std::string>();
                if (v.is_object() && v.contains("content") && v["content"].is_string())
                    return v["content"].get<std::string>();
                return {};
            };
            for (const char* key : {"eos_token", "bos_token", "pad_token", "unk_token", "mask_token"})
                if (tc.contains(key)) special_names.insert(name_of(tc[key]));
            if (tc.contains("additional_special_tokens") && tc["additional_special_tokens"].is_array())
                for (const auto& v : tc["additional_special_tokens"]) special_names.insert(name_of(v));
            if (tc.contains("chat_template") && tc["chat_template"].is_string())
                chat_template = tc["chat_template"].get<std::string>();
            if (tc.contains("added_tokens_decoder") && tc["added_tokens_decoder"].is_object())
                cfg_added = tc["added_tokens_decoder"];
        }
    }
    std::set<int64_t> added_ids;
    if (root.contains("added_tokens") && root["added_tokens"].is_array()) {
        for (const auto& a : root["added_tokens"]) {
            if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() || !a.contains("content") ||
                !a["content"].is_string())
                throw LoadError(f + ": added_tokens: expected {id, content, ...} objects");
            const std::string c       = a["content"].get<std::string>();
            const bool        special = a.value("special", false) || special_names.count(c);
            place(c, a["id"].get<int64_t>(), special ? kControl : kUserDefined, "added_tokens");
            added_ids.insert(a["id"].get<int64_t>());
        }
    }
    for (auto it = cfg_added.begin(); it != cfg_added.end(); ++it) {
        int64_t id = -1;
        try {
            size_t used = 0;
            id          = std::stoll(it.key(), &used);
            if (used != it.key().size()) id = -1;
        } catch (const std::exception&) {
        }
        if (id < 0 || added_ids.count(id) || !it.value().is_object() || !it.value().contains("content")) continue;
        const std::string c       = it.value()["content"].is_string() ? it.value()["content"].get<std::string>() : "";
        const bool        special = it.value().value("special", false) || special_names.count(c);
        if (id < n && types[size_t(id)] == kNormal && tokens[size_t(id)] == c && !special) continue;
        place(c, id, special ? kControl : kUserDefined, "tokenizer_config.json added_tokens_decoder");
    }
    for (int64_t id = 0; id < n; ++id)
        if (types[size_t(id)] == kUnused) tokens[size_t(id)] = "[PAD" + std::to_string(id) + "]";

    std::vector<std::string> merges;
    if (model.contains("merges") && model["merges"].is_array()) {
        merges.reserve(model["merges"].size());
        for (const auto& m : model["merges"]) {
            if (m.is_string()) {
                merges.push_back(m.get<std::string>());
            } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
                const std::string a = m[0].get<std::string>(), b = m[1].get<std::string>();
                if (a.find(' ') != std::string::npos || b.find(' ') != std::string::npos)
                    throw LoadError(f +
                                    ": model.merges: a merge part holds a space, which GGUF's \"left right\" "
                                    "strings cannot store");
                merges.push_back(a + " " + b);
            } else {
                throw LoadError(f + ": model.merges: expected \"left right\" strings or pairs");
            }
        }
    }
    const bool ignore_merges = model.value("ignore_merges", false);

    std::vector<std::pair<std::string, GgufValue>> kv;
    kv.emplace_back("tokenizer.ggml.model", GgufValue::of_string("gpt2"));
    kv.emplace_back("tokenizer.ggml.pre", GgufValue::of_string(pre->name));
    kv.emplace_back("tokenizer.ggml.tokens", GgufValue::of_strings(std::move(tokens)));
    kv.emplace_back("tokenizer.ggml.token_type", GgufValue::of_i32s(types));
    kv.emplace_back("tokenizer.ggml.merges", GgufValue::of_strings(std::move(merges)));
    auto id_key = [&](const char* key, int32_t id) {
        if (id >= 0) kv.emplace_back(std::string("tokenizer.ggml.") + key, GgufValue::of_u32(uint32_t(id)));
    };
    id_key("bos_token_id", cfg.bos_id);
    id_key("eos_token_id", cfg.eos_id);
    id_key("padding_token_id", cfg.pad_id);
    id_key("mask_token_id", cfg.mask_id);
    // llama.cpp's LLaDA converter sets add_bos_token; its Dream converter leaves it to the tokenizer config.
    if (cfg.family == Family::LLaDA) kv.emplace_back("tokenizer.ggml.add_bos_token", GgufValue::of_bool(true));
    kv.emplace_back(
        "tokenizer.chat_template",
        GgufValue::of_string(chat_template.empty() ? family_chat_template_jinja(cfg.family) : chat_template));
    kv.emplace_back("dyllm.tokenizer.normalizer", GgufValue::of_string(nfc ? "nfc" : "none"));
    kv.emplace_back("dyllm.tokenizer.ignore_merges", GgufValue::of_bool(ignore_merges));
    return kv;
}

}  // namespace dyllm
