// The unnormalised softmax weights of one query head over a sequence's keys, shared by the reference exact and
// approximate attention (both need the full normaliser over every key).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/cpu/mat.h"

namespace dyllm::cpu::ref {

// w[j - k0] = exp(scale * q . k_j - max) for keys j in [k0, k1) (key head at column kv_off, D wide), in fp64.
// Returns the sum of w (the softmax normaliser); 0 for an empty key range. *max_out (when given) gets the max score.
inline double attention_weights(const float* q, CMatF k, int64_t k0, int64_t k1, int64_t kv_off, int D, double scale,
                                std::vector<double>& w, double* max_out = nullptr) {
    w.assign(size_t(k1 - k0), 0.0);
    double m = -INFINITY;
    for (int64_t j = k0; j < k1; ++j) {
        double d = 0.0;
        for (int c = 0; c < D; ++c) d += double(q[c]) * double(k.row(j)[kv_off + c]);
        w[size_t(j - k0)] = d * scale;
        m                 = std::max(m, d * scale);
    }
    double l = 0.0;
    for (double& x : w) l += (x = std::exp(x - m));
    if (max_out) *max_out = m;
    return l;
}

}  // namespace dyllm::cpu::ref
