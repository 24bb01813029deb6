// The denoising sampler's decisions (spec a.9 with the project's decisions): the semi-autoregressive candidate
// window, the choice of positions to unmask (n_u or confidence threshold, deterministic tie-break), EOS termination.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace dyllm {

struct Candidate {
    int32_t pos   = 0;  // response-relative position
    int32_t token = 0;
    float   score = 0;
};

// Masked response positions of the current block: block_idx = (unmasked count) / block_length, window
// [0, block_length * (block_idx + 1)) clipped to the response (spec a.9 step 1).
std::vector<int32_t> block_candidates(std::span<const int32_t> response, int32_t mask_id, int block_length);

// Keeps candidate r (in order of score, higher first, then lower position: project decision 4) when r < n_transfer or
// score >= threshold, and only if its score > -inf (spec a.9 step 5). Default mode: n_transfer = n_u, threshold =
// +inf; threshold mode: n_transfer = 1, threshold = the confidence threshold. Returns the kept ones in that order.
std::vector<Candidate> select_candidates(std::vector<Candidate> cands, int n_transfer, float threshold);

// EOS termination (spec a.9 step 7): an EOS among the newly decoded positions, with no [MASK] before the first of
// them, finishes the sequence.
bool finished_by_eos(std::span<const int32_t> response, std::span<const int32_t> new_positions, int32_t eos_id,
                     int32_t mask_id);

}  // namespace dyllm
