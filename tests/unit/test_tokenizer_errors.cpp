// Every LoadError case of Tokenizer::load: one clear message naming the file and what is wrong.
#include <catch2/catch.hpp>

#include "engine/errors.h"
#include "engine/tokenizer/tokenizer.h"
#include "test_tokenizer_fixture.h"

using namespace dyllm;
using namespace dyllm::test;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

// The LoadError message of loading `j` (as tokenizer.json in a temp dir); "" if it loaded.
std::string load_error(const std::string& text, std::string* file = nullptr) {
    TempDir    d;
    const auto p = d.write("tokenizer.json", text);
    if (file) *file = p.string();
    try {
        Tokenizer::load(p);
    } catch (const LoadError& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("the fixture itself loads (so the failures below are caused by the corruption)", "[tokenizer][errors]") {
    CHECK(load_error(make_bpe_json().dump()).empty());
}

TEST_CASE("missing file", "[tokenizer][errors]") {
    TempDir    d;
    const auto p = d.path / "nope" / "tokenizer.json";
    REQUIRE_THROWS_AS(Tokenizer::load(p), LoadError);
    REQUIRE_THROWS_WITH(Tokenizer::load(p), Contains(p.string()) && Contains("no such file"));
    REQUIRE_THROWS_WITH(Tokenizer::load(d.path), Contains("is a directory"));
}

TEST_CASE("bad JSON reports nlohmann's byte position", "[tokenizer][errors]") {
    std::string       file;
    const std::string msg = load_error("{\"model\": {\"type\": \"BPE\",, }", &file);
    CHECK_THAT(msg, Contains(file) && Contains("not valid JSON at byte 26"));
    CHECK_THAT(load_error("[1, 2]"), Contains("expected a JSON object"));
    CHECK_THAT(load_error(""), Contains("not valid JSON at byte"));
}

TEST_CASE("unknown model type and missing model", "[tokenizer][errors]") {
    json j             = make_bpe_json();
    j["model"]["type"] = "Unigram";
    CHECK_THAT(load_error(j.dump()), Contains("model.type: unsupported model type 'Unigram'"));
    j.erase("model");
    CHECK_THAT(load_error(j.dump()), Contains("missing key 'model'"));
}

TEST_CASE("a merge naming a token absent from the vocabulary", "[tokenizer][errors]") {
    json j = make_bpe_json();
    j["model"]["merges"].push_back("he llo");  // "he" is a token, "llo" is not
    std::string       file;
    const std::string msg = load_error(j.dump(), &file);
    CHECK_THAT(msg, Contains(file) && Contains("model.merges[10]") && Contains("token 'llo' is not in the vocabulary"));

    json k = make_bpe_json();
    k["model"]["merges"].push_back("Ġ hello");  // both parts exist, "Ġhello" exists too -> fine
    CHECK(load_error(k.dump()).empty());
    k["model"]["merges"].push_back("he Ġ");  // "heĠ" is absent
    CHECK_THAT(load_error(k.dump()), Contains("merged token 'heĠ' is not in the vocabulary"));

    json m = make_bpe_json();
    m["model"]["merges"].push_back("a b c");
    CHECK_THAT(load_error(m.dump()), Contains("exactly one space"));
    m["model"]["merges"].back() = 42;
    CHECK_THAT(load_error(m.dump()), Contains("model.merges[10]"));
}

TEST_CASE("duplicate ids", "[tokenizer][errors]") {
    json j                     = make_bpe_json();
    j["model"]["vocab"]["zzz"] = 5;  // id 5 is already the byte 0x05
    CHECK_THAT(load_error(j.dump()), Contains("duplicate id 5"));

    json k = make_bpe_json();
    k["added_tokens"].push_back({{"id", 300}, {"content", "<|other|>"}, {"special", true}});
    CHECK_THAT(load_error(k.dump()), Contains("added_tokens[5]") && Contains("duplicate id 300"));

    json n                     = make_bpe_json();
    n["model"]["vocab"]["neg"] = -3;
    CHECK_THAT(load_error(n.dump()), Contains("id -3"));
    n["model"]["vocab"]["neg"] = "seven";
    CHECK_THAT(load_error(n.dump()), Contains("non-integer id"));
}

TEST_CASE("a regex that fails to compile, with PCRE2's message and offset", "[tokenizer][errors]") {
    json j                                                     = make_bpe_json();
    j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "ab(c";
    const std::string msg                                      = load_error(j.dump());
    CHECK_THAT(msg, Contains("pre_tokenizer.pretokenizers[0].pattern.Regex") &&
                        Contains("regex failed to compile at offset 4") && Contains("missing closing parenthesis"));
}

TEST_CASE("unsupported pre-tokenizer, normalizer, decoder; bad Split fields; bad unk", "[tokenizer][errors]") {
    json j                                         = make_bpe_json();
    j["pre_tokenizer"]["pretokenizers"][1]["type"] = "Metaspace";
    CHECK_THAT(load_error(j.dump()), Contains("unsupported pre_tokenizer type 'Metaspace'"));
    json k          = make_bpe_json();
    k["normalizer"] = {{"type", "NFKD"}};
    CHECK_THAT(load_error(k.dump()), Contains("unsupported normalizer type 'NFKD'"));
    json m       = make_bpe_json();
    m["decoder"] = {{"type", "WordPiece"}};
    CHECK_THAT(load_error(m.dump()), Contains("unsupported decoder type 'WordPiece'"));
    json s                                             = make_bpe_json();
    s["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Sideways";
    CHECK_THAT(load_error(s.dump()), Contains("behavior: unknown value 'Sideways'"));
    json u                  = make_bpe_json();
    u["model"]["unk_token"] = "<unk>";
    CHECK_THAT(load_error(u.dump()), Contains("unk_token: '<unk>' is not in the vocabulary"));
}

TEST_CASE("bad tokenizer_config.json is named in the error", "[tokenizer][errors]") {
    TempDir    d;
    const auto p   = d.write("tokenizer.json", make_bpe_json().dump());
    const auto cfg = d.write("tokenizer_config.json", "{\"eos_token\": ");
    REQUIRE_THROWS_WITH(Tokenizer::load(p), Contains(cfg.string()) && Contains("not valid JSON at byte"));
    d.write("tokenizer_config.json", "{\"added_tokens_decoder\": {\"x7\": {\"content\": \"q\"}}}");
    REQUIRE_THROWS_WITH(Tokenizer::load(p), Contains("added_tokens_decoder.x7: key is not a token id"));
}
