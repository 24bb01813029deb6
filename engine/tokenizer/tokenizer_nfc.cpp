// NFC per UAX #15 sections 9-10 (decompose, canonical order by combining class, compose with blocking rules), with
// Hangul syllables handled algorithmically (Unicode 15 ch. 3.12) and the tables of tokenizer_nfc_data.cpp.
#include "engine/tokenizer/tokenizer_nfc.h"

#include <algorithm>
#include <unordered_map>
#include <vector>

#include "engine/tokenizer/tokenizer_nfc_data.h"
#include "engine/tokenizer/utf8.h"

namespace dyllm {

namespace {

// Hangul constants (Unicode ch. 3.12, "Conjoining Jamo Behavior").
constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr char32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount, kSCount = kLCount * kNCount;

uint8_t ccc_of(char32_t cp) {
    if (cp < 0x300) return 0;  // nothing below U+0300 has a non-zero class
    const nfc::CccRange* end = nfc::kCcc + nfc::kCccCount;
    const auto*          it =
        std::upper_bound(nfc::kCcc, end, cp, [](char32_t c, const nfc::CccRange& r) { return c < r.first; });
    if (it == nfc::kCcc) return 0;
    --it;
    return cp <= it->last ? it->ccc : 0;
}

const nfc::Decomp* decomp_of(char32_t cp) {
    const nfc::Decomp* end = nfc::kDecomp + nfc::kDecompCount;
    const auto* it = std::lower_bound(nfc::kDecomp, end, cp, [](const nfc::Decomp& d, char32_t c) { return d.cp < c; });
    return it != end && it->cp == cp ? it : nullptr;
}

void decompose(char32_t cp, std::vector<char32_t>& out) {
    if (cp >= kSBase && cp < kSBase + kSCount) {
        const char32_t s = cp - kSBase;
        out.push_back(kLBase + s / kNCount);
        out.push_back(kVBase + (s % kNCount) / kTCount);
        if (s % kTCount) out.push_back(kTBase + s % kTCount);
        return;
    }
    if (const nfc::Decomp* d = cp >= 0xC0 ? decomp_of(cp) : nullptr) {  // U+00C0 is the first decomposable
        decompose(d->a, out);
        if (d->b) decompose(d->b, out);
        return;
    }
    out.push_back(cp);
}

// (a, b) -> primary composite, built once from the flagged pairs.
const std::unordered_map<uint64_t, char32_t>& composition_map() {
    static const auto map = [] {
        std::unordered_map<uint64_t, char32_t> m;
        for (size_t k = 0; k < nfc::kDecompCount; ++k)
            if (nfc::kDecomp[k].composes)
                m.emplace((uint64_t(nfc::kDecomp[k].a) << 32) | nfc::kDecomp[k].b, nfc::kDecomp[k].cp);
        return m;
    }();
    return map;
}

char32_t compose(char32_t a, char32_t b) {
    if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount)
        return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
    if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase && b < kTBase + kTCount)
        return a + (b - kTBase);
    const auto& m  = composition_map();
    auto        it = m.find((uint64_t(a) << 32) | b);
    return it == m.end() ? 0 : it->second;
}

}  // namespace

std::string nfc_normalize(std::string_view text) {
    if (std::all_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; }))
        return std::string(text);
    // 1. Full canonical decomposition.
    std::vector<char32_t> cps;
    cps.reserve(text.size());
    size_t   i = 0;
    char32_t cp;
    while (i < text.size()) {
        utf8_next(text, i, cp);  // ill-formed input yields U+FFFD
        decompose(cp, cps);
    }
    // 2. Canonical ordering: stable sort of each run of non-starters by combining class.
    std::vector<uint8_t> cls(cps.size());
    for (size_t k = 0; k < cps.size(); ++k) cls[k] = ccc_of(cps[k]);
    for (size_t k = 0; k < cps.size();) {
        if (cls[k] == 0) {
            ++k;
            continue;
        }
        size_t e = k;
        while (e < cps.size() && cls[e] != 0) ++e;
        if (e - k > 1) {
            std::vector<std::pair<uint8_t, char32_t>> run;
            for (size_t q = k; q < e; ++q) run.emplace_back(cls[q], cps[q]);
            std::stable_sort(run.begin(), run.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
            for (size_t q = k; q < e; ++q) cls[q] = run[q - k].first, cps[q] = run[q - k].second;
        }
        k = e;
    }
    // 3. Canonical composition: each character combines with the last starter unless blocked (a character in
    //    between with class 0 or a class >= its own; in canonical order checking the last one suffices).
    std::vector<char32_t> out;
    std::vector<uint8_t>  out_cls;
    out.reserve(cps.size());
    long starter = -1;
    for (size_t k = 0; k < cps.size(); ++k) {
        const uint8_t c = cls[k];
        if (starter >= 0) {
            const bool adjacent = out.size() == size_t(starter) + 1;
            const bool blocked  = !adjacent && (out_cls.back() == 0 || out_cls.back() >= c);
            if (!blocked) {
                if (char32_t comp = compose(out[starter], cps[k])) {
                    out[starter] = comp;
                    continue;
                }
            }
        }
        if (c == 0) starter = long(out.size());
        out.push_back(cps[k]);
        out_cls.push_back(c);
    }
    std::string s;
    s.reserve(text.size());
    for (char32_t x : out) utf8_append(s, x);
    return s;
}

}  // namespace dyllm
