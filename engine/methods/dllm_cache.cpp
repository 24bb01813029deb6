// dLLM-Cache: prompt and response features refreshed on their own intervals (K_P, K_R); in between, the response's
// V is recomputed and the rho share of response rows whose V moved most are recomputed in full (adaptive update).
#include "engine/methods/dllm_cache.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "engine/errors.h"
#include "engine/methods/method.h"

namespace dyllm {

DllmCacheRefresh dllm_cache_refresh(int step, int kp, int kr) {
    return DllmCacheRefresh{(step - 1) % kp == 0, (step - 1) % kr == 0};
}

namespace {

class DllmCacheMethod final : public DecodingMethod {
public:
    using DecodingMethod::DecodingMethod;

    CacheNeeds caches() const override { return {.ffn = true, .attn_out = true}; }

    StepKind step_kind(const StepInput& in) const override {
        const auto r = dllm_cache_refresh(in.step, p_.kp, p_.kr);
        return (r.prompt && r.gen) ? StepKind::CacheRefresh : StepKind::CachePartial;
    }

    // The rows whose hidden state is read after layer 0: every row when the prompt is refreshed; otherwise the
    // response rows (later layers recompute only response rows, and the sampler reads only theirs), plus for Dream
    // the last prompt row, whose logits are the first response position's. Layer 0 still recomputes every row.
    void query_rows(const StepInput& in, StepKind, RowSet& out) const override {
        if (dllm_cache_refresh(in.step, p_.kp, p_.kr).prompt) return all_rows(*in.lay, out);
        response_rows(*in.lay, cfg_.family == Family::Dream, out);
    }

    Tensor run_layers(Forward& fwd, const StepInput& in, StepKind, const RowSet& q, std::vector<LayerCache>& caches,
                      const SaliencyReport&) override {
        const BatchLayout& lay = *in.lay;
        s_.reserve(size_t(lay.n_rows()));
        const RowSet& every = s_.every;
        all_rows(lay, s_.every);
        Tensor     h = fwd.embed(lay, every);
        const auto r = dllm_cache_refresh(in.step, p_.kp, p_.kr);
        response_rows(lay, false, s_.gen);
        s_.prompt_rows.clear();
        for (size_t i = 0; i < every.size(); ++i)
            if (every.pos[i] < lay.prompt_len[size_t(every.seq[i])])
                s_.prompt_rows.push(every.rows[i], every.seq[i], every.pos[i]);
        static const RowSet no_rows;  // an empty set (no allocation)
        const RowSet&       partial = r.prompt ? s_.prompt_rows : (r.gen ? s_.gen : no_rows);
        for (int l = 0; l < cfg_.n_layer; ++l) {
            // Layer 0 always refreshes both (the reference hooks' "or layer_id == 0").
            const bool both = (r.prompt && r.gen) || l == 0;
            layer(fwd, l, h, lay, both ? every : partial, s_.gen, !both && !r.gen, q, caches[size_t(l)]);
        }
        if (q.size() == every.size()) return h;
        Tensor out = fwd.alloc(int64_t(q.size()), cfg_.n_embd);
        fwd.gather(cfg_.n_layer - 1, h, q.rows, out);
        return out;
    }

private:
    // The host-side row lists of a step, kept between steps and reserved for every row of the batch on the first
    // step, so a steady run refills them without allocating.
    struct Scratch {
        RowSet               gen, prompt_rows, every, transfer, ffn_rows;
        std::vector<float>   cos;
        std::vector<int32_t> off, pick, order, rows;

        void reserve(size_t n) {
            for (RowSet* r : {&gen, &prompt_rows, &every, &transfer, &ffn_rows}) r->reserve(n);
            cos.reserve(n);
            pick.reserve(n);
            order.reserve(n);
            rows.reserve(2 * n);
        }
    };
    Scratch s_;

    // h holds every row of the batch. attn_rows are recomputed; with adaptive, the response rows' V is refreshed and
    // the rho share least similar are recomputed too. The cached outputs are added only where a later op reads the
    // row (live, a superset of every row recomputed after layer 0): the other rows of h are left stale.
    void layer(Forward& fwd, int l, Tensor& h, const BatchLayout& lay, const RowSet& attn_rows, const RowSet& gen_rows,
               bool adaptive, const RowSet& live, LayerCache& c) {
        const LayerWeights& L         = fwd.weights().layers[size_t(l)];
        LayerAccount&       A         = fwd.account(l);
        auto                norm_rows = [&](const TensorView& w, const std::vector<int32_t>& rows) {
            Tensor g = fwd.alloc(int64_t(rows.size()), cfg_.n_embd);
            fwd.gather(l, h, rows, g);
            if (!rows.empty()) fwd.norm(l, g, w, g);
            return g;
        };
        // Recompute Q/K/V, attention and o_proj for `rows` (x: their normed inputs; V kept unless with_v).
        auto recompute_attention = [&](const RowSet& rows, const Tensor& x, bool with_v) {
            const int64_t n = int64_t(rows.size());
            if (n == 0) return;
            // One run of rows (a full refresh) goes straight into the caches' row ranges (forward.h rows_in_place).
            const TensorView k_to = rows_in_place(c.k, rows), v_to = with_v ? rows_in_place(c.v, rows) : TensorView{};
            const bool       kv_direct = !k_to.empty() && (!with_v || !v_to.empty());
            Tensor           Q, K, V;
            fwd.qkv(l, x, rows, &Q, &K, with_v ? &V : nullptr, kv_direct ? k_to : TensorView{},
                    kv_direct ? v_to : TensorView{});
            if (!kv_direct) {
                fwd.scatter(l, K, rows.rows, c.k);
                if (with_v) fwd.scatter(l, V, rows.rows, c.v);
            }
            const TensorView a_to = rows_in_place(c.attn_out, rows);
            Tensor           o    = fwd.alloc(n, cfg_.q_dim());
            Tensor           a    = !a_to.empty() ? Tensor::borrowed(a_to) : fwd.alloc(n, cfg_.n_embd);
            fwd.attention(l, Q, rows, c, lay, o);
            fwd.matmul(l, OpClass::OProj, o, L.wo, TensorView{}, a);
            if (a_to.empty()) fwd.scatter(l, a, rows.rows, c.attn_out);
            A.query_rows += int32_t(n);
            A.attn_exact_rows += int32_t(n);
        };

        recompute_attention(attn_rows, norm_rows(L.attn_norm, attn_rows.rows), true);
        A.kv_rows += int32_t(attn_rows.size());

        RowSet& transfer = s_.transfer;  // adaptive update: the rho share of response rows whose V changed most
        transfer.clear();
        if (adaptive && p_.rho > 0.f && !gen_rows.empty()) {
            Tensor xg = norm_rows(L.attn_norm, gen_rows.rows);
            Tensor vg = fwd.alloc(int64_t(gen_rows.size()), cfg_.kv_dim());
            fwd.matmul(l, OpClass::Qkv, xg, L.wv, L.bv, vg);
            Tensor v_old = fwd.alloc(int64_t(gen_rows.size()), cfg_.kv_dim());
            fwd.gather(l, c.v, gen_rows.rows, v_old);
            std::vector<float>& cos = s_.cos;
            fwd.cosine(l, vg, v_old, cos);
            fwd.scatter(l, vg, gen_rows.rows, c.v);  // V replaced for every response token
            A.kv_rows += int32_t(gen_rows.size());
            std::vector<int32_t>& off  = s_.off;
            std::vector<int32_t>& pick = s_.pick;
            gen_rows.seq_offsets(lay.n_seq(), off);
            pick.clear();
            for (int b = 0; b < lay.n_seq(); ++b) {
                const int32_t         lo = off[size_t(b)], hi = off[size_t(b) + 1];
                const int32_t         k     = int32_t(float(hi - lo) * p_.rho);  // int(gen_len * rho), as the reference
                std::vector<int32_t>& order = s_.order;
                order.resize(size_t(hi - lo));
                std::iota(order.begin(), order.end(), lo);
                // Ascending cosine, ties by row (what a stable sort of the ascending rows gives, without its
                // temporary buffer); a NaN cosine ranks first, so the order is total whatever the values.
                const auto key = [&](int32_t i) {
                    const float c = cos[size_t(i)];
                    return std::isnan(c) ? -std::numeric_limits<float>::infinity() : c;
                };
                std::sort(order.begin(), order.end(),
                          [&](int32_t i, int32_t j) { return key(i) < key(j) || (key(i) == key(j) && i < j); });
                pick.insert(pick.end(), order.begin(), order.begin() + std::min<int32_t>(k, hi - lo));
            }
            std::sort(pick.begin(), pick.end());
            for (int32_t i : pick)
                transfer.push(gen_rows.rows[size_t(i)], gen_rows.seq[size_t(i)], gen_rows.pos[size_t(i)]);
            Tensor xt = fwd.alloc(int64_t(pick.size()), cfg_.n_embd);
            fwd.gather(l, xg, pick, xt);
            recompute_attention(transfer, xt, false);
        }

        // The attention outputs added before the FFN reads its rows: every row where attn_rows were all of them (so are
        // the FFN's), else the live rows (which hold attn_rows and the transferred rows).
        add_cached(fwd, l, c.attn_out, attn_rows.size() == s_.every.size() ? s_.every : live, h);

        // FFN for the recomputed rows; every other row reuses its cached FFN output.
        RowSet& ffn_rows = s_.ffn_rows;
        ffn_rows.clear();
        {
            std::vector<int32_t>& r = s_.rows;
            r                       = attn_rows.rows;
            r.insert(r.end(), transfer.rows.begin(), transfer.rows.end());
            std::sort(r.begin(), r.end());
            r.erase(std::unique(r.begin(), r.end()), r.end());
            int b = 0;
            for (int32_t row : r) {
                while (row >= lay.cu[size_t(b) + 1]) ++b;
                ffn_rows.push(row, b, row - lay.cu[size_t(b)]);
            }
        }
        Tensor           x2     = norm_rows(L.ffn_norm, ffn_rows.rows);
        const TensorView ffn_to = rows_in_place(c.ffn, ffn_rows);
        Tensor m = !ffn_to.empty() ? Tensor::borrowed(ffn_to) : fwd.alloc(int64_t(ffn_rows.size()), cfg_.n_embd);
        fwd.ffn(l, x2, m);
        if (ffn_to.empty()) fwd.scatter(l, m, ffn_rows.rows, c.ffn);
        A.ffn_rows += int32_t(ffn_rows.size());
        add_cached(fwd, l, c.ffn, live, h);
    }

    // h's rows `rows` += the cache's same rows: one add_rows per run of consecutive rows (one run per sequence at
    // most), the run's indices being the cache rows it reads.
    static void add_cached(Forward& fwd, int l, const Tensor& cache, const RowSet& rows, Tensor& h) {
        const std::vector<int32_t>& r  = rows.rows;
        const TensorView            hv = h.view();
        DYLLM_ASSERT(hv.contiguous(), "dLLM-Cache: the hidden states must be one contiguous matrix");
        for (size_t i = 0; i < r.size();) {
            size_t j = i + 1;
            while (j < r.size() && r[j] == r[j - 1] + 1) ++j;
            const TensorView run =
                TensorView::matrix(hv.row<char>(r[i]), hv.dtype, hv.device, int64_t(j - i), hv.cols());
            fwd.residual_add_rows(l, cache, std::span<const int32_t>(r.data() + i, j - i), run);
            i = j;
        }
    }
};

}  // namespace

std::unique_ptr<DecodingMethod> make_dllm_cache_method(const ModelConfig& cfg, const DiffusionParams& p) {
    return std::make_unique<DllmCacheMethod>(cfg, p);
}

}  // namespace dyllm
