// A GGUF file as a checkpoint: the config from llama.cpp's "llada" / "dream" metadata keys, the tensors checked
// against the layout the config implies, views into the mapping (LLaDA's q/k rows put back in HF order).
#include <cmath>
#include <cstring>
#include <limits>

#include "engine/errors.h"
#include "engine/io/gguf_model.h"
#include "engine/io/mapped_file.h"
#include "engine/io/json_file.h"

namespace dyllm {

namespace {

namespace fs = std::filesystem;

class GgufCheckpoint final : public Checkpoint {
public:
    const ModelConfig&  config() const override { return cfg_; }
    const ModelWeights& weights() const override { return weights_; }
    DType               weight_dtype() const override { return weight_dtype_; }
    size_t              file_bytes() const override { return file_->file_bytes(); }
    const fs::path&     dir() const override { return path_; }
    const GgufContents* gguf() const override { return &file_->contents(); }

    ModelConfig                             cfg_;
    ModelWeights                            weights_;
    DType                                   weight_dtype_ = DType::F32;
    fs::path                                path_;
    std::unique_ptr<GgufFile>               file_;
    std::vector<std::unique_ptr<uint8_t[]>> owned_;  // LLaDA's q/k in HF row order
};

// Typed metadata reads; every failure names the file and the key.
class Meta {
public:
    Meta(const GgufContents& g, const std::string& label) : g_(g), label_(label) {}

    [[noreturn]] void fail(const std::string& key, const std::string& what) const {
        throw LoadError(label_ + ": metadata '" + key + "': " + what);
    }
    const GgufValue* find(const std::string& key) const { return g_.find(key); }

    int64_t get_int(const std::string& key, int64_t lo, int64_t hi) const {
        const GgufValue* v = find(key);
        if (!v) fail(key, "missing");
        return as_int(key, *v, lo, hi);
    }
    int64_t get_int(const std::string& key, int64_t lo, int64_t hi, int64_t fallback) const {
        const GgufValue* v = find(key);
        return v ? as_int(key, *v, lo, hi) : fallback;
    }
    double get_float(const std::string& key, double fallback, bool required = false) const {
        const GgufValue* v = find(key);
        if (!v) {
            if (required) fail(key, "missing");
            return fallback;
        }
        double d = 0;
        if (v->type == GgufType::F32 || v->type == GgufType::F64)
            d = v->f;
        else if (v->is_integer())
            d = double(as_int(key, *v, INT32_MIN, INT32_MAX));
        else
            fail(key, std::string("type ") + gguf_type_name(v->type) + ", expected a number");
        if (!(std::isfinite(d) && d > 0)) fail(key, std::to_string(d) + " must be a positive finite number");
        return d;
    }
    std::string get_string(const std::string& key) const {
        const GgufValue* v = find(key);
        if (!v) fail(key, "missing");
        if (v->type != GgufType::STRING)
            fail(key, std::string("type ") + gguf_type_name(v->type) + ", expected STRING");
        return v->str;
    }
    bool get_bool(const std::string& key, bool fallback) const {
        const GgufValue* v = find(key);
        if (!v) return fallback;
        if (v->type != GgufType::BOOL) fail(key, std::string("type ") + gguf_type_name(v->type) + ", expected BOOL");
        return v->u != 0;
    }

    int64_t as_int(const std::string& key, const GgufValue& v, int64_t lo, int64_t hi) const {
        if (!v.is_integer()) fail(key, std::string("type ") + gguf_type_name(v.type) + ", expected an integer");
        const bool is_unsigned =
            v.type == GgufType::U8 || v.type == GgufType::U16 || v.type == GgufType::U32 || v.type == GgufType::U64;
        const bool    big = is_unsigned && v.u > uint64_t(std::numeric_limits<int64_t>::max());
        const int64_t x   = is_unsigned ? int64_t(v.u) : v.i;
        if (big || x < lo || x > hi)
            fail(key, (is_unsigned ? std::to_string(v.u) : std::to_string(v.i)) + " is outside [" + std::to_string(lo) +
                          ", " + std::to_string(hi) + "]");
        return x;
    }

private:
    const GgufContents& g_;
    const std::string&  label_;
};

}  // namespace

const char* gguf_arch_name(Family f) {
    return f == Family::LLaDA ? "llada" : "dream";
}

std::string gguf_tensor_name(TensorRole role, int layer) {
    const std::string b = "blk." + std::to_string(layer) + ".";
    using R             = TensorRole;
    switch (role) {
        case R::TokEmbd:
            return "token_embd.weight";
        case R::OutNorm:
            return "output_norm.weight";
        case R::LmHead:
            return "output.weight";
        case R::AttnNorm:
            return b + "attn_norm.weight";
        case R::Wq:
            return b + "attn_q.weight";
        case R::Wk:
            return b + "attn_k.weight";
        case R::Wv:
            return b + "attn_v.weight";
        case R::Bq:
            return b + "attn_q.bias";
        case R::Bk:
            return b + "attn_k.bias";
        case R::Bv:
            return b + "attn_v.bias";
        case R::Wo:
            return b + "attn_output.weight";
        case R::FfnNorm:
            return b + "ffn_norm.weight";
        case R::WGate:
            return b + "ffn_gate.weight";
        case R::WUp:
            return b + "ffn_up.weight";
        case R::WDown:
            return b + "ffn_down.weight";
    }
    return {};
}

std::vector<int64_t> gguf_shape(const std::vector<int64_t>& hf) {
    return std::vector<int64_t>(hf.rbegin(), hf.rend());
}

int64_t gguf_llada_qk_file_row(int64_t hf_row, int64_t head_dim) {
    const int64_t h = hf_row / head_dim, r = hf_row % head_dim, half = head_dim / 2;
    const int64_t t = r / half, j = r % half;
    return h * head_dim + 2 * j + t;
}

ModelConfig gguf_model_config(const GgufContents& g, const std::string& label) {
    const Meta        m(g, label);
    const std::string arch = m.get_string("general.architecture");
    ModelConfig       c;
    if (arch == "llada") {
        c.family = Family::LLaDA;
    } else if (arch == "dream") {
        c.family = Family::Dream;
    } else {
        m.fail("general.architecture", "'" + text_excerpt(arch) + "' is not supported (expected 'llada' or 'dream')");
    }
    c.model_type        = arch;
    const std::string p = arch + ".";
    c.n_layer           = int(m.get_int(p + "block_count", 1, kMaxConfigLayers));
    c.n_embd            = int(m.get_int(p + "embedding_length", 1, kMaxConfigEmbd));
    c.n_ff              = int(m.get_int(p + "feed_forward_length", 1, kMaxConfigFf));
    c.n_head            = int(m.get_int(p + "attention.head_count", 1, kMaxConfigHeads));
    c.n_kv_head         = int(m.get_int(p + "attention.head_count_kv", 1, kMaxConfigHeads, c.n_head));
    c.max_position      = int(m.get_int(p + "context_length", 1, kMaxConfigPositions, 4096));
    if (c.n_head % c.n_kv_head != 0)
        m.fail(p + "attention.head_count_kv", std::to_string(c.n_kv_head) + " does not divide " + p +
                                                  "attention.head_count = " + std::to_string(c.n_head));
    if (m.find(p + "attention.key_length")) {
        c.head_dim       = int(m.get_int(p + "attention.key_length", 1, kMaxConfigHeadDim));
        const int64_t vl = m.get_int(p + "attention.value_length", 1, kMaxConfigHeadDim, c.head_dim);
        if (vl != c.head_dim)
            m.fail(p + "attention.value_length", std::to_string(vl) + " differs from key_length = " +
                                                     std::to_string(c.head_dim) + " (not supported)");
    } else {
        if (c.n_embd % c.n_head != 0)
            m.fail(p + "attention.head_count",
                   std::to_string(c.n_head) + " does not divide embedding_length = " + std::to_string(c.n_embd));
        c.head_dim = c.n_embd / c.n_head;
    }
    if (c.head_dim % 2 != 0) m.fail(p + "attention.key_length", "head dim " + std::to_string(c.head_dim) + " is odd");
    const int64_t rot = m.get_int(p + "rope.dimension_count", 1, kMaxConfigHeadDim, c.head_dim);
    if (rot != c.head_dim)
        m.fail(p + "rope.dimension_count", std::to_string(rot) + " differs from the head dim " +
                                               std::to_string(c.head_dim) + " (partial RoPE is not supported)");
    if (const GgufValue* v = m.find(p + "rope.scaling.type"))
        if (!(v->type == GgufType::STRING && (v->str == "none" || v->str.empty())))
            m.fail(p + "rope.scaling.type", "RoPE scaling is not supported");
    // llama.cpp's default freq_base when the key is absent is 10000.
    c.rope_theta = float(m.get_float(p + "rope.freq_base", 10000.0));
    c.norm_eps   = float(m.get_float(p + "attention.layer_norm_rms_epsilon", 0, /*required=*/true));
    if (m.find(p + "attention.causal") && m.get_bool(p + "attention.causal", false))
        m.fail(p + "attention.causal", "true, but a diffusion model attends bidirectionally");
    // Dream predicts token i from position i - 1 (its logits are shifted), LLaDA does not; llama.cpp's diffusion
    // example reads this key and defaults to shifting.
    const bool shift = m.get_bool("diffusion.shift_logits", true);
    if (shift != (c.family == Family::Dream))
        m.fail("diffusion.shift_logits",
               std::string(shift ? "true" : "false") + ", but " + family_name(c.family) +
                   (c.family == Family::Dream ? " shifts its logits" : " does not shift its logits"));

    const GgufTensorInfo* emb = g.find_tensor("token_embd.weight");
    if (!emb) throw LoadError(label + ": tensor 'token_embd.weight' missing (the token embedding)");
    if (emb->n_dims != 2 || emb->ne[1] < 1 || emb->ne[1] > kMaxConfigVocab)
        throw LoadError(label + ": tensor 'token_embd.weight' has shape " + gguf_dims_string(emb->dims()) +
                        ", expected {embedding_length, n_vocab} with n_vocab in [1, " +
                        std::to_string(kMaxConfigVocab) + "]");
    c.n_vocab        = int(emb->ne[1]);
    int64_t n_tokens = c.n_vocab;
    if (const GgufValue* t = m.find("tokenizer.ggml.tokens"))
        if (t->type == GgufType::ARRAY) n_tokens = int64_t(t->count);
    c.vocab_size     = int(m.get_int(p + "vocab_size", 1, c.n_vocab, std::min<int64_t>(n_tokens, c.n_vocab)));
    c.qkv_bias       = g.find_tensor("blk.0.attn_q.bias") != nullptr;
    c.tie_embeddings = g.find_tensor("output.weight") == nullptr;

    auto id = [&](const char* key, int32_t fallback) {
        return int32_t(m.get_int(std::string("tokenizer.ggml.") + key, 0, c.n_vocab - 1, fallback));
    };
    c.eos_id  = id("eos_token_id", -1);
    c.pad_id  = id("padding_token_id", -1);
    c.bos_id  = id("bos_token_id", -1);
    c.mask_id = id("mask_token_id", -1);
    if (c.mask_id < 0) {
        // Files without the key: the family's mask token by name (engine/README.md §c.1, §c.2).
        const char* name = c.family == Family::LLaDA ? "<|mdm_mask|>" : "<|mask|>";
        if (const GgufValue* t = m.find("tokenizer.ggml.tokens"); t && t->elem == GgufType::STRING)
            for (size_t k = 0; k < t->strs.size() && k < size_t(c.n_vocab); ++k)
                if (t->strs[k] == name) c.mask_id = int32_t(k);
        if (c.mask_id < 0)
            m.fail("tokenizer.ggml.mask_token_id",
                   std::string("missing, and no token '") + name +
                       "' in tokenizer.ggml.tokens (a diffusion model needs its mask token)");
    }
    return c;
}

std::unique_ptr<Checkpoint> open_gguf_checkpoint(const fs::path& path) {
    auto ck   = std::make_unique<GgufCheckpoint>();
    ck->path_ = path;
    std::error_code ec;
    const auto      st = fs::status(path, ec);
    if (ec && ec.value() == ELOOP)
        throw LoadError(path.string() + ": symlink loop (too many levels of symbolic links)");
    if (!fs::exists(st)) throw LoadError(path.string() + ": model file does not exist");
    ck->file_                = GgufFile::open(path);
    const std::string   f    = path.string();
    const GgufContents& g    = ck->file_->contents();
    ck->cfg_                 = gguf_model_config(g, f);
    const ModelConfig& cfg   = ck->cfg_;
    const auto         specs = expected_tensor_specs(cfg);
    ck->weights_.layers.resize(size_t(cfg.n_layer));
    for (const auto& s : specs) {
        const std::string     name = gguf_tensor_name(s.role, s.layer);
        const auto            want = gguf_shape(s.shape);
        const GgufTensorInfo* t    = g.find_tensor(name);
        if (!t) {
            const std::string what =
                s.layer >= 0 ? " (layer " + std::to_string(s.layer) + " of " + std::to_string(cfg.n_layer) + ")"
                             : std::string();
            throw LoadError(f + ": tensor '" + name + "' missing" + what + ", expected for a " +
                            gguf_arch_name(cfg.family) + " model with shape " + gguf_dims_string(want));
        }
        if (t->dims() != want)
            throw LoadError(f + ": tensor '" + name + "' has shape " + gguf_dims_string(t->dims()) + ", expected " +
                            gguf_dims_string(want) + " from the metadata " + s.origin);
        if (want.size() == 1 && !is_float(t->dtype))
            throw LoadError(f + ": tensor '" + name + "' is " + dtype_name(t->dtype) +
                            "; norms and biases must be F32, F16 or BF16");
        TensorView v = t->view();
        using R      = TensorRole;
        const bool permuted =
            cfg.family == Family::LLaDA && (s.role == R::Wq || s.role == R::Wk || s.role == R::Bq || s.role == R::Bk);
        if (permuted) {
            // Rows back in HF order; a bias is one row of q_dim elements, handled as q_dim rows of one.
            const bool    bias = want.size() == 1;
            const int64_t rows = bias ? v.ne[0] : v.ne[1];
            const size_t  rb   = bias ? dtype_block_bytes(v.dtype) : size_t(v.nb[1]);
            auto          buf  = std::make_unique<uint8_t[]>(size_t(rows) * rb);
            const auto*   src  = static_cast<const uint8_t*>(v.data);
            for (int64_t r = 0; r < rows; ++r)
                std::memcpy(buf.get() + size_t(r) * rb, src + size_t(gguf_llada_qk_file_row(r, cfg.head_dim)) * rb, rb);
            release_pages(src, size_t(rows) * rb);  // the reordered copy is the only one read from here on
            v.data = buf.get();
            ck->owned_.push_back(std::move(buf));
        }
        weight_slot(ck->weights_, s.role, s.layer) = v;
    }
    if (cfg.tie_embeddings) ck->weights_.lm_head = ck->weights_.tok_embd;
    ck->weight_dtype_ = ck->weights_.layers.empty() ? ck->weights_.tok_embd.dtype : ck->weights_.layers[0].wq.dtype;
    return ck;
}

}  // namespace dyllm
