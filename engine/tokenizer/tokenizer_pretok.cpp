// Normalizers and pre-tokenizers of HF tokenizers, re-implemented from their documented behaviour
// (huggingface/tokenizers: normalizers/, pre_tokenizers/, and SplitDelimiterBehavior in normalizer.rs).
#include "engine/tokenizer/tokenizer_pretok.h"

#include <algorithm>
#include <optional>

#include "engine/io/json_file.h"
#include "engine/tokenizer/byte_unicode.h"
#include "engine/tokenizer/tokenizer_nfc.h"
#include "engine/tokenizer/tokenizer_json.h"
#include "engine/tokenizer/tokenizer_regex.h"

namespace dyllm {

using tokjson::json;

namespace {

// ---- normalizers -------------------------------------------------------------------------------------------------

// NFC (UAX #15) through ICU (engine/tokenizer/tokenizer_nfc.cpp): already-NFC text passes unchanged, decomposed input
// ("e" + U+0301) is composed as HF's NFC normalizer does.
class NfcNormalizer final : public TokenizerNormalizer {
public:
    std::string apply(std::string_view text) const override { return nfc_normalize(text); }
};

class SequenceNormalizer final : public TokenizerNormalizer {
public:
    std::vector<std::unique_ptr<TokenizerNormalizer>> steps;
    std::string                                       apply(std::string_view text) const override {
        std::string s(text);
        for (const auto& st : steps) s = st->apply(s);
        return s;
    }
};

// ---- splitting with HF's SplitDelimiterBehavior ------------------------------------------------------------------

enum class Behavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

Behavior parse_behavior(const std::string& s, const std::string& where) {
    if (s == "Removed") return Behavior::Removed;
    if (s == "Isolated") return Behavior::Isolated;
    if (s == "MergedWithPrevious") return Behavior::MergedWithPrevious;
    if (s == "MergedWithNext") return Behavior::MergedWithNext;
    if (s == "Contiguous") return Behavior::Contiguous;
    throw LoadError(where + ".behavior: unknown value '" + s +
                    "' (expected Removed, Isolated, MergedWithPrevious, MergedWithNext or Contiguous)");
}

struct Span {
    size_t b, e;
    bool   is_match;
};

// Matches -> the alternating covering list of (match / non-match) spans, as HF's Pattern::find_matches.
std::vector<Span> cover(std::string_view s, const std::vector<std::pair<size_t, size_t>>& matches, bool invert) {
    std::vector<Span> out;
    size_t            prev = 0;
    for (auto [b, e] : matches) {
        if (b != prev) out.push_back({prev, b, invert});
        out.push_back({b, e, !invert});
        prev = e;
    }
    if (prev != s.size()) out.push_back({prev, s.size(), invert});
    return out;
}

// Applies the behaviour (HF NormalizedString::split) and appends the non-empty pieces to out.
void split_spans(std::string_view s, const std::vector<Span>& spans, Behavior behavior, std::vector<std::string>& out) {
    std::vector<std::pair<size_t, size_t>> pieces;
    bool                                   previous_match = false;
    switch (behavior) {
        case Behavior::Isolated:
            for (const auto& sp : spans) pieces.emplace_back(sp.b, sp.e);
            break;
        case Behavior::Removed:
            for (const auto& sp : spans)
                if (!sp.is_match) pieces.emplace_back(sp.b, sp.e);
            break;
        case Behavior::MergedWithPrevious:
            for (const auto& sp : spans) {
                if (sp.is_match && !previous_match && !pieces.empty())
                    pieces.back().second = sp.e;
                else
                    pieces.emplace_back(sp.b, sp.e);
                previous_match = sp.is_match;
            }
            break;
        case Behavior::MergedWithNext:
            for (size_t k = spans.size(); k-- > 0;) {
                const auto& sp = spans[k];
                if (sp.is_match && !previous_match && !pieces.empty())
                    pieces.back().first = sp.b;
                else
                    pieces.emplace_back(sp.b, sp.e);
                previous_match = sp.is_match;
            }
            std::reverse(pieces.begin(), pieces.end());
            break;
        case Behavior::Contiguous:
            for (size_t k = 0; k < spans.size(); ++k) {
                const auto& sp = spans[k];
                if (k > 0 && sp.is_match == previous_match)
                    pieces.back().second = sp.e;
                else
                    pieces.emplace_back(sp.b, sp.e);
                previous_match = sp.is_match;
            }
            break;
    }
    for (auto [b, e] : pieces)
        if (e > b) out.emplace_back(s.substr(b, e - b));
}

std::vector<std::pair<size_t, size_t>> find_literal(std::string_view s, std::string_view needle) {
    std::vector<std::pair<size_t, size_t>> out;
    if (needle.empty()) return out;
    for (size_t p = s.find(needle); p != std::string_view::npos; p = s.find(needle, p + needle.size()))
        out.emplace_back(p, p + needle.size());
    return out;
}

// ---- pre-tokenizers ----------------------------------------------------------------------------------------------

// A regex or literal pattern + behaviour + invert: Split, and the building block of Digits/Whitespace/ByteLevel.
class PatternSplit {
public:
    PatternSplit(std::unique_ptr<TokenizerRegex> re, std::string literal, Behavior behavior, bool invert)
        : re_(std::move(re)), literal_(std::move(literal)), behavior_(behavior), invert_(invert) {}

    void apply(std::vector<std::string>& pieces) const {
        std::vector<std::string> out;
        out.reserve(pieces.size());
        for (const auto& p : pieces) {
            auto matches = re_ ? re_->find_all(p) : find_literal(p, literal_);
            split_spans(p, cover(p, matches, invert_), behavior_, out);
        }
        pieces.swap(out);
    }

private:
    std::unique_ptr<TokenizerRegex> re_;
    std::string                     literal_;
    Behavior                        behavior_;
    bool                            invert_;
};

class SplitPreTokenizer final : public PreTokenizer {
public:
    explicit SplitPreTokenizer(PatternSplit s) : split_(std::move(s)) {}
    void apply(std::vector<std::string>& pieces) const override { split_.apply(pieces); }

private:
    PatternSplit split_;
};

// GPT-2's pre-tokenization regex (openai/gpt-2 encoder.py; HF ByteLevel use_regex=true).
constexpr const char* kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

class ByteLevelPreTokenizer final : public PreTokenizer {
public:
    ByteLevelPreTokenizer(bool add_prefix_space, bool use_regex, const std::string& where)
        : add_prefix_space_(add_prefix_space) {
        if (use_regex)
            regex_.emplace(std::make_unique<TokenizerRegex>(kGpt2Pattern, where + " (GPT-2 pattern)"), std::string(),
                           Behavior::Isolated, false);
    }
    void apply(std::vector<std::string>& pieces) const override {
        if (add_prefix_space_)
            for (auto& p : pieces)
                if (p.empty() || p[0] != ' ') p.insert(p.begin(), ' ');
        if (regex_) regex_->apply(pieces);
        for (auto& p : pieces) p = bytes_to_unicode_string(p);
    }
    bool byte_level() const override { return true; }

private:
    bool                        add_prefix_space_;
    std::optional<PatternSplit> regex_;
};

class SequencePreTokenizer final : public PreTokenizer {
public:
    std::vector<std::unique_ptr<PreTokenizer>> steps;
    void                                       apply(std::vector<std::string>& pieces) const override {
        for (const auto& s : steps) s->apply(pieces);
    }
    bool byte_level() const override {
        for (const auto& s : steps)
            if (s->byte_level()) return true;
        return false;
    }
};

}  // namespace

std::unique_ptr<TokenizerNormalizer> make_normalizer(const json& j, const std::string& where, int depth) {
    if (j.is_null()) return nullptr;
    // Bounded so the key path in `where` (one segment per level) and the recursion stay short.
    if (depth >= tokjson::kMaxNesting)
        throw LoadError(where + ": Sequence normalizers nested deeper than " + std::to_string(tokjson::kMaxNesting));
    const std::string type = tokjson::require_string(j, "type", where);
    if (type == "NFC") return std::make_unique<NfcNormalizer>();
    if (type == "Sequence") {
        auto        seq   = std::make_unique<SequenceNormalizer>();
        const json& steps = tokjson::require(j, "normalizers", where);
        if (!steps.is_array()) throw LoadError(where + ".normalizers: expected an array");
        for (size_t k = 0; k < steps.size(); ++k) {
            auto n = make_normalizer(steps[k], where + ".normalizers[" + std::to_string(k) + "]", depth + 1);
            if (n) seq->steps.push_back(std::move(n));
        }
        return seq;
    }
    throw LoadError(where + ": unsupported normalizer type '" + text_excerpt(type) + "' (supported: NFC, Sequence)");
}

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const json& j, const std::string& where, int depth) {
    if (j.is_null()) return nullptr;
    if (depth >= tokjson::kMaxNesting)
        throw LoadError(where + ": Sequence pre_tokenizers nested deeper than " + std::to_string(tokjson::kMaxNesting));
    const std::string type = tokjson::require_string(j, "type", where);
    if (type == "Sequence") {
        auto        seq   = std::make_unique<SequencePreTokenizer>();
        const json& steps = tokjson::require(j, "pretokenizers", where);
        if (!steps.is_array()) throw LoadError(where + ".pretokenizers: expected an array");
        for (size_t k = 0; k < steps.size(); ++k) {
            auto p = make_pre_tokenizer(steps[k], where + ".pretokenizers[" + std::to_string(k) + "]", depth + 1);
            if (p) seq->steps.push_back(std::move(p));
        }
        return seq;
    }
    if (type == "ByteLevel")
        return std::make_unique<ByteLevelPreTokenizer>(tokjson::get_bool(j, "add_prefix_space", true, where),
                                                       tokjson::get_bool(j, "use_regex", true, where), where);
    if (type == "Split") {
        const json& pat      = tokjson::require(j, "pattern", where);
        const auto  behavior = parse_behavior(tokjson::require_string(j, "behavior", where), where);
        const bool  invert   = tokjson::get_bool(j, "invert", false, where);
        if (pat.is_object() && pat.contains("Regex"))
            return std::make_unique<SplitPreTokenizer>(
                PatternSplit(std::make_unique<TokenizerRegex>(tokjson::require_string(pat, "Regex", where + ".pattern"),
                                                              where + ".pattern.Regex"),
                             {}, behavior, invert));
        if (pat.is_object() && pat.contains("String"))
            return std::make_unique<SplitPreTokenizer>(
                PatternSplit(nullptr, tokjson::require_string(pat, "String", where + ".pattern"), behavior, invert));
        throw LoadError(where + ".pattern: expected {\"Regex\": ...} or {\"String\": ...}");
    }
    if (type == "Digits") {
        // HF: char::is_numeric (Unicode Nd/Nl/No = \p{N}); each digit alone, or runs of digits kept together.
        const bool individual = tokjson::get_bool(j, "individual_digits", false, where);
        return std::make_unique<SplitPreTokenizer>(PatternSplit(std::make_unique<TokenizerRegex>(R"(\p{N})", where), {},
                                                                individual ? Behavior::Isolated : Behavior::Contiguous,
                                                                false));
    }
    if (type == "Whitespace")  // HF: the regex \w+|[^\w\s]+, keeping only the matches
        return std::make_unique<SplitPreTokenizer>(
            PatternSplit(std::make_unique<TokenizerRegex>(R"(\w+|[^\w\s]+)", where), {}, Behavior::Removed, true));
    if (type == "WhitespaceSplit")  // HF: split on char::is_whitespace, dropping it
        return std::make_unique<SplitPreTokenizer>(
            PatternSplit(std::make_unique<TokenizerRegex>(R"(\s)", where), {}, Behavior::Removed, false));
    throw LoadError(where + ": unsupported pre_tokenizer type '" + text_excerpt(type) +
                    "' (supported: ByteLevel, Split, Digits, Whitespace, WhitespaceSplit, Sequence)");
}

}  // namespace dyllm
