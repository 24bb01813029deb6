// Op names and GEMM shapes from one step's op stream (app/model/op_names.h).
#include "app/model/op_names.h"

#include <cmath>
#include <map>

namespace dyllm::app {

const char* op_name_text(OpName n) {
    static constexpr const char* kText[] = {
        "embed",  "norm",     "q",    "k",        "v",    "rope",    "attn_exact", "attn_approx",
        "o",      "gate",     "up",   "silu_mul", "down", "lm_head", "sampling",   "gather_scatter",
        "cosine", "residual", "other"};
    static_assert(sizeof(kText) / sizeof(kText[0]) == kOpNames);
    return size_t(n) < kOpNames ? kText[size_t(n)] : "?";
}

OpClass op_name_class(OpName n) {
    switch (n) {
        case OpName::Embed:
            return OpClass::Embed;
        case OpName::Norm:
            return OpClass::Norm;
        case OpName::Q:
        case OpName::K:
        case OpName::V:
            return OpClass::Qkv;
        case OpName::Rope:
            return OpClass::Rope;
        case OpName::AttnExact:
            return OpClass::AttnExact;
        case OpName::AttnApprox:
            return OpClass::AttnApprox;
        case OpName::O:
            return OpClass::OProj;
        case OpName::Gate:
        case OpName::Up:
        case OpName::SiluMul:
        case OpName::Down:
            return OpClass::Ffn;
        case OpName::LmHead:
            return OpClass::LmHead;
        case OpName::Sampling:
            return OpClass::Sampling;
        case OpName::GatherScatter:
            return OpClass::GatherScatter;
        case OpName::Cosine:
            return OpClass::Cosine;
        case OpName::Residual:
            return OpClass::Residual;
        default:
            return OpClass::Other;
    }
}

namespace {

struct LayerState {
    bool q_seen   = false;  // this layer already ran its q projection in this step
    int  ffn_gemm = 0;      // FFN GEMMs since the last down projection: 0 gate, 1 up; 2 after silu_mul: down
};

// The inner size of a GEMM whose other size is known: flops = 2 m n k.
int64_t other_dim(double flops, int64_t m, int64_t known) {
    return m > 0 && known > 0 ? int64_t(std::llround(flops / (2.0 * double(m) * double(known)))) : 0;
}

}  // namespace

std::vector<NamedOp> name_ops(std::span<const OpTiming> ops, int n_embd) {
    std::vector<NamedOp>      out(ops.size());
    std::map<int, LayerState> st;
    const int64_t             d = n_embd > 0 ? n_embd : 0;
    for (size_t i = 0; i < ops.size(); ++i) {
        const OpTiming& o = ops[i];
        LayerState&     L = st[o.layer];
        NamedOp&        r = out[i];
        const int64_t   m = o.rows;
        // GEMM with x: [m, k = n_embd] (q, k, v, gate, up, lm_head) or y: [m, n = n_embd] (o, down).
        auto from_input = [&] {
            r.m = d ? m : 0;
            r.k = d;
            r.n = other_dim(o.flops, m, d);
        };
        auto from_output = [&] {
            r.m = d ? m : 0;
            r.n = d;
            r.k = other_dim(o.flops, m, d);
        };
        switch (o.op) {
            case OpClass::Qkv: {
                if (i > 0 && ops[i - 1].op == OpClass::Qkv && ops[i - 1].layer == o.layer) {
                    // Continues a run: the next of q -> k -> v.
                    r.name = out[i - 1].name == OpName::Q ? OpName::K : OpName::V;
                } else {
                    // A run of 3 is q, k, v; a run of 2 is k, v after this layer's q (dyllm: q of the query rows,
                    // then k, v of the salient rows) and q, k before it (dLLM-Cache without v); a lone projection
                    // is q first, v after (dLLM-Cache's separate v).
                    size_t j = i;
                    while (j < ops.size() && ops[j].op == OpClass::Qkv && ops[j].layer == o.layer) ++j;
                    const size_t run = j - i;
                    r.name           = run >= 3   ? OpName::Q
                                       : run == 2 ? (L.q_seen ? OpName::K : OpName::Q)
                                                  : (L.q_seen ? OpName::V : OpName::Q);
                }
                if (r.name == OpName::Q) L.q_seen = true;
                from_input();
                break;
            }
            case OpClass::Ffn:
                if (o.flops <= 0) {
                    r.name     = OpName::SiluMul;
                    L.ffn_gemm = 2;
                } else if (L.ffn_gemm >= 2) {
                    r.name     = OpName::Down;
                    L.ffn_gemm = 0;
                    from_output();
                } else {
                    r.name = L.ffn_gemm++ == 0 ? OpName::Gate : OpName::Up;
                    from_input();
                }
                break;
            case OpClass::OProj:
                r.name = OpName::O;
                from_output();
                break;
            case OpClass::LmHead:
                r.name = OpName::LmHead;
                from_input();
                break;
            case OpClass::Embed:
                r.name = OpName::Embed;
                break;
            case OpClass::Norm:
                r.name = OpName::Norm;
                break;
            case OpClass::Rope:
                r.name = OpName::Rope;
                break;
            case OpClass::AttnExact:
                r.name = OpName::AttnExact;
                break;
            case OpClass::AttnApprox:
                r.name = OpName::AttnApprox;
                break;
            case OpClass::Sampling:
                r.name = OpName::Sampling;
                break;
            case OpClass::GatherScatter:
                r.name = OpName::GatherScatter;
                break;
            case OpClass::Cosine:
                r.name = OpName::Cosine;
                break;
            case OpClass::Residual:
                r.name = OpName::Residual;
                break;
            default:
                r.name = OpName::Other;
                break;
        }
        if (!r.is_gemm()) r.m = r.n = r.k = 0;
    }
    return out;
}

}  // namespace dyllm::app
