// Leftmost-longest matching of added tokens in raw text. Simplifications versus HF (documented): all added tokens
// are matched on the raw text (HF matches normalized=true ones after normalization, which is the same text here
// because the supported normalizers leave NFC text unchanged); lstrip/rstrip swallow ASCII whitespace only; the
// single_word test treats ASCII letters, digits and '_' as word characters.
#include "engine/tokenizer/tokenizer_added.h"

#include <algorithm>

namespace dyllm {

namespace {
bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}
bool is_word(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}
}  // namespace

AddedTokenMatcher::AddedTokenMatcher(const std::vector<AddedToken>& tokens) {
    for (const auto& t : tokens)
        if (!t.content.empty()) tokens_.push_back(t);
    for (uint32_t k = 0; k < tokens_.size(); ++k)
        by_first_byte_[static_cast<unsigned char>(tokens_[k].content[0])].push_back(k);
    for (auto& v : by_first_byte_)
        std::stable_sort(v.begin(), v.end(),
                         [&](uint32_t a, uint32_t b) { return tokens_[a].content.size() > tokens_[b].content.size(); });
}

std::vector<AddedTokenMatcher::Segment> AddedTokenMatcher::split(std::string_view text) const {
    std::vector<Segment> out;
    size_t               plain = 0;  // start of the pending plain segment
    size_t               i     = 0;
    while (i < text.size()) {
        const auto&       cands = by_first_byte_[static_cast<unsigned char>(text[i])];
        const AddedToken* hit   = nullptr;
        for (uint32_t k : cands) {
            const AddedToken& t = tokens_[k];
            if (text.compare(i, t.content.size(), t.content) != 0) continue;
            if (t.single_word) {
                const size_t e = i + t.content.size();
                if ((i > 0 && is_word(text[i - 1])) || (e < text.size() && is_word(text[e]))) continue;
            }
            hit = &t;
            break;
        }
        if (!hit) {
            ++i;
            continue;
        }
        size_t b = i, e = i + hit->content.size();
        if (hit->lstrip)
            while (b > plain && is_space(text[b - 1])) --b;
        if (hit->rstrip)
            while (e < text.size() && is_space(text[e])) ++e;
        if (b > plain) out.push_back({plain, b, -1});
        out.push_back({b, e, hit->id});
        i = plain = e;
    }
    if (plain < text.size()) out.push_back({plain, text.size(), -1});
    return out;
}

}  // namespace dyllm
