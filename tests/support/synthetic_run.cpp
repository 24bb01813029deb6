// Deterministic synthetic run: a splitmix64 stream drives cosines, unmask order and tokens.
#include "tests/support/synthetic_run.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace dyllm {
namespace {

// splitmix64 (Steele, Lea, Flood 2014): tiny, seedable, good enough for test data.
struct SplitMix64 {
    uint64_t s;
    uint64_t next() {
        uint64_t z = (s += 0x9e3779b97f4a7c15ull);
        z          = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z          = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    double uniform() { return double(next() >> 11) * (1.0 / 9007199254740992.0); }  // [0, 1), 53 bits
};

}  // namespace

void emit_synthetic_run(EventSink& sink, const SyntheticRunSpec& sp) {
    if (sp.n_layer < 1 || sp.n_seq < 1 || sp.prompt_len < 0 || sp.gen_length < 1 || sp.steps < 1 ||
        sp.gen_length % sp.steps != 0)
        throw std::invalid_argument(
            "emit_synthetic_run: need n_layer, n_seq, gen_length, steps >= 1 and steps "
            "dividing gen_length (got gen_length " +
            std::to_string(sp.gen_length) + ", steps " + std::to_string(sp.steps) + ")");
    SplitMix64        rng{sp.seed};
    int64_t           now     = sp.t0_ns;
    const int32_t     n_u     = sp.gen_length / sp.steps;
    const int32_t     total   = sp.prompt_len + sp.gen_length;
    constexpr int32_t kMaskId = 0;  // synthetic mask token id

    sink.on_run_begin(RunBegin{
        .label          = "synthetic run",
        .method         = "dyllm",
        .model          = "synthetic",
        .family         = "llada",
        .backend        = "synthetic",
        .n_layer        = sp.n_layer,
        .n_seq          = sp.n_seq,
        .gen_length     = sp.gen_length,
        .steps          = sp.steps,
        .prompt_lengths = std::vector<int32_t>(size_t(sp.n_seq), sp.prompt_len),
        .env            = {{"tau", std::to_string(sp.tau)}, {"seed", std::to_string(sp.seed)}, {"device", "none"}},
    });

    std::vector<std::vector<int32_t>> tokens(size_t(sp.n_seq), std::vector<int32_t>(size_t(total), kMaskId));
    std::vector<std::vector<int32_t>> unmask_step(size_t(sp.n_seq), std::vector<int32_t>(size_t(sp.gen_length), 0));
    std::vector<std::vector<float>>   scores(size_t(sp.n_seq), std::vector<float>(size_t(sp.gen_length), 0.f));
    for (auto& t : tokens)
        for (int32_t i = 0; i < sp.prompt_len; ++i) t[size_t(i)] = 100 + i;

    const bool ops = sp.emit_ops && sink.wants_op_timings();
    auto       op  = [&](int32_t step, int32_t layer, OpClass c, int32_t rows) {
        if (!ops) return;
        sink.on_op_begin(step, layer, c);
        const OpTiming t{
                   .step       = step,
                   .layer      = layer,
                   .op         = c,
                   .t_begin_ns = now,
                   .dur_ns     = 1000 + int64_t(rng.next() % 9000),  // 1-10 us
                   .flops      = 2.0 * rows * 64 * 64,
                   .bytes      = 4.0 * rows * 64,
                   .rows       = rows,
        };
        now += t.dur_ns + 100;
        sink.on_op(t);
    };

    int32_t masked_left = sp.gen_length * sp.n_seq;
    for (int32_t step = 1; step <= sp.steps; ++step) {
        const bool      full = step <= 2;  // like DyLLM's T_full dense steps
        const StepBegin sb{
            .step         = step,
            .kind         = full ? StepKind::Full : StepKind::SparseResponse,
            .tau          = sp.tau,
            .n_query_rows = full ? total * sp.n_seq : sp.gen_length * sp.n_seq,
            .t_ns         = now,
        };
        sink.on_step_begin(sb);
        const int64_t step_t0 = now;
        op(step, -1, OpClass::Embed, sb.n_query_rows);

        int32_t salient_total = 0;
        for (int32_t l = 0; l < sp.n_layer; ++l) {
            op(step, l, OpClass::Norm, sb.n_query_rows);
            op(step, l, OpClass::Qkv, sb.n_query_rows);
            op(step, l, full ? OpClass::AttnExact : OpClass::AttnApprox, sb.n_query_rows);
            for (int32_t s = 0; s < sp.n_seq; ++s) {
                std::vector<int32_t> rows, salient;
                std::vector<float>   cos;
                const int32_t        first = full ? 0 : sp.prompt_len;
                for (int32_t p = first; p < total; ++p) {
                    rows.push_back(p);
                    // Cosines cluster just below 1 (log-uniform 1 - cos in [1e-6, 1e-1]) as in the paper's Fig. 2.
                    const float c = float(1.0 - std::pow(10.0, -6.0 + 5.0 * rng.uniform()));
                    cos.push_back(c);
                    if (full || c < sp.tau) salient.push_back(p);
                }
                CosineHistogram hist{};
                for (float c : cos) ++hist[size_t(cosine_bin(c))];
                const int32_t n_salient = int32_t(salient.size());
                salient_total += n_salient;
                sink.on_layer_saliency(LayerSaliency{
                    .step              = step,
                    .layer             = l,
                    .seq               = s,
                    .n_rows            = int32_t(rows.size()),
                    .n_salient         = n_salient,
                    .tau               = sp.tau,
                    .hist              = hist,
                    .row_positions     = rows,
                    .cosines           = sink.wants_cosines() ? std::span<const float>(cos) : std::span<const float>(),
                    .salient_positions = salient,
                    .ffn_rows          = n_salient,
                    .kv_rows           = n_salient,
                    .attn_exact_rows   = n_salient,
                    .attn_approx_rows  = int32_t(rows.size()) - n_salient,
                    .drift             = {},  // not measured
                });
            }
            op(step, l, OpClass::OProj, sb.n_query_rows);
            op(step, l, OpClass::Ffn, sb.n_query_rows);
        }
        op(step, -1, OpClass::LmHead, sb.n_query_rows);
        op(step, -1, OpClass::Sampling, sb.n_query_rows);

        int32_t committed = 0;
        for (int32_t s = 0; s < sp.n_seq; ++s) {
            std::vector<int32_t> masked;
            for (int32_t i = 0; i < sp.gen_length; ++i)
                if (unmask_step[size_t(s)][size_t(i)] == 0) masked.push_back(i);
            std::vector<int32_t> pos, tok;
            std::vector<float>   sc;
            for (int32_t k = 0; k < n_u && !masked.empty(); ++k) {
                const size_t  j = size_t(rng.next() % masked.size());
                const int32_t p = masked[j];
                masked.erase(masked.begin() + std::ptrdiff_t(j));
                pos.push_back(p);
                tok.push_back(1000 + int32_t(rng.next() % 500));
                sc.push_back(float(0.5 + 0.5 * rng.uniform()));
                tokens[size_t(s)][size_t(sp.prompt_len + p)] = tok.back();
                unmask_step[size_t(s)][size_t(p)]            = step;
                scores[size_t(s)][size_t(p)]                 = sc.back();
            }
            committed += int32_t(pos.size());
            sink.on_unmask(Unmask{.step = step, .seq = s, .positions = pos, .tokens = tok, .scores = sc});
            sink.on_canvas(CanvasSnapshot{
                .step        = step,
                .seq         = s,
                .prompt_len  = sp.prompt_len,
                .tokens      = tokens[size_t(s)],
                .unmask_step = unmask_step[size_t(s)],
                .scores      = scores[size_t(s)],
                .finished    = step == sp.steps,
            });
        }
        masked_left -= committed;
        now += 5000;  // sampling/bookkeeping gap
        const int32_t dense_rows = total * sp.n_seq * sp.n_layer;
        sink.on_step_end(StepEnd{
            .step             = step,
            .wall_ns          = now - step_t0,
            .tokens_committed = committed,
            .masked_left      = masked_left,
            .flops            = 1e6 * salient_total,
            .dense_flops      = 1e6 * dense_rows,
            .ffn_rows         = salient_total,
            .kv_rows          = salient_total,
            .attn_exact_rows  = salient_total,
            .query_rows       = sb.n_query_rows,
            .dense_rows       = dense_rows,
            .t_ns             = now,
        });
    }
    std::vector<std::string> texts;
    for (int32_t q = 0; q < sp.n_seq; ++q) texts.push_back("text of sequence " + std::to_string(q));
    sink.on_run_end(RunEnd{
        .steps       = sp.steps,
        .wall_ns     = now - sp.t0_ns,
        .tokens      = sp.gen_length * sp.n_seq,
        .cancelled   = false,
        .cache_bytes = 4096.0 * sp.n_layer,
        .texts       = std::move(texts),
    });
}

}  // namespace dyllm
