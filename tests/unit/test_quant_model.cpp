// A model decoding end to end from quantized weights: a random checkpoint's projection weights, embedding and LM head
// quantized in memory (cpu::quantize_row) behind a test-only Checkpoint, against the same model whose F32 weights are
// the quantized blocks' decoded values. Both run the same arithmetic up to fp32 summation order, so they agree token
// for token and their logits to rounding.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <memory>
#include <vector>

#include "engine/engine.h"
#include "engine/io/checkpoint.h"
#include "engine/quant_type.h"
#include "kernels/cpu/ref/quant.h"
#include "tests/support/tiny_models.h"

using namespace dyllm;

namespace {

// Which storage each weight gets: the projections `proj`, the LM head and FFN down projection `head` (a Q4_K_M-like
// mix when proj = Q4_K, head = Q6_K), the embedding `embd`. Norms and biases stay F32.
struct Mix {
    DType proj, head, embd;
};

// The base checkpoint's weights re-stored in memory: quantized (decoded == false) or as F32 holding the quantized
// blocks' decoded values (decoded == true).
class MemoryCheckpoint final : public Checkpoint {
public:
    MemoryCheckpoint(std::unique_ptr<Checkpoint> base, Mix mix, bool decoded) : base_(std::move(base)) {
        const ModelWeights& b = base_->weights();
        w_                    = b;
        w_.tok_embd           = store(b.tok_embd, mix.embd, decoded);
        w_.lm_head            = store(b.lm_head, mix.head, decoded);
        for (size_t l = 0; l < b.layers.size(); ++l) {
            const LayerWeights& s = b.layers[l];
            LayerWeights&       d = w_.layers[l];
            d.wq = store(s.wq, mix.proj, decoded), d.wk = store(s.wk, mix.proj, decoded);
            d.wv = store(s.wv, mix.proj, decoded), d.wo = store(s.wo, mix.proj, decoded);
            d.w_gate = store(s.w_gate, mix.proj, decoded), d.w_up = store(s.w_up, mix.proj, decoded);
            d.w_down = store(s.w_down, mix.head, decoded);
        }
        dtype_ = decoded ? DType::F32 : mix.proj;
    }
    const ModelConfig&           config() const override { return base_->config(); }
    const ModelWeights&          weights() const override { return w_; }
    DType                        weight_dtype() const override { return dtype_; }
    size_t                       file_bytes() const override { return bytes_; }
    const std::filesystem::path& dir() const override { return base_->dir(); }

private:
    TensorView store(const TensorView& v, DType dt, bool decoded) {
        REQUIRE(v.dtype == DType::F32);
        const int64_t rows = v.rows(), cols = v.cols();
        const size_t  rb = dtype_row_bytes(dt, cols);
        auto&         q  = blocks_.emplace_back(rb * size_t(rows));
        for (int64_t r = 0; r < rows; ++r)
            cpu::quantize_row(quant_of(dt), v.row<const float>(r), q.data() + size_t(r) * rb, cols);
        bytes_ += q.size();
        if (!decoded) return TensorView::matrix(q.data(), dt, Device::Cpu, rows, cols);
        auto& f = floats_.emplace_back(size_t(rows * cols));
        for (int64_t r = 0; r < rows; ++r)
            cpu::dequantize_row(quant_of(dt), q.data() + size_t(r) * rb, f.data() + r * cols, cols);
        return TensorView::matrix(f.data(), DType::F32, Device::Cpu, rows, cols);
    }

    std::unique_ptr<Checkpoint>       base_;
    ModelWeights                      w_;
    DType                             dtype_ = DType::F32;
    size_t                            bytes_ = 0;
    std::vector<std::vector<uint8_t>> blocks_;
    std::vector<std::vector<float>>   floats_;
};

struct Run {
    std::vector<int32_t>              tokens;
    std::map<int, std::vector<float>> logits;
};

Run decode(const Model& m, const std::vector<int32_t>& prompt, Method method) {
    Run     r;
    Session s(m);
    s.set_logits_observer([&](int step, const std::vector<std::pair<int, int>>&, const std::vector<float>& lg,
                              int64_t) { r.logits[step] = lg; });
    DiffusionParams p;
    p.gen_length   = 32;
    p.steps        = 16;
    p.block_length = 16;
    p.method       = method;
    s.start({prompt}, p);
    s.run();
    r.tokens = s.result().sequences.at(0).token_ids;
    return r;
}

}  // namespace

TEST_CASE("a model decodes from quantized weights as from their decoded values", "[quant][model]") {
    for (Family f : {Family::LLaDA, Family::Dream}) {
        // Rows of 256 (one K-quant super-block) and an FFN of 512: every projection's row length is whole blocks.
        ModelConfig cfg = test::tiny_config(f);
        cfg.n_embd      = 256;
        cfg.head_dim    = 64;
        cfg.n_ff        = 512;
        const auto dir  = test::make_temp_dir("quant-model");
        // N(0, 0.1) weights: peaked logits, so rounding-order differences do not flip near-ties.
        write_random_checkpoint(dir, cfg, 7, DType::F32, 1, 0.1f);
        const auto prompt = test::random_prompt(cfg, 12, 3);
        for (Mix mix : {Mix{DType::Q8_0, DType::Q8_0, DType::Q8_0}, Mix{DType::Q4_K, DType::Q6_K, DType::Q4_K},
                        Mix{DType::Q4_0, DType::Q8_0, DType::Q4_0}, Mix{DType::Q5_K, DType::Q6_K, DType::Q5_K}}) {
            INFO(family_name(f) << " " << dtype_name(mix.proj) << "/" << dtype_name(mix.head));
            auto q = Model::from_checkpoint(std::make_unique<MemoryCheckpoint>(Checkpoint::open(dir), mix, false),
                                            "quantized", BackendKind::Cpu, 2);
            auto d = Model::from_checkpoint(std::make_unique<MemoryCheckpoint>(Checkpoint::open(dir), mix, true),
                                            "decoded", BackendKind::Cpu, 2);
            CHECK(q->weights().layers[0].wq.dtype == mix.proj);
            for (Method method : {Method::Original, Method::DyLLM}) {
                const Run rq = decode(*q, prompt, method), rd = decode(*d, prompt, method);
                CHECK(rq.tokens == rd.tokens);
                REQUIRE(rq.logits.size() == rd.logits.size());
                // The same decoded weights and fp32 activations; only the summation order of the products differs
                // (panels + sgemm against the packed GEMM provider), ~k u_32 relative per product, carried through
                // 2-3 layers: 1e-3 of the logits' largest magnitude is two orders above that and far below a logit
                // gap that changes a token.
                for (const auto& [step, lg] : rq.logits) {
                    const auto& ld = rd.logits.at(step);
                    REQUIRE(lg.size() == ld.size());
                    double big = 0, diff = 0;
                    for (size_t i = 0; i < lg.size(); ++i) {
                        big  = std::max(big, std::fabs(double(ld[i])));
                        diff = std::max(diff, std::fabs(double(lg[i]) - double(ld[i])));
                    }
                    CHECK(diff <= 1e-3 * big);
                }
            }
        }
    }
}
