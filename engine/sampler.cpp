// Sampler decisions: candidate window, selection with a deterministic tie-break, EOS termination (spec a.9).
#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace dyllm {

std::vector<int32_t> block_candidates(std::span<const int32_t> response, int32_t mask_id, int block_length) {
    int32_t unmasked = 0;
    for (int32_t t : response) unmasked += (t != mask_id);
    const int64_t block_idx = unmasked / block_length;
    const int64_t end       = std::min<int64_t>(int64_t(response.size()), int64_t(block_length) * (block_idx + 1));
    std::vector<int32_t> c;
    for (int64_t p = 0; p < end; ++p)
        if (response[size_t(p)] == mask_id) c.push_back(int32_t(p));
    return c;
}

std::vector<Candidate> select_candidates(std::vector<Candidate> cands, int n_transfer, float threshold) {
    std::sort(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) {
        if (a.score != b.score) return a.score > b.score;
        return a.pos < b.pos;
    });
    std::vector<Candidate> keep;
    for (size_t r = 0; r < cands.size(); ++r) {
        const Candidate& c = cands[r];
        if (!(c.score > -std::numeric_limits<float>::infinity())) continue;
        if (int(r) < n_transfer || c.score >= threshold) keep.push_back(c);
    }
    return keep;
}

bool finished_by_eos(std::span<const int32_t> response, std::span<const int32_t> new_positions, int32_t eos_id,
                     int32_t mask_id) {
    int32_t first_eos = -1;
    for (int32_t p : new_positions)
        if (response[size_t(p)] == eos_id && (first_eos < 0 || p < first_eos)) first_eos = p;
    if (first_eos < 0) return false;
    for (int32_t p = 0; p < first_eos; ++p)
        if (response[size_t(p)] == mask_id) return false;
    return true;
}

}  // namespace dyllm
