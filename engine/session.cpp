// Session: one generation run over a batch in lock-step. Picks each step's kind from the method, runs the forward
// pass (forward.h), samples, applies the EOS rules, keeps the accounting and emits the event stream.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <mutex>
#include <random>

#include "engine/errors.h"
#include "engine/forward.h"
#include "engine/model_impl.h"
#include "engine/op_scope.h"
#include "engine/sampler.h"
#include "engine/schedule.h"

namespace dyllm {

namespace {

struct SeqState {
    int32_t              P = 0, R = 0;
    std::vector<int32_t> tokens;       // prompt + response
    std::vector<int32_t> unmask_step;  // [R]
    std::vector<float>   scores;       // [R]
    std::vector<int32_t> last_unmasked;  // response positions unmasked in the previous step, ascending
    int32_t              steps_run = 0;
    bool                 finished = false, by_eos = false;

    int32_t unmasked() const {
        int32_t n = 0;
        for (int32_t s : unmask_step) n += (s > 0);
        return n;
    }
};

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

    std::vector<SeqState>   seqs;
    std::vector<int32_t>    live;      // indices of the sequences in the current layout
    BatchLayout             lay;
    std::vector<LayerCache> caches;
    std::vector<StepRecord> records;
    std::vector<int64_t>    dense_rows;  // per step: rows x layers of a dense step over the live sequences
    int32_t                 step = 0;
    bool                    over = true;
    int32_t                 n_u = 1;
    double                  denoise_s = 0;
    size_t                  peak_cache_bytes = 0;
    std::mt19937_64         rng;
    Session::LogitsObserver logits_observer;
    std::string             label;

    Impl(const Model& m, EventSink* s) : model(m), cfg(m.config()), sink(s) {}

    Backend& be() const { return model.backend(); }

    // ---- layout and caches ---------------------------------------------------------------------------------------
    void build_layout() {
        BatchLayout nl;
        nl.cu.push_back(0);
        for (int32_t i : live) {
            const SeqState& s = seqs[size_t(i)];
            nl.prompt_len.push_back(s.P);
            nl.tokens.insert(nl.tokens.end(), s.tokens.begin(), s.tokens.end());
            nl.cu.push_back(nl.cu.back() + int32_t(s.tokens.size()));
        }
        lay = std::move(nl);
    }

    // Drops finished sequences from the layout, carrying their survivors' cache rows along.
    void compact() {
        std::vector<int32_t> keep_rows, new_live;
        for (size_t b = 0; b < live.size(); ++b) {
            if (seqs[size_t(live[b])].finished) continue;
            new_live.push_back(live[b]);
            for (int32_t r = lay.cu[b]; r < lay.cu[b + 1]; ++r) keep_rows.push_back(r);
        }
        if (new_live.size() == live.size()) return;
        for (auto& c : caches)
            for (Tensor* t : {&c.k, &c.v, &c.ctx, &c.ffn, &c.attn_out}) {
                if (!t->view().data) continue;
                Tensor n = be().alloc(t->view().dtype, int64_t(keep_rows.size()), t->cols());
                if (!keep_rows.empty()) be().gather_rows(*t, keep_rows, n);
                *t = std::move(n);
            }
        live = std::move(new_live);
    }

    void alloc_caches() {
        const bool measure = p.measure_cosine;  // opt-in for methods without their own saliency test
        caches.assign(size_t(cfg.n_layer), LayerCache{});
        const int64_t N  = lay.n_rows();
        const DType   dt = be().cache_dtype();
        for (auto& c : caches) {
            c.k = be().alloc(dt, N, cfg.kv_dim());
            c.v = be().alloc(dt, N, cfg.kv_dim());
            switch (p.method) {
                case Method::DyLLM:
                    c.ctx = be().alloc(dt, N, cfg.q_dim());
                    c.ffn = be().alloc(dt, N, cfg.n_embd);
                    break;
                case Method::DllmCache:
                    c.ffn      = be().alloc(dt, N, cfg.n_embd);
                    c.attn_out = be().alloc(dt, N, cfg.n_embd);
                    break;
                default:
                    if (measure) c.ctx = be().alloc(dt, N, cfg.q_dim());
                    break;
            }
        }
        peak_cache_bytes = std::max(peak_cache_bytes, cache_bytes(caches));
    }

    // ---- step kinds -----------------------------------------------------------------------------------------------
    bool at_block_start(const SeqState& s) const { return s.unmasked() % p.block_length == 0; }

    StepKind step_kind() const {
        switch (p.method) {
            case Method::Original: return StepKind::Full;
            case Method::DyLLM: return dyllm_step_kind(step, p.full_steps, p.fullq_every);
            case Method::FastPrefix:
            case Method::FastDual: {
                if (step == 1) return StepKind::BlockRefresh;
                for (int32_t i : live)
                    if (at_block_start(seqs[size_t(i)])) return StepKind::BlockRefresh;
                return StepKind::BlockCached;
            }
            case Method::DllmCache: {
                const auto r = dllm_cache_refresh(step, p.kp, p.kr);
                return (r.prompt && r.gen) ? StepKind::CacheRefresh : StepKind::CachePartial;
            }
        }
        return StepKind::Full;
    }

    // ---- events ---------------------------------------------------------------------------------------------------
    void emit_saliency(int l, const SaliencyOutcome& o, float t, const Forward& fwd) {
        if (!sink) return;
        const LayerAccount& A = fwd.accounts()[size_t(l)];
        size_t              i = 0, j = 0;
        for (int b = 0; b < lay.n_seq(); ++b) {
            LayerSaliency e;
            e.step = step, e.layer = l, e.seq = live[size_t(b)], e.tau = t;
            std::vector<int32_t> pos, sal;
            std::vector<float>   cos;
            for (; i < o.tested.size() && o.tested.seq[i] == b; ++i) pos.push_back(o.tested.pos[i]), cos.push_back(o.cosines[i]);
            for (; j < o.salient.size() && o.salient.seq[j] == b; ++j) sal.push_back(o.salient.pos[j]);
            e.n_rows = int32_t(pos.size()), e.n_salient = int32_t(sal.size());
            e.hist = histogram(cos);
            e.row_positions = pos;
            if (sink->wants_cosines()) e.cosines = cos;
            e.salient_positions = sal;
            if (lay.n_seq() == 1) {
                e.ffn_rows = A.ffn_rows, e.kv_rows = A.kv_rows, e.attn_exact_rows = A.attn_exact_rows;
                e.attn_approx_rows = A.attn_approx_rows;
            }
            sink->on_layer_saliency(e);
        }
    }

    // ---- forward passes -------------------------------------------------------------------------------------------
    // Rows whose logits the sampler reads: candidate c of sequence b reads row P + c (LLaDA) or P + c - 1 (Dream's
    // one-position shift, spec a.9 step 2; position 0 reads itself).
    int32_t logit_row(int b, int32_t pos) const {
        const int32_t P = lay.prompt_len[size_t(b)];
        int32_t       p_abs = P + pos;
        if (cfg.family == Family::Dream) p_abs = std::max(0, p_abs - 1);
        return lay.cu[size_t(b)] + p_abs;
    }

    RowSet fast_query_rows(bool dual) const {
        RowSet q;
        const bool dream = cfg.family == Family::Dream;
        for (int b = 0; b < lay.n_seq(); ++b) {
            const SeqState& s     = seqs[size_t(live[size_t(b)])];
            const int32_t   start = (s.unmasked() / p.block_length) * p.block_length;
            const int32_t   end   = dual ? std::min(s.R, start + p.block_length) : s.R;
            int32_t         first = s.P + start;
            if (dream && first > 0) --first;  // the shifted logits of the block's first position (see README)
            for (int32_t a = first; a < s.P + end; ++a) q.push(lay.cu[size_t(b)] + a, b, a);
        }
        return q;
    }

    RowSet salient_seed() const {
        RowSet s;
        for (int b = 0; b < lay.n_seq(); ++b) {
            const SeqState& st = seqs[size_t(live[size_t(b)])];
            for (int32_t pos : st.last_unmasked) s.push(lay.cu[size_t(b)] + st.P + pos, b, st.P + pos);
        }
        return s;
    }

    // Runs the step's forward pass; returns the hidden states of q's rows and fills q.
    Tensor forward(Forward& fwd, StepKind kind, RowSet& q, float t) {
        // Cosines of dense steps: opt-in (measure_cosine) for the baselines; DyLLM's FULL steps report them to a sink
        // from the context cache they fill anyway. Step 1 has no previous context to compare with.
        const bool measure = (p.measure_cosine || (sink && p.method == Method::DyLLM)) && step > 1;
        Tensor     h;
        switch (kind) {
            case StepKind::Full:
            case StepKind::BlockRefresh: {
                q = all_rows(lay);
                h = fwd.embed(lay, q);
                const bool store = p.method == Method::DyLLM;
                for (int l = 0; l < cfg.n_layer; ++l) {
                    const bool      m = measure && caches[size_t(l)].ctx.view().data;
                    SaliencyOutcome o;
                    fwd.layer_dense(l, h, lay, q, caches[size_t(l)], store, store, m ? &o : nullptr, t);
                    if (m) emit_saliency(l, o, t, fwd);
                }
                break;
            }
            case StepKind::BlockCached: {
                q = fast_query_rows(p.method == Method::FastDual);
                h = fwd.embed(lay, q);
                for (int l = 0; l < cfg.n_layer; ++l) {
                    const bool      m = measure && caches[size_t(l)].ctx.view().data;
                    SaliencyOutcome o;
                    fwd.layer_dense(l, h, lay, q, caches[size_t(l)], false, false, m ? &o : nullptr, t);
                    if (m) emit_saliency(l, o, t, fwd);
                }
                break;
            }
            case StepKind::SparseFullQuery:
            case StepKind::SparseResponse: {
                // Response-only steps add the last prompt row for Dream (project decision 3), so the first response
                // position reads the right shifted logits.
                q = kind == StepKind::SparseFullQuery ? all_rows(lay) : response_rows(lay, cfg.family == Family::Dream);
                h = fwd.embed(lay, q);
                RowSet s = salient_seed();
                for (int l = 0; l < cfg.n_layer; ++l) {
                    SaliencyOutcome o;
                    fwd.layer_sparse(l, h, lay, q, s, caches[size_t(l)], t, p.approx, o);
                    emit_saliency(l, o, t, fwd);
                    s = std::move(o.salient);
                }
                break;
            }
            case StepKind::CacheRefresh:
            case StepKind::CachePartial: {
                q = all_rows(lay);
                h = fwd.embed(lay, q);
                const auto r    = dllm_cache_refresh(step, p.kp, p.kr);
                const RowSet gen = response_rows(lay, false);
                RowSet prompt_rows;
                for (size_t i = 0; i < q.size(); ++i)
                    if (q.pos[i] < lay.prompt_len[size_t(q.seq[i])]) prompt_rows.push(q.rows[i], q.seq[i], q.pos[i]);
                RowSet partial = r.prompt ? prompt_rows : (r.gen ? gen : RowSet{});
                for (int l = 0; l < cfg.n_layer; ++l) {
                    // Layer 0 always refreshes both (the reference hooks' "or layer_id == 0").
                    const bool both = (r.prompt && r.gen) || l == 0;
                    fwd.layer_dllm_cache(l, h, lay, both ? q : partial, gen, !both && !r.gen, p.rho, caches[size_t(l)]);
                }
                break;
            }
            case StepKind::Count: break;
        }
        return h;
    }

    // ---- one step -------------------------------------------------------------------------------------------------
    bool run_step() {
        if (over) return false;
        if (cancelled.load()) return finish(true);
        compact();
        build_layout();
        ++step;
        const float    t    = tau.load();
        const StepKind kind = step_kind();
        const auto     t0   = std::chrono::steady_clock::now();
        if (sink) {
            StepBegin e;
            e.step = step, e.kind = kind, e.tau = t, e.t_ns = steady_now_ns();
            sink->on_step_begin(e);
        }

        Forward fwd(cfg, model.weights(), be(), sink);
        fwd.set_step(step);
        fwd.begin_step();
        RowSet q;
        Tensor h = forward(fwd, kind, q, t);

        // Candidates and the rows holding their logits.
        std::vector<int32_t> row_to_q(size_t(lay.n_rows()), -1);
        for (size_t i = 0; i < q.size(); ++i) row_to_q[size_t(q.rows[i])] = int32_t(i);
        std::vector<std::vector<int32_t>> cand(size_t(lay.n_seq()));
        std::vector<int32_t>              idx;
        for (int b = 0; b < lay.n_seq(); ++b) {
            const SeqState& s = seqs[size_t(live[size_t(b)])];
            cand[size_t(b)]   = block_candidates(std::span(s.tokens).subspan(size_t(s.P)), cfg.mask_id, p.block_length);
            for (int32_t c : cand[size_t(b)]) {
                const int32_t qi = row_to_q[size_t(logit_row(b, c))];
                DYLLM_ASSERT(qi >= 0, "candidate logits row was not computed in this step");
                idx.push_back(qi);
            }
        }
        Tensor               logits = fwd.logits(h, idx);
        if (logits_observer) {
            std::vector<std::pair<int, int>> where;
            for (int b = 0; b < lay.n_seq(); ++b)
                for (int32_t c : cand[size_t(b)]) where.emplace_back(live[size_t(b)], c);
            std::vector<float> host(size_t(logits.rows() * logits.cols()));
            if (!host.empty()) be().download(logits, host.data());
            logits_observer(step, where, host, logits.cols());
        }
        std::vector<int32_t> tok(idx.size());
        std::vector<float>   score(idx.size());
        score_rows(fwd, logits, tok, score);

        // Selection and commit.
        const bool    thr_mode   = !std::isnan(p.conf_threshold);
        const int     n_transfer = thr_mode ? 1 : n_u;
        const float   threshold  = thr_mode ? p.conf_threshold : std::numeric_limits<float>::infinity();
        int32_t       committed  = 0;
        size_t        k          = 0;
        for (int b = 0; b < lay.n_seq(); ++b) {
            SeqState&              s = seqs[size_t(live[size_t(b)])];
            std::vector<Candidate> cs;
            for (int32_t c : cand[size_t(b)]) cs.push_back(Candidate{c, tok[k], score[k]}), ++k;
            const auto           chosen = select_candidates(std::move(cs), n_transfer, threshold);
            std::vector<int32_t> pos, toks;
            std::vector<float>   scs;
            for (const auto& c : chosen) {
                s.tokens[size_t(s.P + c.pos)] = c.token;
                s.unmask_step[size_t(c.pos)]  = step;
                s.scores[size_t(c.pos)]       = c.score;
                pos.push_back(c.pos), toks.push_back(c.token), scs.push_back(c.score);
            }
            committed += int32_t(chosen.size());
            s.last_unmasked = pos;
            std::sort(s.last_unmasked.begin(), s.last_unmasked.end());  // project decision 2
            s.steps_run = step;
            const std::span<const int32_t> resp(s.tokens.data() + s.P, size_t(s.R));
            if (!p.ignore_eos && finished_by_eos(resp, s.last_unmasked, cfg.eos_id, cfg.mask_id)) s.finished = s.by_eos = true;
            if (s.unmasked() >= s.R || (!thr_mode && step >= p.steps)) s.finished = true;
            if (sink) {
                Unmask u;
                u.step = step, u.seq = live[size_t(b)], u.positions = pos, u.tokens = toks, u.scores = scs;
                sink->on_unmask(u);
                CanvasSnapshot cs2;
                cs2.step = step, cs2.seq = live[size_t(b)], cs2.prompt_len = s.P, cs2.tokens = s.tokens;
                cs2.unmask_step = s.unmask_step, cs2.scores = s.scores, cs2.finished = s.finished;
                sink->on_canvas(cs2);
            }
        }

        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        denoise_s += secs;
        StepRecord rec;
        rec.step = step, rec.kind = kind, rec.tau = t, rec.seconds = secs, rec.flops = fwd.flops();
        rec.dense_flops = fwd.dense_flops(lay, int64_t(idx.size()));
        rec.tokens_committed = committed;
        rec.layers = fwd.accounts();
        if (sink) {
            StepEnd e;
            e.step = step, e.wall_ns = int64_t(secs * 1e9), e.tokens_committed = committed;
            for (int32_t i : live)
                for (int32_t t2 : seqs[size_t(i)].unmask_step) e.masked_left += (t2 == 0 && !seqs[size_t(i)].finished);
            e.flops = rec.flops, e.dense_flops = rec.dense_flops;
            for (const auto& a : rec.layers) {
                e.ffn_rows += a.ffn_rows, e.kv_rows += a.kv_rows, e.attn_exact_rows += a.attn_exact_rows;
                e.attn_approx_rows += a.attn_approx_rows, e.query_rows += a.query_rows;
            }
            e.dense_rows = lay.n_rows() * cfg.n_layer;
            e.t_ns       = steady_now_ns();
            sink->on_step_end(e);
        }
        records.push_back(std::move(rec));
        dense_rows.push_back(int64_t(lay.n_rows()) * cfg.n_layer);
        peak_cache_bytes = std::max(peak_cache_bytes, cache_bytes(caches));

        bool all_done = true;
        for (const auto& s : seqs) all_done &= s.finished;
        if (all_done) return finish(false);
        return true;
    }

    // Greedy scoring on the backend; seeded sampling on the host when temperature > 0.
    void score_rows(Forward& fwd, const Tensor& logits, std::vector<int32_t>& tok, std::vector<float>& score) {
        if (tok.empty()) return;
        const ScoreKind kind = cfg.family == Family::Dream ? ScoreKind::NegEntropy : ScoreKind::Confidence;
        const std::vector<int32_t> banned{cfg.mask_id};  // [MASK] is never a prediction
        ScopedOp s(sink, step, -1, OpClass::Sampling, 0, double(logits.view().bytes()), int32_t(tok.size()));
        if (p.temperature <= 0.f) {
            be().score_logits(logits, kind, banned, tok, score);
            return;
        }
        const int64_t      V = logits.cols();
        std::vector<float> host(size_t(logits.rows() * V));
        be().download(logits, host.data());
        for (size_t r = 0; r < tok.size(); ++r) {
            const float* x = host.data() + r * size_t(V);
            double       mx = -INFINITY;
            for (int64_t v = 0; v < V; ++v)
                if (v != cfg.mask_id) mx = std::max(mx, double(x[v]) / p.temperature);
            std::vector<double> pr(size_t(V), 0.0);
            double              sum = 0;
            for (int64_t v = 0; v < V; ++v)
                if (v != cfg.mask_id) sum += pr[size_t(v)] = std::exp(double(x[v]) / p.temperature - mx);
            std::uniform_real_distribution<double> u(0.0, sum);
            double                                 draw = u(rng), acc = 0;
            int64_t                                pick = 0;
            for (int64_t v = 0; v < V; ++v) {
                acc += pr[size_t(v)];
                if (pr[size_t(v)] > 0 && acc >= draw) {
                    pick = v;
                    break;
                }
            }
            tok[r] = int32_t(pick);
            if (kind == ScoreKind::Confidence) {
                score[r] = float(pr[size_t(pick)] / sum);
            } else {
                double ne = 0;
                for (double q : pr) ne += (q / sum) * std::log(q / sum + 1e-10);
                score[r] = float(ne);
            }
        }
    }

    bool finish(bool cancel) {
        over = true;
        if (sink) {
            RunEnd e;
            e.steps = step, e.wall_ns = int64_t(denoise_s * 1e9), e.cancelled = cancel;
            e.cache_bytes = double(peak_cache_bytes);
            for (const auto& s : seqs) {
                e.tokens += s.unmasked();
                e.texts.push_back(
                    decode_response(model, std::vector<int32_t>(s.tokens.begin() + s.P, s.tokens.end())));
            }
            sink->on_run_end(e);
        }
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
        const auto& pr = prompts[i];
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
    I.p = params;
    I.tau.store(std::isnan(params.tau) ? default_tau(cfg.family) : params.tau);
    I.cancelled.store(false);
    I.n_u = params.gen_length / params.steps;
    I.seqs.clear();
    I.live.clear();
    for (size_t i = 0; i < prompts.size(); ++i) {
        SeqState s;
        s.P = int32_t(prompts[i].size()), s.R = params.gen_length;
        s.tokens = prompts[i];
        s.tokens.resize(size_t(s.P + s.R), cfg.mask_id);
        s.unmask_step.assign(size_t(s.R), 0);
        s.scores.assign(size_t(s.R), 0.f);
        I.seqs.push_back(std::move(s));
        I.live.push_back(int32_t(i));
    }
    I.records.clear();
    I.dense_rows.clear();
    I.step = 0, I.denoise_s = 0, I.peak_cache_bytes = 0;
    I.rng.seed(params.seed);
    I.over = false;
    I.build_layout();
    I.alloc_caches();
    if (I.sink) {
        RunBegin e;
        e.label  = I.label;
        e.method = method_name(params.method), e.model = I.model.name(), e.family = family_name(cfg.family);
        e.backend = I.be().description(), e.n_layer = cfg.n_layer, e.n_seq = int32_t(prompts.size());
        e.gen_length = params.gen_length, e.steps = params.steps;
        for (const auto& s : I.seqs) e.prompt_lengths.push_back(s.P);
        auto kv = [&](const char* k, std::string v) { e.env.emplace_back(k, std::move(v)); };
        kv("model_dir", I.model.dir().string());
        kv("backend", I.be().description());
        kv("method", method_name(params.method));
        kv("tau", std::to_string(I.tau.load()));
        kv("full_steps", std::to_string(params.full_steps));
        kv("fullq_every", std::to_string(params.fullq_every));
        kv("approx", params.approx ? "true" : "false");
        kv("gen_length", std::to_string(params.gen_length));
        kv("steps", std::to_string(params.steps));
        kv("block_length", std::to_string(params.block_length));
        kv("threshold", std::isnan(params.conf_threshold) ? "off" : std::to_string(params.conf_threshold));
        kv("temperature", std::to_string(params.temperature));
        kv("seed", std::to_string(params.seed));
        kv("kp", std::to_string(params.kp));
        kv("kr", std::to_string(params.kr));
        kv("rho", std::to_string(params.rho));
        kv("n_layer", std::to_string(cfg.n_layer));
        kv("n_embd", std::to_string(cfg.n_embd));
        kv("dyllm_version", "0.1.0");
        I.sink->on_run_begin(e);
    }
}

bool Session::step() { return impl_->run_step(); }
void Session::run() {
    while (impl_->run_step()) {
    }
}
bool  Session::done() const { return impl_->over; }
int   Session::current_step() const { return impl_->step; }
void  Session::set_tau(float t) {
    if (!std::isfinite(t)) throw InputError("tau must be finite");
    impl_->tau.store(t);
}
float Session::tau() const { return impl_->tau.load(); }
void  Session::cancel() { impl_->cancelled.store(true); }
void  Session::set_sink(EventSink* sink) { impl_->sink = sink; }
void  Session::set_label(std::string label) { impl_->label = std::move(label); }
void  Session::set_logits_observer(LogitsObserver observer) { impl_->logits_observer = std::move(observer); }
const DiffusionParams&         Session::params() const { return impl_->p; }
const std::vector<StepRecord>& Session::step_records() const { return impl_->records; }

GenerationResult Session::result() const {
    const Impl&        I   = *impl_;
    const ModelConfig& cfg = I.cfg;
    GenerationResult   r;
    r.steps          = I.records;
    r.forward_passes = int32_t(I.records.size());
    r.denoise_seconds = I.denoise_s;
    r.cache_bytes    = double(I.peak_cache_bytes);
    // Recompute fraction: rows pushed through the FFN over the rows x layers a dense step would push (every live row).
    double ffn_rows = 0, dense_rows = 0;
    for (size_t i = 0; i < I.records.size(); ++i) {
        r.total_flops += I.records[i].flops, r.total_dense_flops += I.records[i].dense_flops;
        for (const auto& a : I.records[i].layers) ffn_rows += a.ffn_rows;
        dense_rows += double(I.dense_rows[i]);
    }
    r.recompute_fraction = dense_rows > 0 ? ffn_rows / dense_rows : 1.0;
    for (const auto& s : I.seqs) {
        SequenceResult sr;
        sr.prompt_ids.assign(s.tokens.begin(), s.tokens.begin() + s.P);
        sr.token_ids.assign(s.tokens.begin() + s.P, s.tokens.end());
        sr.unmask_step = s.unmask_step, sr.scores = s.scores, sr.steps_run = s.steps_run;
        sr.finished_by_eos = s.by_eos;
        for (int32_t t : sr.token_ids)
            r.non_eos_tokens += (t != cfg.eos_id && t != cfg.pad_id && t != cfg.mask_id);
        sr.text = decode_response(I.model, sr.token_ids);
        r.generated_tokens += s.R;
        r.sequences.push_back(std::move(sr));
    }
    r.tokens_per_s = r.denoise_seconds > 0 ? double(r.generated_tokens) / r.denoise_seconds : 0;
    return r;
}

}  // namespace dyllm
