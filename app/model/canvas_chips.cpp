// canvas_chips(), eos_stop(): end-of-text grouping for the Canvas panel.
#include "app/model/canvas_chips.h"

#include <algorithm>

namespace dyllm::app {

std::vector<CanvasChip> canvas_chips(const std::vector<CanvasCell>& cells, int32_t eos_id, int32_t stop_pos) {
    std::vector<CanvasChip> out;
    const int32_t           n      = int32_t(cells.size());
    const int32_t           end    = stop_pos >= 0 && stop_pos < n ? stop_pos : n;
    auto                    is_eos = [&](int32_t i) {
        return eos_id >= 0 && !cells[size_t(i)].masked() && cells[size_t(i)].token == eos_id;
    };
    for (int32_t i = 0; i < end;) {
        int32_t j = i;
        while (j < end && is_eos(j)) ++j;
        if (j - i >= 2) {  // a single EOS stays an ordinary chip: nothing to save
            out.push_back(CanvasChip{i, j - i, true, j - i, 0});
            i = j;
        } else {
            out.push_back(CanvasChip{i, 1, false, 0, 0});
            ++i;
        }
    }
    if (end < n) {
        CanvasChip tail{end, n - end, true, 0, 0};
        for (int32_t i = end; i < n; ++i) {
            tail.n_eos += is_eos(i) ? 1 : 0;
            tail.n_masked += cells[size_t(i)].masked() ? 1 : 0;
        }
        out.push_back(tail);
    }
    return out;
}

std::string end_chip_text(const CanvasChip& c) {
    std::string t = "<eos> x " + std::to_string(c.n_eos);
    if (c.n_masked > 0) t += ", " + std::to_string(c.n_masked) + " never decoded";
    const int32_t other = c.count - c.n_eos - c.n_masked;  // other tokens after the stop (rare: not shown text)
    if (other > 0) t += ", " + std::to_string(other) + " other";
    return t;
}

EosStop eos_stop(const RunHistory& h, int seq, int32_t eos_id) {
    EosStop st;
    if (eos_id < 0 || !h.finished() || h.run_end().cancelled || h.env("ignore_eos") == "true") return st;
    const auto& toks = h.tokens(seq);
    // Masks left at the end of a complete run: the only way the sampler stops a sequence early is end of text.
    const bool masks_left =
        std::any_of(toks.begin(), toks.end(), [](const TokenInfo& t) { return t.unmask_step == 0; });
    if (!masks_left) return st;
    // The sequence stops at the first step whose new EOS has no mask before it; that may be well after the prefix
    // was complete (earlier EOS came with masks before them). Every step of a live sequence unmasks at least one of
    // its tokens, so its last unmask step is the stop; the text ends at the first EOS with no mask before it.
    for (const auto& t : toks) st.step = std::max(st.step, t.unmask_step);
    for (size_t p = 0; p < toks.size() && toks[p].unmask_step > 0; ++p)
        if (toks[p].token == eos_id) {
            st.position = int32_t(p);
            return st;
        }
    st.step = 0;  // masks left but no EOS ends the text: not a stop at end of text
    return st;
}

}  // namespace dyllm::app
