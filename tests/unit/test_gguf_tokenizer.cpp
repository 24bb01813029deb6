// The tokenizer from GGUF metadata: an HF tokenizer.json written as tokenizer.ggml.* keys (as llama.cpp's converter
// writes them) and read back gives the same ids, text, special marks and token texts as the tokenizer.json itself on
// the golden strings: the built-in models always, the real Qwen3 / Llama-3 files (and their HF golden ids) when .ci/run
// fetched them (DYLLM_QWEN_TOKENIZER, DYLLM_LLAMA3_TOKENIZER; skipped otherwise, exit 77). Plus the metadata errors.
#include "tests/support/skippable_main.h"

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/errors.h"
#include "engine/io/config.h"
#include "engine/io/gguf.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/tokenizer_gguf.h"

namespace fs = std::filesystem;
using namespace dyllm;
using nlohmann::json;

namespace {

using KV = std::vector<std::pair<std::string, GgufValue>>;

GgufContents to_contents(const KV& kv, std::string* keep) {
    std::ostringstream o;
    write_gguf(o, kv, {}, [](size_t, uint8_t*, size_t) {});
    *keep = o.str();
    return parse_gguf(reinterpret_cast<const uint8_t*>(keep->data()), keep->size(), "t.gguf");
}

std::vector<std::string> golden_texts() {
    std::vector<std::string> t = {"", " ", "Hello, world!", "<|im_start|>user\nhi<|im_end|>",
                                  "<|eot_id|>x<|mdm_mask|>"};
    for (const char* g : {"qwen3_golden.json", "llama3_golden.json"}) {
        std::ifstream f(fs::path(DYLLM_SOURCE_DIR) / "tests/data/tokenizers" / g);
        REQUIRE(f);
        const json doc = json::parse(f);  // named: a range-for over a temporary's member would outlive it
        for (const auto& c : doc.at("cases")) t.push_back(c.at("text").get<std::string>());
    }
    return t;
}

// Both tokenizers agree on every golden string, every id's text and special mark; returns the GGUF tokenizer.
std::unique_ptr<Tokenizer> check_same(const fs::path& tokenizer_json, const ModelConfig& cfg) {
    const auto  hf = Tokenizer::load(tokenizer_json);
    std::string keep;
    const auto  g  = to_contents(gguf_tokenizer_metadata(tokenizer_json, cfg), &keep);
    auto        gg = tokenizer_from_gguf(g, "t.gguf");
    REQUIRE(gg);
    CHECK(gg->vocab_size() <= cfg.n_vocab);
    for (const auto& text : golden_texts()) {
        INFO("text: " << json(text).dump());
        const auto ids = hf->encode(text);
        REQUIRE(gg->encode(text) == ids);
        CHECK(gg->decode(ids) == hf->decode(ids));
        CHECK(gg->decode(ids, true) == hf->decode(ids, true));
    }
    for (int32_t id = 0; id < hf->vocab_size(); ++id) {
        INFO("id " << id);
        CHECK(gg->token_text(id) == hf->token_text(id));
        CHECK(gg->is_special(id) == hf->is_special(id));
    }
    return gg;
}

ModelConfig vocab_config(Family f, int n_vocab) {
    ModelConfig c;
    c.family  = f;
    c.n_vocab = c.vocab_size = n_vocab;
    return c;
}

std::string metadata_error(const std::function<void(KV&)>& mutate) {
    const fs::path tok = fs::path(DYLLM_SOURCE_DIR) / "assets/models/tiny-dream/tokenizer.json";
    KV             kv  = gguf_tokenizer_metadata(tok, parse_config(tok.parent_path() / "config.json"));
    mutate(kv);
    std::string keep;
    try {
        (void)tokenizer_from_gguf(to_contents(kv, &keep), "t.gguf");
    } catch (const LoadError& e) {
        return e.what();
    }
    return "";
}

void set(KV& kv, const std::string& key, GgufValue v) {
    for (auto& [k, x] : kv)
        if (k == key) {
            x = std::move(v);
            return;
        }
    kv.emplace_back(key, std::move(v));
}

void check_golden_ids(const Tokenizer& tok, const char* golden) {
    std::ifstream f(fs::path(DYLLM_SOURCE_DIR) / "tests/data/tokenizers" / golden);
    REQUIRE(f);
    const json g = json::parse(f);
    for (const auto& c : g.at("cases")) {
        INFO("text: " << c.at("text").dump());
        CHECK(tok.encode(c.at("text").get<std::string>()) == c.at("ids").get<std::vector<int32_t>>());
        CHECK(tok.decode(c.at("ids").get<std::vector<int32_t>>()) == c.at("decoded").get<std::string>());
    }
}

}  // namespace

TEST_CASE("gguf tokenizer: the built-in models' tokenizers read back identically", "[tiny]") {
    for (const char* m : {"tiny-llada", "tiny-dream"}) {
        INFO(m);
        const fs::path dir = fs::path(DYLLM_SOURCE_DIR) / "assets/models" / m;
        const auto     cfg = parse_config(dir / "config.json");
        check_same(dir / "tokenizer.json", cfg);
        std::string keep;
        const auto  g = to_contents(gguf_tokenizer_metadata(dir / "tokenizer.json", cfg), &keep);
        // llama.cpp's keys: the converter's names and types.
        CHECK(g.find("tokenizer.ggml.model")->str == "gpt2");
        CHECK(g.find("tokenizer.ggml.pre")->str == "qwen2");
        CHECK(g.find("tokenizer.ggml.tokens")->count == uint64_t(cfg.n_vocab));
        CHECK(g.find("tokenizer.ggml.token_type")->elem == GgufType::I32);
        CHECK(g.find("tokenizer.ggml.merges")->elem == GgufType::STRING);
        CHECK(g.find("tokenizer.ggml.mask_token_id")->u == uint64_t(cfg.mask_id));
        CHECK(g.find("tokenizer.ggml.eos_token_id")->u == uint64_t(cfg.eos_id));
        CHECK(g.find("tokenizer.chat_template")->str.find("{% for message in") != std::string::npos);
        // The built-in tokenizers have Qwen2's regex without its NFC normalizer: the engine's own key says so.
        CHECK(g.find("dyllm.tokenizer.normalizer")->str == "none");
    }
}

TEST_CASE("gguf tokenizer: metadata errors are one line naming the key", "[tiny]") {
    auto check = [](const std::string& msg, const std::string& needle) {
        INFO(msg);
        CHECK(msg.rfind("t.gguf", 0) == 0);
        CHECK(msg.find('\n') == std::string::npos);
        CHECK(msg.find(needle) != std::string::npos);
    };
    check(metadata_error([](KV& kv) { set(kv, "tokenizer.ggml.model", GgufValue::of_string("llama")); }),
          "'tokenizer.ggml.model': 'llama' is not supported");
    check(metadata_error([](KV& kv) { set(kv, "tokenizer.ggml.pre", GgufValue::of_string("deepseek-llm")); }),
          "'tokenizer.ggml.pre': 'deepseek-llm' is not supported (supported: llama-bpe, qwen2, gpt-2)");
    check(metadata_error([](KV& kv) {
              set(kv, "tokenizer.ggml.tokens", GgufValue::of_i32s({1, 2}));
          }),
          "'tokenizer.ggml.tokens': type ARRAY of INT32, expected ARRAY of STRING");
    check(metadata_error([](KV& kv) {
              set(kv, "tokenizer.ggml.token_type", GgufValue::of_i32s({1, 1}));
          }),
          "'tokenizer.ggml.token_type': 2 entries for");
    check(metadata_error([](KV& kv) {
              for (auto& [k, v] : kv)
                  if (k == "tokenizer.ggml.token_type") std::memset(v.raw.data(), 9, 4);
          }),
          "is not a token type");
    check(metadata_error([](KV& kv) { set(kv, "tokenizer.ggml.merges", GgufValue::of_strings({"Ġ zzz"})); }),
          "t.gguf: tokenizer.ggml");
    check(metadata_error([](KV& kv) { set(kv, "dyllm.tokenizer.normalizer", GgufValue::of_string("nfkc")); }),
          "'dyllm.tokenizer.normalizer'");
    // No tokenizer.ggml.model: no tokenizer (a weights-only file), not an error.
    KV          none = {{"general.architecture", GgufValue::of_string("dream")}};
    std::string keep;
    CHECK(tokenizer_from_gguf(to_contents(none, &keep), "t.gguf") == nullptr);
}

TEST_CASE("gguf tokenizer: Qwen3 (Dream's family) from GGUF equals tokenizer.json and the HF ids", "[qwen3]") {
    const fs::path p  = std::getenv("DYLLM_QWEN_TOKENIZER");
    const auto     hf = Tokenizer::load(p);
    const auto     gg = check_same(p, vocab_config(Family::Dream, hf->vocab_size()));
    check_golden_ids(*gg, "qwen3_golden.json");
}

TEST_CASE("gguf tokenizer: Llama-3 (LLaDA-like) from GGUF equals tokenizer.json and the HF ids", "[llama3]") {
    const fs::path p  = std::getenv("DYLLM_LLAMA3_TOKENIZER");
    const auto     hf = Tokenizer::load(p);
    const auto     gg = check_same(p, vocab_config(Family::LLaDA, hf->vocab_size()));
    check_golden_ids(*gg, "llama3_golden.json");
}

namespace {
std::string missing_file(const char* env) {
    const char* p = std::getenv(env);
    if (!p || !*p) return std::string(env) + " is not set (.ci/run fetches the tokenizer.json it names)";
    if (!fs::is_regular_file(p)) return std::string(env) + " = " + p + ": no such file";
    return "";
}
}  // namespace

int main(int argc, char** argv) {
    return dyllm::test::run_skippable(argc, argv,
                                      {{"[tiny]", [] { return std::string(); }},
                                       {"[qwen3]", [] { return missing_file("DYLLM_QWEN_TOKENIZER"); }},
                                       {"[llama3]", [] { return missing_file("DYLLM_LLAMA3_TOKENIZER"); }}});
}
