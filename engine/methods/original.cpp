// original: every step is an exact dense forward over every row (the reference decoder every method is compared to).
#include "engine/methods/method.h"

namespace dyllm {

namespace {

class OriginalMethod final : public DecodingMethod {
public:
    using DecodingMethod::DecodingMethod;

    // The context cache only holds the previous step's contexts for the opt-in cosine measurement.
    CacheNeeds caches() const override { return {.ctx = p_.measure_cosine}; }
    StepKind   step_kind(const StepInput&) const override { return StepKind::Full; }
    Tensor     run_layers(Forward& fwd, const StepInput& in, StepKind, const RowSet& q, std::vector<LayerCache>& caches,
                          const SaliencyReport& report) override {
        return run_dense(fwd, in, q, caches, {.measure = measuring(in)}, report);
    }
};

}  // namespace

std::unique_ptr<DecodingMethod> make_original_method(const ModelConfig& cfg, const DiffusionParams& p) {
    return std::make_unique<OriginalMethod>(cfg, p);
}

}  // namespace dyllm
