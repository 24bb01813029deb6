// DyLLM's step schedule and sparse layer (engine/README.md §a), exposed for tests.
#pragma once
#include "engine/forward.h"
#include "instrumentation/events.h"

namespace dyllm {

// Steps 1..max(1, T_full) are FULL; later steps are response-only when step > P and step % P != 0 (P = fullq_every,
// 4 in the reference), full-query sparse otherwise. `step` is 1-based.
StepKind dyllm_step_kind(int step, int full_steps, int fullq_every);

// How a sparse layer updates the contexts of the rows outside S_{l-1} (engine/README.md decision 12).
enum class StableUpdate : uint8_t {
    Exact,        // exact attention for every query row: the paper's "Salient" ablation (--no-approx)
    FullSoftmax,  // c_old + softmax over every key, P dV over the salient keys: the authors' code (the default)
    Columns,      // c_old + scores of the salient keys only, normalised by the cached log-sum-exp: the paper's text
    Incremental,  // the salient keys' old softmax terms swapped for the new ones, renormalised (exact for a fixed q)
};

// One sparse layer l over the query rows q (h: [q.size(), n_embd], updated in place). s_prev: S_{l-1}, a subset of
// q. Returns S_l in out.salient. Columns and Incremental need c.lse (filled by every exact attention of the row).
// drift: also measure the approximated rows against exact attention into out.drift (engine/methods/drift.h).
void dyllm_sparse_layer(Forward& fwd, int l, Tensor& h, const BatchLayout& lay, const RowSet& q, const RowSet& s_prev,
                        LayerCache& c, float tau, StableUpdate update, SaliencyOutcome& out, bool drift = false);

}  // namespace dyllm
