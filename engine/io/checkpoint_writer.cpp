// Checkpoint writer: config.json in each family's key set, random-weight safetensors (single file or shards + index),
// small configs and the byte-level tokenizer.json that make a random model directory runnable end to end.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <set>

#include <nlohmann/json.hpp>

#include "engine/io/atomic_file.h"
#include "engine/io/checkpoint.h"
#include "engine/io/checkpoint_layout.h"
#include "engine/io/checkpoint_writer.h"
#include "engine/errors.h"
#include "engine/interrupt.h"
#include "engine/io/safetensors.h"
#include "kernels/common/dtype_convert.h"

namespace dyllm {

namespace {

namespace fs = std::filesystem;
using json   = nlohmann::json;

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; the writer stores host order");

// The shortest decimal that reads back as the same float, so config.json holds 1e-05 rather than 9.99999974737875e-06.
double short_decimal(float f) {
    char buf[32];
    for (int p = 1; p <= 9; ++p) {  // 9 significant digits always round-trip a float (IEEE 754 binary32)
        std::snprintf(buf, sizeof buf, "%.*g", p, double(f));
        if (std::strtof(buf, nullptr) == f) break;
    }
    return std::strtod(buf, nullptr);
}

json token_id_json(int32_t main, const std::vector<int32_t>& extra) {
    if (extra.empty()) return main;
    json a = json::array({main});
    for (int32_t x : extra) a.push_back(x);
    return a;
}

// splitmix64 (Steele, Lea, Flood 2014): mixes the user seed with a hash of the tensor name into an mt19937_64 seed.
uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

uint64_t fnv1a(const std::string& s) {  // FNV-1a 64-bit offset basis and prime
    uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
    return h;
}

// GPT-2's bytes_to_unicode (openai/gpt-2 encoder.py): printable Latin-1 bytes map to themselves, the other 68 bytes
// to U+0100 upwards in byte order. Returns the UTF-8 of each byte's character.
std::vector<std::string> byte_level_alphabet() {
    std::vector<int> cp(256, -1);
    for (int b = 0; b < 256; ++b) {
        if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255)) cp[b] = b;
    }
    int n = 0;
    for (int b = 0; b < 256; ++b) {
        if (cp[b] < 0) cp[b] = 256 + n++;
    }
    std::vector<std::string> out(256);
    for (int b = 0; b < 256; ++b) {
        const int   c = cp[b];
        std::string s;
        if (c < 0x80) {
            s += char(c);
        } else {  // every code point here is below U+0800: two UTF-8 bytes
            s += char(0xC0 | (c >> 6));
            s += char(0x80 | (c & 0x3F));
        }
        out[b] = s;
    }
    return out;
}

struct SpecialToken {
    const char* content;
    int32_t     id;  // -1: take the next free id >= 256
};

std::vector<SpecialToken> family_specials(const ModelConfig& c) {
    if (c.family == Family::LLaDA) {  // engine/README.md §c.1 special tokens
        return {{"<|startoftext|>", c.bos_id}, {"<|endoftext|>", c.eos_id}, {"<|start_header_id|>", -1},
                {"<|end_header_id|>", -1},     {"<|eot_id|>", -1},          {"<|mdm_mask|>", c.mask_id}};
    }
    // engine/README.md §c.2: <|endoftext|> is Dream's bos, eos and pad.
    return {{"<|endoftext|>", c.eos_id >= 0 ? c.eos_id : c.bos_id},
            {"<|im_start|>", -1},
            {"<|im_end|>", -1},
            {"<|mask|>", c.mask_id}};
}

// Temporary name + rename(): a reader never sees half a file, and one that holds the old file keeps it.
void write_text(const fs::path& path, const std::string& text) {
    AtomicFile f(path);
    f.stream() << text;
    f.commit();
}

void store(const float* src, size_t n, DType dtype, uint8_t* out) {
    switch (dtype) {
        case DType::F32:
            std::memcpy(out, src, n * 4);
            break;
        case DType::F16:
            for (size_t i = 0; i < n; ++i) {
                const uint16_t h = f32_to_f16(src[i]);
                std::memcpy(out + 2 * i, &h, 2);
            }
            break;
        case DType::BF16:
            for (size_t i = 0; i < n; ++i) {
                const uint16_t h = f32_to_bf16(src[i]);
                std::memcpy(out + 2 * i, &h, 2);
            }
            break;
        case DType::I32:
            DYLLM_ASSERT(false, "I32 is not a weight dtype");
    }
}

}  // namespace

namespace {
std::string config_json_text(const ModelConfig& c) {
    json j;
    if (c.family == Family::LLaDA) {  // LLaDA-8B-Instruct's keys (engine/README.md §c.1)
        j["architectures"]          = {"LLaDAModelLM"};
        j["model_type"]             = "llada";
        j["d_model"]                = c.n_embd;
        j["n_layers"]               = c.n_layer;
        j["n_heads"]                = c.n_head;
        j["n_kv_heads"]             = c.n_kv_head;
        j["mlp_hidden_size"]        = c.n_ff;
        j["vocab_size"]             = c.vocab_size > 0 ? c.vocab_size : c.n_vocab;
        j["embedding_size"]         = c.n_vocab;
        j["rope_theta"]             = short_decimal(c.rope_theta);
        j["rms_norm_eps"]           = short_decimal(c.norm_eps);
        j["max_sequence_length"]    = c.max_position;
        j["weight_tying"]           = c.tie_embeddings;
        j["include_bias"]           = false;
        j["include_qkv_bias"]       = c.qkv_bias;
        j["activation_type"]        = "silu";
        j["block_type"]             = "llama";
        j["layer_norm_type"]        = "rms";
        j["layer_norm_with_affine"] = true;
        j["bias_for_layer_norm"]    = false;
        j["rope"]                   = true;
        j["rope_full_precision"]    = true;
        j["alibi"]                  = false;
        j["attention_layer_norm"]   = false;
        j["input_emb_norm"]         = false;
        j["scale_logits"]           = false;
    } else {  // Dream-v0-Instruct-7B's Qwen2 keys (engine/README.md §c.2)
        j["architectures"]           = {"DreamModel"};
        j["model_type"]              = "Dream";
        j["hidden_size"]             = c.n_embd;
        j["num_hidden_layers"]       = c.n_layer;
        j["num_attention_heads"]     = c.n_head;
        j["num_key_value_heads"]     = c.n_kv_head;
        j["intermediate_size"]       = c.n_ff;
        j["vocab_size"]              = c.n_vocab;
        j["rope_theta"]              = short_decimal(c.rope_theta);
        j["rms_norm_eps"]            = short_decimal(c.norm_eps);
        j["max_position_embeddings"] = c.max_position;
        j["tie_word_embeddings"]     = c.tie_embeddings;
        j["hidden_act"]              = "silu";
        j["rope_scaling"]            = nullptr;
        j["attention_dropout"]       = 0.0;
    }
    if (c.n_head > 0 && c.head_dim > 0 && c.head_dim * c.n_head != c.n_embd) j["head_dim"] = c.head_dim;
    j["mask_token_id"] = c.mask_id;
    if (c.eos_id >= 0) j["eos_token_id"] = token_id_json(c.eos_id, c.extra_eos_ids);
    if (c.pad_id >= 0) j["pad_token_id"] = c.pad_id;
    if (c.bos_id >= 0) j["bos_token_id"] = c.bos_id;
    return j.dump(2) + "\n";
}

std::string tokenizer_json_text(const fs::path& path, const ModelConfig& c);
}  // namespace

void write_config_json(const fs::path& path, const ModelConfig& c) {
    write_text(path, config_json_text(c));
}

void write_byte_level_tokenizer_json(const fs::path& path, const ModelConfig& c) {
    write_text(path, tokenizer_json_text(path, c));
}

int byte_level_special_count(Family f) {
    return f == Family::LLaDA ? 6 : 4;
}

ModelConfig small_config(Family f, int n_layer, int n_embd, int n_head, int n_kv_head, int n_ff, int n_vocab) {
    const int need = 256 + byte_level_special_count(f);
    if (n_vocab < need) {
        throw InputError("vocabulary " + std::to_string(n_vocab) +
                         " is too small for the byte-level tokenizer (needs >= " + std::to_string(need) +
                         ": 256 byte tokens + " + std::to_string(need - 256) + " " + family_name(f) +
                         " special tokens)");
    }
    ModelConfig c;
    c.family     = f;
    c.model_type = f == Family::LLaDA ? "llada" : "Dream";
    c.n_embd     = n_embd;
    c.n_layer    = n_layer;
    c.n_head     = n_head;
    c.n_kv_head  = n_kv_head;
    c.head_dim   = n_head > 0 ? n_embd / n_head : 0;
    c.n_ff       = n_ff;
    c.n_vocab    = n_vocab;
    c.vocab_size = n_vocab;
    if (f == Family::LLaDA) {  // engine/README.md §c.1
        c.rope_theta   = 500000.f;
        c.norm_eps     = 1e-5f;
        c.max_position = 4096;
        c.qkv_bias     = false;
        c.bos_id       = 256;
        c.eos_id       = 257;
        c.pad_id       = 257;
        c.mask_id      = 261;
    } else {  // engine/README.md §c.2 (max_position kept small: a tiny model never sees 131072 positions)
        c.rope_theta   = 1e6f;
        c.norm_eps     = 1e-6f;
        c.max_position = 4096;
        c.qkv_bias     = true;
        c.bos_id       = 256;
        c.eos_id       = 256;
        c.pad_id       = 256;
        c.mask_id      = 259;
    }
    return c;
}

namespace {
std::string tokenizer_json_text(const fs::path& path, const ModelConfig& c) {
    const int need = 256 + byte_level_special_count(c.family);
    if (c.n_vocab < need) {
        throw InputError(path.string() + ": n_vocab " + std::to_string(c.n_vocab) +
                         " is too small for a byte-level tokenizer (needs >= " + std::to_string(need) + ")");
    }
    auto              specials = family_specials(c);
    std::set<int32_t> used;
    for (const auto& s : specials) {
        if (s.id < 0) continue;
        if (s.id < 256 || s.id >= c.n_vocab) {
            throw InputError(path.string() + ": special token " + s.content + " has id " + std::to_string(s.id) +
                             ", outside [256, n_vocab = " + std::to_string(c.n_vocab) + ") (ids 0..255 are the bytes)");
        }
        used.insert(s.id);
    }
    int32_t next = 256;
    for (auto& s : specials) {
        if (s.id >= 0) continue;
        while (used.count(next)) ++next;
        if (next >= c.n_vocab) {
            throw InputError(path.string() + ": no free id below n_vocab = " + std::to_string(c.n_vocab) + " for " +
                             s.content);
        }
        s.id = next;
        used.insert(next);
    }

    const auto alphabet = byte_level_alphabet();
    json       vocab    = json::object();
    for (int b = 0; b < 256; ++b) vocab[alphabet[size_t(b)]] = b;
    json added = json::array();
    std::sort(specials.begin(), specials.end(),
              [](const SpecialToken& a, const SpecialToken& b) { return a.id < b.id; });
    for (const auto& s : specials) {
        added.push_back({{"id", s.id},
                         {"content", s.content},
                         {"single_word", false},
                         {"lstrip", false},
                         {"rstrip", false},
                         {"normalized", false},
                         {"special", true}});
    }
    // Field set of tokenizers' serialisation (tokenizer.json "version": "1.0"), as in Qwen2's and Llama-3's files.
    json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}};
    json j;
    j["version"]        = "1.0";
    j["truncation"]     = nullptr;
    j["padding"]        = nullptr;
    j["added_tokens"]   = added;
    j["normalizer"]     = nullptr;
    j["pre_tokenizer"]  = byte_level;
    j["post_processor"] = byte_level;
    j["decoder"]        = byte_level;
    j["model"]          = {{"type", "BPE"},
                           {"dropout", nullptr},
                           {"unk_token", nullptr},
                           {"continuing_subword_prefix", nullptr},
                           {"end_of_word_suffix", nullptr},
                           {"fuse_unk", false},
                           {"byte_fallback", false},
                           {"ignore_merges", false},
                           {"vocab", vocab},
                           {"merges", json::array()}};
    return j.dump(2) + "\n";
}
}  // namespace

std::vector<float> random_tensor_values(const TensorSpec& spec, uint64_t seed, float weight_std) {
    size_t n = 1;
    for (int64_t d : spec.shape) n *= size_t(d);
    std::vector<float> v(n);
    if (spec.role == TensorRole::AttnNorm || spec.role == TensorRole::FfnNorm || spec.role == TensorRole::OutNorm) {
        std::fill(v.begin(), v.end(), 1.0f);
        return v;
    }
    // N(0, weight_std), 0.02 by default: the initializer_range of HF LLaMA/Qwen2 configs. Box-Muller on 53-bit
    // uniforms, written out here so the values are the same with every standard library (std::normal_distribution's
    // algorithm is unspecified).
    std::mt19937_64  rng(splitmix64(seed ^ fnv1a(spec.name)));
    const double     kStd   = weight_std;
    constexpr double kTwoPi = 6.283185307179586476925286766559;
    for (size_t i = 0; i < n; i += 2) {
        const double u1 = (double(rng() >> 11) + 1.0) * 0x1.0p-53;  // (0, 1]: log never sees 0
        const double u2 = double(rng() >> 11) * 0x1.0p-53;          // [0, 1)
        const double r  = std::sqrt(-2.0 * std::log(u1));
        v[i]            = float(kStd * r * std::cos(kTwoPi * u2));
        if (i + 1 < n) v[i + 1] = float(kStd * r * std::sin(kTwoPi * u2));
    }
    return v;
}

void write_random_checkpoint(const fs::path& dir, const ModelConfig& cfg_in, uint64_t seed, DType dtype, int n_shards,
                             float weight_std, bool with_tokenizer) {
    if (dtype != DType::F32 && dtype != DType::F16 && dtype != DType::BF16) {
        throw InputError(std::string("checkpoint dtype ") + dtype_name(dtype) + " is not supported (F32, F16 or BF16)");
    }
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw LoadError(dir.string() + ": cannot create directory: " + ec.message());

    // Every file goes under a temporary name first and is renamed into place only once all are complete: weights,
    // index and tokenizer, then config.json last, then stale weights of an earlier model are removed. A failed or
    // interrupted rewrite leaves the old model as it was (a loader needs config.json first, and finds the old one).
    std::vector<std::unique_ptr<AtomicFile>> staged;  // committed in this order
    auto                                     stage_text = [&](const fs::path& path, const std::string& text) {
        staged.push_back(std::make_unique<AtomicFile>(path));
        staged.back()->write(text);
        staged.back()->close();
        return staged.back()->temp_path();
    };

    // The config is parsed back from its temporary file: the loader's validation also validates what we are asked to
    // write, and the tensors follow the config as the loader will see it.
    auto config_file = std::make_unique<AtomicFile>(dir / "config.json");
    config_file->write(config_json_text(cfg_in));
    config_file->close();
    const ModelConfig cfg   = parse_config(config_file->temp_path());
    const auto        specs = expected_tensor_specs(cfg);
    if (n_shards < 1 || size_t(n_shards) > specs.size()) {
        throw InputError("shard count " + std::to_string(n_shards) + " must be between 1 and the number of tensors (" +
                         std::to_string(specs.size()) + ")");
    }

    // Contiguous groups of tensors with about equal bytes per shard, each shard non-empty.
    std::vector<uint64_t> bytes;
    uint64_t              total = 0;
    for (const auto& s : specs) {
        uint64_t b = dtype_size(dtype);
        for (int64_t d : s.shape) b *= uint64_t(d);
        bytes.push_back(b);
        total += b;
    }
    std::vector<size_t> first(size_t(n_shards) + 1);  // first tensor of each shard; first[n_shards] = end
    first.back() = specs.size();
    size_t   i   = 0;
    uint64_t acc = 0;
    for (int k = 1; k < n_shards; ++k) {
        const size_t last_allowed = specs.size() - size_t(n_shards - k);  // leave one tensor per remaining shard
        do {
            acc += bytes[i++];
        } while (i < last_allowed && acc * uint64_t(n_shards) < total * uint64_t(k));
        first[size_t(k)] = i;
    }

    json                  weight_map = json::object();
    std::set<std::string> written;  // the weight files of the new model
    for (int k = 0; k < n_shards; ++k) {
        char name[64];
        std::snprintf(name, sizeof name, "model-%05d-of-%05d.safetensors", k + 1, n_shards);
        const std::string                  file = n_shards == 1 ? std::string("model.safetensors") : std::string(name);
        std::vector<SafetensorsTensorSpec> st;
        std::vector<const TensorSpec*>     src;
        for (size_t i = first[size_t(k)]; i < first[size_t(k) + 1]; ++i) {
            st.push_back({specs[i].name, dtype, specs[i].shape});
            src.push_back(&specs[i]);
            weight_map[specs[i].name] = file;
        }
        staged.push_back(std::make_unique<AtomicFile>(dir / file));
        written.insert(file);
        write_safetensors(*staged.back(), st,
                          [&](size_t i, uint8_t* out, size_t n_bytes) {
                              const std::vector<float> v = random_tensor_values(*src[i], seed, weight_std);
                              DYLLM_ASSERT(v.size() * dtype_size(dtype) == n_bytes, "tensor byte count");
                              store(v.data(), v.size(), dtype, out);
                          },
                          {{"format", "pt"}});  // the metadata transformers' save_pretrained writes
    }
    if (n_shards > 1) {
        json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
        stage_text(dir / "model.safetensors.index.json", index.dump(2) + "\n");
        written.insert("model.safetensors.index.json");
    }
    if (with_tokenizer) stage_text(dir / "tokenizer.json", tokenizer_json_text(dir / "tokenizer.json", cfg));
    throw_if_interrupted();

    // The renames, with SIGINT/SIGTERM held until the directory is consistent again (a few system calls).
    DeferInterrupts hold;
    for (auto& f : staged) f->commit();
    config_file->commit();
    // Weights of an earlier model that the new one does not have (model.safetensors wins over an index, so a stale
    // one would shadow new shards): only the names this writer produces.
    for (const auto& entry : fs::directory_iterator(dir)) {
        const std::string n     = entry.path().filename().string();
        const bool        shard = n.size() == 32 && n.rfind("model-", 0) == 0 && n.find("-of-") == 11 &&
                           n.substr(n.size() - 12) == ".safetensors";
        if ((n == "model.safetensors" || n == "model.safetensors.index.json" || shard) && !written.count(n))
            fs::remove(entry.path(), ec);
    }
}

}  // namespace dyllm
