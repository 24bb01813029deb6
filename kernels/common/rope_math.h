// RoPE angle of one (position, pair) in fp32, shared by the CPU ops and the CUDA rope kernel. The CUDA backend
// precomputes the inverse-frequency table on the host with rope_inv_freq, so both backends rotate by bit-identical
// angles and differ only in sinf/cosf.
#pragma once
#include "kernels/common/hd.h"
#include "kernels/common/scalar_math.h"

namespace dyllm {

// Angle of pair i at position pos: pos * theta^(-2i / head_dim), the fp32 product HF computes (kernels/README.md
// §f.10).
DYLLM_HD float rope_angle(int pos, float inv_freq) {
    return float(pos) * inv_freq;
}

// Rotates one head in place: x[c], x[c + D/2] for c < D/2 (rotate-half). inv_freq: [D/2].
DYLLM_HD void rope_rotate_head(float* x, int head_dim, int pos, const float* inv_freq) {
    const int half = head_dim / 2;
    for (int c = 0; c < half; ++c) {
        const float a = rope_angle(pos, inv_freq[c]);
        rope_rotate_pair(x[c], x[c + half], cosf(a), sinf(a));
    }
}

}  // namespace dyllm
