// Public engine API: load a model (checkpoint directory or built-in name) on a backend, then drive a Session
// step by step (the GUI) or to the end (the CLI). Methods: original, dyllm, fast-prefix, fast-dual, dllm-cache.
#pragma once
#include <atomic>
#include <cmath>
#include <functional>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/backend.h"
#include "engine/io/checkpoint.h"
#include "engine/io/config.h"
#include "engine/tokenizer/tokenizer.h"
#include "instrumentation/events.h"

namespace dyllm {

// Decoding methods, one file each under engine/methods/, registered in engine/methods/method_list.def.
enum class Method : uint8_t {
#define DYLLM_METHOD(id, name, factory, step_kinds, knobs) id,
#include "engine/methods/method_list.def"
#undef DYLLM_METHOD
};
const char*             method_name(Method m);                      // "original", "dyllm", "fast-prefix", ...
std::optional<Method>   parse_method(std::string_view s);           // nullopt for an unknown name
std::string             method_names(std::string_view sep = ", ");  // every registered name, in registry order
std::span<const Method> all_methods();                              // every registered method, in registry order
// What a method's registry line declares: the step kinds it runs (StepKind::Count for a name step_kinds.def lacks)
// and the param table keys of its own knobs (engine/params.cpp), in the order the line gives them.
std::vector<StepKind>         method_step_kinds(Method m);
std::vector<std::string_view> method_knobs(Method m);

// The arithmetic of the weight products (--compute): Stored multiplies in the weights' stored type where the backend
// has such a product (the CPU's bf16 GEMM for BF16 weights; quantized weights are decoded to fp32 either way); F32
// widens every stored type to fp32 first, so a bf16 or quantized model can be compared with an fp32 reference.
enum class ComputeMode : uint8_t { Stored, F32 };
const char*                compute_mode_name(ComputeMode c);  // "stored", "f32"
std::optional<ComputeMode> parse_compute_mode(std::string_view s);

// Every knob of a generation run. Validated by validate_params() before a run starts.
struct DiffusionParams {
    int      gen_length     = 64;   // response length R
    int      steps          = 64;   // total denoising steps; n_u = gen_length / steps (must divide)
    int      block_length   = 32;   // semi-autoregressive block (must divide gen_length)
    float    conf_threshold = NAN;  // confidence-threshold parallel decoding when set (engine/README.md §a.9 step 5)
    float    temperature    = 0.f;  // 0: greedy; > 0: seeded sampling from softmax(logits / T)
    uint64_t seed           = 0;
    bool     ignore_eos     = false;

    Method method         = Method::DyLLM;
    float  tau            = NAN;    // NaN: family default (LLaDA 0.99, Dream 0.995); range and meaning: engine/params.h
    int    full_steps     = 4;      // T_full (>= 1: the first step fills the caches)
    int    fullq_every    = 4;      // full-query sparse step period (the `> P && % P != 0` rule)
    bool   approx         = true;   // false: the paper's "Salient" ablation (exact attention for every query)
    bool   approx_columns = false;  // approximate update over the salient columns only (engine/README.md decision 12)
    bool   approx_incremental = false;  // column-sparse, old terms swapped out and renormalised (decision 12)
    int    exact_refresh      = 0;  // drift guard: steps that are multiples of N are exact for every query row (0: off)
    // Dream response-only steps also query row P-1 (engine/README.md decision 3); false: as the authors' code.
    bool dream_prompt_row = true;

    int   kp  = 50;     // dLLM-Cache prompt refresh interval K_P
    int   kr  = 7;      // dLLM-Cache response refresh interval K_R
    float rho = 0.25f;  // dLLM-Cache adaptive transfer ratio
    // dKV-Cache: every row's K/V refreshed at every N-th step of a block (the authors' cache_reloading_step).
    int dkv_refresh = 4;
    int dkv_window  = 0;  // dKV-Cache Greedy: masked neighbours of each position to unmask recomputed with it
    // d2Cache (engine/methods/d2_cache.cpp): masked rows queried per step, the certainty-density width, the share of
    // attention-rollout importance whose rows are also queried, the gap filled between queried rows; and the three
    // places its authors' code and its paper differ (false: the authors' code).
    int   d2_k            = 32;
    float d2_sigma        = 10.f;
    float d2_rollout_p    = 0.1f;
    int   d2_inflate      = 0;
    bool  d2_update_prior = false;
    bool  d2_queried_only = false;
    bool  d2_block_window = false;
    // Sparse-dLLM (engine/methods/sparse_dllm.cpp): the share of the cached keys outside the block each layer retains
    // and the max-pooling window over their importance (the authors' keep_ratio and kernel_size).
    float sparse_keep_ratio  = 0.5f;
    int   sparse_kernel_size = 3;
    // Elastic-Cache (engine/methods/elastic_cache.cpp): the drift threshold on the tracked tokens' attention (above 1:
    // every step dense), the sliding window of masked positions decoded from (0: the --block-length blocks), the
    // most-attended tokens tracked per layer, and whether masked positions past the window are left out of the queries.
    float elastic_gamma         = 0.9f;
    int   elastic_window        = 16;
    int   elastic_track         = 1;
    bool  elastic_block_caching = true;
    // Unmask each block in a random order drawn from the seed instead of by confidence (dKV-Cache Greedy always does).
    bool random_order = false;

    bool measure_cosine = false;  // histograms for methods without saliency (costs an extra cosine per layer)
    bool measure_drift  = false;  // DyLLM: exact attention for the approximated rows, measured (engine/methods/drift.h)

    ComputeMode compute = ComputeMode::Stored;  // --compute: stored types or fp32 for the weight products
};

// Throws InputError naming the setting (by its command-line flag), its value and the allowed range: the table's
// ranges (engine/params.h) and the rules between settings; the second form adds the model's limits.
void  validate_params(const DiffusionParams& p);
void  validate_params(const DiffusionParams& p, const ModelConfig& cfg);
float default_tau(Family f);

// Weight preparation during Model::load (packing for the CPU GEMM, uploads to a GPU): seconds on a real-size model,
// so front ends show it. Called after each prepared tensor, from the loading thread.
struct LoadProgress {
    int         tensors_done = 0, tensors_total = 0;
    uint64_t    bytes_done = 0, bytes_total = 0;  // stored bytes of the prepared tensors
    std::string tensor;                           // the one just prepared ("blk.3.w_up")
};
using LoadProgressFn = std::function<void(const LoadProgress&)>;

// A loaded model: config, weights prepared on a backend, tokenizer (absent for weight-only directories).
class Model {
public:
    // `spec` is a checkpoint directory or a built-in name ("tiny-llada", "tiny-dream"). Throws LoadError/BackendError.
    static std::unique_ptr<Model> load(const std::string& spec, BackendKind backend = BackendKind::Cpu,
                                       int n_threads = 0, std::string* backend_note = nullptr,
                                       const LoadProgressFn& progress = {});
    // A model over an already opened checkpoint (any Checkpoint implementation: a directory, a file, or one built in
    // memory by a test); `name` is what name() reports. The tokenizer is read from the checkpoint's dir() when it has
    // a tokenizer.json.
    static std::unique_ptr<Model> from_checkpoint(std::unique_ptr<Checkpoint> ckpt, const std::string& name,
                                                  BackendKind backend = BackendKind::Cpu, int n_threads = 0,
                                                  std::string*          backend_note = nullptr,
                                                  const LoadProgressFn& progress     = {});
    ~Model();

    const ModelConfig&           config() const;
    const ModelWeights&          weights() const;    // views on the backend
    const Tokenizer*             tokenizer() const;  // nullptr when the directory has no tokenizer.json
    Backend&                     backend() const;
    const std::string&           name() const;  // built-in name or directory
    const std::filesystem::path& dir() const;
    double                       load_seconds() const;

    struct Impl;
    Impl& impl() const { return *impl_; }

private:
    Model() = default;
    std::unique_ptr<Impl> impl_;
};

// Resolves a built-in model name to its directory (relative to the executable and to the source tree), or returns
// spec unchanged when it is a path. Empty spec means the default built-in (tiny-llada).
std::filesystem::path resolve_model_path(const std::string& spec);

// Per-layer work of one step: the rows each stage recomputed and the FLOPs (the run's accounting).
struct LayerAccount {
    int32_t query_rows = 0, kv_rows = 0, attn_exact_rows = 0, attn_approx_rows = 0, ffn_rows = 0;
    double  flops = 0;
};

struct StepRecord {
    int32_t                   step    = 0;
    StepKind                  kind    = StepKind::Full;
    float                     tau     = 0;
    double                    seconds = 0;
    double                    flops = 0, dense_flops = 0;
    int32_t                   tokens_committed = 0;
    std::vector<LayerAccount> layers;
};

struct SequenceResult {
    std::vector<int32_t> prompt_ids;
    std::vector<int32_t> token_ids;    // response ids (gen_length; still-masked positions keep mask_id)
    std::vector<int32_t> unmask_step;  // per response position; 0 = never unmasked
    std::vector<float>   scores;       // per response position
    std::string          text;         // decoded response (special tokens and masks skipped, cut at EOS)
    int32_t              steps_run       = 0;
    bool                 finished_by_eos = false;
    int32_t              masks_left      = 0;  // response positions never decoded (after an EOS finish: expected)
};

struct GenerationResult {
    std::vector<SequenceResult> sequences;
    std::vector<StepRecord>     steps;
    int32_t                     forward_passes   = 0;
    double                      denoise_seconds  = 0;
    int64_t                     generated_tokens = 0;  // gen_length x sequences
    int64_t                     non_eos_tokens   = 0;  // response tokens that are not EOS/pad/mask
    double                      tokens_per_s     = 0;  // generated_tokens / denoise_seconds
    double                      cache_bytes      = 0;  // DyLLM/baseline caches held
    double                      total_flops = 0, total_dense_flops = 0;
    double                      recompute_fraction = 1;  // mean share of rows x layers pushed through the FFN vs dense
};

// One generation run over a batch of prompts in lock-step. Not thread-safe except set_tau()/cancel(), which may be
// called from another thread and apply from the next step.
class Session {
public:
    explicit Session(const Model& model, EventSink* sink = nullptr);
    ~Session();
    Session(const Session&)            = delete;
    Session& operator=(const Session&) = delete;

    // Starts a run: prompts are token ids (already chat-templated). Throws InputError for bad params or prompts.
    void start(const std::vector<std::vector<int32_t>>& prompts, const DiffusionParams& params);
    // Runs one denoising step for every live sequence. Returns false once the run is over (or was cancelled).
    bool step();
    void run();  // step() until done
    bool done() const;
    int  current_step() const;  // steps run so far

    void  set_tau(float tau);  // thread-safe; from the next step
    float tau() const;
    void  cancel();  // thread-safe
    void  set_sink(EventSink* sink);
    void  set_label(std::string label);  // carried in the next run's RunBegin (for the UI's run list)

    // Test/debug hook, called after each step's LM head with, per computed logits row, its (sequence, response
    // position) and the logits [rows, n_vocab] copied to the host. Costs a download per step when set.
    using LogitsObserver = std::function<void(int step, const std::vector<std::pair<int, int>>& where,
                                              const std::vector<float>& logits, int64_t n_vocab)>;
    void set_logits_observer(LogitsObserver observer);

    const DiffusionParams&         params() const;
    GenerationResult               result() const;  // what is decoded so far (complete after done())
    const std::vector<StepRecord>& step_records() const;

    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

// Tokenizes a prompt, with the family's chat template when chat is true.
std::vector<int32_t> encode_prompt(const Model& model, const std::string& text, bool chat);

// The visible response text: ids up to the first end token (eos, pad and the family's end-of-turn tokens such as
// <|eot_id|> / <|im_end|>), [MASK] dropped, decoded without special tokens; "" without a tokenizer. SequenceResult::
// text, `dyllm eval`, `dyllm bench` and the app all score this text.
std::string decode_response(const Model& model, const std::vector<int32_t>& response_ids);

}  // namespace dyllm
