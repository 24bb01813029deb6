// The sampler computes what the official samplers compute (engine/README.md decisions 3 and 11): confidences and
// entropies from a softmax over the whole vocabulary ([MASK] only kept out of the argmax), and Dream's first
// response position reading row P-1 (default) or its own row (--no-dream-prompt-row, the authors' code).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>

#include "engine/engine.h"
#include "support/tiny_models.h"

using namespace dyllm;

namespace {

struct Observed {
    std::map<std::pair<int, int>, std::vector<float>> logits;  // (step, response position) -> logits row
    int64_t                                           n_vocab = 0;
    GenerationResult                                  result;
    std::vector<StepBegin>                            begins;
};

Observed run(const Model& m, const std::vector<int32_t>& prompt, const DiffusionParams& p) {
    Observed o;
    struct Begins : EventSink {
        std::vector<StepBegin>* out;
        void                    on_step_begin(const StepBegin& e) override { out->push_back(e); }
    } sink;
    sink.out = &o.begins;
    Session s(m, &sink);
    s.set_logits_observer(
        [&](int step, const std::vector<std::pair<int, int>>& where, const std::vector<float>& lg, int64_t V) {
            o.n_vocab = V;
            for (size_t i = 0; i < where.size(); ++i)
                o.logits[{step, where[i].second}].assign(lg.begin() + int64_t(i) * V, lg.begin() + int64_t(i + 1) * V);
        });
    s.start({prompt}, p);
    s.run();
    o.result = s.result();
    return o;
}

}  // namespace

TEST_CASE("scores use the softmax over the whole vocabulary, [MASK] included", "[sampler]") {
    for (Family fam : {Family::LLaDA, Family::Dream}) {
        auto               m   = Model::load(test::make_tiny_checkpoint(fam).string());
        const ModelConfig& cfg = m->config();
        DiffusionParams    p;
        p.method               = Method::Original;
        p.gen_length           = 8;
        p.steps                = 8;
        p.block_length         = 8;
        p.ignore_eos           = true;
        const Observed o       = run(*m, test::random_prompt(cfg, 6, 3), p);
        const auto&    r       = o.result.sequences.at(0);
        int            checked = 0;
        for (int pos = 0; pos < p.gen_length; ++pos) {
            const int step = r.unmask_step[size_t(pos)];
            REQUIRE(step > 0);
            const std::vector<float>& x = o.logits.at({step, pos});
            // Expected score in fp64: argmax without [MASK], softmax with it.
            int32_t best = -1;
            for (int32_t v = 0; v < int32_t(x.size()); ++v)
                if (v != cfg.mask_id && (best < 0 || x[size_t(v)] > x[size_t(best)])) best = v;
            const double mx = *std::max_element(x.begin(), x.end());
            double       z  = 0;
            for (float v : x) z += std::exp(double(v) - mx);
            double want = 0;
            if (fam == Family::LLaDA) {
                want = std::exp(double(x[size_t(best)]) - mx) / z;
            } else {
                for (float v : x) {
                    const double q = std::exp(double(v) - mx) / z;
                    want += q * std::log(q + 1e-10);
                }
            }
            CHECK(r.token_ids[size_t(pos)] == best);
            // fp32 exp and fp64 sums on the CPU: a few ulps of a float. Leaving [MASK] out of the normaliser would
            // scale a confidence by 1/(1 - p_mask), about 1/V = 3e-3 relative on these random weights: far outside.
            CHECK(r.scores[size_t(pos)] == Approx(want).epsilon(1e-5));
            ++checked;
        }
        CHECK(checked == p.gen_length);
    }
}

TEST_CASE("Dream's response-only steps: the last prompt row by default, the authors' rows on request", "[sampler]") {
    auto               m   = Model::load(test::make_tiny_checkpoint(Family::Dream).string());
    const ModelConfig& cfg = m->config();
    DiffusionParams    p;
    p.method          = Method::DyLLM;
    p.gen_length      = 16;
    p.steps           = 16;
    p.block_length    = 16;
    p.ignore_eos      = true;
    const auto prompt = test::random_prompt(cfg, 7, 5);
    for (bool with_row : {true, false}) {
        CAPTURE(with_row);
        p.dream_prompt_row            = with_row;
        const Observed o              = run(*m, prompt, p);
        int            response_steps = 0;
        for (const StepBegin& b : o.begins)
            if (b.kind == StepKind::SparseResponse) {
                CHECK(b.n_query_rows == p.gen_length + (with_row ? 1 : 0));
                ++response_steps;
            }
        CHECK(response_steps > 0);
        const auto& r = o.result.sequences.at(0);
        CHECK(std::count(r.token_ids.begin(), r.token_ids.end(), cfg.mask_id) == 0);  // every position decoded
    }
}
