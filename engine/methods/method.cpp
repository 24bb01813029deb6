// What every method shares: the dense step over a set of query rows (original, DyLLM's FULL steps, Fast-dLLM).
#include "engine/methods/method.h"

namespace dyllm {

void DecodingMethod::query_rows(const StepInput& in, StepKind, RowSet& out) const {
    all_rows(*in.lay, out);
}

Tensor DecodingMethod::run_dense(Forward& fwd, const StepInput& in, const RowSet& q, std::vector<LayerCache>& caches,
                                 DenseOptions opt, const SaliencyReport& report) const {
    Tensor h = fwd.embed(*in.lay, q);
    for (int l = 0; l < cfg_.n_layer; ++l) {
        LayerCache&     c = caches[size_t(l)];
        const bool      m = opt.measure && c.ctx.view().data;
        SaliencyOutcome o;
        fwd.layer_dense(l, h, *in.lay, q, c, opt.store, m ? &o : nullptr, in.tau);
        if (m) report(l, o);
    }
    return h;
}

}  // namespace dyllm
