// Tensor names and shapes of the LLaDA and Dream/Qwen2 checkpoints (engine/README.md §c.1, §c.2);
// expected_tensor_names.
#include "engine/io/checkpoint_layout.h"

#include "engine/errors.h"
#include "engine/io/checkpoint.h"

namespace dyllm {

std::vector<TensorSpec> expected_tensor_specs(const ModelConfig& c) {
    const bool        ll   = c.family == Family::LLaDA;
    const std::string embd = std::string(ll ? "d_model" : "hidden_size") + "=" + std::to_string(c.n_embd);
    const std::string ff   = std::string(ll ? "mlp_hidden_size" : "intermediate_size") + "=" + std::to_string(c.n_ff);
    const std::string nv   = std::string(ll && c.n_vocab != c.vocab_size ? "embedding_size" : "vocab_size") + "=" +
                           std::to_string(c.n_vocab);
    const std::string hd = "head_dim=" + std::to_string(c.head_dim);
    const std::string q =
        std::string(ll ? "n_heads" : "num_attention_heads") + "=" + std::to_string(c.n_head) + " x " + hd;
    const std::string kv =
        std::string(ll ? "n_kv_heads" : "num_key_value_heads") + "=" + std::to_string(c.n_kv_head) + " x " + hd;
    const int64_t E = c.n_embd, F = c.n_ff, V = c.n_vocab, Q = c.q_dim(), K = c.kv_dim();

    std::vector<TensorSpec> s;
    auto add = [&](std::string name, std::vector<int64_t> shape, std::string origin, TensorRole role, int layer) {
        s.push_back({std::move(name), std::move(shape), "[" + origin + "]", role, layer});
    };
    using R = TensorRole;
    if (ll) {
        const std::string p = "model.transformer.";
        add(p + "wte.weight", {V, E}, nv + ", " + embd, R::TokEmbd, -1);
        for (int i = 0; i < c.n_layer; ++i) {
            const std::string b = p + "blocks." + std::to_string(i) + ".";
            add(b + "attn_norm.weight", {E}, embd, R::AttnNorm, i);
            add(b + "q_proj.weight", {Q, E}, q + ", " + embd, R::Wq, i);
            add(b + "k_proj.weight", {K, E}, kv + ", " + embd, R::Wk, i);
            add(b + "v_proj.weight", {K, E}, kv + ", " + embd, R::Wv, i);
            if (c.qkv_bias) {  // include_qkv_bias
                add(b + "q_proj.bias", {Q}, q, R::Bq, i);
                add(b + "k_proj.bias", {K}, kv, R::Bk, i);
                add(b + "v_proj.bias", {K}, kv, R::Bv, i);
            }
            add(b + "attn_out.weight", {E, Q}, embd + ", " + q, R::Wo, i);
            add(b + "ff_norm.weight", {E}, embd, R::FfnNorm, i);
            add(b + "ff_proj.weight", {F, E}, ff + ", " + embd, R::WGate, i);  // the gate (through SiLU), §c.1
            add(b + "up_proj.weight", {F, E}, ff + ", " + embd, R::WUp, i);
            add(b + "ff_out.weight", {E, F}, embd + ", " + ff, R::WDown, i);
        }
        add(p + "ln_f.weight", {E}, embd, R::OutNorm, -1);
        if (!c.tie_embeddings) add(p + "ff_out.weight", {V, E}, nv + ", " + embd, R::LmHead, -1);
    } else {
        add("model.embed_tokens.weight", {V, E}, nv + ", " + embd, R::TokEmbd, -1);
        for (int i = 0; i < c.n_layer; ++i) {
            const std::string b = "model.layers." + std::to_string(i) + ".";
            add(b + "input_layernorm.weight", {E}, embd, R::AttnNorm, i);
            add(b + "self_attn.q_proj.weight", {Q, E}, q + ", " + embd, R::Wq, i);
            add(b + "self_attn.k_proj.weight", {K, E}, kv + ", " + embd, R::Wk, i);
            add(b + "self_attn.v_proj.weight", {K, E}, kv + ", " + embd, R::Wv, i);
            if (c.qkv_bias) {
                add(b + "self_attn.q_proj.bias", {Q}, q, R::Bq, i);
                add(b + "self_attn.k_proj.bias", {K}, kv, R::Bk, i);
                add(b + "self_attn.v_proj.bias", {K}, kv, R::Bv, i);
            }
            add(b + "self_attn.o_proj.weight", {E, Q}, embd + ", " + q, R::Wo, i);
            add(b + "post_attention_layernorm.weight", {E}, embd, R::FfnNorm, i);
            add(b + "mlp.gate_proj.weight", {F, E}, ff + ", " + embd, R::WGate, i);
            add(b + "mlp.up_proj.weight", {F, E}, ff + ", " + embd, R::WUp, i);
            add(b + "mlp.down_proj.weight", {E, F}, embd + ", " + ff, R::WDown, i);
        }
        add("model.norm.weight", {E}, embd, R::OutNorm, -1);
        if (!c.tie_embeddings) add("lm_head.weight", {V, E}, nv + ", " + embd, R::LmHead, -1);
    }
    return s;
}

std::vector<std::string> expected_tensor_names(const ModelConfig& cfg) {
    std::vector<std::string> names;
    for (auto& s : expected_tensor_specs(cfg)) names.push_back(std::move(s.name));
    return names;
}

TensorView& weight_slot(ModelWeights& w, TensorRole role, int layer) {
    using R         = TensorRole;
    LayerWeights* L = layer >= 0 ? &w.layers[size_t(layer)] : nullptr;
    switch (role) {
        case R::TokEmbd:
            return w.tok_embd;
        case R::AttnNorm:
            return L->attn_norm;
        case R::Wq:
            return L->wq;
        case R::Wk:
            return L->wk;
        case R::Wv:
            return L->wv;
        case R::Wo:
            return L->wo;
        case R::Bq:
            return L->bq;
        case R::Bk:
            return L->bk;
        case R::Bv:
            return L->bv;
        case R::FfnNorm:
            return L->ffn_norm;
        case R::WGate:
            return L->w_gate;
        case R::WUp:
            return L->w_up;
        case R::WDown:
            return L->w_down;
        case R::OutNorm:
            return w.out_norm;
        case R::LmHead:
            return w.lm_head;
    }
    DYLLM_ASSERT(false, "unknown tensor role");
    return w.tok_embd;
}

}  // namespace dyllm
