// The interface every decoding method implements (one file each under engine/methods/): which caches it allocates,
// what kind of step comes next, and which rows each layer queries and recomputes. The session owns the batch, the
// sampler and the events; a method owns only its step schedule and its layers.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "engine/engine.h"
#include "engine/forward.h"

namespace dyllm {

// What a method sees of each live sequence (batch-local index b = position in the span, which changes when finished
// sequences are compacted away; `id` does not). Positions are response-relative (0 = the first response token, row
// prompt_len + pos of the sequence).
struct SeqProgress {
    int32_t                  id         = 0;  // the sequence's index in the request, stable for the whole run
    int32_t                  prompt_len = 0;  // P
    int32_t                  gen_length = 0;  // R
    int32_t                  unmasked   = 0;  // response positions decoded so far
    std::span<const int32_t> last_unmasked;   // response positions decoded by the previous step, ascending
    std::span<const int32_t> masked;          // response positions still masked, ascending
};

// One step as the session hands it to the method.
struct StepInput {
    int32_t                      step = 0;  // 1-based
    float                        tau  = 0;  // in force for this step (live)
    const BatchLayout*           lay  = nullptr;
    std::span<const SeqProgress> seqs;
    bool                         observed = false;  // a sink listens (DyLLM then reports FULL-step cosines too)
};

// What the sampler does with a candidate (a masked position of the block) whose logits row a step did not compute.
enum class UnqueriedCandidates : uint8_t {
    Forbidden,   // cannot happen: query_rows() includes every candidate's row (the session asserts it)
    ZeroLogits,  // it stays a candidate, scored from an all-zero logits row (d2Cache as its authors' code runs)
    Dropped,     // it is no candidate this step
};

// Which optional per-layer caches a method uses (k and v are always allocated).
struct CacheNeeds {
    bool ctx = false, ffn = false, attn_out = false;
    bool lse = false;  // softmax log-sum-exp per (row, head) at its last exact attention (DyLLM column-sparse)
    bool q = false, hidden = false;  // each row's last queries and layer inputs (Elastic-Cache)
};

// Called once per layer with that layer's saliency outcome (tested rows, cosines, salient set).
using SaliencyReport = std::function<void(int layer, const SaliencyOutcome&)>;

class DecodingMethod {
public:
    DecodingMethod(const ModelConfig& cfg, const DiffusionParams& p) : cfg_(cfg), p_(p) {}
    virtual ~DecodingMethod() = default;

    virtual CacheNeeds caches() const                       = 0;
    virtual StepKind   step_kind(const StepInput& in) const = 0;
    // The rows a step of `kind` queries, written into `out` (their hidden states come out of the last layer; the
    // sampler's logits rows must be among them). Every row of the batch by default. `out` is the session's set, kept
    // between steps, so filling it in place allocates nothing once it has grown.
    virtual void query_rows(const StepInput& in, StepKind kind, RowSet& out) const;
    // Runs every layer of a step of `kind` over the query rows q on fwd and returns their hidden states
    // [q.size(), n_embd]. Decides per layer which rows are recomputed; reports saliency through `report`.
    virtual Tensor run_layers(Forward& fwd, const StepInput& in, StepKind kind, const RowSet& q,
                              std::vector<LayerCache>& caches, const SaliencyReport& report) = 0;
    // Whether the method decodes in the random unmasking order (engine/sampler.h random_order_next) whatever
    // --random-order says, because its query rows are the positions that order unmasks next (dKV-Cache Greedy).
    virtual bool random_order() const { return false; }
    // Whether query_rows() may leave out candidates' logits rows, and what the sampler then does with them.
    virtual UnqueriedCandidates unqueried_candidates() const { return UnqueriedCandidates::Forbidden; }
    // The candidates of a step: 0, the masked positions of the current block (engine/README.md §a.9); W > 0, the first
    // W masked positions of the response, a window sliding on as they are decoded (Elastic-Cache).
    virtual int32_t candidate_window() const { return 0; }

protected:
    // Cosines of dense steps against the previous step's context, when the user asked for them (measure_cosine).
    bool measuring(const StepInput& in) const { return p_.measure_cosine && in.step > 1; }
    // What a dense step over q writes besides K/V, and whether it measures cosines (when the context cache exists).
    struct DenseOptions {
        StoreOutputs store   = {};
        bool         measure = false;
    };
    // A dense step over q (every layer Forward::layer_dense).
    Tensor run_dense(Forward& fwd, const StepInput& in, const RowSet& q, std::vector<LayerCache>& caches,
                     DenseOptions opt, const SaliencyReport& report) const;

    const ModelConfig&    cfg_;
    const DiffusionParams p_;
};

// The method registered for `m` (engine/methods/method_list.def).
std::unique_ptr<DecodingMethod> make_method(Method m, const ModelConfig& cfg, const DiffusionParams& p);

}  // namespace dyllm
