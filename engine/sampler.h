// The whole denoising sampler (engine/README.md §a.9): the decode state of each sequence, the
// semi-autoregressive candidate window, scoring of the candidates' logits (greedy on the backend, seeded sampling on
// the host), the choice of positions to unmask (n_u or confidence threshold, deterministic tie-break), the commit and
// EOS termination.
#pragma once
#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "engine/backend.h"
#include "engine/engine.h"
#include "instrumentation/events.h"

namespace dyllm {

// One sequence's decode state: prompt + response tokens and what each response position became when.
struct SequenceState {
    int32_t              id = 0;  // index of its prompt in the request (stable: the random unmasking order's key)
    int32_t              P = 0, R = 0;
    std::vector<int32_t> tokens;         // prompt + response
    std::vector<int32_t> unmask_step;    // [R], 0 = still masked
    std::vector<float>   scores;         // [R]
    std::vector<int32_t> last_unmasked;  // response positions unmasked in the previous step, ascending
    int32_t              steps_run = 0;
    bool                 finished = false, by_eos = false;

    int32_t                  unmasked() const;
    std::span<const int32_t> response() const { return {tokens.data() + P, size_t(R)}; }
};

struct Candidate {
    int32_t pos   = 0;  // response-relative position
    int32_t token = 0;
    float   score = 0;
};

// Masked response positions of the current block: block_idx = (unmasked count) / block_length, window
// [0, block_length * (block_idx + 1)) clipped to the response.
void block_candidates(std::span<const int32_t> response, int32_t mask_id, int block_length, std::vector<int32_t>& out);
std::vector<int32_t> block_candidates(std::span<const int32_t> response, int32_t mask_id, int block_length);

// The random unmasking order (--random-order; dKV-Cache's Greedy variant): each block's positions in an order drawn
// from (seed, sequence id, block) alone, the same on every platform, so a decode can be replayed. Writes the positions
// [lo, hi) of block `block` in that order into `out`.
void random_block_order(uint64_t seed, int32_t seq_id, int32_t block, int32_t lo, int32_t hi,
                        std::vector<int32_t>& out);
// The positions a step unmasks in that order: the first n of the current block's order (block = unmasked /
// block_length) that are still masked (`masked`: ascending, at least the block's masked positions), ascending.
// `order`: scratch for the block's order.
void random_order_next(uint64_t seed, int32_t seq_id, int32_t gen_length, int block_length, int32_t unmasked,
                       std::span<const int32_t> masked, int n, std::vector<int32_t>& order, std::vector<int32_t>& out);

// Keeps candidate r (in order of score, higher first, then lower position: engine/README.md decision 4) when r <
// n_transfer or score >= threshold, and only if its score > -inf. Default mode: n_transfer = n_u, threshold = +inf;
// threshold mode: n_transfer = 1, threshold = the confidence threshold. Returns the kept ones in that order. The order
// is total: a NaN score ranks below every number and is never kept. The in-place form leaves the kept ones in cands.
void                   select_candidates_in_place(std::vector<Candidate>& cands, int n_transfer, float threshold);
std::vector<Candidate> select_candidates(std::vector<Candidate> cands, int n_transfer, float threshold);

// EOS termination: an EOS among the newly decoded positions, with no [MASK] before the first of them, finishes the
// sequence.
bool finished_by_eos(std::span<const int32_t> response, std::span<const int32_t> new_positions, int32_t eos_id,
                     int32_t mask_id);

// The sampler of one run: which logits rows a step needs, and what it unmasks from them.
class Sampler {
public:
    // random_order: the candidates of a step are the next positions of the random unmasking order (random_order_next)
    // instead of every masked position of the block. sliding_window W > 0: the candidates are the first W masked
    // positions of the response instead (DecodingMethod::candidate_window).
    Sampler(const ModelConfig& cfg, const DiffusionParams& p, bool random_order = false, int32_t sliding_window = 0);

    // The candidates of each live sequence (response positions) and, for each, the packed row whose logits score it:
    // row P + c (LLaDA) or P + c - 1 (Dream's one-position shift), never before the sequence's first query row
    // (first_query[b], a position): the shift runs over the rows the step computed, so when a step does not query
    // row P - 1 the first response position reads its own row, as in the authors' code.
    // Written in place (the session keeps one between steps, so a steady run refills it without allocating).
    struct Plan {
        std::vector<std::vector<int32_t>> cand;  // [n_seq] response positions
        std::vector<int32_t>              rows;  // packed row of each candidate, in (sequence, candidate) order
    };
    void plan(std::span<SequenceState* const> live, std::span<const int32_t> cu, std::span<const int32_t> first_query,
              Plan& out) const;

    // What one sequence got this step (in selection order).
    struct Unmasked {
        std::vector<int32_t> pos, tokens;
        std::vector<float>   scores;
    };

    // Scores logits [plan.rows.size(), n_vocab] (row r scores candidate r), selects per sequence, commits into the
    // states (tokens, unmask_step, scores, last_unmasked, finished flags) and writes what each sequence unmasked into
    // `out` (refilled in place, as the plan). Throws LoadError naming the step when a score is not finite (corrupt
    // weights).
    void sample(Backend& be, EventSink* sink, int32_t step, const Tensor& logits, const Plan& plan,
                std::span<SequenceState* const> live, std::vector<Unmasked>& out);

private:
    void score(Backend& be, EventSink* sink, int32_t step, const Tensor& logits, std::span<int32_t> tok,
               std::span<float> score);

    const ModelConfig&           cfg_;
    const DiffusionParams        p_;
    std::mt19937_64              rng_;
    bool                         random_order_   = false;
    int32_t                      sliding_window_ = 0;
    mutable std::vector<int32_t> order_, next_;  // plan()'s random-order scratch, kept between steps
    std::vector<int32_t>         tok_;           // per candidate: the chosen token and its score (kept between steps)
    std::vector<float>           score_;
    std::vector<Candidate>       cands_;        // one sequence's candidates, then the kept ones
    std::vector<float>           host_logits_;  // temperature sampling: the candidates' logits on the host
    std::vector<double>          probs_;        // temperature sampling: one row's unnormalised probabilities
};

}  // namespace dyllm
