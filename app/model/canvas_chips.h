// How the Canvas groups response positions into chips: one chip per position, except end of text. Runs of end-of-text
// tokens collapse into one "<eos> x N" chip, and a sequence the sampler stopped at end of text (an EOS with no mask
// before it) shows everything after that EOS as one chip, so 45 wide <|endoftext|> cells do not bury the answer.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "app/model/run_history.h"

namespace dyllm::app {

struct CanvasChip {
    int32_t first = 0, count = 1;     // response positions [first, first + count)
    bool    end_run = false;          // collapsed end of text
    int32_t n_eos = 0, n_masked = 0;  // end_run: EOS cells and cells never decoded in it
};

// Groups the canvas at one step. eos_id < 0: nothing collapses. stop_pos >= 0: the sequence stopped at the EOS at
// that position, so [stop_pos, end) is one chip.
std::vector<CanvasChip> canvas_chips(const std::vector<CanvasCell>& cells, int32_t eos_id, int32_t stop_pos = -1);

// "<eos> x 12" or "<eos> x 12, 19 never decoded".
std::string end_chip_text(const CanvasChip& c);

// Where and when a finished sequence stopped at end of text (the sampler's rule: it ends once a newly unmasked EOS has
// no mask before it, leaving the rest masked). step 0: it did not (ran all steps, was cancelled, or ignore_eos).
struct EosStop {
    int32_t step     = 0;   // the sequence's last step (its last unmask)
    int32_t position = -1;  // response position of the first EOS with no mask before it: where the text ends
};
EosStop eos_stop(const RunHistory& h, int seq, int32_t eos_id);

}  // namespace dyllm::app
