// DyLLM's step schedule and sparse layer (engine/README.md §a), exposed for tests.
#pragma once
#include "engine/forward.h"
#include "instrumentation/events.h"

namespace dyllm {

// Steps 1..max(1, T_full) are FULL; later steps are response-only when step > P and step % P != 0 (P = fullq_every,
// 4 in the reference), full-query sparse otherwise. `step` is 1-based.
StepKind dyllm_step_kind(int step, int full_steps, int fullq_every);

// One sparse layer l over the query rows q (h: [q.size(), n_embd], updated in place). s_prev: S_{l-1}, a subset of
// q. Returns S_l in out.salient. approx = false is the paper's "Salient" ablation: exact attention for every query.
// drift: also measure the approximated rows against exact attention into out.drift (engine/methods/drift.h).
void dyllm_sparse_layer(Forward& fwd, int l, Tensor& h, const BatchLayout& lay, const RowSet& q, const RowSet& s_prev,
                        LayerCache& c, float tau, bool approx, SaliencyOutcome& out, bool drift = false);

}  // namespace dyllm
