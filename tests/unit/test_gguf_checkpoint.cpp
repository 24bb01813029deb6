// GGUF checkpoints: an HF checkpoint exported at every file type and opened again (config and views equal to the
// HF ones, LLaDA's q/k permutation undone, quantized views with the block strides and the type mix of q4_k_m), the
// metadata and tensor checks of the loader (one LoadError line each), and the same tokens from a GGUF f32 file as
// from its HF directory.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

#include "engine/errors.h"
#include "engine/io/checkpoint.h"
#include "engine/io/checkpoint_writer.h"
#include "engine/io/gguf.h"
#include "engine/io/gguf_export.h"
#include "engine/io/gguf_model.h"
#include "kernels/common/dtype_convert.h"
#include "kernels/cpu/ref/quant.h"
#include "tests/support/cli_run.h"
#include "tests/support/tiny_models.h"

namespace fs = std::filesystem;
using namespace dyllm;

namespace {

// Row r of a view widened to fp32 (quantized rows through the reference dequantizer).
std::vector<float> row_values(const TensorView& v, int64_t r) {
    const uint8_t*     row = static_cast<const uint8_t*>(v.data) + r * v.nb[1];
    std::vector<float> out(size_t(v.ne[0]));
    for (int64_t c = 0; c < v.ne[0] && !is_quantized(v.dtype); ++c) {
        switch (v.dtype) {
            case DType::F16:
                out[size_t(c)] = f16_to_f32(reinterpret_cast<const uint16_t*>(row)[c]);
                break;
            case DType::BF16:
                out[size_t(c)] = bf16_to_f32(reinterpret_cast<const uint16_t*>(row)[c]);
                break;
            default:
                out[size_t(c)] = reinterpret_cast<const float*>(row)[c];
        }
    }
    if (is_quantized(v.dtype)) {
        const cpu::QuantType qt = v.dtype == DType::Q8_0   ? cpu::QuantType::Q8_0
                                  : v.dtype == DType::Q4_0 ? cpu::QuantType::Q4_0
                                  : v.dtype == DType::Q4_K ? cpu::QuantType::Q4_K
                                  : v.dtype == DType::Q5_K ? cpu::QuantType::Q5_K
                                                           : cpu::QuantType::Q6_K;
        cpu::dequantize_row(qt, row, out.data(), v.ne[0]);
    }
    return out;
}

std::vector<std::pair<const TensorView*, const TensorView*>> pairs(const ModelWeights& a, const ModelWeights& b) {
    std::vector<std::pair<const TensorView*, const TensorView*>> p = {
        {&a.tok_embd, &b.tok_embd}, {&a.out_norm, &b.out_norm}, {&a.lm_head, &b.lm_head}};
    for (size_t l = 0; l < a.layers.size(); ++l) {
        const LayerWeights &x = a.layers[l], &y = b.layers[l];
        for (auto [u, v] : std::vector<std::pair<const TensorView*, const TensorView*>>{{&x.attn_norm, &y.attn_norm},
                                                                                        {&x.wq, &y.wq},
                                                                                        {&x.wk, &y.wk},
                                                                                        {&x.wv, &y.wv},
                                                                                        {&x.wo, &y.wo},
                                                                                        {&x.bq, &y.bq},
                                                                                        {&x.bk, &y.bk},
                                                                                        {&x.bv, &y.bv},
                                                                                        {&x.ffn_norm, &y.ffn_norm},
                                                                                        {&x.w_gate, &y.w_gate},
                                                                                        {&x.w_up, &y.w_up},
                                                                                        {&x.w_down, &y.w_down}})
            p.emplace_back(u, v);
    }
    return p;
}

// Largest |a - b| over every element of every tensor, relative to the tensor's largest |a|.
double max_rel_error(const ModelWeights& hf, const ModelWeights& gg) {
    double worst = 0;
    for (auto [a, b] : pairs(hf, gg)) {
        REQUIRE((a->data == nullptr) == (b->data == nullptr));
        if (!a->data) continue;
        REQUIRE(a->ne[0] == b->ne[0]);
        REQUIRE(a->rows() == b->rows());
        double amax = 0, err = 0;
        for (int64_t r = 0; r < a->rows(); ++r) {
            const auto x = row_values(*a, r), y = row_values(*b, r);
            for (size_t c = 0; c < x.size(); ++c) {
                amax = std::max(amax, std::fabs(double(x[c])));
                err  = std::max(err, std::fabs(double(x[c]) - double(y[c])));
            }
        }
        worst = std::max(worst, amax > 0 ? err / amax : err);
    }
    return worst;
}

fs::path export_to(const fs::path& dir, GgufFileType t, const std::string& name) {
    const auto     ck  = Checkpoint::open(dir);
    const fs::path out = test::make_temp_dir("gguf") / name;
    export_gguf(*ck, dir / "tokenizer.json", out, t, "test");
    return out;
}

// Re-writes a GGUF file with its metadata and tensors changed by the callbacks (tensor bytes kept).
fs::path rewrite(const fs::path& src, const std::function<void(std::vector<std::pair<std::string, GgufValue>>&)>& kv_fn,
                 const std::function<void(std::vector<GgufTensorSpec>&)>& ts_fn = {}) {
    const auto                                     f = GgufFile::open(src);
    const GgufContents&                            g = f->contents();
    std::vector<std::pair<std::string, GgufValue>> kv;
    for (const auto& k : g.key_order) kv.emplace_back(k, g.metadata.at(k));
    std::vector<GgufTensorSpec> ts;
    std::vector<std::string>    from;  // the source tensor of each spec
    for (const auto& t : g.tensors) {
        GgufTensorSpec s;
        s.name = t.name, s.dtype = t.dtype, s.n_dims = t.n_dims;
        std::memcpy(s.ne, t.ne, sizeof s.ne);
        ts.push_back(s);
    }
    kv_fn(kv);
    if (ts_fn) ts_fn(ts);
    const fs::path out = src.parent_path() / ("re-" + std::to_string(std::rand()) + ".gguf");
    std::ofstream  o(out, std::ios::binary);
    write_gguf(o, kv, ts, [&](size_t i, uint8_t* dst, size_t n) {
        const GgufTensorInfo* t = g.find_tensor(ts[i].name);
        if (t) std::memcpy(dst, t->data, std::min<size_t>(n, size_t(t->bytes)));
    });
    return out;
}

std::string open_error(const fs::path& p) {
    try {
        (void)Checkpoint::open(p);
    } catch (const LoadError& e) {
        return e.what();
    }
    return "";
}

#define REQUIRE_OPEN_REFUSED(file_expr, needle)        \
    do {                                               \
        const fs::path    path_ = (file_expr);         \
        const std::string msg_  = open_error(path_);   \
        INFO("message: " << msg_);                     \
        REQUIRE(!msg_.empty());                        \
        CHECK(msg_.find('\n') == std::string::npos);   \
        CHECK(msg_.find(path_.string()) == 0);         \
        CHECK(msg_.find(needle) != std::string::npos); \
    } while (0)

void set(std::vector<std::pair<std::string, GgufValue>>& kv, const std::string& key, GgufValue v) {
    for (auto& [k, x] : kv)
        if (k == key) {
            x = std::move(v);
            return;
        }
    kv.emplace_back(key, std::move(v));
}
void erase_key(std::vector<std::pair<std::string, GgufValue>>& kv, const std::string& key) {
    for (size_t i = 0; i < kv.size(); ++i)
        if (kv[i].first == key) kv.erase(kv.begin() + long(i));
}

}  // namespace

TEST_CASE("gguf checkpoint: f32/f16/bf16 exports open with the HF config and weights", "[gguf]") {
    for (Family f : {Family::LLaDA, Family::Dream}) {
        const fs::path dir = test::make_tiny_checkpoint(f, DType::F32, 1, 7);
        const auto     hf  = Checkpoint::open(dir);
        for (auto [t, tol] :
             {std::pair{GgufFileType::F32, 0.0}, {GgufFileType::F16, 1e-3}, {GgufFileType::BF16, 8e-3}}) {
            INFO(family_name(f) << " " << gguf_file_type_name(t));
            const fs::path p  = export_to(dir, t, "m.gguf");
            const auto     gg = Checkpoint::open(p);
            const auto&    a  = hf->config();
            const auto&    b  = gg->config();
            CHECK(b.family == a.family);
            CHECK(b.n_layer == a.n_layer);
            CHECK(b.n_embd == a.n_embd);
            CHECK(b.n_head == a.n_head);
            CHECK(b.n_kv_head == a.n_kv_head);
            CHECK(b.head_dim == a.head_dim);
            CHECK(b.n_ff == a.n_ff);
            CHECK(b.n_vocab == a.n_vocab);
            CHECK(b.vocab_size == a.vocab_size);
            CHECK(b.rope_theta == a.rope_theta);
            CHECK(b.norm_eps == a.norm_eps);
            CHECK(b.max_position == a.max_position);
            CHECK(b.qkv_bias == a.qkv_bias);
            CHECK(b.tie_embeddings == a.tie_embeddings);
            CHECK(b.mask_id == a.mask_id);
            CHECK(b.eos_id == a.eos_id);
            CHECK(b.pad_id == a.pad_id);
            CHECK(gg->dir() == p);
            CHECK(gg->file_bytes() == fs::file_size(p));
            CHECK(gg->gguf() != nullptr);
            // f32 is exact (the LLaDA q/k permutation undone row for row); f16/bf16 within their rounding.
            CHECK(max_rel_error(hf->weights(), gg->weights()) <= tol);
            CHECK(gg->weight_dtype() == (t == GgufFileType::F32   ? DType::F32
                                         : t == GgufFileType::F16 ? DType::F16
                                                                  : DType::BF16));
            CHECK(gg->weights().out_norm.dtype == DType::F32);  // 1-D tensors stay F32, as llama.cpp writes them
        }
    }
}

TEST_CASE("gguf checkpoint: LLaDA's q/k are stored in llama.cpp's permuted order", "[gguf]") {
    // head_dim 4: HF rows (0, 1 | 2, 3) of a head are stored as (0, 2, 1, 3).
    CHECK(gguf_llada_qk_file_row(0, 4) == 0);
    CHECK(gguf_llada_qk_file_row(1, 4) == 2);
    CHECK(gguf_llada_qk_file_row(2, 4) == 1);
    CHECK(gguf_llada_qk_file_row(3, 4) == 3);
    CHECK(gguf_llada_qk_file_row(5, 4) == 6);
    const fs::path dir = test::make_tiny_checkpoint(Family::LLaDA, DType::F32, 1, 3);
    const auto     hf  = Checkpoint::open(dir);
    const fs::path p   = export_to(dir, GgufFileType::F32, "m.gguf");
    const auto     f   = GgufFile::open(p);
    const auto*    q   = f->contents().find_tensor("blk.0.attn_q.weight");
    const auto*    v   = f->contents().find_tensor("blk.0.attn_v.weight");
    REQUIRE(q);
    const TensorView& hq = hf->weights().layers[0].wq;
    const int64_t     hd = hf->config().head_dim;
    const size_t      rb = size_t(hq.nb[1]);
    for (int64_t r = 0; r < hq.ne[1]; ++r)
        CHECK(std::memcmp(q->data + size_t(gguf_llada_qk_file_row(r, hd)) * rb,
                          static_cast<const uint8_t*>(hq.data) + size_t(r) * rb, rb) == 0);
    // v is not permuted.
    CHECK(std::memcmp(v->data, hf->weights().layers[0].wv.data, size_t(v->bytes)) == 0);
}

TEST_CASE("gguf checkpoint: quantized exports give quantized views with llama.cpp's type mix", "[gguf]") {
    // 256 wide, so that K-quant rows are whole super-blocks; 8 layers, so use_more_bits picks some and not others.
    for (Family f : {Family::LLaDA, Family::Dream}) {
        ModelConfig    cfg = small_config(f, 8, 256, 4, f == Family::LLaDA ? 4 : 2, 512, 300);
        const fs::path dir = test::make_checkpoint(cfg, DType::BF16, 1, 11);
        const auto     hf  = Checkpoint::open(dir);
        // Quantization error bounds relative to each tensor's largest value: a Q8_0 step is amax/127 per 32 values,
        // so half a step is < 0.4% of the tensor's amax (0.6% with the fp16 scale's rounding). Q4_0's scale maps the
        // block's signed extreme to -8, so the opposite extreme clamps at +7 and is off by one step, amax/8 (12.5%).
        // Q4_K has 16 levels between each sub-block's min and max: half a step is < 1/30 of twice the amax, plus the
        // 6-bit scales' rounding; 12% covers both with room (gguf-py's dequantization of the same files measures
        // 4-7%).
        for (auto [t, tol] :
             {std::pair{GgufFileType::Q8_0, 0.006}, {GgufFileType::Q4_0, 0.13}, {GgufFileType::Q4_K_M, 0.12}}) {
            INFO(family_name(f) << " " << gguf_file_type_name(t));
            const fs::path p  = export_to(dir, t, "q.gguf");
            const auto     gg = Checkpoint::open(p);
            const auto&    w  = gg->weights();
            CHECK(max_rel_error(hf->weights(), w) <= tol);
            const TensorView& wq = w.layers[0].wq;
            CHECK(wq.ne[0] == 256);
            CHECK(wq.ne[1] == cfg.q_dim());
            CHECK(wq.nb[0] == int64_t(dtype_block_bytes(wq.dtype)));
            CHECK(wq.nb[1] == int64_t(dtype_row_bytes(wq.dtype, 256)));
            CHECK(w.out_norm.dtype == DType::F32);
            CHECK(w.layers[0].attn_norm.dtype == DType::F32);
            if (f == Family::Dream) CHECK(w.layers[0].bq.dtype == DType::F32);
            if (t == GgufFileType::Q8_0) {
                CHECK(wq.dtype == DType::Q8_0);
                CHECK(w.lm_head.dtype == DType::Q8_0);
            } else if (t == GgufFileType::Q4_0) {
                CHECK(wq.dtype == DType::Q4_0);
                CHECK(w.tok_embd.dtype == DType::Q4_0);
                CHECK(w.lm_head.dtype == DType::Q6_K);
            } else {
                CHECK(gg->weight_dtype() == DType::Q4_K);
                CHECK(w.lm_head.dtype == DType::Q6_K);
                CHECK(w.tok_embd.dtype == DType::Q4_K);
                // use_more_bits(i, 8): layers 0, 3, 6, 7 (the first and last eighth, every third between).
                for (int l = 0; l < 8; ++l) {
                    const bool more = l == 0 || l == 3 || l == 6 || l == 7;
                    INFO("layer " << l);
                    CHECK(w.layers[size_t(l)].wv.dtype == (more ? DType::Q6_K : DType::Q4_K));
                    CHECK(w.layers[size_t(l)].w_down.dtype == (more ? DType::Q6_K : DType::Q4_K));
                    CHECK(w.layers[size_t(l)].w_up.dtype == DType::Q4_K);
                }
            }
        }
    }
}

TEST_CASE("gguf checkpoint: rows that are not whole blocks fall back as llama.cpp does", "[gguf]") {
    using R = TensorRole;
    CHECK(gguf_tensor_dtype(GgufFileType::Q4_K_M, R::Wq, 1, 8, {64, 128}, false) == DType::Q4_0);
    CHECK(gguf_tensor_dtype(GgufFileType::Q4_K_M, R::LmHead, -1, 8, {300, 128}, false) == DType::Q8_0);
    CHECK(gguf_tensor_dtype(GgufFileType::Q4_K_M, R::Wq, 1, 8, {64, 40}, false) == DType::F16);
    CHECK(gguf_tensor_dtype(GgufFileType::Q4_K_M, R::TokEmbd, -1, 8, {300, 256}, true) == DType::Q6_K);
    CHECK(gguf_tensor_dtype(GgufFileType::Q8_0, R::AttnNorm, 0, 8, {256}, false) == DType::F32);
    GgufFileType t{};
    CHECK(parse_gguf_file_type("Q4_K_M", &t));
    CHECK(t == GgufFileType::Q4_K_M);
    CHECK_FALSE(parse_gguf_file_type("q5_k_m", &t));
}

TEST_CASE("gguf checkpoint: metadata and tensors are checked against each other", "[gguf]") {
    const fs::path dir = test::make_tiny_checkpoint(Family::Dream, DType::F32, 1, 5);
    const fs::path p   = export_to(dir, GgufFileType::F32, "m.gguf");
    REQUIRE(open_error(p).empty());
    using KV = std::vector<std::pair<std::string, GgufValue>>;
    REQUIRE_OPEN_REFUSED(rewrite(p, [](KV& kv) { set(kv, "general.architecture", GgufValue::of_string("llama")); }),
                         "metadata 'general.architecture': 'llama' is not supported");
    REQUIRE_OPEN_REFUSED(rewrite(p, [](KV& kv) { erase_key(kv, "general.architecture"); }),
                         "metadata 'general.architecture': missing");
    REQUIRE_OPEN_REFUSED(rewrite(p, [](KV& kv) { erase_key(kv, "dream.block_count"); }),
                         "'dream.block_count': missing");
    REQUIRE_OPEN_REFUSED(rewrite(p, [](KV& kv) { set(kv, "dream.block_count", GgufValue::of_u32(5000)); }),
                         "'dream.block_count': 5000 is outside");
    REQUIRE_OPEN_REFUSED(rewrite(p, [](KV& kv) { set(kv, "dream.embedding_length", GgufValue::of_string("64")); }),
                         "'dream.embedding_length': type STRING, expected an integer");
    REQUIRE_OPEN_REFUSED(rewrite(p, [](KV& kv) { set(kv, "dream.attention.head_count_kv", GgufValue::of_u32(3)); }),
                         "does not divide");
    REQUIRE_OPEN_REFUSED(rewrite(p, [](KV& kv) { erase_key(kv, "dream.attention.layer_norm_rms_epsilon"); }),
                         "'dream.attention.layer_norm_rms_epsilon': missing");
    REQUIRE_OPEN_REFUSED(rewrite(p, [](KV& kv) { set(kv, "dream.rope.freq_base", GgufValue::of_f32(-1)); }),
                         "must be a positive finite number");
    REQUIRE_OPEN_REFUSED(rewrite(p, [](KV& kv) { set(kv, "dream.rope.dimension_count", GgufValue::of_u32(8)); }),
                         "partial RoPE");
    REQUIRE_OPEN_REFUSED(rewrite(p, [](KV& kv) { set(kv, "diffusion.shift_logits", GgufValue::of_bool(false)); }),
                         "'diffusion.shift_logits': false, but Dream shifts its logits");
    REQUIRE_OPEN_REFUSED(rewrite(p, [](KV& kv) { set(kv, "dream.attention.causal", GgufValue::of_bool(true)); }),
                         "attends bidirectionally");
    REQUIRE_OPEN_REFUSED(rewrite(p, [](KV& kv) { set(kv, "tokenizer.ggml.mask_token_id", GgufValue::of_u32(100000)); }),
                         "'tokenizer.ggml.mask_token_id': 100000 is outside");
    // No mask id key: the family's mask token found by name; without it either, refused.
    {
        const fs::path q = rewrite(p, [](KV& kv) { erase_key(kv, "tokenizer.ggml.mask_token_id"); });
        REQUIRE(open_error(q).empty());
        CHECK(Checkpoint::open(q)->config().mask_id == Checkpoint::open(p)->config().mask_id);
    }
    REQUIRE_OPEN_REFUSED(rewrite(p,
                                 [](KV& kv) {
                                     erase_key(kv, "tokenizer.ggml.mask_token_id");
                                     erase_key(kv, "tokenizer.ggml.tokens");
                                 }),
                         "'tokenizer.ggml.mask_token_id': missing");
    // Tensors: missing, wrong shape, a quantized norm.
    REQUIRE_OPEN_REFUSED(rewrite(
                             p, [](KV&) {},
                             [](std::vector<GgufTensorSpec>& ts) {
                                 for (size_t i = 0; i < ts.size(); ++i)
                                     if (ts[i].name == "blk.1.ffn_up.weight") ts.erase(ts.begin() + long(i));
                             }),
                         "tensor 'blk.1.ffn_up.weight' missing (layer 1 of 3)");
    REQUIRE_OPEN_REFUSED(rewrite(
                             p, [](KV&) {},
                             [](std::vector<GgufTensorSpec>& ts) {
                                 for (auto& t : ts)
                                     if (t.name == "blk.2.attn_k.weight") t.ne[1] = 16;
                             }),
                         "tensor 'blk.2.attn_k.weight' has shape {64, 16}, expected {64, 32}");
    REQUIRE_OPEN_REFUSED(rewrite(
                             p, [](KV&) {},
                             [](std::vector<GgufTensorSpec>& ts) {
                                 for (auto& t : ts)
                                     if (t.name == "blk.0.attn_norm.weight") t.dtype = DType::Q8_0;
                             }),
                         "norms and biases must be F32, F16 or BF16");
    REQUIRE_OPEN_REFUSED(rewrite(
                             p, [](KV&) {},
                             [](std::vector<GgufTensorSpec>& ts) {
                                 for (size_t i = 0; i < ts.size(); ++i)
                                     if (ts[i].name == "token_embd.weight") ts.erase(ts.begin() + long(i));
                             }),
                         "tensor 'token_embd.weight' missing");
    // Not a file / not there.
    REQUIRE_OPEN_REFUSED(p.parent_path() / "absent.gguf", "does not exist");
    {
        const fs::path junk = p.parent_path() / "junk.gguf";
        std::ofstream(junk) << "not a gguf file at all";
        REQUIRE_OPEN_REFUSED(junk, "magic");
    }
}

TEST_CASE("gguf checkpoint: HF f32 and GGUF f32 generate the same tokens (CLI)", "[gguf][cli]") {
    const char* cli = std::getenv("DYLLM_CLI");
    if (!cli) {
        WARN("DYLLM_CLI not set: CLI check not run");
        return;
    }
    const fs::path tmp = test::make_temp_dir("gguf-cli");
    for (const char* model : {"tiny-llada", "tiny-dream"}) {
        INFO(model);
        const fs::path out = tmp / (std::string(model) + ".gguf");
        const auto     q =
            test::run_command(cli, {"quantize", "-m", model, "-o", out.string(), "--type", "f32"}, tmp / "q");
        INFO(q.err);
        REQUIRE(q.status == 0);
        CHECK(q.out.find("wrote ") == 0);
        auto gen = [&](const std::string& m) {
            const auto r = test::run_command(
                cli, {"generate", "-m", m, "-p", "Sort: 3 1 2", "--gen-length", "32", "--steps", "16", "--json"},
                tmp / "g");
            INFO(r.err);
            REQUIRE(r.status == 0);
            const auto j = nlohmann::json::parse(r.out);
            return std::make_pair(j.dump().size() > 0 ? j["sequences"][0]["token_ids"] : nlohmann::json(),
                                  j["sequences"][0]["text"]);
        };
        const auto a = gen(model), b = gen(out.string());
        CHECK(a.first == b.first);
        CHECK(a.second == b.second);
        // A quantized file runs on the CPU from its blocks (its tokens may differ from f32's).
        const fs::path q4 = tmp / (std::string(model) + "-q4_k_m.gguf");
        REQUIRE(test::run_command(cli, {"quantize", "-m", model, "-o", q4.string(), "--type", "q4_k_m"}, tmp / "q")
                    .status == 0);
        CHECK(gen(q4.string()).first.size() == 32);
    }
    // --type errors name the allowed values; the output is replaced atomically (no temporary left behind).
    const auto bad = test::run_command(
        cli, {"quantize", "-m", "tiny-llada", "-o", (tmp / "x.gguf").string(), "--type", "q5"}, tmp / "b");
    CHECK(bad.status != 0);
    CHECK(bad.err.find("f32, f16, bf16, q8_0, q4_0, q4_k_m") != std::string::npos);
    CHECK(bad.err.find('\n') == bad.err.size() - 1);
    int n_files = 0;
    for (const auto& e : fs::directory_iterator(tmp)) n_files += e.path().extension() == ".gguf" ? 1 : 0;
    for (const auto& e : fs::directory_iterator(tmp))
        CHECK(e.path().filename().string().find(".tmp-") == std::string::npos);
    CHECK(n_files == 4);
}

TEST_CASE("gguf checkpoint: quantized rows are the reference quantizer's bytes, however the rows are split", "[gguf]") {
    // 1024 x 1024 matrices: large enough that the exporter splits their rows over threads.
    const ModelConfig cfg = small_config(Family::LLaDA, 1, 1024, 8, 8, 1024, 300);
    const fs::path    dir = test::make_checkpoint(cfg, DType::BF16, 1, 5);
    const auto        hf  = Checkpoint::open(dir);
    const fs::path    p   = export_to(dir, GgufFileType::Q4_K_M, "big.gguf");
    const auto        f   = GgufFile::open(p);
    for (auto [name, hv, permuted] : {std::tuple{"blk.0.ffn_up.weight", &hf->weights().layers[0].w_up, false},
                                      std::tuple{"blk.0.attn_q.weight", &hf->weights().layers[0].wq, true}}) {
        INFO(name);
        const GgufTensorInfo* t = f->contents().find_tensor(name);
        REQUIRE(t);
        REQUIRE(t->dtype == DType::Q4_K);
        const size_t         rb = dtype_row_bytes(DType::Q4_K, 1024);
        std::vector<uint8_t> want(rb);
        for (int64_t r = 0; r < hv->ne[1]; ++r) {
            const auto x = row_values(*hv, r);
            cpu::quantize_row(cpu::QuantType::Q4_K, x.data(), want.data(), 1024);
            const int64_t fr = permuted ? gguf_llada_qk_file_row(r, cfg.head_dim) : r;
            REQUIRE(std::memcmp(t->data + size_t(fr) * rb, want.data(), rb) == 0);
        }
    }
}
