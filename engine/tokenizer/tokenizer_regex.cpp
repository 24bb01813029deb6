// PCRE2 wrapper for the tokenizer: compile with UTF + UCP (\p{L}, \s, \w follow Unicode like Oniguruma in HF
// tokenizers), JIT-compile when the platform allows, and iterate matches with the interpreter as a fallback.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "engine/tokenizer/tokenizer_regex.h"

#include <pcre2.h>

#include <memory>

#include "engine/errors.h"
#include "engine/tokenizer/utf8.h"

namespace dyllm {

namespace {

std::string pcre2_message(int code) {
    PCRE2_UCHAR buf[256];
    const int   n = pcre2_get_error_message(code, buf, sizeof(buf));
    return n < 0 ? "PCRE2 error " + std::to_string(code) : std::string(reinterpret_cast<const char*>(buf));
}

struct MatchDataDeleter {
    void operator()(pcre2_match_data* m) const { pcre2_match_data_free(m); }
};

}  // namespace

TokenizerRegex::TokenizerRegex(std::string_view pattern, const std::string& where) : pattern_(pattern) {
    int         err     = 0;
    PCRE2_SIZE  err_off = 0;
    pcre2_code* code    = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                        PCRE2_UTF | PCRE2_UCP, &err, &err_off, nullptr);
    if (!code)
        throw LoadError(where + ": regex failed to compile at offset " + std::to_string(err_off) + ": " +
                        pcre2_message(err) + ": " + std::string(pattern));
    code_ = code;
    // JIT is an optimisation only: if it is unavailable (e.g. SELinux forbids executable memory) the interpreter runs.
    jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
}

TokenizerRegex::~TokenizerRegex() {
    pcre2_code_free(static_cast<pcre2_code*>(code_));
}

std::vector<std::pair<size_t, size_t>> TokenizerRegex::find_all(std::string_view text) const {
    auto*                                               code = static_cast<pcre2_code*>(code_);
    std::unique_ptr<pcre2_match_data, MatchDataDeleter> md(pcre2_match_data_create_from_pattern(code, nullptr));
    std::vector<std::pair<size_t, size_t>>              out;
    const auto*                                         subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    size_t                                              pos     = 0;
    // The caller guarantees valid UTF-8, so PCRE2's per-call validity scan (linear in the whole subject, i.e.
    // quadratic over the loop) is skipped.
    uint32_t opts = PCRE2_NO_UTF_CHECK;
    while (pos <= text.size()) {
        int rc = pcre2_match(code, subject, text.size(), pos, opts, md.get(), nullptr);
        if (rc == PCRE2_ERROR_JIT_STACKLIMIT && jit_) {
            // The JIT's default 32 KiB stack is too small for this input: redo the search with the interpreter,
            // whose limits are PCRE2's defaults (heap 20 MB).
            opts |= PCRE2_NO_JIT;
            continue;
        }
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0)
            throw InputError("tokenizer regex failed on a " + std::to_string(text.size()) +
                             "-byte text: " + pcre2_message(rc) + " (pattern " + pattern_ + ")");
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.get());
        const size_t      b = ov[0], e = ov[1];
        if (e > b) {
            out.emplace_back(b, e);
            pos = e;
        } else {
            // Empty match: step over one code point so the search always advances (Rust regex/Oniguruma iterators
            // do the same; empty splits are dropped by every caller anyway).
            if (b >= text.size()) break;
            size_t   i = b;
            char32_t cp;
            utf8_next(text, i, cp);
            pos = i;
        }
    }
    return out;
}

}  // namespace dyllm
