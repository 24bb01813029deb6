// parse_config: HF config.json of the LLaDA family (OLMo-style keys) and of the Dream family (Qwen2 keys), validated
// key by key; family_name and ModelConfig::n_params.
#include "engine/io/config.h"

#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "engine/errors.h"
#include "engine/io/json_file.h"

namespace dyllm {

namespace {

using json = nlohmann::json;

// Reads typed keys of one config.json with messages that name the file, the key and the family that needs it.
class ConfigReader {
public:
    ConfigReader(const json& j, std::string file, const char* family)
        : j_(j), file_(std::move(file)), family_(family) {}

    bool has(const char* key) const {
        auto it = j_.find(key);
        return it != j_.end() && !it->is_null();
    }
    const json& at(const char* key) const { return *j_.find(key); }  // only after has(key)

    [[noreturn]] void fail(const std::string& msg) const { throw LoadError(file_ + ": " + msg); }

    int64_t get_int(const char* key) const {
        if (!has(key)) fail("key '" + std::string(key) + "' missing (needed for " + family_ + ")");
        return as_int(key, at(key));
    }
    int64_t get_int(const char* key, int64_t fallback) const { return has(key) ? as_int(key, at(key)) : fallback; }

    double get_float(const char* key, double fallback) const {
        if (!has(key)) return fallback;
        const json& v = at(key);
        if (!v.is_number()) fail("key '" + std::string(key) + "' = " + json_excerpt(v) + " is not a number");
        return v.get<double>();
    }
    double get_float(const char* key) const {
        if (!has(key)) fail("key '" + std::string(key) + "' missing (needed for " + family_ + ")");
        return get_float(key, 0.0);
    }

    bool get_bool(const char* key, bool fallback) const {
        if (!has(key)) return fallback;
        const json& v = at(key);
        if (!v.is_boolean()) fail("key '" + std::string(key) + "' = " + json_excerpt(v) + " is not true/false");
        return v.get<bool>();
    }

    // A token id key: an integer, or (eos_token_id in some HF configs) a list whose first entry is the main id and the
    // rest go to `extra`. Absent or null gives `fallback`.
    int32_t get_token_id(const char* key, int32_t fallback, std::vector<int32_t>* extra = nullptr) const {
        if (!has(key)) return fallback;
        const json& v = at(key);
        if (v.is_array() && extra) {
            // eos lists hold a handful of ids; a long one is not a config this loader reads.
            if (v.size() > 1024)
                fail("key '" + std::string(key) + "' lists " + std::to_string(v.size()) + " ids (at most 1024)");
            if (v.empty()) fail("key '" + std::string(key) + "' is an empty list");
            for (size_t i = 1; i < v.size(); ++i) extra->push_back(int32_t(as_int(key, v[i])));
            return int32_t(as_int(key, v[0]));
        }
        return int32_t(as_int(key, v));
    }

    std::string get_string(const char* key) const {
        if (!has(key)) return {};
        const json& v = at(key);
        if (!v.is_string()) fail("key '" + std::string(key) + "' = " + json_excerpt(v) + " is not a string");
        return v.get<std::string>();
    }

private:
    int64_t as_int(const char* key, const json& v) const {
        if (v.is_number_integer()) {
            const int64_t x = v.get<int64_t>();
            if (x > std::numeric_limits<int32_t>::max() || x < std::numeric_limits<int32_t>::min()) {
                fail("key '" + std::string(key) + "' = " + json_excerpt(v) + " is out of range");
            }
            return x;
        }
        // Some exporters write integral floats (4096.0); accept those, reject 4096.5 and non-numbers.
        if (v.is_number_float()) {
            const double d = v.get<double>();
            if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 2147483647.0) return int64_t(d);
        }
        fail("key '" + std::string(key) + "' = " + json_excerpt(v) + " is not an integer");
    }

    const json& j_;
    std::string file_;
    const char* family_;
};

bool array_contains(const json& j, const char* key, const char* value) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_array()) return false;
    for (const auto& v : *it) {
        if (v.is_string() && v.get_ref<const std::string&>() == value) return true;
    }
    return false;
}

// LLaDA-8B-Instruct's config.json (OLMo key names, engine/README.md §c.1). Defaults are those of LLaDA's
// configuration_llada.py unless noted.
void parse_llada(const ConfigReader& r, ModelConfig& c) {
    // Features this engine does not implement would silently change the maths: refuse them by name.
    if (r.get_bool("include_bias", false))
        r.fail("key 'include_bias' = true (biases on every linear) is not supported");
    if (r.get_bool("alibi", false)) r.fail("key 'alibi' = true is not supported (this engine implements RoPE)");
    if (!r.get_bool("rope", true)) r.fail("key 'rope' = false is not supported (this engine implements RoPE)");
    if (r.get_bool("scale_logits", false)) r.fail("key 'scale_logits' = true is not supported");
    if (r.get_bool("input_emb_norm", false)) r.fail("key 'input_emb_norm' = true is not supported");
    if (r.get_bool("attention_layer_norm", false)) r.fail("key 'attention_layer_norm' = true is not supported");
    if (r.has("block_type") && r.get_string("block_type") != "llama") {
        r.fail("key 'block_type' = '" + r.get_string("block_type") + "' is not supported (expected 'llama', SwiGLU)");
    }
    if (r.has("activation_type") && r.get_string("activation_type") != "silu" &&
        r.get_string("activation_type") != "swiglu") {
        r.fail("key 'activation_type' = '" + r.get_string("activation_type") + "' is not supported (expected 'silu')");
    }

    c.n_embd    = int(r.get_int("d_model"));
    c.n_layer   = int(r.get_int("n_layers"));
    c.n_head    = int(r.get_int("n_heads"));
    c.n_kv_head = int(r.get_int("n_kv_heads", c.n_head));  // OLMo: None means MHA
    if (r.has("mlp_hidden_size")) {
        c.n_ff = int(r.get_int("mlp_hidden_size"));
    } else if (r.has("mlp_ratio")) {
        // OLMo: hidden = mlp_ratio * d_model when no size is given. Both are int32, so the int64 product is exact; it
        // is bounded here, before it becomes an int.
        const int64_t ratio = r.get_int("mlp_ratio"), ff = ratio * int64_t(c.n_embd);
        if (ratio <= 0) r.fail("key 'mlp_ratio' = " + std::to_string(ratio) + " must be positive");
        if (ff > kMaxConfigFf) {
            r.fail("mlp_ratio * d_model = " + std::to_string(ratio) + " * " + std::to_string(c.n_embd) + " = " +
                   std::to_string(ff) + " exceeds the limit " + std::to_string(kMaxConfigFf) +
                   " of the mlp hidden size");
        }
        c.n_ff = int(ff);
    } else {
        r.fail("key 'mlp_hidden_size' missing and no 'mlp_ratio' either (needed for LLaDA)");
    }
    c.vocab_size     = int(r.get_int("vocab_size"));
    c.n_vocab        = int(r.get_int("embedding_size", c.vocab_size));  // the embedding may be padded past vocab_size
    c.rope_theta     = float(r.get_float("rope_theta", 1e6));           // engine/README.md §c.3: DyLLM's fallback
    c.norm_eps       = float(r.get_float("rms_norm_eps", 1e-5));        // configuration_llada.py default
    c.max_position   = int(r.get_int("max_sequence_length", 1024));     // configuration_llada.py default
    c.qkv_bias       = r.get_bool("include_qkv_bias", false);
    c.tie_embeddings = r.get_bool("weight_tying", false);
    // <|mdm_mask|>, hard-coded in LLaDA's generate.py (engine/README.md §c.1).
    c.mask_id = r.get_token_id("mask_token_id", 126336);
    c.eos_id  = r.get_token_id("eos_token_id", -1, &c.extra_eos_ids);
    c.pad_id  = r.get_token_id("pad_token_id", -1);
    c.bos_id  = r.get_token_id("bos_token_id", -1);
}

// Dream-v0-Instruct-7B's config.json (Qwen2 key names, engine/README.md §c.2). Defaults are Qwen2Config's unless
// noted.
void parse_dream(const ConfigReader& r, const json& j, ModelConfig& c) {
    if (r.has("rope_scaling"))
        r.fail("key 'rope_scaling' = " + json_excerpt(j.at("rope_scaling")) + " is not supported (expected null)");
    if (r.has("hidden_act") && r.get_string("hidden_act") != "silu") {
        r.fail("key 'hidden_act' = '" + r.get_string("hidden_act") + "' is not supported (expected 'silu')");
    }
    c.n_embd         = int(r.get_int("hidden_size"));
    c.n_layer        = int(r.get_int("num_hidden_layers"));
    c.n_head         = int(r.get_int("num_attention_heads"));
    c.n_kv_head      = int(r.get_int("num_key_value_heads", c.n_head));  // Qwen2Config: None means MHA
    c.n_ff           = int(r.get_int("intermediate_size"));
    c.vocab_size     = int(r.get_int("vocab_size"));
    c.n_vocab        = c.vocab_size;
    c.rope_theta     = float(r.get_float("rope_theta", 1e6));             // engine/README.md §c.3: DyLLM's fallback
    c.norm_eps       = float(r.get_float("rms_norm_eps", 1e-6));          // Qwen2Config default
    c.max_position   = int(r.get_int("max_position_embeddings", 32768));  // Qwen2Config default
    c.qkv_bias       = true;  // Qwen2 attention: q/k/v always carry biases (engine/README.md §c.2)
    c.tie_embeddings = r.get_bool("tie_word_embeddings", false);
    c.mask_id        = r.get_token_id("mask_token_id", 151666);  // engine/README.md §c.2: <|mask|>
    c.eos_id         = r.get_token_id("eos_token_id", -1, &c.extra_eos_ids);
    c.pad_id         = r.get_token_id("pad_token_id", -1);
    c.bos_id         = r.get_token_id("bos_token_id", -1);
}

}  // namespace

const char* family_name(Family f) {
    switch (f) {
        case Family::LLaDA:
            return "LLaDA";
        case Family::Dream:
            return "Dream";
    }
    return "?";
}

int64_t ModelConfig::n_params() const {
    const int64_t e     = n_embd;
    int64_t       layer = 2 * e                       // attn_norm, ffn_norm
                    + e * q_dim() + 2 * e * kv_dim()  // wq, wk, wv
                    + q_dim() * e                     // wo
                    + 3 * e * int64_t(n_ff);          // gate, up, down
    if (qkv_bias) layer += q_dim() + 2 * kv_dim();
    int64_t n = int64_t(n_vocab) * e + int64_t(n_layer) * layer + e;
    if (!tie_embeddings) n += int64_t(n_vocab) * e;
    return n;
}

ModelConfig parse_config(const std::filesystem::path& config_json) {
    const std::string file = config_json.string();
    const json        j    = read_json_file(config_json, kMaxConfigJsonBytes, "config.json");
    if (!j.is_object()) throw LoadError(file + ": top level is not a JSON object (got " + j.type_name() + ")");

    ModelConfig c;
    if (auto it = j.find("model_type"); it != j.end() && it->is_string()) c.model_type = it->get<std::string>();
    const std::string& mt = c.model_type;
    if (mt == "llada" || mt == "LLaDA" || array_contains(j, "architectures", "LLaDAModelLM")) {
        c.family = Family::LLaDA;
    } else if (mt == "Dream" || mt == "dream" || array_contains(j, "architectures", "DreamModel")) {
        c.family = Family::Dream;
    } else {
        const std::string arch =
            j.contains("architectures") ? json_excerpt(j.at("architectures")) : std::string("absent");
        throw LoadError(
            file + ": unknown model family: model_type '" + mt + "', architectures " + arch +
            " (expected model_type 'llada' / architectures LLaDAModelLM, or model_type 'Dream' / DreamModel)");
    }
    const char*  fam = family_name(c.family);
    ConfigReader r(j, file, fam);
    if (c.family == Family::LLaDA)
        parse_llada(r, c);
    else
        parse_dream(r, j, c);

    // The family's key names, so every message names the key the user can find in the file.
    const bool  ll       = c.family == Family::LLaDA;
    const char* k_embd   = ll ? "d_model" : "hidden_size";
    const char* k_lay    = ll ? "n_layers" : "num_hidden_layers";
    const char* k_head   = ll ? "n_heads" : "num_attention_heads";
    const char* k_kv     = ll ? "n_kv_heads" : "num_key_value_heads";
    const char* k_ff     = ll ? "mlp_hidden_size" : "intermediate_size";
    const char* k_nv     = ll ? "embedding_size" : "vocab_size";
    const char* k_pos    = ll ? "max_sequence_length" : "max_position_embeddings";
    auto        positive = [&](const char* key, int64_t v) {
        if (v <= 0) r.fail("key '" + std::string(key) + "' = " + std::to_string(v) + " must be positive");
    };
    // Sizes are bounded here, before the checkpoint loader allocates anything from them (per-layer tables, tensor
    // specs) and before any product of two of them is formed.
    auto sized = [&](const char* key, int64_t v, int64_t max) {
        positive(key, v);
        if (v > max) {
            r.fail("key '" + std::string(key) + "' = " + std::to_string(v) + " exceeds the limit " +
                   std::to_string(max) + " (corrupt config.json?)");
        }
    };
    sized(k_embd, c.n_embd, kMaxConfigEmbd);
    sized(k_lay, c.n_layer, kMaxConfigLayers);
    sized(k_head, c.n_head, kMaxConfigHeads);
    sized(k_kv, c.n_kv_head, kMaxConfigHeads);
    sized(k_ff, c.n_ff, kMaxConfigFf);
    sized("vocab_size", c.vocab_size, kMaxConfigVocab);
    sized(k_nv, c.n_vocab, kMaxConfigVocab);
    sized(k_pos, c.max_position, kMaxConfigPositions);
    if (c.n_head % c.n_kv_head != 0) {
        r.fail("key '" + std::string(k_kv) + "' = " + std::to_string(c.n_kv_head) + " does not divide " + k_head +
               " = " + std::to_string(c.n_head));
    }
    if (r.has("head_dim")) {
        c.head_dim = int(r.get_int("head_dim"));
        sized("head_dim", c.head_dim, kMaxConfigHeadDim);
    } else {
        if (c.n_embd % c.n_head != 0) {
            r.fail("key '" + std::string(k_head) + "' = " + std::to_string(c.n_head) + " does not divide " + k_embd +
                   " = " + std::to_string(c.n_embd) + " (head_dim = " + k_embd + " / " + k_head + ")");
        }
        c.head_dim = c.n_embd / c.n_head;
    }
    if (c.head_dim % 2 != 0) {
        r.fail("head_dim = " + std::to_string(c.head_dim) + " is odd; rotate-half RoPE needs an even head_dim");
    }
    if (ll && c.vocab_size > c.n_vocab) {
        r.fail("key 'vocab_size' = " + std::to_string(c.vocab_size) + " exceeds 'embedding_size' = " +
               std::to_string(c.n_vocab) + " (the embedding must have a row per token)");
    }
    if (!(std::isfinite(c.rope_theta) && c.rope_theta > 0)) {
        r.fail("key 'rope_theta' = " + std::to_string(c.rope_theta) + " must be a positive finite number");
    }
    if (!(std::isfinite(c.norm_eps) && c.norm_eps > 0)) {
        r.fail("key 'rms_norm_eps' = " + std::to_string(c.norm_eps) + " must be a positive finite number");
    }
    // Token ids must index a row of the embedding / LM head. The mask id has a family default, so say when it was used.
    auto check_id = [&](const char* key, int32_t id, bool required, const char* note) {
        if (id < 0 && !required) return;
        if (id < 0 || id >= c.n_vocab) {
            r.fail("key '" + std::string(key) + "' = " + std::to_string(id) + note + " is outside the vocabulary (" +
                   k_nv + " = " + std::to_string(c.n_vocab) + ")");
        }
    };
    check_id("mask_token_id", c.mask_id, true,
             r.has("mask_token_id") ? "" : (ll ? " (LLaDA default; key absent)" : " (Dream default; key absent)"));
    check_id("eos_token_id", c.eos_id, false, "");
    check_id("pad_token_id", c.pad_id, false, "");
    check_id("bos_token_id", c.bos_id, false, "");
    for (int32_t id : c.extra_eos_ids) check_id("eos_token_id", id, true, " (list entry)");
    return c;
}

}  // namespace dyllm
