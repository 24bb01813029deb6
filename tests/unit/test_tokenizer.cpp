// Tokenizer behaviour on a small byte-level BPE built in the test: expected ids computed by hand from the fixture's
// merges, exact UTF-8 round trips (multi-byte, emoji ZWJ sequences, flags, whitespace runs), digits, added tokens,
// decode of cut characters, WordLevel, tokenizer_config.json, and concurrent encoding.
#include <catch2/catch.hpp>

#include <thread>

#include "engine/errors.h"
#include "engine/tokenizer/tokenizer.h"
#include "test_tokenizer_fixture.h"

using namespace dyllm;
using namespace dyllm::test;
using Ids = std::vector<int32_t>;

namespace {

std::unique_ptr<Tokenizer> load_json(const TempDir& dir, const nlohmann::json& j) {
    return Tokenizer::load(dir.write("tokenizer.json", j.dump()));
}

Ids bytes_of(std::string_view s) {  // ids of the fixture's single-byte tokens (id = byte value)
    Ids ids;
    for (unsigned char c : s) ids.push_back(c);
    return ids;
}

const char* kRoundTrip[] = {
    "Hello, world! How are you?",
    "café naïve résumé Straße",
    "日本語のテキストです。",
    "emoji 😀👍🏽 family 👨‍👩‍👧‍👦 flags 🇫🇷🇯🇵🏳️‍🌈",
    "a   b",
    "\n\n\t",
    "  leading and trailing   ",
    "line1\r\nline2\n\n\nend",
    "12345 3.14 1,000",
    "the<|eot|>hello<|mask|><|mask|>",
    "x<|a|><|b|>y<|a|>",
    "<|eo <| |> <|a| <|b|>",
    "I'm HE'LL they've",
    "",
    " ",
};

}  // namespace

TEST_CASE("byte-level BPE: ids computed by hand from the fixture's merges", "[tokenizer]") {
    TempDir dir;
    auto    tok = load_json(dir, make_bpe_json());
    // t h e: only "h e" applies.
    CHECK(tok->encode("the") == Ids{'t', kHe});
    // Ġ t h e: "Ġ t" (rank 0), then "h e" (rank 1), then "Ġt he" (rank 2).
    CHECK(tok->encode(" the") == Ids{kGthe});
    // h e l l o: he, ll, hell, hello in rank order.
    CHECK(tok->encode("hello") == Ids{kHello});
    CHECK(tok->encode("the hello") == Ids{'t', kHe, ' ', kHello});
    // é is the bytes C3 A9 = "Ã©", merged by "Ã ©".
    CHECK(tok->encode("café") == Ids{'c', 'a', 'f', kEacute});
    // Qwen2 regex: "a", "  " (\s+(?!\S) leaves one space for the next word), " b".
    CHECK(tok->encode("a   b") == Ids{'a', kGG, ' ', 'b'});
    // "\n\n" by \s*[\r\n]+, then "\t" by \s+.
    CHECK(tok->encode("\n\n\t") == Ids{kNlNl, '\t'});
    // Digits are isolated by the Qwen2 pattern's \p{N} branch, so "1 2" never merges.
    CHECK(tok->encode("12") == Ids{'1', '2'});
    // 4-byte emoji = 4 byte tokens.
    CHECK(tok->encode("😀") == Ids{0xF0, 0x9F, 0x98, 0x80});
    CHECK(tok->encode("").empty());
}

TEST_CASE("byte-level BPE: merges as \"a b\" strings and as [a, b] pairs give the same ids", "[tokenizer]") {
    TempDir d1, d2;
    auto    a = load_json(d1, make_bpe_json(false));
    auto    b = load_json(d2, make_bpe_json(true));
    for (const char* s : kRoundTrip) CHECK(a->encode(s) == b->encode(s));
    CHECK(b->encode(" the hello") == Ids{kGthe, ' ', kHello});
}

TEST_CASE("byte-level BPE: decode(encode(s)) restores the exact bytes", "[tokenizer]") {
    TempDir dir;
    auto    tok = load_json(dir, make_bpe_json());
    for (const char* s : kRoundTrip) {
        INFO("text: " << s);
        const Ids ids = tok->encode(s);
        CHECK(tok->decode(ids) == s);
    }
    // Every byte-level id decodes to its byte; a whole sequence of all 256 bytes that is valid UTF-8 is restored.
    std::string all_ascii;
    for (int c = 0; c < 128; ++c) all_ascii.push_back(char(c));
    CHECK(tok->decode(tok->encode(all_ascii)) == all_ascii);
}

TEST_CASE("added tokens are matched in the raw text first, longest match wins, never split", "[tokenizer]") {
    TempDir dir;
    auto    tok = load_json(dir, make_bpe_json());
    CHECK(tok->encode("the<|eot|>hello") == Ids{'t', kHe, kEot, kHello});
    CHECK(tok->encode("<|mask|><|mask|>") == Ids{kMaskTok, kMaskTok});
    CHECK(tok->encode("x<|a|><|b|>y") == Ids{'x', kAB, 'y'});  // the longer <|a|><|b|> beats <|a|>
    CHECK(tok->encode("x<|a|>y") == Ids{'x', kA, 'y'});
    CHECK(tok->encode("<|eot|") == bytes_of("<|eot|"));  // an incomplete special token is plain text
    // A non-special added token is matched inside words too (no single_word flag) and survives skip_special.
    CHECK(tok->encode("wordy") == Ids{kWord});
    // Text around a special token is pre-tokenized separately: " hello" after <|eot|> keeps its space piece.
    CHECK(tok->encode("<|eot|> hello") == Ids{kEot, ' ', kHello});
    CHECK(tok->is_special(kEot));
    CHECK_FALSE(tok->is_special(kWord));
    CHECK_FALSE(tok->is_special(kHello));
    CHECK(tok->token_id("<|eot|>") == kEot);
    CHECK(tok->token_id("Ġthe") == kGthe);
    CHECK(tok->token_id("nope") == -1);
}

TEST_CASE("decode: skip_special, token_text, unknown ids, cut multi-byte characters", "[tokenizer]") {
    TempDir   dir;
    auto      tok = load_json(dir, make_bpe_json());
    const Ids ids = tok->encode("the<|eot|>wordy<|mask|>");
    CHECK(tok->decode(ids) == "the<|eot|>wordy<|mask|>");
    CHECK(tok->decode(ids, true) == "thewordy");
    CHECK(tok->token_text(kGthe) == " the");
    CHECK(tok->token_text(kEot) == "<|eot|>");
    CHECK(tok->token_text(99999).empty());
    CHECK(tok->token_text(-5).empty());
    CHECK(tok->token_text(290).empty());  // a hole between the vocabulary and the added tokens
    CHECK(tok->decode(Ids{kHello, 99999, -1, kHello}) == "hellohello");
    // A lone lead byte of é (C3): one U+FFFD (as HF's from_utf8_lossy); with its continuation byte: é.
    CHECK(tok->decode(Ids{0xC3}) == "\xEF\xBF\xBD");
    CHECK(tok->decode(Ids{0xC3, 0xA9}) == "é");
    // The first 3 of the 4 bytes of 😀 are one maximal ill-formed subpart -> a single U+FFFD, then text resumes.
    CHECK(tok->decode(Ids{0xF0, 0x9F, 0x98, 'a'}) ==
          "\xEF\xBF\xBD"
          "a");
    CHECK(tok->token_text(0xF0) == "\xEF\xBF\xBD");
    CHECK(tok->vocab_size() == kWord + 1);
}

TEST_CASE("Digits pre-tokenizer: digits are never merged; without it \"1 2\" merges", "[tokenizer]") {
    using nlohmann::json;
    const json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
    TempDir    d1, d2;
    auto       digits = load_json(
              d1, make_bpe_json(false, {{"type", "Sequence"},
                                        {"pretokenizers",
                                         json::array({{{"type", "Digits"}, {"individual_digits", true}}, byte_level})}}));
    auto plain = load_json(d2, make_bpe_json(false, byte_level));
    CHECK(plain->encode("12") == Ids{k12});
    CHECK(digits->encode("12") == Ids{'1', '2'});
    CHECK(digits->encode("a1212b") == Ids{'a', '1', '2', '1', '2', 'b'});
    CHECK(digits->decode(digits->encode("x 1212 the")) == "x 1212 the");
    // GPT-2 regex of ByteLevel(use_regex): " the" is one piece -> Ġthe.
    CHECK(plain->encode("x the") == Ids{'x', kGthe});
}

TEST_CASE("ByteLevel add_prefix_space and ignore_merges", "[tokenizer]") {
    using nlohmann::json;
    TempDir d1, d2, d3;
    auto    prefix =
        load_json(d1, make_bpe_json(false, {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", true}}));
    CHECK(prefix->encode("the") == Ids{kGthe});
    // ignore_merges (Llama-3): a pre-token that is itself a vocabulary entry maps to it directly.
    auto ign   = load_json(d2, make_bpe_json(false, nullptr, true));
    auto noign = load_json(d3, make_bpe_json(false, nullptr, false));
    CHECK(ign->encode(" hello") == Ids{kGhello});
    CHECK(noign->encode(" hello") == Ids{' ', kHello});
}

TEST_CASE("Split behaviours: Removed, MergedWithPrevious, MergedWithNext, Contiguous, invert", "[tokenizer]") {
    using nlohmann::json;
    // WordLevel over a vocabulary of the expected pieces makes the piece boundaries visible as ids.
    json vocab = {{"<unk>", 0}, {"a", 1}, {"-", 2}, {"a-", 3}, {"-a", 4}, {"--", 5}, {"b", 6}, {"a--", 7}, {"--b", 8}};
    auto make  = [&](const char* behavior, bool invert, const char* pattern = "-") {
        return json{
            {"model", {{"type", "WordLevel"}, {"vocab", vocab}, {"unk_token", "<unk>"}}},
            {"pre_tokenizer",
             {{"type", "Split"}, {"pattern", {{"String", pattern}}}, {"behavior", behavior}, {"invert", invert}}},
            {"decoder", nullptr}};
    };
    TempDir d;
    CHECK(load_json(d, make("Removed", false))->encode("a--b") == Ids{1, 6});
    CHECK(load_json(d, make("Isolated", false))->encode("a--b") == Ids{1, 2, 2, 6});
    CHECK(load_json(d, make("MergedWithPrevious", false))->encode("a--b") == Ids{3, 2, 6});
    CHECK(load_json(d, make("MergedWithNext", false))->encode("a--b") == Ids{1, 2, 0});  // "-", "-b" (unk)
    CHECK(load_json(d, make("Contiguous", false))->encode("a--b") == Ids{1, 5, 6});
    CHECK(load_json(d, make("Removed", true))->encode("a--b") == Ids{2, 2});  // invert: keep only the matches
}

TEST_CASE("WordLevel with the Whitespace pre-tokenizer: encode, unk, decode joins with spaces", "[tokenizer]") {
    using nlohmann::json;
    const json j = {{"model",
                     {{"type", "WordLevel"},
                      {"vocab", {{"[UNK]", 0}, {"hello", 1}, {"world", 2}, {"!", 3}, {"?!", 4}}},
                      {"unk_token", "[UNK]"}}},
                    {"pre_tokenizer", {{"type", "Whitespace"}}},
                    {"added_tokens", json::array({{{"id", 5}, {"content", "[SEP]"}, {"special", true}}})},
                    {"decoder", nullptr}};
    TempDir    d;
    auto       tok = load_json(d, j);
    CHECK(tok->encode("hello world!") == Ids{1, 2, 3});
    CHECK(tok->encode("  hello\t\nworld ?!") == Ids{1, 2, 4});
    CHECK(tok->encode("hello there") == Ids{1, 0});
    CHECK(tok->encode("hello[SEP]world") == Ids{1, 5, 2});
    CHECK(tok->decode(tok->encode("hello world")) == "hello world");
    CHECK(tok->decode(Ids{1, 5, 2}, true) == "hello world");
    CHECK(tok->decode(Ids{1, 5, 2}) == "hello [SEP] world");
    CHECK(tok->token_text(2) == "world");
    CHECK(tok->vocab_size() == 6);

    TempDir d2;  // WhitespaceSplit keeps punctuation attached
    json    j2          = j;
    j2["pre_tokenizer"] = {{"type", "WhitespaceSplit"}};
    auto ws             = load_json(d2, j2);
    CHECK(ws->encode("hello  world!") == Ids{1, 0});
}

TEST_CASE("tokenizer_config.json beside tokenizer.json adds special tokens", "[tokenizer]") {
    using nlohmann::json;
    TempDir d;
    d.write("tokenizer_config.json", json{{"added_tokens_decoder",
                                           {{"310", {{"content", "<|extra|>"}, {"special", true}}},
                                            {"300", {{"content", "<|eot|>"}, {"special", true}}}}},
                                          {"eos_token", "wordy"}}
                                         .dump());
    auto tok = load_json(d, make_bpe_json());
    CHECK(tok->encode("the<|extra|>") == Ids{'t', kHe, 310});
    CHECK(tok->is_special(310));
    CHECK(tok->is_special(kWord));  // named as eos_token -> special
    CHECK(tok->decode(Ids{310, kHello, kWord}, true) == "hello");
    CHECK(tok->vocab_size() == 311);
}

TEST_CASE("invalid UTF-8 input is encoded as U+FFFD without crashing", "[tokenizer]") {
    TempDir           d;
    auto              tok = load_json(d, make_bpe_json());
    const std::string bad = std::string("a\xFF") + "b\xE6\x97";  // stray byte, truncated 3-byte sequence
    const Ids         ids = tok->encode(bad);
    CHECK(tok->decode(ids) ==
          "a\xEF\xBF\xBD"
          "b\xEF\xBF\xBD");
}

TEST_CASE("concurrent encode from several threads gives the same ids", "[tokenizer]") {
    TempDir          d;
    auto             tok = load_json(d, make_bpe_json());
    std::vector<Ids> expect;
    for (const char* s : kRoundTrip) expect.push_back(tok->encode(s));
    std::atomic<int>         mismatches{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&] {
            for (int rep = 0; rep < 50; ++rep)
                for (size_t k = 0; k < std::size(kRoundTrip); ++k)
                    if (tok->encode(kRoundTrip[k]) != expect[k]) ++mismatches;
        });
    for (auto& th : threads) th.join();
    CHECK(mismatches == 0);
}
