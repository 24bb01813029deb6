// Attention task planning, the block softmax (the query block transposed once, scores keys x queries from
// register-blocked broadcast-FMA tiles, then max, exp and sum as vertical vector ops) and the register-blocked P x V.
#include "kernels/cpu/attention_tiles.h"

#include <algorithm>
#include <cmath>

#include "kernels/cpu/simd.h"

// 16-lane values only pass between always-inlined helpers here (see simd.h).
#pragma GCC diagnostic ignored "-Wpsabi"

namespace dyllm::cpu::detail {

void plan_attention(AttnPlan& plan, const int32_t* q_seq, int64_t nq, const int32_t* cu_k, int n_seq, int n_head,
                    int row_block) {
    plan.start.assign(size_t(n_seq) + 1, 0);
    std::vector<int64_t>& start = plan.start;
    for (int64_t i = 0; i < nq; ++i) ++start[size_t(q_seq[i]) + 1];
    for (int b = 0; b < n_seq; ++b) start[size_t(b) + 1] += start[size_t(b)];
    plan.order.resize(size_t(nq));
    plan.fill.assign(start.begin(), start.end() - 1);
    for (int64_t i = 0; i < nq; ++i) plan.order[size_t(plan.fill[size_t(q_seq[i])]++)] = int32_t(i);
    plan.max_keys = 0;
    plan.tasks.clear();
    for (int b = 0; b < n_seq; ++b) {
        const int64_t n_rows = start[size_t(b) + 1] - start[size_t(b)];
        if (n_rows == 0) continue;
        plan.max_keys = std::max<int64_t>(plan.max_keys, cu_k[b + 1] - cu_k[b]);
        for (int h = 0; h < n_head; ++h)
            for (int64_t r = 0; r < n_rows; r += row_block)
                plan.tasks.push_back({b, h, start[size_t(b)] + r, int32_t(std::min<int64_t>(row_block, n_rows - r))});
    }
}

AttnCall prepare_attention(const int32_t* q_seq, int64_t nq, const int32_t* cu_k, int n_seq, AttnDims dims,
                           int n_threads, int row_block) {
    thread_local AttnPlan                 plan;
    thread_local std::vector<AttnScratch> scratch;
    plan_attention(plan, q_seq, nq, cu_k, n_seq, dims.n_head, row_block);
    if (scratch.size() < size_t(n_threads)) scratch.resize(size_t(n_threads));
    for (auto& sc : scratch) sc.size_for(row_block, plan.max_keys, dims.head_dim);
    return {&plan, scratch.data()};
}

int64_t plan_work(const AttnPlan& plan, const int32_t* cu_k, int head_dim) {
    int64_t w = 0;
    for (const AttnTask& t : plan.tasks) w += 2 * int64_t(t.n) * (cu_k[t.seq + 1] - cu_k[t.seq]) * head_dim;
    return w;
}

void AttnScratch::size_for(int row_block, int64_t max_keys, int head_dim) {
    // resize() only allocates when a shape grows.
    // Every task has n <= row_block rows, and score_stride never decreases as n grows (a few-row block included).
    const int64_t ld = score_stride(row_block);
    p.resize(size_t(ld * std::max<int64_t>(max_keys, 1)));
    acc.resize(size_t(row_block * head_dim));
    acc_e.resize(size_t(row_block * head_dim));
    p_e.resize(size_t(row_block * std::max<int64_t>(max_keys, 1)));
    exact_r.resize(size_t(row_block));
    pack.resize(size_t(pv_chunk_terms(head_dim) * head_dim));
    l.resize(size_t(ld));
    m.resize(size_t(ld));
    qt.resize(size_t(std::max(softmax_scratch_floats(row_block, max_keys, head_dim),
                              softmax_scratch_floats(kAttnFewRows, max_keys, head_dim))));
}

namespace {

// Scores of KB keys against NV vectors of W transposed query rows: KB x NV accumulators stay in registers over the
// D products (each query vector loaded once per column c, each key element broadcast once). Per score the products
// are summed over c = 0..D-1 in order, then scaled, the order every attention kernel keeps (kernels/README.md
// "Attention"; at any W: lanes are independent).
template <int W, int NV, int KB>
DYLLM_ALWAYS_INLINE void score_tile(const float* qt, int64_t ldq, const float* const* kr, int D, float scale,
                                    float* out, int64_t ld_p, float* mx) {
    using VW       = typename simd::Lanes<W>::F;
    VW acc[KB][NV] = {};
    for (int c = 0; c < D; ++c) {
        VW qv[NV];
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) qv[v] = simd::load<W>(qt + c * ldq + W * v);
#pragma GCC unroll 8
        for (int b = 0; b < KB; ++b) {
            const float x = kr[b][c];
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v) acc[b][v] += x * qv[v];
        }
    }
    // The row maxima ride along (no second pass over the scores): the tile's own maximum per query vector in
    // registers (the query vectors' registers are free by now), then one update of mx in memory per vector. Updating
    // mx once per key chained KB store-to-load round trips per vector, a real cost at head dim 32, where a tile's
    // products are short. The same maximum in the same order.
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
        VW m = simd::load<W>(mx + W * v);
#pragma GCC unroll 8
        for (int b = 0; b < KB; ++b) {
            const VW s = acc[b][v] * scale;
            simd::store<W>(out + b * ld_p + W * v, s);
            m = s > m ? s : m;
        }
        simd::store<W>(mx + W * v, m);
    }
}

// Keys ahead of the one being scored whose K row is prefetched (KeyPrefetch).
constexpr int64_t kKeyPrefetchAhead = 16;

// Software prefetch of the rows a pass over the keys reads next. A head's K and V rows are a few cache lines each,
// one row stride (the whole K/V row) apart, and in a cached step they were last written a step ago: they come from
// L3, and the hardware prefetchers do not follow six interleaved strided streams (bench_kernels_cpu --queries 32
// --cold: 0.16 ms cold against 0.10 ms hot). The first pass of a head's first row block asks for K kKeyPrefetchAhead
// keys ahead and for the V rows of the keys it scores (P x V reads them after the exps); on warm rows (a dense step's
// later blocks) the prefetches were only cost, 3-6% of the attention. A prefetch changes no value.
struct KeyPrefetch {
    const float* k    = nullptr;  // K row of key 0 (head offset applied); nullptr: prefetch nothing
    const float* v    = nullptr;  // V row of key 0, or nullptr
    int64_t      k_ld = 0, v_ld = 0, nk = 0;
    int          d = 0;  // floats per row of one head
    // Every line of row[0, d): one prefetch per 16 floats and one for the last (a row may start mid-line).
    DYLLM_ALWAYS_INLINE void row(const float* r) const {
        for (int c = 0; c < d; c += 16) __builtin_prefetch(r + c);
        __builtin_prefetch(r + d - 1);
    }
    DYLLM_ALWAYS_INLINE void keys(int64_t j, int n) const {
        if (!k) return;
        for (int b = 0; b < n; ++b) {
            if (j + b + kKeyPrefetchAhead < nk) row(k + (j + b + kKeyPrefetchAhead) * k_ld);
            if (v) row(v + (j + b) * v_ld);
        }
    }
};

// Scores of keys [0, nk) (rows kr0 + j * k_ld) against NV query vectors: KB keys at a time, then one by one; mx[v]
// takes the maximum of vector v's scores (a max is exact in any order).
template <int W, int NV, int KB>
DYLLM_ALWAYS_INLINE void score_keys(const float* qt, int64_t ldq, const float* kr0, int64_t k_ld, int64_t nk, int D,
                                    float scale, float* out, int64_t ld_p, float* mx, const KeyPrefetch& pf) {
    int64_t j = 0;
    for (; j + KB <= nk; j += KB) {
        pf.keys(j, KB);
        const float* kr[KB];
        for (int b = 0; b < KB; ++b) kr[b] = kr0 + (j + b) * k_ld;
        score_tile<W, NV, KB>(qt, ldq, kr, D, scale, out + j * ld_p, ld_p, mx);
    }
    pf.keys(j, int(nk - j));
    for (; j < nk; ++j) {
        const float* kr[1] = {kr0 + j * k_ld};
        score_tile<W, NV, 1>(qt, ldq, kr, D, scale, out + j * ld_p, ld_p, mx);
    }
}

// Per vector of E query rows of a keys x queries score block (row maxima in l): exp and sum, the sums into l. The sum
// keeps the kernels' order exactly: 16 partial sums (key j into partial j % 16) over the whole 16-key groups, added
// in order, then the remaining keys one by one. Every key's exp is simd::exp_nonpos, the remaining ones' too: libm's
// expf one (row, key) at a time would cost, at 89 keys (a short prompt and 64 new tokens), as much for those 9 keys
// as for the other 80. Lanes are independent: the same bits at any E.
template <int E>
DYLLM_ALWAYS_INLINE void exp_sums(float* p, int64_t ld_p, int n, int64_t nk, int64_t ldq, float* l, float* m_out) {
    using VE           = typename simd::Lanes<E>::F;
    const int64_t nk16 = nk / 16 * 16;
    for (int64_t r0 = 0; r0 < ldq; r0 += E) {
        const VE mv       = simd::load<E>(l + r0);
        VE       part[16] = {};
        for (int64_t jb = 0; jb < nk16; jb += 16) {
#pragma GCC unroll 16
            for (int t = 0; t < 16; ++t) {
                float*   pj = p + (jb + t) * ld_p + r0;
                const VE e  = simd::exp_nonpos_n<E>(simd::load<E>(pj) - mv);
                simd::store<E>(pj, e);
                part[t] += e;
            }
        }
        VE sum = {};
        for (int t = 0; t < 16; ++t) sum += part[t];
        for (int64_t j = nk16; j < nk; ++j) {
            float*   pj = p + j * ld_p + r0;
            const VE e  = simd::exp_nonpos_n<E>(simd::load<E>(pj) - mv);
            simd::store<E>(pj, e);
            sum += e;
        }
        simd::store<E>(l + r0, sum);
        if (m_out) simd::store<E>(m_out + r0, mv);
    }
}

// softmax_block with query vectors of W lanes (ldq = score_ld(n), a multiple of W).
template <int W>
DYLLM_ALWAYS_INLINE void softmax_lanes(CMatF q, const int32_t* rows, int n, int h, CMatF k, int64_t k0, int64_t k1,
                                       AttnDims dims, float* p, int64_t ld_p, float* l, float* qt, float* m_out,
                                       bool wide, const KeyPrefetch& pf) {
    const int     D      = dims.head_dim;
    const int64_t kv_off = int64_t(h / (dims.n_head / dims.n_kv_head)) * D;
    const float   scale  = 1.0f / std::sqrt(float(D));
    const int64_t nk     = k1 - k0;
    const int64_t ldq    = score_ld(n);
    // Transpose the block's queries once (qt[c * ldq + r], zero rows up to ldq): the scores then come out keys x
    // queries, and the max, exp and sum below run down the key axis with whole vectors and no horizontal reduction.
    // TL x TL blocks through registers (the scalar form's strided stores cost about 7% of the kernel's time); 8 x 8
    // without AVX-512, where 16 rows of 16 lanes are 32 ymm.
    const auto query = [&](int r) { return q.row(rows[r]) + int64_t(h) * D; };
    if (wide && ldq % 16 == 0 && D % 16 == 0)
        simd::transpose_rows<16>(query, n, D, ldq, qt);
    else if (ldq % 8 == 0 && D % 8 == 0)
        simd::transpose_rows<8>(query, n, D, ldq, qt);
    else {
        for (int r = 0; r < n; ++r) {
            const float* qr = q.row(rows[r]) + int64_t(h) * D;
            for (int c = 0; c < D; ++c) qt[c * ldq + r] = qr[c];
        }
        for (int c = 0; c < D; ++c)
            for (int64_t r = n; r < ldq; ++r) qt[c * ldq + r] = 0.0f;
    }
    const float* kr0 = k.row(k0) + kv_off;
    // The row maxima come out of the score tiles and wait in l (ldq floats) until the sums replace them.
    for (int64_t r = 0; r < ldq; ++r) l[r] = -INFINITY;
    if constexpr (W == 16) {
        for (int64_t r0 = 0; r0 < ldq; r0 += 64) {  // 64 query rows (4 vectors) per pass over the keys
            const float*      qc = qt + r0;
            float*            pc = p + r0;
            float*            mc = l + r0;
            const KeyPrefetch none;  // the passes after the first find the keys in L2
            if (!wide) {             // 8-lane query vectors, 6 keys x 2 vectors (12 ymm) per tile: see softmax_block
                for (int64_t v0 = 0; v0 < std::min<int64_t>(64, ldq - r0); v0 += 16)
                    score_keys<8, 2, 6>(qc + v0, ldq, kr0, k.ld, nk, D, scale, pc + v0, ld_p, mc + v0,
                                        r0 + v0 == 0 ? pf : none);
                continue;
            }
            const KeyPrefetch& pr = r0 == 0 ? pf : none;
            switch (std::min<int64_t>(4, (ldq - r0) / 16)) {
                case 1:
                    score_keys<16, 1, 8>(qc, ldq, kr0, k.ld, nk, D, scale, pc, ld_p, mc, pr);
                    break;
                case 2:
                    score_keys<16, 2, 8>(qc, ldq, kr0, k.ld, nk, D, scale, pc, ld_p, mc, pr);
                    break;
                case 3:
                    score_keys<16, 3, 4>(qc, ldq, kr0, k.ld, nk, D, scale, pc, ld_p, mc, pr);
                    break;
                default:
                    score_keys<16, 4, 4>(qc, ldq, kr0, k.ld, nk, D, scale, pc, ld_p, mc, pr);
                    break;
            }
        }
    } else {
        score_keys<W, 1, 8>(qt, ldq, kr0, k.ld, nk, D, scale, p, ld_p, l, pf);  // ldq == W: one vector of rows
    }
    // 16-lane vectors of rows on AVX2 take their exps 8 lanes at a time: 16 partial sums of 16 lanes are 32 ymm.
    if constexpr (W == 16)
        if (!wide) return exp_sums<8>(p, ld_p, n, nk, ldq, l, m_out);
    exp_sums<W>(p, ld_p, n, nk, ldq, l, m_out);
}

// softmax_block for n <= kAttnFewRows rows, head_dim a multiple of 16: the keys are transposed once (kt[c * nkp + j],
// zero keys up to nkp), so each vector holds L keys (16 on AVX-512, 8 elsewhere) of one query row and every score FMA
// and exp uses all lanes.
// Each score is the same chain over c = 0..D-1 from zero, then scaled; the sums keep the kernels' order (lane t
// of part is its partial sum t: keys t, t + 16, ... in order; then lanes 0..15 in order; then the remaining keys in
// order, their exps one vector), so the results are bit for bit those of the query-lane kernel.
template <int L, int NR, int G>
DYLLM_ALWAYS_INLINE void softmax_keys_lanes(CMatF q, const int32_t* rows, int h, CMatF k, int64_t k0, int64_t k1,
                                            AttnDims dims, float* p, int64_t ld_p, float* l, float* scratch,
                                            float* m_out, const KeyPrefetch& pf) {
    using V              = typename simd::Lanes<L>::F;
    const int     D      = dims.head_dim;
    const int64_t kv_off = int64_t(h / (dims.n_head / dims.n_kv_head)) * D;
    const float   scale  = 1.0f / std::sqrt(float(D));
    const int64_t nk = k1 - k0, nk16 = nk / 16 * 16, nkp = (nk + 15) / 16 * 16;
    float*        kt = scratch;            // [D][nkp]
    float*        sr = scratch + D * nkp;  // [NR][nkp] scores, then their exps
    for (int64_t jb = 0; jb < nkp; jb += L) {
        pf.keys(jb, int(std::min<int64_t>(L, std::max<int64_t>(0, nk - jb))));
        const int    nv = int(std::min<int64_t>(L, nk - jb));          // real keys in this group (L but at the end)
        const float* kr = nv > 0 ? k.row(k0 + jb) + kv_off : nullptr;  // none past the end (8-key groups)
        for (int c0 = 0; c0 < D; c0 += L) {
            V x[L];
            if (nv == L)  // a whole group: no test per key
                for (int i = 0; i < L; ++i) x[i] = simd::load<L>(kr + i * k.ld + c0);
            else
                for (int i = 0; i < L; ++i) x[i] = i < nv ? simd::load<L>(kr + i * k.ld + c0) : V{};
            simd::transpose<L>(x);
            for (int i = 0; i < L; ++i) simd::store<L>(kt + (c0 + i) * nkp + jb, x[i]);
        }
    }
    const float* qr[NR];
    for (int r = 0; r < NR; ++r) qr[r] = q.row(rows[r]) + int64_t(h) * D;
    // Scores, G key vectors per pass so the FMA chains overlap (softmax_block sizes the tile).
    int64_t jb = 0;
    for (; jb + L * G <= nkp; jb += L * G) {
        V acc[NR][G] = {};
        for (int c = 0; c < D; ++c) {
            V kv[G];
#pragma GCC unroll 4
            for (int g = 0; g < G; ++g) kv[g] = simd::load<L>(kt + c * nkp + jb + L * g);
#pragma GCC unroll 4
            for (int r = 0; r < NR; ++r) {
                const float x = qr[r][c];
#pragma GCC unroll 4
                for (int g = 0; g < G; ++g) acc[r][g] += x * kv[g];
            }
        }
        for (int r = 0; r < NR; ++r)
            for (int g = 0; g < G; ++g) simd::store<L>(sr + r * nkp + jb + L * g, acc[r][g] * scale);
    }
    for (; jb < nkp; jb += L) {
        V acc[NR] = {};
        for (int c = 0; c < D; ++c) {
            const V kv = simd::load<L>(kt + c * nkp + jb);
#pragma GCC unroll 4
            for (int r = 0; r < NR; ++r) acc[r] += qr[r][c] * kv;
        }
        for (int r = 0; r < NR; ++r) simd::store<L>(sr + r * nkp + jb, acc[r] * scale);
    }
    for (int r = 0; r < NR; ++r) {
        float* s = sr + r * nkp;
        // The row maximum a vector of keys at a time, then across the lanes and over the keys past the last whole
        // vector (a max is exact in any order: the same value). The scalar chain over every key was 13% of this
        // kernel's time at 336 keys (bench_kernels_cpu --queries 2), as long as the scores.
        V       mx = V{} - INFINITY;
        int64_t j  = 0;
        for (; j + L <= nk; j += L) {
            const V x = simd::load<L>(s + j);
            mx        = x > mx ? x : mx;
        }
        float m = -INFINITY;
        for (int t = 0; t < L; ++t) m = mx[t] > m ? mx[t] : m;
        for (; j < nk; ++j) m = s[j] > m ? s[j] : m;
        const V mv           = V{} + m;
        V       part[16 / L] = {};  // lane t of part[h] sums keys 16 i + L h + t
        for (int64_t j = 0; j < nk16; j += 16)
            for (int hf = 0; hf < 16 / L; ++hf) {
                const V e = simd::exp_nonpos_n<L>(simd::load<L>(s + j + L * hf) - mv);
                simd::store<L>(s + j + L * hf, e);
                part[hf] += e;
            }
        float sum = 0.0f;
        for (int hf = 0; hf < 16 / L; ++hf)
            for (int t = 0; t < L; ++t) sum += part[hf][t];
        if (nk16 < nk) {  // the last, partial group: padding keys (score 0) are held at exp(min(0 - m, 0)), unused
            for (int hf = 0; hf < 16 / L; ++hf) {
                const V x = simd::load<L>(s + nk16 + L * hf) - mv;
                simd::store<L>(s + nk16 + L * hf, simd::exp_nonpos_n<L>(x < V{} ? x : V{}));
            }
            for (int64_t j = nk16; j < nk; ++j) sum += s[j];
        }
        l[r] = sum;
        if (m_out) m_out[r] = m;
        for (int64_t j = 0; j < nk; ++j) p[j * ld_p + r] = s[j];  // keys x queries, as pv_block reads it
    }
}

// softmax_keys_lanes for n = 1..4 rows: key vectors of L lanes, 4 per pass (G4 with 4 rows).
template <int L, int G4>
DYLLM_ALWAYS_INLINE void softmax_few_rows(int n, CMatF q, const int32_t* rows, int h, CMatF k, int64_t k0, int64_t k1,
                                          AttnDims dims, float* p, int64_t ld_p, float* l, float* qt, float* m_out,
                                          const KeyPrefetch& pf) {
    switch (n) {
        case 1:
            return softmax_keys_lanes<L, 1, 4>(q, rows, h, k, k0, k1, dims, p, ld_p, l, qt, m_out, pf);
        case 2:
            return softmax_keys_lanes<L, 2, 4>(q, rows, h, k, k0, k1, dims, p, ld_p, l, qt, m_out, pf);
        case 3:
            return softmax_keys_lanes<L, 3, 4>(q, rows, h, k, k0, k1, dims, p, ld_p, l, qt, m_out, pf);
        default:
            return softmax_keys_lanes<L, 4, G4>(q, rows, h, k, k0, k1, dims, p, ld_p, l, qt, m_out, pf);
    }
}

}  // namespace

DYLLM_CPU_CLONES void softmax_block(CMatF q, const int32_t* rows, int n, int h, CMatF k, int64_t k0, int64_t k1,
                                    AttnDims dims, float* p, int64_t ld_p, float* l, float* qt, float* m_out,
                                    bool prefetch, CMatF v_next) {
    const int64_t kv_off = int64_t(h / (dims.n_head / dims.n_kv_head)) * dims.head_dim;
    KeyPrefetch   pf;
    pf.k    = prefetch ? k.row(k0) + kv_off : nullptr;
    pf.v    = v_next.data ? v_next.row(k0) + kv_off : nullptr;
    pf.k_ld = k.ld;
    pf.v_ld = v_next.ld;
    pf.nk   = k1 - k0;
    pf.d    = dims.head_dim;
    // A block of a few rows (a DyLLM step's salient rows) must not pay for 16 query lanes with 1-3 real rows in every
    // score FMA and every exp: up to 4 rows put 16 keys in a vector instead, up to 8 run on 8-lane query vectors (and
    // up to 4 on 4-lane ones when head_dim is not a multiple of 16, which the key transpose needs).
    // The tiles are sized for AVX-512's 32 zmm registers; elsewhere a 16-lane value is two ymm (or four xmm), the big
    // tiles spill and GCC builds each scalar x 16-lane product through the stack (AVX2 EPYC, tiny-llada 4-shot
    // prompts: 87% of a decode in these kernels), so smaller tiles of 8-lane vectors run there. Each score and sum
    // keeps its order (lanes are independent): the results are the same bits either way.
    const bool wide = simd::wide_registers();
    if (n <= kAttnFewRows && dims.head_dim % 16 == 0) {
        // 16-key vectors on AVX-512; 8-key vectors elsewhere, at most 12 accumulators (4 rows x 3 key vectors).
        if (wide) return softmax_few_rows<16, 4>(n, q, rows, h, k, k0, k1, dims, p, ld_p, l, qt, m_out, pf);
        return softmax_few_rows<8, 3>(n, q, rows, h, k, k0, k1, dims, p, ld_p, l, qt, m_out, pf);
    }
    if (n <= 4)
        softmax_lanes<4>(q, rows, n, h, k, k0, k1, dims, p, ld_p, l, qt, m_out, wide, pf);
    else if (n <= 8)
        softmax_lanes<8>(q, rows, n, h, k, k0, k1, dims, p, ld_p, l, qt, m_out, wide, pf);
    else
        softmax_lanes<16>(q, rows, n, h, k, k0, k1, dims, p, ld_p, l, qt, m_out, wide, pf);
}

namespace {

// One term of pv_tile: a[r][c] += pj[r] * (vr's vector c).
template <int L, int NR, int NC>
DYLLM_ALWAYS_INLINE void pv_term(typename simd::Lanes<L>::F (&a)[NR][NC], const float* pj, const float* vr) {
    using V = typename simd::Lanes<L>::F;
    V v[NC];
#pragma GCC unroll 4
    for (int c = 0; c < NC; ++c) v[c] = simd::load<L>(vr + L * c);
#pragma GCC unroll 8
    for (int r = 0; r < NR; ++r) {
        const float w = pj[r];
#pragma GCC unroll 4
        for (int c = 0; c < NC; ++c) a[r][c] += w * v[c];
    }
}

// NR query rows x NC vectors of 16 output columns, accumulated over terms [t0, t1) in registers: starting from zero
// (first) or from what acc holds (a later chunk of terms: the same sums, in the same order, as one pass).
// Without cols (exact attention) the term's score row and src row are pointers stepped by their strides: a term is
// then its loads, broadcasts and FMAs and two adds (the indexed form spent about 10 more instructions a term on
// address arithmetic, a test of cols and a stride reloaded from the stack).
// src_t0: term t0's src row (term t's at src_t0 + (t - t0) * src_ld).
template <int L, int NR, int NC>
DYLLM_ALWAYS_INLINE void pv_tile(const float* p, int64_t ld_p, const int32_t* cols, int64_t col_base, int64_t t0,
                                 int64_t t1, bool first, const float* src_t0, int64_t src_ld, float* acc, int D) {
    using V = typename simd::Lanes<L>::F;
    V a[NR][NC];
#pragma GCC unroll 8
    for (int r = 0; r < NR; ++r)
#pragma GCC unroll 4
        for (int c = 0; c < NC; ++c) a[r][c] = first ? V{} : simd::load<L>(acc + r * D + L * c);
    const float* vr = src_t0;
    if (cols) {
        for (int64_t t = t0; t < t1; ++t, vr += src_ld) pv_term<L, NR, NC>(a, p + (cols[t] - col_base) * ld_p, vr);
    } else {
        const float* pj = p + t0 * ld_p;
        for (int64_t t = t0; t < t1; ++t, pj += ld_p, vr += src_ld) pv_term<L, NR, NC>(a, pj, vr);
    }
#pragma GCC unroll 8
    for (int r = 0; r < NR; ++r)
#pragma GCC unroll 4
        for (int c = 0; c < NC; ++c) simd::store<L>(acc + r * D + L * c, a[r][c]);
}

// Rows of the block against L * NC output columns: RT-row tiles (the register file's fill: 8 x 2 zmm on AVX-512,
// 6 x 2 ymm on AVX2, see softmax_block), then 4 and 1 row.
template <int L, int NC, int RT>
DYLLM_ALWAYS_INLINE void pv_rows(const float* p, int64_t ld_p, int n, const int32_t* cols, int64_t col_base, int64_t t0,
                                 int64_t t1, const float* src_t0, int64_t src_ld, float* acc, int D) {
    const bool first = t0 == 0;
    int        r     = 0;
    for (; r + RT <= n; r += RT)
        pv_tile<L, RT, NC>(p + r, ld_p, cols, col_base, t0, t1, first, src_t0, src_ld, acc + r * D, D);
    for (; r + 4 <= n; r += 4)
        pv_tile<L, 4, NC>(p + r, ld_p, cols, col_base, t0, t1, first, src_t0, src_ld, acc + r * D, D);
    for (; r < n; ++r) pv_tile<L, 1, NC>(p + r, ld_p, cols, col_base, t0, t1, first, src_t0, src_ld, acc + r * D, D);
}

}  // namespace

DYLLM_CPU_CLONES void pv_block(const float* p, int64_t ld_p, int n, int64_t n_terms, const int32_t* cols,
                               int64_t col_base, CMatF src, int64_t row0, int64_t kv_off, int D, float* acc,
                               float* pack) {
    // 8 query rows x 32 columns of accumulators per pass (16 zmm; 6 rows x 16 columns, 12 ymm, on AVX2), then
    // 16-column and leftover passes. The terms go in chunks whose src rows (about 16 KiB) stay in L1 while every row
    // group reads them; each output is still summed over the terms in order, whatever the blocking.
    const bool wide = simd::wide_registers();  // register file: see pv_rows, softmax_block
    // No term: src may be empty (null), and null + offset is undefined even when never read.
    const float*  src0  = n_terms > 0 ? src.row(row0) + kv_off : nullptr;
    const int64_t chunk = pv_chunk_terms(D);
    // A chunk that several row tiles read is copied to `pack` first, its rows D floats apart. In place, a head's
    // rows are one K/V row stride apart (a power of two: 512 bytes on tiny-llada), so a chunk's lines fall in 16 of
    // L1's 64 sets, twice what they hold, and every row tile fetched the chunk again from L2. pv_block alone, 64-row
    // blocks, AVX2 EPYC: 1.11x (tiny-llada heads) and 1.14x (hidden-256) with the stepped pointers of pv_tile, which
    // alone gave 1.03x and 1.06x.
    const bool packed = pack && n > 8 && D % 16 == 0;
    for (int64_t t0 = 0; t0 < n_terms; t0 += chunk) {
        const int64_t t1  = std::min(n_terms, t0 + chunk);
        const float*  s0  = src0 + t0 * src.ld;  // term t0's row
        int64_t       sld = src.ld;
        if (packed) {
            for (int64_t t = t0; t < t1; ++t)  // whole 8-lane vectors, no memmove call per row
                for (int c = 0; c < D; c += 8)
                    simd::store<8>(pack + (t - t0) * D + c, simd::load<8>(src0 + t * src.ld + c));
            s0  = pack;
            sld = D;
        }
        int c0 = 0;
        if (wide) {
            for (; c0 + 32 <= D; c0 += 32)
                pv_rows<16, 2, 8>(p, ld_p, n, cols, col_base, t0, t1, s0 + c0, sld, acc + c0, D);
            for (; c0 + 16 <= D; c0 += 16)
                pv_rows<16, 1, 8>(p, ld_p, n, cols, col_base, t0, t1, s0 + c0, sld, acc + c0, D);
        } else {
            for (; c0 + 16 <= D; c0 += 16)
                pv_rows<8, 2, 6>(p, ld_p, n, cols, col_base, t0, t1, s0 + c0, sld, acc + c0, D);
        }
    }
    if (n_terms == 0)  // no term: zero outputs, as the unchunked loop left them
        for (int r = 0; r < n; ++r)
            for (int c = 0; c < D / 16 * 16; ++c) acc[r * D + c] = 0.0f;
    // Leftover columns (head_dim not a multiple of 16): plain loops.
    const int c0 = D / 16 * 16;
    if (c0 < D) {
        for (int r = 0; r < n; ++r) {
            float* ar = acc + r * D;
            for (int c = c0; c < D; ++c) ar[c] = 0.0f;
            for (int64_t t = 0; t < n_terms; ++t) {
                const int64_t j  = cols ? cols[t] - col_base : t;
                const float   w  = p[j * ld_p + r];
                const float*  vr = src0 + t * src.ld;
                for (int c = c0; c < D; ++c) ar[c] += w * vr[c];
            }
        }
    }
}

}  // namespace dyllm::cpu::detail
