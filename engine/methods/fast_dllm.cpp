// Fast-dLLM v1 block caches: a full forward at every block start refreshes K/V of every row; the steps inside the
// block query only the current block (dual cache) or the block and everything after it (prefix cache).
#include <algorithm>

#include "engine/methods/method.h"

namespace dyllm {

namespace {

class FastDllmMethod final : public DecodingMethod {
public:
    FastDllmMethod(const ModelConfig& cfg, const DiffusionParams& p, bool dual) : DecodingMethod(cfg, p), dual_(dual) {}

    CacheNeeds caches() const override { return {.ctx = p_.measure_cosine}; }

    StepKind step_kind(const StepInput& in) const override {
        if (in.step == 1) return StepKind::BlockRefresh;
        for (const SeqProgress& s : in.seqs)
            if (s.unmasked % p_.block_length == 0) return StepKind::BlockRefresh;
        return StepKind::BlockCached;
    }

    // Block-cached steps query the current block (dual) or the block and every later position (prefix).
    void query_rows(const StepInput& in, StepKind kind, RowSet& q) const override {
        if (kind == StepKind::BlockRefresh) return all_rows(*in.lay, q);
        q.clear();
        const BatchLayout& lay   = *in.lay;
        const bool         dream = cfg_.family == Family::Dream;
        for (int b = 0; b < lay.n_seq(); ++b) {
            const SeqProgress& s     = in.seqs[size_t(b)];
            const int32_t      start = (s.unmasked / p_.block_length) * p_.block_length;
            const int32_t      end   = dual_ ? std::min(s.gen_length, start + p_.block_length) : s.gen_length;
            int32_t            first = s.prompt_len + start;
            if (dream && first > 0) --first;  // the shifted logits of the block's first position (engine/README.md §d)
            for (int32_t a = first; a < s.prompt_len + end; ++a) q.push(lay.cu[size_t(b)] + a, b, a);
        }
    }

    Tensor run_layers(Forward& fwd, const StepInput& in, StepKind, const RowSet& q, std::vector<LayerCache>& caches,
                      const SaliencyReport& report) override {
        return run_dense(fwd, in, q, caches, {.measure = measuring(in)}, report);
    }

private:
    bool dual_;
};

}  // namespace

std::unique_ptr<DecodingMethod> make_fast_prefix_method(const ModelConfig& cfg, const DiffusionParams& p) {
    return std::make_unique<FastDllmMethod>(cfg, p, false);
}

std::unique_ptr<DecodingMethod> make_fast_dual_method(const ModelConfig& cfg, const DiffusionParams& p) {
    return std::make_unique<FastDllmMethod>(cfg, p, true);
}

}  // namespace dyllm
