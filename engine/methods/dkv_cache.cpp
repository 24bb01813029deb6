// dKV-Cache (arXiv 2505.15781): its Decode variant (delayed K/V caching) and its Greedy variant (a random unmasking
// order fixed in advance, only the positions it unmasks recomputed), one method class.
#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/methods/method.h"
#include "engine/sampler.h"

namespace dyllm {

namespace {

// Decode: a position's K/V is computed once more at the step after it is decoded (with its decoded token) and read
// from the cache from then on; the masked positions and the previous step's decoded ones are recomputed every step;
// each block starts with two dense steps (the first without a cache, the second filling it). Greedy: the block's
// positions are unmasked in the seed's random order (engine/sampler.h random_order_next), and a cached step
// recomputes only the positions it unmasks, the previous step's and a window of masked neighbours; every other row,
// masked or not, is read from the cache. Both refresh every row at every dkv_refresh-th step of a block.
// LLaDA decodes choose the authors' tokens (tests/bench/official_dkv.py compares). Dream differs from the authors'
// Dream code, which refreshes on the run's global step without blocks and caches a row once its right neighbour is
// decoded: here Dream keeps LLaDA's block-local schedule, and a row is cached once its own token is decoded and no
// masked position reads its shifted logits.
class DkvCacheMethod final : public DecodingMethod {
public:
    // want_ is sized here: the first cached step may come late in a run, which then allocates nothing.
    DkvCacheMethod(const ModelConfig& cfg, const DiffusionParams& p, bool greedy)
        : DecodingMethod(cfg, p), greedy_(greedy) {
        want_.reserve(size_t(std::max(0, p.gen_length)) + 1);
    }

    CacheNeeds caches() const override { return {.ctx = p_.measure_cosine}; }
    bool       random_order() const override { return greedy_; }

    // The authors' block-local step i (0-based): dense at every i % dkv_refresh == 0, and for Decode also at i = 1
    // (its cache is filled by the block's second forward); cached otherwise. A batch in lock-step runs a dense step
    // when any sequence needs one. Each sequence's block and the step that block began at are kept by its stable id
    // (step_kind is called once per step, before the method's other calls).
    StepKind step_kind(const StepInput& in) const override {
        bool dense = in.step == 1;
        for (const SeqProgress& s : in.seqs) {
            const size_t id = size_t(s.id);
            if (block_.size() <= id) {
                block_.resize(id + 1, -1);
                block_start_.resize(id + 1, 0);
            }
            const int32_t blk = std::min(s.unmasked, s.gen_length - 1) / p_.block_length;
            if (blk != block_[id]) {
                block_[id]       = blk;
                block_start_[id] = in.step;
            }
            const int32_t i = in.step - block_start_[id];
            dense           = dense || (!greedy_ && i == 1) || i % p_.dkv_refresh == 0;
        }
        return dense ? StepKind::DkvRefresh : StepKind::DkvCached;
    }

    // Cached steps query, per sequence: Decode, the masked positions; Greedy, the positions this step unmasks and up
    // to dkv_window masked neighbours of each; both, the previous step's decoded positions (their K/V enters the
    // cache this step: the delay), and for Dream the row before each position whose logits the sampler reads (its
    // shifted logits, engine/README.md §d).
    void query_rows(const StepInput& in, StepKind kind, RowSet& q) const override {
        if (kind == StepKind::DkvRefresh) return all_rows(*in.lay, q);
        q.clear();
        const BatchLayout& lay   = *in.lay;
        const bool         dream = cfg_.family == Family::Dream;
        const int          n_u   = !std::isnan(p_.conf_threshold) ? 1 : p_.gen_length / p_.steps;
        for (int b = 0; b < lay.n_seq(); ++b) {
            const SeqProgress& s = in.seqs[size_t(b)];
            want_.assign(size_t(s.gen_length) + 1, 0);  // index r + 1: response position r; index 0: row P - 1
            auto mark = [&](int32_t r, bool scored) {
                want_[size_t(r) + 1] = 1;
                if (dream && scored) want_[size_t(r)] = 1;
            };
            if (!greedy_) {
                for (int32_t r : s.masked) mark(r, true);
            } else {
                random_order_next(p_.seed, s.id, s.gen_length, p_.block_length, s.unmasked, s.masked, n_u, order_,
                                  next_);
                for (int32_t r : next_) mark(r, true);
                window(s, next_);
            }
            for (int32_t r : s.last_unmasked) mark(r, false);
            for (int32_t r = s.prompt_len > 0 ? -1 : 0; r < s.gen_length; ++r)
                if (want_[size_t(r + 1)]) q.push(lay.cu[size_t(b)] + s.prompt_len + r, b, s.prompt_len + r);
        }
    }

    Tensor run_layers(Forward& fwd, const StepInput& in, StepKind, const RowSet& q, std::vector<LayerCache>& caches,
                      const SaliencyReport& report) override {
        return run_dense(fwd, in, q, caches, {.measure = measuring(in)}, report);
    }

private:
    // The authors' window (find_window_tokens): around each position to unmask, up to dkv_window masked positions
    // not yet marked, looking alternately one further to the left and to the right, marked in want_.
    void window(const SeqProgress& s, const std::vector<int32_t>& next) const {
        const int32_t w = p_.dkv_window;
        if (w <= 0) return;
        const auto masked = [&](int32_t r) { return std::binary_search(s.masked.begin(), s.masked.end(), r); };
        for (int32_t c : next) {
            int32_t left = c - 1, right = c + 1, n = 0;
            bool    go_left = true;
            while (n < w && (left >= 0 || right < s.gen_length)) {
                int32_t& r = go_left ? left : right;
                if (r >= 0 && r < s.gen_length && !want_[size_t(r) + 1] && masked(r)) {
                    want_[size_t(r) + 1] = 1;
                    ++n;
                }
                r += go_left ? -1 : 1;
                go_left = !go_left;
            }
        }
    }

    bool                         greedy_;
    mutable std::vector<int32_t> block_, block_start_;  // by sequence id: its current block, the step it began at
    mutable std::vector<uint8_t> want_;                 // query_rows' per-position marks, kept between steps
    mutable std::vector<int32_t> order_, next_;         // Greedy: the block's order, the positions to unmask
};

}  // namespace

std::unique_ptr<DecodingMethod> make_dkv_decode_method(const ModelConfig& cfg, const DiffusionParams& p) {
    return std::make_unique<DkvCacheMethod>(cfg, p, false);
}

std::unique_ptr<DecodingMethod> make_dkv_greedy_method(const ModelConfig& cfg, const DiffusionParams& p) {
    return std::make_unique<DkvCacheMethod>(cfg, p, true);
}

}  // namespace dyllm
