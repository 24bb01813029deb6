// The byte-level tokenizer.json written beside random checkpoints: its structure, and that the engine's Tokenizer
// reads it the way Hugging Face tokenizers does (ids below were produced by the `tokenizers` npm package, the HF Rust
// library's binding, on files written by write_byte_level_tokenizer_json).
#include <catch2/catch.hpp>

#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "engine/io/checkpoint_writer.h"
#include "engine/errors.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/support/tiny_models.h"

using namespace dyllm;
namespace fs = std::filesystem;

TEST_CASE("byte-level tokenizer.json structure", "[checkpoint][tokenizer]") {
    for (Family f : {Family::LLaDA, Family::Dream}) {
        const ModelConfig cfg = test::tiny_config(f);
        const fs::path    p   = test::make_temp_dir("tok") / "tokenizer.json";
        write_byte_level_tokenizer_json(p, cfg);
        std::ifstream        in(p);
        const nlohmann::json j = nlohmann::json::parse(in);
        CHECK(j["model"]["type"] == "BPE");
        CHECK(j["pre_tokenizer"]["type"] == "ByteLevel");
        CHECK(j["decoder"]["type"] == "ByteLevel");
        CHECK(j["model"]["merges"].empty());
        const auto& vocab = j["model"]["vocab"];
        REQUIRE(vocab.size() == 256);
        std::set<int> ids;
        for (const auto& [k, v] : vocab.items()) ids.insert(v.get<int>());
        CHECK(ids.size() == 256);
        CHECK(*ids.rbegin() == 255);
        CHECK(vocab["Ġ"] == 32);  // GPT-2 maps the space byte to U+0120
        CHECK(vocab["a"] == 97);
        std::map<std::string, int> added;
        for (const auto& t : j["added_tokens"]) added[t["content"].get<std::string>()] = t["id"].get<int>();
        CHECK(int(added.size()) == byte_level_special_count(f));
        if (f == Family::LLaDA) {
            CHECK(added.at("<|mdm_mask|>") == cfg.mask_id);
            CHECK(added.at("<|endoftext|>") == cfg.eos_id);
            CHECK(added.at("<|startoftext|>") == cfg.bos_id);
            CHECK(added.count("<|eot_id|>") == 1);
        } else {
            CHECK(added.at("<|mask|>") == cfg.mask_id);
            CHECK(added.at("<|endoftext|>") == cfg.eos_id);
            CHECK(added.count("<|im_end|>") == 1);
        }
        for (const auto& [name, id] : added) CHECK((id >= 256 && id < cfg.n_vocab));
    }
}

TEST_CASE("tokenizer writer refuses ids that collide with bytes or leave the vocabulary", "[checkpoint][tokenizer]") {
    ModelConfig    cfg = test::tiny_config(Family::LLaDA);
    const fs::path p   = test::make_temp_dir("tok") / "tokenizer.json";
    cfg.mask_id        = 65;
    CHECK_THROWS_AS(write_byte_level_tokenizer_json(p, cfg), InputError);
    cfg.mask_id = 400;
    CHECK_THROWS_AS(write_byte_level_tokenizer_json(p, cfg), InputError);
    CHECK_THROWS_AS(small_config(Family::Dream, 1, 8, 2, 1, 16, 259), InputError);  // needs 260
    CHECK_NOTHROW(small_config(Family::Dream, 1, 8, 2, 1, 16, 260));
}

TEST_CASE("the engine's Tokenizer reads the written tokenizer.json like HF tokenizers", "[checkpoint][tokenizer]") {
    const fs::path ll  = test::make_tiny_checkpoint(Family::LLaDA, DType::F32, 1, 1);
    const auto     tok = Tokenizer::load(ll / "tokenizer.json");
    using V            = std::vector<int32_t>;
    CHECK(tok->encode("hi") == V{104, 105});
    CHECK(tok->encode("h\xC3\xA9llo \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x99\x82") ==
          V{104, 195, 169, 108, 108, 111, 32, 230, 151, 165, 230, 156, 172, 32, 240, 159, 153, 130});
    CHECK(tok->encode("<|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>") ==
          V{258, 117, 115, 101, 114, 259, 10, 10, 104, 105, 260});
    CHECK(tok->token_id("<|mdm_mask|>") == 261);
    CHECK(tok->is_special(261));
    const std::string s = "h\xC3\xA9llo, world\n";
    CHECK(tok->decode(tok->encode(s)) == s);

    const fs::path dr   = test::make_tiny_checkpoint(Family::Dream, DType::BF16, 3, 1);
    const auto     dtok = Tokenizer::load(dr / "tokenizer.json");
    CHECK(dtok->encode("<|im_start|>system\nx<|im_end|><|mask|>") ==
          V{257, 115, 121, 115, 116, 101, 109, 10, 120, 258, 259});
    CHECK(dtok->token_id("<|endoftext|>") == 256);
}
