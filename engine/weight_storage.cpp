// Storage types per tensor class and streamed bytes (engine/weight_storage.h).
#include "engine/weight_storage.h"

#include <algorithm>
#include <vector>

namespace dyllm {

namespace {

void add_type(std::vector<DType>& types, const TensorView& v) {
    if (v.data && std::find(types.begin(), types.end(), v.dtype) == types.end()) types.push_back(v.dtype);
}

std::string join(const char* label, const std::vector<DType>& types) {
    std::string s(label);
    for (size_t i = 0; i < types.size(); ++i) s.append(i ? "/" : " ").append(dtype_name(types[i]));
    return s;
}

}  // namespace

std::string weight_storage_text(const ModelWeights& w) {
    std::vector<DType> embd, attn, ffn, head;
    add_type(embd, w.tok_embd);
    for (const LayerWeights& l : w.layers) {
        for (const TensorView* v : {&l.wq, &l.wk, &l.wv, &l.wo}) add_type(attn, *v);
        for (const TensorView* v : {&l.w_gate, &l.w_up, &l.w_down}) add_type(ffn, *v);
    }
    add_type(head, w.lm_head);
    const bool tied = w.lm_head.data && w.lm_head.data == w.tok_embd.data;
    return join("embd", embd) + ", " + join("attn", attn) + ", " + join("ffn", ffn) + ", " +
           (tied ? std::string("head tied") : join("head", head));
}

uint64_t weight_streamed_bytes(const ModelWeights& w) {
    uint64_t b = w.lm_head.data ? w.lm_head.bytes() : 0;
    for (const LayerWeights& l : w.layers)
        for (const TensorView* v : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down})
            if (v->data) b += v->bytes();
    return b;
}

}  // namespace dyllm
