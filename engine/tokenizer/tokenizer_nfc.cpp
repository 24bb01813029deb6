// NFC through ICU's Normalizer2 (libicu: Debian 12's ICU 72 carries Unicode 15.0 data). The input is decoded with the
// tokenizer's own UTF-8 reader, so ill-formed bytes become U+FFFD exactly as everywhere else in the tokenizer.
#include "engine/tokenizer/tokenizer_nfc.h"

#include <unicode/normalizer2.h>
#include <unicode/unistr.h>

#include <algorithm>

#include "engine/errors.h"
#include "engine/tokenizer/utf8.h"

namespace dyllm {

namespace {

// ICU's NFC data is built into libicudata: failing to find it is a broken installation.
const icu::Normalizer2& nfc() {
    static const icu::Normalizer2* n = [] {
        UErrorCode              status = U_ZERO_ERROR;
        const icu::Normalizer2* p      = icu::Normalizer2::getNFCInstance(status);
        DYLLM_ASSERT(p && U_SUCCESS(status), std::string("ICU has no NFC normalizer: ") + u_errorName(status));
        return p;
    }();
    return *n;
}

}  // namespace

std::string nfc_normalize(std::string_view text) {
    if (std::all_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; }))
        return std::string(text);
    icu::UnicodeString u;
    size_t             i = 0;
    char32_t           cp;
    while (i < text.size()) {
        utf8_next(text, i, cp);  // ill-formed input yields U+FFFD
        u.append(UChar32(cp));
    }
    UErrorCode               status = U_ZERO_ERROR;
    const icu::UnicodeString out    = nfc().normalize(u, status);
    DYLLM_ASSERT(U_SUCCESS(status), std::string("ICU NFC failed: ") + u_errorName(status));
    std::string s;
    s.reserve(text.size());
    out.toUTF8String(s);
    return s;
}

}  // namespace dyllm
