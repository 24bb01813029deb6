// decoded_so_far(): the response text at one step, masks as boxes (app/model/decoded_text.h).
#include "app/model/decoded_text.h"

#include "app/model/utf8_sequence.h"

namespace dyllm::app {

namespace {

constexpr const char* kBox         = "\xE2\x96\xA1";  // U+25A1 white square: a position still masked
constexpr const char* kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Keeps valid UTF-8 and '\n'; other control bytes become a space, invalid sequences U+FFFD.
void append_clean(std::string& out, const std::string& s) {
    for (size_t i = 0; i < s.size();) {
        const unsigned char ch = static_cast<unsigned char>(s[i]);
        if (ch < 0x80) {
            out += ch == '\n' || ch >= 0x20 ? char(ch == 0x7f ? ' ' : ch) : ' ';
            ++i;
            continue;
        }
        if (const size_t len = utf8_sequence_length(s, i)) {
            out.append(s, i, len);
            i += len;
        } else {
            out += kReplacement;
            ++i;
        }
    }
}

}  // namespace

std::string decoded_so_far(const std::vector<CanvasCell>& cells, const Vocab& vocab, int32_t stop_pos) {
    const size_t end = stop_pos >= 0 && size_t(stop_pos) < cells.size() ? size_t(stop_pos) : cells.size();
    std::string  raw;  // token bytes, masks as boxes; cleaned once at the end so multi-byte pieces rejoin
    std::string  out;
    auto         flush = [&] {
        append_clean(out, raw);
        raw.clear();
    };
    for (size_t i = 0; i < end;) {
        const CanvasCell& c = cells[i];
        if (c.masked()) {
            size_t j = i;
            while (j < end && cells[j].masked()) ++j;
            flush();
            const size_t n = j - i;
            if (n >= size_t(kMaskRunCollapse)) {
                out += kBox;
                out += "\xC3\x97" + std::to_string(n);  // U+00D7 multiplication sign
            } else {
                for (size_t m = 0; m < n; ++m) out += kBox;
            }
            i = j;
            continue;
        }
        if (c.token == vocab.eos_id || vocab.is_special(c.token)) {
            ++i;
            continue;
        }
        if (vocab.has_tokenizer && size_t(c.token) < vocab.text.size()) {
            raw += vocab.text[size_t(c.token)];
        } else {
            if (!raw.empty() || !out.empty()) raw += ' ';
            raw += '#';
            raw += std::to_string(c.token);
        }
        ++i;
    }
    flush();
    return out;
}

}  // namespace dyllm::app
