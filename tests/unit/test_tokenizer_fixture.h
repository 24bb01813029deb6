// Test fixtures for the tokenizer tests: a temporary directory, and a small byte-level BPE tokenizer.json built in
// code (256 byte tokens with id = byte value, a handful of hand-written merges, some added tokens).
#pragma once
#include <atomic>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "engine/tokenizer/byte_unicode.h"

namespace dyllm::test {

// A fresh directory under the system temp dir, removed at scope exit.
struct TempDir {
    std::filesystem::path path;
    TempDir() {
        static std::atomic<int> counter{0};
        path = std::filesystem::temp_directory_path() /
               ("dyllm_tok_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
        std::filesystem::remove_all(path);
        std::filesystem::create_directories(path);
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
    std::filesystem::path write(const std::string& name, const std::string& text) const {
        const auto p = path / name;
        std::ofstream(p, std::ios::binary) << text;
        return p;
    }
};

// Qwen2's pre-tokenization regex (as in Qwen2/Qwen3 tokenizer.json; digits are isolated by its \p{N} branch).
inline const char* kQwenPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Ids of the merged tokens of the fixture (256 + merge rank, in merge order).
enum FixtureId : int32_t {
    kGt      = 256,  // "Ġt"   (" t")
    kHe      = 257,  // "he"
    kGthe    = 258,  // "Ġthe" (" the")
    kLl      = 259,  // "ll"
    kHell    = 260,  // "hell"
    kHello   = 261,  // "hello"
    kGG      = 262,  // "ĠĠ"   ("  ")
    k12      = 263,  // "12"
    kEacute  = 264,  // "Ã©"   ("é" = C3 A9)
    kNlNl    = 265,  // "ĊĊ"   ("\n\n")
    kGhello  = 266,  // "Ġhello" (in the vocabulary, reachable by no merge: tests ignore_merges)
    kEot     = 300,  // <|eot|>    special
    kMaskTok = 301,  // <|mask|>   special
    kA       = 302,  // <|a|>      special
    kAB      = 303,  // <|a|><|b|> special (longest match wins over <|a|>)
    kWord    = 304,  // "wordy"    added, not special
};

// tokenizer.json as a JSON object. pre_tokenizer: the Qwen2 Split + ByteLevel(use_regex=false) sequence unless
// given; merges_as_pairs switches the merges to the ["a", "b"] format.
inline nlohmann::json make_bpe_json(bool merges_as_pairs = false, nlohmann::json pre_tokenizer = nullptr,
                                    bool ignore_merges = false) {
    using nlohmann::json;
    json vocab = json::object();
    for (int b = 0; b < 256; ++b) vocab[bytes_to_unicode_string(std::string(1, char(b)))] = b;
    const std::vector<std::pair<std::string, std::string>> merges = {
        {"Ġ", "t"},    {"h", "e"}, {"Ġt", "he"}, {"l", "l"}, {"he", "ll"},
        {"hell", "o"}, {"Ġ", "Ġ"}, {"1", "2"},   {"Ã", "©"}, {"Ċ", "Ċ"}};
    json jm = json::array();
    for (size_t r = 0; r < merges.size(); ++r) {
        vocab[merges[r].first + merges[r].second] = 256 + int(r);
        if (merges_as_pairs)
            jm.push_back(json::array({merges[r].first, merges[r].second}));
        else
            jm.push_back(merges[r].first + " " + merges[r].second);
    }
    vocab["Ġhello"] = int(kGhello);
    if (pre_tokenizer.is_null())
        pre_tokenizer = {{"type", "Sequence"},
                         {"pretokenizers",
                          json::array({{{"type", "Split"},
                                        {"pattern", {{"Regex", kQwenPattern}}},
                                        {"behavior", "Isolated"},
                                        {"invert", false}},
                                       {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}})}};
    auto added = [](int id, const char* content, bool special) {
        return json{{"id", id},        {"content", content},  {"single_word", false}, {"lstrip", false},
                    {"rstrip", false}, {"normalized", false}, {"special", special}};
    };
    return json{{"version", "1.0"},
                {"added_tokens",
                 json::array({added(kEot, "<|eot|>", true), added(kMaskTok, "<|mask|>", true), added(kA, "<|a|>", true),
                              added(kAB, "<|a|><|b|>", true), added(kWord, "wordy", false)})},
                {"normalizer", {{"type", "NFC"}}},
                {"pre_tokenizer", pre_tokenizer},
                {"post_processor", nullptr},
                {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}},
                {"model",
                 {{"type", "BPE"},
                  {"dropout", nullptr},
                  {"unk_token", nullptr},
                  {"fuse_unk", false},
                  {"byte_fallback", false},
                  {"ignore_merges", ignore_merges},
                  {"vocab", vocab},
                  {"merges", jm}}}};
}

}  // namespace dyllm::test
