// Session: one generation run over a batch in lock-step: lays the live sequences out, lets the method run the step's
// layers (engine/methods/), hands the logits to the sampler, keeps the accounting and emits the event stream.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <mutex>

#include "engine/errors.h"
#include "engine/forward.h"
#include "engine/interrupt.h"
#include "engine/methods/drift.h"
#include "engine/methods/method.h"
#include "engine/model_impl.h"
#include "engine/op_scope.h"
#include "engine/params.h"
#include "engine/sampler.h"
#include "engine/version.h"
#include "engine/weight_storage.h"

namespace dyllm {

namespace {

CosineHistogram histogram(std::span<const float> cos) {
    CosineHistogram h{};
    for (float c : cos) h[size_t(cosine_bin(c))]++;
    return h;
}

}  // namespace

struct Session::Impl {
    const Model&       model;
    const ModelConfig& cfg;
    EventSink*         sink = nullptr;
    DiffusionParams    p;
    std::atomic<float> tau{0.99f};
    std::atomic<bool>  cancelled{false};

    std::vector<SequenceState>      seqs;
    std::vector<int32_t>            live;  // indices of the sequences in the current layout
    BatchLayout                     lay;
    std::vector<LayerCache>         caches;
    std::vector<StepRecord>         records;
    std::vector<int64_t>            dense_rows;  // per step: rows x layers of a dense step over the live sequences
    int32_t                         step             = 0;
    bool                            over             = true;
    double                          denoise_s        = 0;
    size_t                          peak_cache_bytes = 0;
    std::unique_ptr<DecodingMethod> method;
    std::unique_ptr<Sampler>        sampler;
    // One workspace and forward pass per run: the step loop's temporaries come from the workspace, which is sized by
    // the first step and reused, so a steady run allocates no tensor memory (engine/README.md §w).
    std::unique_ptr<Workspace> ws;
    std::unique_ptr<Forward>   fwd_;
    Session::LogitsObserver    logits_observer;
    std::string                label;

    // The step loop's host-side lists, kept between steps and refilled in place: with the workspace, a steady run
    // allocates nothing (tests/unit/test_step_allocations.cpp).
    std::vector<SequenceState*>            live_seqs;
    std::vector<SeqProgress>               progress;
    std::vector<std::vector<int32_t>>      masked_pos;  // per live sequence: its masked response positions
    RowSet                                 q;
    std::vector<int32_t>                   first_query, row_to_q, logits_rows, keep_rows, new_live;
    std::vector<int32_t>                   computed_idx, computed_at;  // logits_with_zero_rows' scratch
    std::vector<float>                     zero_logits;
    Sampler::Plan                          plan;
    std::vector<Sampler::Unmasked>         unmasked;
    std::vector<std::vector<LayerAccount>> spare_layers;  // StepRecord::layers, allocated by start()
    // emit_saliency's per-sequence lists (the event's spans point into them during the sink's call).
    std::vector<int32_t> saliency_rows, saliency_salient;
    std::vector<float>   saliency_cosines, saliency_drift;
    float                step_tau = 0;  // the tau of the running step (a report that captures only
                                        // `this` fits std::function's buffer: no allocation)

    Impl(const Model& m, EventSink* s) : model(m), cfg(m.config()), sink(s) {}

    Backend& be() const { return model.backend(); }

    // ---- layout and caches ---------------------------------------------------------------------------------------
    void build_layout() {
        lay.cu.assign(1, 0);
        lay.prompt_len.clear();
        lay.tokens.clear();
        for (int32_t i : live) {
            const SequenceState& s = seqs[size_t(i)];
            lay.prompt_len.push_back(s.P);
            lay.tokens.insert(lay.tokens.end(), s.tokens.begin(), s.tokens.end());
            lay.cu.push_back(lay.cu.back() + int32_t(s.tokens.size()));
        }
    }

    // Drops finished sequences from the layout, carrying their survivors' cache rows along.
    void compact() {
        keep_rows.clear();
        new_live.clear();
        for (size_t b = 0; b < live.size(); ++b) {
            if (seqs[size_t(live[b])].finished) continue;
            new_live.push_back(live[b]);
            for (int32_t r = lay.cu[b]; r < lay.cu[b + 1]; ++r) keep_rows.push_back(r);
        }
        if (new_live.size() == live.size()) return;
        for (auto& c : caches)
            for (Tensor* t : c.tensors()) {
                if (!t->view().data) continue;
                Tensor n = be().alloc(t->view().dtype, int64_t(keep_rows.size()), t->cols());
                if (!keep_rows.empty()) be().gather_rows(*t, keep_rows, n);
                *t = std::move(n);
            }
        live.swap(new_live);
    }

    void alloc_caches() {
        const CacheNeeds need = method->caches();
        caches.assign(size_t(cfg.n_layer), LayerCache{});
        const int64_t N  = lay.n_rows();
        const DType   dt = be().cache_dtype();
        for (auto& c : caches) {
            c.k = be().alloc(dt, N, cfg.kv_dim());
            c.v = be().alloc(dt, N, cfg.kv_dim());
            if (need.ctx) c.ctx = be().alloc(dt, N, cfg.q_dim());
            if (need.ffn) c.ffn = be().alloc(dt, N, cfg.n_embd);
            if (need.attn_out) c.attn_out = be().alloc(dt, N, cfg.n_embd);
            if (need.lse) c.lse = be().alloc(DType::F32, N, cfg.n_head);  // fp32: it sits in an exponent
            if (need.q) c.q = be().alloc(dt, N, cfg.q_dim());
            if (need.hidden) c.hidden = be().alloc(dt, N, cfg.n_embd);
        }
        peak_cache_bytes = std::max(peak_cache_bytes, cache_bytes(caches));
    }

    // ---- events ---------------------------------------------------------------------------------------------------
    void emit_saliency(int l, const SaliencyOutcome& o) {
        if (!sink) return;
        const float         t   = step_tau;
        const Forward&      fwd = *fwd_;
        const LayerAccount& A   = fwd.accounts()[size_t(l)];
        size_t              i = 0, j = 0;
        // The layer's row counts are the batch's: a sequence's own share is known only when it is alone.
        const bool one_seq = lay.n_seq() == 1;
        for (int b = 0; b < lay.n_seq(); ++b) {
            std::vector<int32_t>& pos   = saliency_rows;
            std::vector<int32_t>& sal   = saliency_salient;
            std::vector<float>&   cos   = saliency_cosines;
            std::vector<float>&   drift = saliency_drift;
            pos.clear();
            sal.clear();
            cos.clear();
            drift.clear();
            const size_t i0 = i;
            for (; i < o.tested.size() && o.tested.seq[i] == b; ++i) {
                pos.push_back(o.tested.pos[i]);
                cos.push_back(o.cosines[i]);
            }
            if (!o.drift.empty()) drift.assign(o.drift.begin() + long(i0), o.drift.begin() + long(i));
            for (; j < o.salient.size() && o.salient.seq[j] == b; ++j) sal.push_back(o.salient.pos[j]);
            const bool         with_cos = sink->wants_cosines();
            const DriftSummary ds       = summarize_drift(drift);
            sink->on_layer_saliency(LayerSaliency{
                .step              = step,
                .layer             = l,
                .seq               = live[size_t(b)],
                .n_rows            = int32_t(pos.size()),
                .n_salient         = int32_t(sal.size()),
                .tau               = t,
                .hist              = histogram(cos),
                .row_positions     = pos,
                .cosines           = with_cos ? std::span<const float>(cos) : std::span<const float>(),
                .salient_positions = sal,
                .ffn_rows          = one_seq ? A.ffn_rows : 0,
                .kv_rows           = one_seq ? A.kv_rows : 0,
                .attn_exact_rows   = one_seq ? A.attn_exact_rows : 0,
                .attn_approx_rows  = one_seq ? A.attn_approx_rows : 0,
                .drift_hist        = ds.hist,
                .drift_count       = ds.count,
                .drift_min         = ds.min,
                .drift_mean        = ds.mean,
                .drift             = with_cos ? std::span<const float>(drift) : std::span<const float>(),
            });
        }
    }

    // The run's parameters and environment as RunBegin::env key/value strings.
    std::vector<std::pair<std::string, std::string>> run_env() const {
        std::vector<std::pair<std::string, std::string>> env;
        auto kv = [&](const std::string& k, std::string v) { env.emplace_back(k, std::move(v)); };
        kv("model_dir", model.dir().string());
        kv("backend", be().description());
        DiffusionParams shown = p;
        shown.tau             = tau.load();  // the tau in force (the family default when unset)
        for (const ParamSpec& ps : diffusion_param_table()) kv(std::string(ps.key), param_text(ps, shown));
        kv("n_layer", std::to_string(cfg.n_layer));
        kv("n_embd", std::to_string(cfg.n_embd));
        // The stored weights (the checkpoint's types, not a device copy's): per class, and bytes per forward pass.
        const ModelWeights& stored = model.impl().ckpt->weights();
        kv("weights", weight_storage_text(stored));
        kv("weight_bytes", std::to_string(weight_streamed_bytes(stored)));
        kv("dyllm_version", version());
        return env;
    }

    void emit_run_begin() {
        if (!sink) return;
        std::vector<int32_t> prompt_lengths;
        for (const auto& s : seqs) prompt_lengths.push_back(s.P);
        sink->on_run_begin(RunBegin{
            .label          = label,
            .method         = method_name(p.method),
            .model          = model.name(),
            .family         = family_name(cfg.family),
            .backend        = be().description(),
            .n_layer        = cfg.n_layer,
            .n_seq          = int32_t(seqs.size()),
            .gen_length     = p.gen_length,
            .steps          = p.steps,
            .prompt_lengths = std::move(prompt_lengths),
            .env            = run_env(),
        });
    }

    // UnqueriedCandidates::Dropped: the plan keeps only the candidates whose logits row the step computed.
    void drop_unqueried_candidates() {
        size_t in = 0, kept = 0;
        for (std::vector<int32_t>& cand : plan.cand) {
            size_t n = 0;
            for (int32_t c : cand) {
                const int32_t r = plan.rows[in++];
                if (row_to_q[size_t(r)] < 0) continue;
                cand[n++]         = c;
                plan.rows[kept++] = r;
            }
            cand.resize(n);
        }
        plan.rows.resize(kept);
    }

    // UnqueriedCandidates::ZeroLogits: the candidates' logits with an all-zero row where idx is -1 (a row the step did
    // not compute, as the d2Cache authors' code scatters its logits into zeros).
    Tensor logits_with_zero_rows(Forward& fwd, const Tensor& h, const std::vector<int32_t>& idx) {
        computed_idx.clear();
        computed_at.clear();
        for (size_t j = 0; j < idx.size(); ++j)
            if (idx[j] >= 0) computed_idx.push_back(idx[j]), computed_at.push_back(int32_t(j));
        const Tensor  part = fwd.logits(h, computed_idx);
        const int64_t V    = fwd.config().n_vocab;
        Tensor        full = fwd.alloc(int64_t(idx.size()), V);
        zero_logits.assign(size_t(int64_t(idx.size()) * V), 0.f);
        be().upload(full, zero_logits.data());
        if (!computed_at.empty()) be().scatter_rows(part, computed_at, full);
        return full;
    }

    void emit_step_begin(StepKind kind) {
        if (!sink) return;
        sink->on_step_begin(StepBegin{
            .step         = step,
            .kind         = kind,
            .tau          = step_tau,
            .n_query_rows = int32_t(q.size()),
            .t_ns         = steady_now_ns(),
        });
    }

    // What each live sequence unmasked in this step, then its whole canvas.
    void emit_unmasks() {
        if (!sink) return;
        for (size_t b = 0; b < live_seqs.size(); ++b) {
            const SequenceState& s = *live_seqs[b];
            sink->on_unmask(Unmask{
                .step      = step,
                .seq       = live[b],
                .positions = unmasked[b].pos,
                .tokens    = unmasked[b].tokens,
                .scores    = unmasked[b].scores,
            });
            sink->on_canvas(CanvasSnapshot{
                .step        = step,
                .seq         = live[b],
                .prompt_len  = s.P,
                .tokens      = s.tokens,
                .unmask_step = s.unmask_step,
                .scores      = s.scores,
                .finished    = s.finished,
            });
        }
    }

    // The step's per-layer accounts, in a vector start() reserved (a steady run allocates nothing).
    std::vector<LayerAccount> step_layers() {
        std::vector<LayerAccount> layers;
        if (!spare_layers.empty()) {
            layers = std::move(spare_layers.back());
            spare_layers.pop_back();
        }
        layers.assign(fwd_->accounts().begin(), fwd_->accounts().end());
        return layers;
    }

    void emit_step_end(const StepRecord& rec) {
        if (!sink) return;
        StepEnd e{
            .step             = step,
            .wall_ns          = int64_t(rec.seconds * 1e9),
            .tokens_committed = rec.tokens_committed,
            .flops            = rec.flops,
            .dense_flops      = rec.dense_flops,
            .dense_rows       = int32_t(lay.n_rows() * cfg.n_layer),
        };
        for (const SequenceState* s : live_seqs)
            for (int32_t t2 : s->unmask_step) e.masked_left += (t2 == 0 && !s->finished);
        for (const auto& a : rec.layers) {
            e.ffn_rows += a.ffn_rows;
            e.kv_rows += a.kv_rows;
            e.attn_exact_rows += a.attn_exact_rows;
            e.attn_approx_rows += a.attn_approx_rows;
            e.query_rows += a.query_rows;
        }
        e.t_ns = steady_now_ns();
        sink->on_step_end(e);
    }

    void emit_run_end(bool cancel) {
        if (!sink) return;
        int32_t                  tokens = 0;
        std::vector<std::string> texts;
        for (const auto& s : seqs) {
            tokens += s.unmasked();
            texts.push_back(decode_response(model, std::vector<int32_t>(s.tokens.begin() + s.P, s.tokens.end())));
        }
        sink->on_run_end(RunEnd{
            .steps       = step,
            .wall_ns     = int64_t(denoise_s * 1e9),
            .tokens      = tokens,
            .cancelled   = cancel,
            .cache_bytes = double(peak_cache_bytes),
            .texts       = std::move(texts),
        });
    }

    // ---- one step -------------------------------------------------------------------------------------------------
    bool run_step() {
        if (over) return false;
        if (cancelled.load() || interrupt_requested()) return finish(true);  // engine/interrupt.h: SIGINT/SIGTERM
        compact();
        build_layout();
        ++step;
        live_seqs.clear();
        progress.clear();
        for (int32_t i : live) live_seqs.push_back(&seqs[size_t(i)]);
        if (masked_pos.size() < live_seqs.size()) masked_pos.resize(live_seqs.size());
        for (size_t b = 0; b < live_seqs.size(); ++b) {
            const SequenceState&  s = *live_seqs[b];
            std::vector<int32_t>& m = masked_pos[b];
            m.clear();
            for (int32_t r = 0; r < s.R; ++r)
                if (s.unmask_step[size_t(r)] == 0) m.push_back(r);
            progress.push_back(SeqProgress{.id            = live[b],
                                           .prompt_len    = s.P,
                                           .gen_length    = s.R,
                                           .unmasked      = s.unmasked(),
                                           .last_unmasked = s.last_unmasked,
                                           .masked        = m});
        }
        step_tau = tau.load();
        const StepInput in{.step = step, .tau = step_tau, .lay = &lay, .seqs = progress, .observed = sink != nullptr};
        const StepKind  kind = method->step_kind(in);
        const auto      t0   = std::chrono::steady_clock::now();

        Forward& fwd = *fwd_;
        fwd.set_sink(sink);
        fwd.set_step(step);
        fwd.begin_step(lay);
        method->query_rows(in, kind, q);
        emit_step_begin(kind);
        const Tensor h = method->run_layers(fwd, in, kind, q, caches,
                                            [this](int l, const SaliencyOutcome& o) { emit_saliency(l, o); });

        // The candidates' logits rows, as indices into the query rows.
        first_query.assign(live_seqs.size(), std::numeric_limits<int32_t>::max());
        for (size_t i = 0; i < q.size(); ++i)
            first_query[size_t(q.seq[i])] = std::min(first_query[size_t(q.seq[i])], q.pos[i]);
        sampler->plan(live_seqs, lay.cu, first_query, plan);
        row_to_q.assign(size_t(lay.n_rows()), -1);
        for (size_t i = 0; i < q.size(); ++i) row_to_q[size_t(q.rows[i])] = int32_t(i);
        const UnqueriedCandidates unqueried = method->unqueried_candidates();
        if (unqueried == UnqueriedCandidates::Dropped) drop_unqueried_candidates();
        std::vector<int32_t>& idx = logits_rows;
        idx.clear();
        bool zero_rows = false;
        for (int32_t r : plan.rows) {
            const int32_t i = row_to_q[size_t(r)];
            DYLLM_ASSERT(i >= 0 || unqueried == UnqueriedCandidates::ZeroLogits,
                         "candidate logits row was not computed in this step");
            zero_rows = zero_rows || i < 0;
            idx.push_back(i);
        }
        Tensor logits = zero_rows ? logits_with_zero_rows(fwd, h, idx) : fwd.logits(h, idx);
        if (logits_observer) {
            std::vector<std::pair<int, int>> where;
            for (size_t b = 0; b < plan.cand.size(); ++b)
                for (int32_t c : plan.cand[b]) where.emplace_back(live[b], c);
            std::vector<float> host(size_t(logits.rows() * logits.cols()));
            if (!host.empty()) be().download(logits, host.data());
            logits_observer(step, where, host, logits.cols());
        }
        sampler->sample(be(), sink, step, logits, plan, live_seqs, unmasked);

        int32_t committed = 0;
        for (size_t b = 0; b < live_seqs.size(); ++b) committed += int32_t(unmasked[b].pos.size());
        emit_unmasks();

        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        denoise_s += secs;
        StepRecord rec{
            .step             = step,
            .kind             = kind,
            .tau              = in.tau,
            .seconds          = secs,
            .flops            = fwd.flops(),
            .dense_flops      = fwd.dense_flops(lay, int64_t(idx.size())),
            .tokens_committed = committed,
            .layers           = step_layers(),
        };
        emit_step_end(rec);
        records.push_back(std::move(rec));
        dense_rows.push_back(int64_t(lay.n_rows()) * cfg.n_layer);
        peak_cache_bytes = std::max(peak_cache_bytes, cache_bytes(caches));

        bool all_done = true;
        for (const auto& s : seqs) all_done &= s.finished;
        if (all_done) return finish(false);
        return true;
    }

    bool finish(bool cancel) {
        over = true;
        emit_run_end(cancel);
        caches.clear();
        return false;
    }
};

Session::Session(const Model& model, EventSink* sink) : impl_(std::make_unique<Impl>(model, sink)) {}
Session::~Session() = default;

void Session::start(const std::vector<std::vector<int32_t>>& prompts, const DiffusionParams& params) {
    Impl&              I   = *impl_;
    const ModelConfig& cfg = I.cfg;
    validate_params(params, cfg);
    if (prompts.empty()) throw InputError("no prompt given");
    for (size_t i = 0; i < prompts.size(); ++i) {
        const auto&       pr    = prompts[i];
        const std::string which = prompts.size() > 1 ? "prompt " + std::to_string(i + 1) : "prompt";
        if (pr.empty()) throw InputError(which + " is empty");
        if (int64_t(pr.size()) + params.gen_length > cfg.max_position)
            throw InputError(which + " is too long: " + std::to_string(pr.size()) + " tokens + gen_length " +
                             std::to_string(params.gen_length) + " exceed the model's max_position " +
                             std::to_string(cfg.max_position));
        for (int32_t id : pr)
            if (id < 0 || id >= cfg.n_vocab)
                throw InputError(which + ": token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                                 std::to_string(cfg.n_vocab) + ")");
    }
    if (!I.be().set_compute_f32(params.compute == ComputeMode::F32))
        throw InputError(std::string("--compute f32: the ") + I.be().name() +
                         " backend multiplies in the stored types only (use --backend cpu)");
    I.p = params;
    I.tau.store(std::isnan(params.tau) ? default_tau(cfg.family) : params.tau);
    I.cancelled.store(false);
    I.method  = make_method(params.method, cfg, params);
    I.sampler = std::make_unique<Sampler>(cfg, params, params.random_order || I.method->random_order(),
                                          I.method->candidate_window());
    if (I.method->unqueried_candidates() == UnqueriedCandidates::ZeroLogits) {
        // Sized for a whole block of every sequence: the first step with an uncomputed candidate allocates nothing.
        const size_t most = prompts.size() * size_t(std::min(params.block_length, params.gen_length));
        I.computed_idx.reserve(most);
        I.computed_at.reserve(most);
        I.zero_logits.reserve(most * size_t(cfg.n_vocab));
    }
    I.fwd_.reset();
    I.ws   = std::make_unique<Workspace>(I.be());
    I.fwd_ = std::make_unique<Forward>(cfg, I.model.weights(), I.be(), I.sink, I.ws.get());
    I.seqs.clear();
    I.live.clear();
    for (size_t i = 0; i < prompts.size(); ++i) {
        SequenceState s;
        s.id     = int32_t(i);
        s.P      = int32_t(prompts[i].size());
        s.R      = params.gen_length;
        s.tokens = prompts[i];
        s.tokens.resize(size_t(s.P + s.R), cfg.mask_id);
        s.unmask_step.assign(size_t(s.R), 0);
        s.scores.assign(size_t(s.R), 0.f);
        I.seqs.push_back(std::move(s));
        I.live.push_back(int32_t(i));
    }
    // A run takes at most `steps` steps (threshold mode: at most gen_length, each step unmasks at least one position
    // per sequence): the per-step records are reserved here, not grown by the step loop.
    const size_t max_steps = size_t(std::isnan(params.conf_threshold) ? params.steps : params.gen_length);
    I.records.clear();
    I.records.reserve(max_steps);
    I.dense_rows.clear();
    I.dense_rows.reserve(max_steps);
    I.spare_layers.assign(max_steps, {});
    for (auto& l : I.spare_layers) l.reserve(size_t(cfg.n_layer));
    I.step             = 0;
    I.denoise_s        = 0;
    I.peak_cache_bytes = 0;
    I.over             = false;
    I.build_layout();
    I.alloc_caches();
    I.emit_run_begin();
}

bool Session::step() {
    const bool more = impl_->run_step();
    if (!more && interrupts_throw()) throw_if_interrupted();  // the CLI unwinds; the studio reads the flag itself
    return more;
}
void Session::run() {
    while (step()) {
    }
}
bool Session::done() const {
    return impl_->over;
}
int Session::current_step() const {
    return impl_->step;
}
void Session::set_tau(float t) {
    if (!std::isfinite(t)) throw InputError("tau must be finite");
    impl_->tau.store(t);
}
float Session::tau() const {
    return impl_->tau.load();
}
void Session::cancel() {
    impl_->cancelled.store(true);
}
void Session::set_sink(EventSink* sink) {
    impl_->sink = sink;
}
void Session::set_label(std::string label) {
    impl_->label = std::move(label);
}
void Session::set_logits_observer(LogitsObserver observer) {
    impl_->logits_observer = std::move(observer);
}
const DiffusionParams& Session::params() const {
    return impl_->p;
}
const std::vector<StepRecord>& Session::step_records() const {
    return impl_->records;
}

GenerationResult Session::result() const {
    const Impl&        I   = *impl_;
    const ModelConfig& cfg = I.cfg;
    GenerationResult   r;
    r.steps           = I.records;
    r.forward_passes  = int32_t(I.records.size());
    r.denoise_seconds = I.denoise_s;
    r.cache_bytes     = double(I.peak_cache_bytes);
    // Recompute fraction: rows pushed through the FFN over the rows x layers a dense step would push (every live row).
    double ffn_rows = 0, dense_rows = 0;
    for (size_t i = 0; i < I.records.size(); ++i) {
        r.total_flops += I.records[i].flops;
        r.total_dense_flops += I.records[i].dense_flops;
        for (const auto& a : I.records[i].layers) ffn_rows += a.ffn_rows;
        dense_rows += double(I.dense_rows[i]);
    }
    r.recompute_fraction = dense_rows > 0 ? ffn_rows / dense_rows : 1.0;
    for (const auto& s : I.seqs) {
        std::vector<int32_t> response(s.tokens.begin() + s.P, s.tokens.end());
        for (int32_t t : response) r.non_eos_tokens += (t != cfg.eos_id && t != cfg.pad_id && t != cfg.mask_id);
        r.generated_tokens += s.R;
        std::string text = decode_response(I.model, response);
        r.sequences.push_back(SequenceResult{
            .prompt_ids      = std::vector<int32_t>(s.tokens.begin(), s.tokens.begin() + s.P),
            .token_ids       = std::move(response),
            .unmask_step     = s.unmask_step,
            .scores          = s.scores,
            .text            = std::move(text),
            .steps_run       = s.steps_run,
            .finished_by_eos = s.by_eos,
            .masks_left      = s.R - s.unmasked(),
        });
    }
    r.tokens_per_s = r.denoise_seconds > 0 ? double(r.generated_tokens) / r.denoise_seconds : 0;
    return r;
}

}  // namespace dyllm
