// config.json parsing: the real LLaDA-8B / Dream-7B configs (engine/README.md §c.1, §c.2), family defaults, writer
// round trip, and one LoadError per invalid or missing key, each naming the file and the key.
#include <catch2/catch.hpp>

#include <fstream>

#include <nlohmann/json.hpp>

#include "engine/io/checkpoint.h"
#include "engine/io/config.h"
#include "engine/errors.h"
#include "tests/support/tiny_models.h"

using namespace dyllm;
using json   = nlohmann::json;
namespace fs = std::filesystem;

namespace {

// LLaDA-8B-Instruct config.json, the keys of engine/README.md §c.1 verbatim.
json llada_8b() {
    return json::parse(R"({
      "architectures": ["LLaDAModelLM"], "model_type": "llada", "activation_type": "silu", "alibi": false,
      "attention_layer_norm": false, "block_type": "llama", "d_model": 4096, "embedding_size": 126464,
      "eos_token_id": 126081, "pad_token_id": 126081, "mask_token_id": 126336, "include_bias": false,
      "include_qkv_bias": false, "input_emb_norm": false, "layer_norm_type": "rms", "max_sequence_length": 4096,
      "mlp_hidden_size": 12288, "mlp_ratio": 4, "n_heads": 32, "n_kv_heads": 32, "n_layers": 32, "rms_norm_eps": 1e-05,
      "rope": true, "rope_theta": 500000.0, "scale_logits": false, "vocab_size": 126464, "weight_tying": false })");
}

// Dream-v0-Instruct-7B config.json with the values of engine/README.md §c.2.
json dream_7b() {
    return json::parse(R"({
      "architectures": ["DreamModel"], "model_type": "Dream", "hidden_size": 3584, "num_hidden_layers": 28,
      "num_attention_heads": 28, "num_key_value_heads": 4, "intermediate_size": 18944, "rms_norm_eps": 1e-06,
      "rope_theta": 1000000.0, "rope_scaling": null, "vocab_size": 152064, "tie_word_embeddings": false,
      "max_position_embeddings": 131072, "mask_token_id": 151666, "bos_token_id": 151643, "eos_token_id": 151643,
      "pad_token_id": 151643, "hidden_act": "silu" })");
}

fs::path write_json(const json& j, const std::string& tag) {
    const fs::path p = test::make_temp_dir(tag) / "config.json";
    std::ofstream(p) << j.dump(2);
    return p;
}

// parse_config must throw a LoadError whose message contains every fragment.
void require_error(const json& j, std::initializer_list<std::string> fragments) {
    const fs::path p = write_json(j, "cfg");
    try {
        parse_config(p);
        FAIL("no LoadError for " << j.dump());
    } catch (const LoadError& e) {
        const std::string msg = e.what();
        INFO("message: " << msg);
        CHECK(msg.find("config.json") != std::string::npos);
        for (const auto& f : fragments) CHECK(msg.find(f) != std::string::npos);
    }
}

}  // namespace

TEST_CASE("LLaDA-8B config.json parses to the architecture of engine/README.md §c.1", "[config]") {
    const ModelConfig c = parse_config(write_json(llada_8b(), "llada8b"));
    CHECK(c.family == Family::LLaDA);
    CHECK(c.model_type == "llada");
    CHECK(c.n_embd == 4096);
    CHECK(c.n_layer == 32);
    CHECK(c.n_head == 32);
    CHECK(c.n_kv_head == 32);
    CHECK(c.head_dim == 128);
    CHECK(c.n_ff == 12288);
    CHECK(c.n_vocab == 126464);
    CHECK(c.vocab_size == 126464);
    CHECK(c.rope_theta == 500000.f);
    CHECK(c.norm_eps == 1e-5f);
    CHECK(c.max_position == 4096);
    CHECK_FALSE(c.qkv_bias);
    CHECK_FALSE(c.tie_embeddings);
    CHECK(c.mask_id == 126336);
    CHECK(c.eos_id == 126081);
    CHECK(c.pad_id == 126081);
    // engine/README.md §c.1: bf16 weights, total_size 16,031,162,368 bytes in model.safetensors.index.json
    // = 2 bytes x n_params.
    CHECK(c.n_params() * 2 == 16031162368LL);
}

TEST_CASE("Dream-7B config.json parses to the architecture of engine/README.md §c.2", "[config]") {
    const ModelConfig c = parse_config(write_json(dream_7b(), "dream7b"));
    CHECK(c.family == Family::Dream);
    CHECK(c.n_embd == 3584);
    CHECK(c.n_layer == 28);
    CHECK(c.n_head == 28);
    CHECK(c.n_kv_head == 4);
    CHECK(c.head_dim == 128);
    CHECK(c.q_dim() == 3584);
    CHECK(c.kv_dim() == 512);
    CHECK(c.n_ff == 18944);
    CHECK(c.n_vocab == 152064);
    CHECK(c.rope_theta == 1e6f);
    CHECK(c.norm_eps == 1e-6f);
    CHECK(c.max_position == 131072);
    CHECK(c.qkv_bias);
    CHECK_FALSE(c.tie_embeddings);
    CHECK(c.mask_id == 151666);
    CHECK(c.eos_id == 151643);
    CHECK(c.bos_id == 151643);
    // Computed by hand from the shapes of engine/README.md §c.2 (embedding + head 2 x 152064 x 3584, 28 layers of
    // 233,057,792, final norm); agrees with the 7.61B of the Qwen2.5-7B model card, the same architecture.
    CHECK(c.n_params() == 7615616512LL);
}

TEST_CASE("family detection by model_type or architectures", "[config]") {
    json j          = dream_7b();
    j["model_type"] = "dream";
    CHECK(parse_config(write_json(j, "fam")).family == Family::Dream);
    j.erase("model_type");
    CHECK(parse_config(write_json(j, "fam")).family == Family::Dream);
    json l = llada_8b();
    l.erase("model_type");
    CHECK(parse_config(write_json(l, "fam")).family == Family::LLaDA);
    CHECK(std::string(family_name(Family::LLaDA)) == "LLaDA");
    CHECK(std::string(family_name(Family::Dream)) == "Dream");
}

TEST_CASE("family defaults when optional keys are absent", "[config]") {
    json l = llada_8b();
    for (const char* k : {"mask_token_id", "rope_theta", "mlp_hidden_size", "n_kv_heads", "embedding_size"}) l.erase(k);
    const ModelConfig c = parse_config(write_json(l, "def"));
    CHECK(c.mask_id == 126336);   // engine/README.md §c.1
    CHECK(c.rope_theta == 1e6f);  // engine/README.md §c.3: DyLLM's fallback
    CHECK(c.n_ff == 4 * 4096);    // mlp_ratio * d_model
    CHECK(c.n_kv_head == 32);     // MHA
    CHECK(c.n_vocab == 126464);   // = vocab_size

    json d = dream_7b();
    for (const char* k : {"mask_token_id", "rope_theta", "num_key_value_heads"}) d.erase(k);
    const ModelConfig e = parse_config(write_json(d, "def"));
    CHECK(e.mask_id == 151666);   // engine/README.md §c.2
    CHECK(e.rope_theta == 1e6f);  // engine/README.md §c.3
    CHECK(e.n_kv_head == 28);
}

TEST_CASE("LLaDA embedding_size larger than vocab_size sets n_vocab", "[config]") {
    json l              = llada_8b();
    l["vocab_size"]     = 126000;
    const ModelConfig c = parse_config(write_json(l, "emb"));
    CHECK(c.n_vocab == 126464);
    CHECK(c.vocab_size == 126000);
}

TEST_CASE("eos_token_id given as a list", "[config]") {
    json d              = dream_7b();
    d["eos_token_id"]   = {151643, 151645};
    const ModelConfig c = parse_config(write_json(d, "eos"));
    CHECK(c.eos_id == 151643);
    REQUIRE(c.extra_eos_ids.size() == 1);
    CHECK(c.extra_eos_ids[0] == 151645);
}

TEST_CASE("head_dim from the config overrides n_embd / n_head", "[config]") {
    json d              = dream_7b();
    d["head_dim"]       = 64;
    const ModelConfig c = parse_config(write_json(d, "hd"));
    CHECK(c.head_dim == 64);
    CHECK(c.q_dim() == 28 * 64);
}

TEST_CASE("write_config_json round trips both families", "[config]") {
    for (Family f : {Family::LLaDA, Family::Dream}) {
        ModelConfig w    = test::tiny_config(f);
        w.extra_eos_ids  = {258};
        const fs::path p = test::make_temp_dir("cfgrt") / "config.json";
        write_config_json(p, w);
        const ModelConfig r = parse_config(p);
        CHECK(r.family == w.family);
        CHECK(r.n_embd == w.n_embd);
        CHECK(r.n_layer == w.n_layer);
        CHECK(r.n_head == w.n_head);
        CHECK(r.n_kv_head == w.n_kv_head);
        CHECK(r.head_dim == w.head_dim);
        CHECK(r.n_ff == w.n_ff);
        CHECK(r.n_vocab == w.n_vocab);
        CHECK(r.vocab_size == w.vocab_size);
        CHECK(r.rope_theta == w.rope_theta);
        CHECK(r.norm_eps == w.norm_eps);
        CHECK(r.max_position == w.max_position);
        CHECK(r.qkv_bias == w.qkv_bias);
        CHECK(r.tie_embeddings == w.tie_embeddings);
        CHECK(r.mask_id == w.mask_id);
        CHECK(r.eos_id == w.eos_id);
        CHECK(r.pad_id == w.pad_id);
        CHECK(r.bos_id == w.bos_id);
        CHECK(r.extra_eos_ids == w.extra_eos_ids);
        // The family's real key names are on disk.
        std::ifstream in(p);
        const json    j = json::parse(in);
        CHECK(j.contains(f == Family::LLaDA ? "d_model" : "hidden_size"));
        CHECK(j.contains(f == Family::LLaDA ? "n_heads" : "num_attention_heads"));
        CHECK(j["model_type"] == (f == Family::LLaDA ? "llada" : "Dream"));
    }
}

TEST_CASE("config errors name the file and the key", "[config][errors]") {
    SECTION("missing LLaDA key") {
        json l = llada_8b();
        l.erase("n_heads");
        require_error(l, {"'n_heads'", "missing", "LLaDA"});
    }
    SECTION("missing Dream key") {
        json d = dream_7b();
        d.erase("intermediate_size");
        require_error(d, {"'intermediate_size'", "missing", "Dream"});
    }
    SECTION("kv heads do not divide heads") {
        json d                   = dream_7b();
        d["num_key_value_heads"] = 5;
        require_error(d, {"'num_key_value_heads' = 5 does not divide num_attention_heads = 28"});
    }
    SECTION("heads do not divide the hidden size") {
        json l          = llada_8b();
        l["n_heads"]    = 30;
        l["n_kv_heads"] = 30;
        require_error(l, {"'n_heads' = 30 does not divide d_model = 4096"});
    }
    SECTION("odd head_dim") {
        json d        = dream_7b();
        d["head_dim"] = 127;
        require_error(d, {"head_dim = 127", "odd"});
    }
    SECTION("non-positive size") {
        json l        = llada_8b();
        l["n_layers"] = 0;
        require_error(l, {"'n_layers' = 0", "positive"});
    }
    SECTION("negative size") {
        json d           = dream_7b();
        d["hidden_size"] = -3584;
        require_error(d, {"'hidden_size' = -3584"});
    }
    SECTION("non-integer size") {
        json d                 = dream_7b();
        d["num_hidden_layers"] = "28";
        require_error(d, {"'num_hidden_layers'", "not an integer"});
        d["num_hidden_layers"] = 27.5;
        require_error(d, {"'num_hidden_layers' = 27.5", "not an integer"});
    }
    SECTION("unknown family") {
        json j             = dream_7b();
        j["model_type"]    = "qwen2";
        j["architectures"] = {"Qwen2ForCausalLM"};
        require_error(j, {"unknown model family", "qwen2", "Qwen2ForCausalLM"});
    }
    SECTION("mask id outside the vocabulary, from the family default") {
        json l = llada_8b();
        l.erase("mask_token_id");
        l["vocab_size"]     = 1000;
        l["embedding_size"] = 1000;
        require_error(l, {"'mask_token_id' = 126336", "default", "outside the vocabulary"});
    }
    SECTION("eos id outside the vocabulary") {
        json d            = dream_7b();
        d["eos_token_id"] = 200000;
        require_error(d, {"'eos_token_id' = 200000", "outside the vocabulary", "vocab_size = 152064"});
    }
    SECTION("vocab_size above embedding_size") {
        json l          = llada_8b();
        l["vocab_size"] = 130000;
        require_error(l, {"'vocab_size' = 130000", "'embedding_size' = 126464"});
    }
    SECTION("bad rope_theta and eps") {
        json l          = llada_8b();
        l["rope_theta"] = -1.0;
        require_error(l, {"'rope_theta'"});
        json d            = dream_7b();
        d["rms_norm_eps"] = 0.0;
        require_error(d, {"'rms_norm_eps'"});
    }
    SECTION("unsupported features are refused by name") {
        json l            = llada_8b();
        l["include_bias"] = true;
        require_error(l, {"'include_bias'"});
        json d            = dream_7b();
        d["rope_scaling"] = {{"type", "yarn"}, {"factor", 4.0}};
        require_error(d, {"'rope_scaling'", "yarn"});
        json a          = llada_8b();
        a["block_type"] = "sequential";
        require_error(a, {"'block_type'", "sequential"});
    }
    SECTION("not JSON") {
        const fs::path p = test::make_temp_dir("cfg") / "config.json";
        std::ofstream(p) << "{\"d_model\": 64,, }";
        try {
            parse_config(p);
            FAIL("no error");
        } catch (const LoadError& e) {
            CHECK(std::string(e.what()).find("config.json: not valid JSON") != std::string::npos);
        }
    }
    SECTION("missing file") {
        const fs::path p = test::make_temp_dir("cfg") / "config.json";
        try {
            parse_config(p);
            FAIL("no error");
        } catch (const LoadError& e) {
            CHECK(std::string(e.what()).find("config.json: cannot open") != std::string::npos);
        }
    }
}
