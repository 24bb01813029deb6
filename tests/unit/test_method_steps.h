// One sequence driven through a decoding method step by step as the session drives it (the method's step kind, its
// query rows, its layers), for tests that check what a method recomputes and what it keeps in its caches: a prompt of
// prompt_len random ids followed by gen_length masked positions, K/V caches of every layer.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/engine.h"
#include "engine/forward.h"
#include "engine/methods/method.h"
#include "support/tiny_models.h"

namespace dyllm::test {

// One prompt decoded with `p` to the end, as `dyllm generate` runs it.
inline GenerationResult run_one(Model& m, const std::vector<int32_t>& prompt, const DiffusionParams& p) {
    Session s(m);
    s.start({prompt}, p);
    s.run();
    return s.result();
}

class MethodSteps {
public:
    MethodSteps(const Model& m, std::unique_ptr<DecodingMethod> method, int32_t prompt_len, int32_t gen_length)
        : method_(std::move(method)),
          prompt_len_(prompt_len),
          gen_length_(gen_length),
          fwd(m.config(), m.weights(), m.backend(), nullptr) {
        const ModelConfig& cfg = m.config();
        const int32_t      n   = prompt_len + gen_length;
        lay.cu                 = {0, n};
        lay.prompt_len         = {prompt_len};
        lay.tokens             = random_prompt(cfg, prompt_len, 3);
        lay.tokens.resize(size_t(n), cfg.mask_id);
        caches.resize(size_t(cfg.n_layer));
        Backend& be = m.backend();
        for (LayerCache& c : caches) {
            c.k = be.alloc(be.cache_dtype(), n, cfg.kv_dim());
            c.v = be.alloc(be.cache_dtype(), n, cfg.kv_dim());
        }
    }

    // Step t with `unmasked` positions decoded so far, `last` decoded by the previous step, `masked` still masked
    // (response positions); returns the step's kind, its query rows left in q.
    StepKind step(int t, int32_t unmasked, std::vector<int32_t> last, std::vector<int32_t> masked) {
        const SeqProgress sp{.id            = 0,
                             .prompt_len    = prompt_len_,
                             .gen_length    = gen_length_,
                             .unmasked      = unmasked,
                             .last_unmasked = last,
                             .masked        = masked};
        const StepInput   in{.step = t, .tau = 0.99f, .lay = &lay, .seqs = std::span(&sp, 1)};
        const StepKind    kind = method_->step_kind(in);
        fwd.begin_step(lay);
        method_->query_rows(in, kind, q);
        method_->run_layers(fwd, in, kind, q, caches, [](int, const SaliencyOutcome&) {});
        return kind;
    }

private:
    std::unique_ptr<DecodingMethod> method_;
    int32_t                         prompt_len_, gen_length_;

public:
    BatchLayout             lay;
    std::vector<LayerCache> caches;
    RowSet                  q;
    Forward                 fwd;  // the method's forward (a test may run its own ops on it after a step)
};

}  // namespace dyllm::test
