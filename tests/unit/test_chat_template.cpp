// Chat templates (engine/README.md §c.1 LLaDA header-id template, §c.2 Dream ChatML with the default system message):
// exact strings, and the Dream template's token ids against the HF golden list when the Qwen tokenizer is available.
#include <catch2/catch.hpp>

#include <fstream>

#include <nlohmann/json.hpp>

#include "engine/tokenizer/tokenizer.h"
#include "test_tokenizer_fixture.h"

using namespace dyllm;

TEST_CASE("LLaDA chat template: BOS, header ids, stripped message, assistant prompt", "[chat]") {
    CHECK(apply_chat_template(Family::LLaDA, "What is 2+2?") ==
          "<|startoftext|><|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?<|eot_id|>"
          "<|start_header_id|>assistant<|end_header_id|>\n\n");
    // content.strip() (engine/README.md §c.1)
    CHECK(apply_chat_template(Family::LLaDA, "  \n hi there \t\n") ==
          "<|startoftext|><|start_header_id|>user<|end_header_id|>\n\nhi there<|eot_id|>"
          "<|start_header_id|>assistant<|end_header_id|>\n\n");
    CHECK(apply_chat_template(Family::LLaDA, "   ") ==
          "<|startoftext|><|start_header_id|>user<|end_header_id|>\n\n<|eot_id|>"
          "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST_CASE("Dream chat template: ChatML with the default system message, message verbatim", "[chat]") {
    CHECK(apply_chat_template(Family::Dream, "What is 2+2?") ==
          "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n"
          "<|im_start|>assistant\n");
    CHECK(apply_chat_template(Family::Dream, " x\n") ==
          "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n x\n<|im_end|>\n"
          "<|im_start|>assistant\n");
}

TEST_CASE("Dream chat template string is the one in the HF golden list (ids checked there)", "[chat]") {
    std::ifstream f(std::filesystem::path(DYLLM_SOURCE_DIR) / "tests/data/tokenizers/qwen3_golden.json");
    REQUIRE(f);
    const auto g     = nlohmann::json::parse(f);
    const auto templ = apply_chat_template(Family::Dream, "What is 2+2?");
    bool       found = false;
    for (const auto& c : g.at("cases"))
        if (c.at("text").get<std::string>() == templ) {
            found = true;
            // The special tokens are single ids in HF's encoding: <|im_start|> 151644, <|im_end|> 151645.
            const auto ids = c.at("ids").get<std::vector<int32_t>>();
            CHECK(ids.front() == 151644);
            CHECK(std::count(ids.begin(), ids.end(), 151645) == 2);
            if (const char* p = std::getenv("DYLLM_QWEN_TOKENIZER"); p && *p)
                CHECK(Tokenizer::load(p)->encode(templ) == ids);
        }
    CHECK(found);
}
