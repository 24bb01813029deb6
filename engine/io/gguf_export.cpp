// export_gguf: the checkpoint's config as llama.cpp's hyper-parameter keys, its tokenizer as tokenizer.* keys, and
// every tensor converted row by row (widened to fp32, then stored as F32/F16/BF16 or quantized by the reference
// quantizers of kernels/cpu/ref/quant.h) into the GGUF data section.
#include "engine/io/gguf_export.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <thread>
#include <vector>

#include "engine/errors.h"
#include "engine/interrupt.h"
#include "engine/io/atomic_file.h"
#include "engine/io/gguf.h"
#include "engine/io/gguf_model.h"
#include "engine/quant_type.h"
#include "engine/tokenizer/tokenizer_gguf.h"
#include "kernels/common/dtype_convert.h"
#include "kernels/cpu/ref/quant.h"

namespace dyllm {

namespace {

struct FileTypeRow {
    GgufFileType t;
    const char*  name;
    uint32_t     ftype;  // llama_ftype
};
constexpr FileTypeRow kFileTypes[] = {
    {GgufFileType::F32, "f32", 0},   {GgufFileType::F16, "f16", 1},   {GgufFileType::BF16, "bf16", 32},
    {GgufFileType::Q8_0, "q8_0", 7}, {GgufFileType::Q4_0, "q4_0", 2}, {GgufFileType::Q4_K_M, "q4_k_m", 15},
};

// llama.cpp's use_more_bits: the first and last eighth of the layers, and every third layer between.
bool use_more_bits(int i, int n) {
    return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

DType fallback(DType want, int64_t ne0) {
    if (ne0 % dtype_block_elems(want) == 0) return want;
    DType f = want == DType::Q4_K ? DType::Q4_0 : (want == DType::Q6_K || want == DType::Q5_K) ? DType::Q8_0 : want;
    if (ne0 % dtype_block_elems(f) != 0) f = DType::F16;
    return f;
}

float load(const uint8_t* row, DType t, int64_t i) {
    switch (t) {
        case DType::F16:
            return f16_to_f32(reinterpret_cast<const uint16_t*>(row)[i]);
        case DType::BF16:
            return bf16_to_f32(reinterpret_cast<const uint16_t*>(row)[i]);
        default: {
            float f;
            std::memcpy(&f, row + 4 * i, 4);
            return f;
        }
    }
}

// One row of n values into its stored form.
void store_row(const float* x, int64_t n, DType t, uint8_t* dst) {
    switch (t) {
        case DType::F32:
            std::memcpy(dst, x, size_t(n) * 4);
            break;
        case DType::F16:
            for (int64_t i = 0; i < n; ++i) {
                const uint16_t h = f32_to_f16(x[i]);
                std::memcpy(dst + 2 * i, &h, 2);
            }
            break;
        case DType::BF16:
            for (int64_t i = 0; i < n; ++i) {
                const uint16_t h = f32_to_bf16(x[i]);
                std::memcpy(dst + 2 * i, &h, 2);
            }
            break;
        default:
            cpu::quantize_row(quant_of(t), x, dst, n);
    }
}

}  // namespace

bool parse_gguf_file_type(const std::string& s, GgufFileType* out) {
    std::string l = s;
    std::transform(l.begin(), l.end(), l.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    for (const auto& r : kFileTypes)
        if (l == r.name) {
            *out = r.t;
            return true;
        }
    return false;
}

const char* gguf_file_type_name(GgufFileType t) {
    for (const auto& r : kFileTypes)
        if (r.t == t) return r.name;
    return "?";
}

const char* gguf_file_type_choices() {
    return "f32, f16, bf16, q8_0, q4_0, q4_k_m";
}

uint32_t gguf_llama_ftype(GgufFileType t) {
    for (const auto& r : kFileTypes)
        if (r.t == t) return r.ftype;
    return 0;
}

DType gguf_tensor_dtype(GgufFileType t, TensorRole role, int layer, int n_layer, const std::vector<int64_t>& hf_shape,
                        bool tied) {
    if (hf_shape.size() < 2) return DType::F32;
    const int64_t ne0 = hf_shape.back();
    using R           = TensorRole;
    const bool head   = role == R::LmHead || (tied && role == R::TokEmbd);
    switch (t) {
        case GgufFileType::F32:
            return DType::F32;
        case GgufFileType::F16:
            return DType::F16;
        case GgufFileType::BF16:
            return DType::BF16;
        case GgufFileType::Q8_0:
            return fallback(DType::Q8_0, ne0);
        case GgufFileType::Q4_0:
            // llama.cpp keeps the output head at Q6_K for every type other than Q8_0.
            return fallback(head ? DType::Q6_K : DType::Q4_0, ne0);
        case GgufFileType::Q4_K_M:
            if (head) return fallback(DType::Q6_K, ne0);
            if ((role == R::Wv || role == R::WDown) && use_more_bits(layer, n_layer)) return fallback(DType::Q6_K, ne0);
            return fallback(DType::Q4_K, ne0);
    }
    return DType::F32;
}

void export_gguf(const Checkpoint& ck, const std::filesystem::path& tokenizer_json, const std::filesystem::path& out,
                 GgufFileType type, const std::string& model_name,
                 const std::function<void(const GgufExportProgress&)>& progress) {
    const ModelConfig& c    = ck.config();
    const std::string  arch = gguf_arch_name(c.family);
    const std::string  p    = arch + ".";
    using V                 = GgufValue;

    std::vector<std::pair<std::string, GgufValue>> kv;
    kv.emplace_back("general.architecture", V::of_string(arch));
    kv.emplace_back("general.name", V::of_string(model_name));
    kv.emplace_back(p + "block_count", V::of_u32(uint32_t(c.n_layer)));
    kv.emplace_back(p + "context_length", V::of_u32(uint32_t(c.max_position)));
    kv.emplace_back(p + "embedding_length", V::of_u32(uint32_t(c.n_embd)));
    kv.emplace_back(p + "feed_forward_length", V::of_u32(uint32_t(c.n_ff)));
    kv.emplace_back(p + "attention.head_count", V::of_u32(uint32_t(c.n_head)));
    kv.emplace_back(p + "attention.head_count_kv", V::of_u32(uint32_t(c.n_kv_head)));
    kv.emplace_back(p + "rope.freq_base", V::of_f32(c.rope_theta));
    kv.emplace_back(p + "attention.layer_norm_rms_epsilon", V::of_f32(c.norm_eps));
    if (int64_t(c.head_dim) * c.n_head != c.n_embd) {
        kv.emplace_back(p + "attention.key_length", V::of_u32(uint32_t(c.head_dim)));
        kv.emplace_back(p + "attention.value_length", V::of_u32(uint32_t(c.head_dim)));
    }
    kv.emplace_back(p + "attention.causal", V::of_bool(false));
    kv.emplace_back("general.file_type", V::of_u32(gguf_llama_ftype(type)));
    if (c.family == Family::LLaDA) {
        // The keys llama.cpp's LLaDA converter adds.
        kv.emplace_back(p + "vocab_size", V::of_u32(uint32_t(c.vocab_size)));
        kv.emplace_back(p + "rope.dimension_count", V::of_u32(uint32_t(c.head_dim)));
        kv.emplace_back("diffusion.shift_logits", V::of_bool(false));
    }
    const bool quantized = type == GgufFileType::Q8_0 || type == GgufFileType::Q4_0 || type == GgufFileType::Q4_K_M;
    if (quantized) kv.emplace_back("general.quantization_version", V::of_u32(2));
    if (!tokenizer_json.empty()) {
        auto tk = gguf_tokenizer_metadata(tokenizer_json, c);
        for (auto& e : tk) kv.push_back(std::move(e));
    } else {
        // No tokenizer: the ids the engine needs still travel in the tokenizer keys llama.cpp reads them from.
        if (c.mask_id >= 0) kv.emplace_back("tokenizer.ggml.mask_token_id", V::of_u32(uint32_t(c.mask_id)));
        if (c.eos_id >= 0) kv.emplace_back("tokenizer.ggml.eos_token_id", V::of_u32(uint32_t(c.eos_id)));
        if (c.pad_id >= 0) kv.emplace_back("tokenizer.ggml.padding_token_id", V::of_u32(uint32_t(c.pad_id)));
        if (c.bos_id >= 0) kv.emplace_back("tokenizer.ggml.bos_token_id", V::of_u32(uint32_t(c.bos_id)));
    }

    // Tensors in the layout's order, each with the source view it is made from.
    const ModelWeights&     w = ck.weights();
    std::vector<TensorSpec> specs;
    for (auto& s : expected_tensor_specs(c)) specs.push_back(std::move(s));
    std::vector<GgufTensorSpec> ts;
    std::vector<TensorView>     src;
    for (const auto& s : specs) {
        GgufTensorSpec g;
        g.name       = gguf_tensor_name(s.role, s.layer);
        const auto d = gguf_shape(s.shape);
        g.n_dims     = int(d.size());
        for (size_t k = 0; k < d.size(); ++k) g.ne[k] = d[k];
        g.dtype               = gguf_tensor_dtype(type, s.role, s.layer, c.n_layer, s.shape, c.tie_embeddings);
        const LayerWeights* L = s.layer >= 0 ? &w.layers[size_t(s.layer)] : nullptr;
        using R               = TensorRole;
        const TensorView* v   = nullptr;
        switch (s.role) {
            case R::TokEmbd:
                v = &w.tok_embd;
                break;
            case R::OutNorm:
                v = &w.out_norm;
                break;
            case R::LmHead:
                v = &w.lm_head;
                break;
            case R::AttnNorm:
                v = &L->attn_norm;
                break;
            case R::Wq:
                v = &L->wq;
                break;
            case R::Wk:
                v = &L->wk;
                break;
            case R::Wv:
                v = &L->wv;
                break;
            case R::Wo:
                v = &L->wo;
                break;
            case R::Bq:
                v = &L->bq;
                break;
            case R::Bk:
                v = &L->bk;
                break;
            case R::Bv:
                v = &L->bv;
                break;
            case R::FfnNorm:
                v = &L->ffn_norm;
                break;
            case R::WGate:
                v = &L->w_gate;
                break;
            case R::WUp:
                v = &L->w_up;
                break;
            case R::WDown:
                v = &L->w_down;
                break;
        }
        if (!v->data || !is_float(v->dtype) || !v->contiguous())
            throw LoadError(ck.dir().string() + ": tensor for '" + g.name + "' is " + dtype_name(v->dtype) +
                            "; dyllm quantize reads F32, F16 or BF16 weights");
        ts.push_back(g);
        src.push_back(*v);
    }

    // LLaDA's q/k rows are stored in llama.cpp's interleaved-RoPE order.
    auto permuted = [&](size_t i) {
        const TensorRole r = specs[i].role;
        return c.family == Family::LLaDA &&
               (r == TensorRole::Wq || r == TensorRole::Wk || r == TensorRole::Bq || r == TensorRole::Bk);
    };
    AtomicFile         file(out);
    GgufExportProgress pr;
    pr.total = ts.size();
    // Rows are converted independently (each row's blocks depend on that row alone), so the work is split over the
    // cores by row ranges; the bytes are the same for any thread count.
    const int n_threads = int(std::clamp<unsigned>(std::thread::hardware_concurrency(), 1, 64));
    write_gguf(
        file.stream(), kv, ts,
        [&](size_t i, uint8_t* dst, size_t) {
            throw_if_interrupted();  // Ctrl-C between tensors: the temporary file goes, the target stays untouched
            const TensorView& v    = src[i];
            const DType       dt   = ts[i].dtype;
            const bool        bias = ts[i].n_dims == 1;
            // A 1-D tensor is one row; LLaDA's q/k biases are permuted element by element.
            const int64_t n_rows = bias ? 1 : v.ne[1];
            const int64_t n      = v.ne[0];
            const size_t  rb     = dtype_row_bytes(dt, n);
            auto          rows   = [&](int64_t r0, int64_t r1) {
                std::vector<float> row(static_cast<size_t>(n)), perm;
                for (int64_t r = r0; r < r1; ++r) {
                    const auto* s = static_cast<const uint8_t*>(v.data) + r * v.nb[1];
                    for (int64_t k = 0; k < n; ++k) row[size_t(k)] = load(s, v.dtype, k);
                    if (permuted(i) && bias) {
                        perm.assign(row.size(), 0.0f);
                        for (int64_t k = 0; k < n; ++k)
                            perm[size_t(gguf_llada_qk_file_row(k, c.head_dim))] = row[size_t(k)];
                        row.swap(perm);
                    }
                    const int64_t fr = permuted(i) && !bias ? gguf_llada_qk_file_row(r, c.head_dim) : r;
                    store_row(row.data(), n, dt, dst + size_t(fr) * rb);
                }
            };
            // Threads only where there is enough work to pay for them (a quantized matrix of a real model).
            const int64_t work = n_rows * n;
            const int     nt   = work < (int64_t(1) << 20) ? 1 : int(std::min<int64_t>(n_threads, n_rows));
            if (nt == 1) return rows(0, n_rows);
            std::vector<std::thread> pool;
            for (int t = 0; t < nt; ++t) pool.emplace_back(rows, n_rows * t / nt, n_rows * (t + 1) / nt);
            for (auto& th : pool) th.join();
        },
        [&](size_t i) {
            pr.done   = i + 1;
            pr.tensor = ts[i].name;
            pr.dtype  = ts[i].dtype;
            if (progress) progress(pr);
        });
    file.commit();
}

}  // namespace dyllm
