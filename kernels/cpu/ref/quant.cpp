// Row quantizers and dequantizers for ggml's block types, written from the format's definition; the scale choices
// follow ggml's reference quantizers so that a file written here quantizes as llama.cpp's own tools would.
#include "kernels/cpu/ref/quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/common/dtype_convert.h"

namespace dyllm::cpu {

namespace {

// Below this a group's largest magnitude counts as zero (its scale would overflow 1 / d).
constexpr float kGroupMaxEps = 1e-15f;

// Round to nearest, ties to even (the rounding of ggml's K-quant searches), for |v| < 2^22: adding 1.5 * 2^23 puts
// the integer part in the low mantissa bits under the default rounding mode; a library call per element (nearbyintf)
// made the scale searches several times slower.
int nearest(float v) {
    float t = v + 12582912.0f;
    int   i;
    std::memcpy(&i, &t, sizeof i);
    return (i & 0x007fffff) - 0x00400000;
}

float h2f(uint16_t h) {
    return f16_to_f32(h);
}
uint16_t f2h(float f) {
    return f32_to_f16(f);
}

void quantize_q8_0(const float* x, BlockQ8_0* y, int64_t nb) {
    for (int64_t b = 0; b < nb; ++b, x += kQuantBlock32) {
        float amax = 0.0f;
        for (int j = 0; j < kQuantBlock32; ++j) amax = std::max(amax, std::fabs(x[j]));
        const float d  = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d         = f2h(d);
        for (int j = 0; j < kQuantBlock32; ++j) y[b].qs[j] = int8_t(std::round(x[j] * id));
    }
}

void quantize_q4_0(const float* x, BlockQ4_0* y, int64_t nb) {
    for (int64_t b = 0; b < nb; ++b, x += kQuantBlock32) {
        // The signed value of largest magnitude maps to -8, so the full range [-8, 7] is used on that side.
        float amax = 0.0f, vmax = 0.0f;
        for (int j = 0; j < kQuantBlock32; ++j)
            if (std::fabs(x[j]) > amax) {
                amax = std::fabs(x[j]);
                vmax = x[j];
            }
        const float d  = vmax / -8.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[b].d         = f2h(d);
        auto q         = [&](float v) { return uint8_t(std::min(15, int(int8_t(v * id + 8.5f)))); };
        for (int j = 0; j < kQuantBlock32 / 2; ++j) y[b].qs[j] = uint8_t(q(x[j]) | (q(x[j + kQuantBlock32 / 2]) << 4));
    }
}

// Scale and min (x ~ scale * L - min, L in [0, nmax]) of n values minimising the weighted squared error: a start
// from the range, then nstep + 1 trial scales around it, each refitted by weighted least squares. Returns the scale
// and sets *neg_min to the min's magnitude (the min is never above 0).
float fit_scale_min(int n, int nmax, const float* x, const float* w, uint8_t* L, float* neg_min, float rmin,
                    float rdelta, int nstep) {
    float lo = x[0], hi = x[0], sum_w = w[0], sum_x = w[0] * x[0];
    for (int i = 1; i < n; ++i) {
        lo = std::min(lo, x[i]);
        hi = std::max(hi, x[i]);
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    lo = std::min(lo, 0.0f);
    if (hi == lo) {
        std::fill(L, L + n, uint8_t(0));
        *neg_min = -lo;
        return 0.0f;
    }
    float iscale = float(nmax) / (hi - lo);
    float scale  = 1.0f / iscale;
    float best   = 0.0f;
    for (int i = 0; i < n; ++i) {
        L[i]          = uint8_t(std::clamp(nearest(iscale * (x[i] - lo)), 0, nmax));
        const float e = scale * L[i] + lo - x[i];
        best += w[i] * e * e;
    }
    uint8_t trial[32];
    for (int s = 0; s <= nstep; ++s) {
        iscale      = (rmin + rdelta * float(s) + float(nmax)) / (hi - lo);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; ++i) {
            const int l = std::clamp(nearest(iscale * (x[i] - lo)), 0, nmax);
            trial[i]    = uint8_t(l);
            sum_l += w[i] * float(l);
            sum_l2 += w[i] * float(l) * float(l);
            sum_xl += w[i] * float(l) * x[i];
        }
        const float det = sum_w * sum_l2 - sum_l * sum_l;
        if (det <= 0) continue;
        float sc = (sum_w * sum_xl - sum_x * sum_l) / det;
        float mn = (sum_l2 * sum_x - sum_l * sum_xl) / det;
        if (mn > 0) {
            mn = 0;
            sc = sum_xl / sum_l2;
        }
        float err = 0;
        for (int i = 0; i < n; ++i) {
            const float e = sc * trial[i] + mn - x[i];
            err += w[i] * e * e;
        }
        if (err < best) {
            std::copy(trial, trial + n, L);
            best  = err;
            scale = sc;
            lo    = mn;
        }
    }
    *neg_min = -lo;
    return scale;
}

// The shared part of Q4_K and Q5_K: 8 sub-block scales and mins fitted, quantized to 6 bits against the block's
// largest, packed into scales[12]; L[256] receives each element's level in [0, nmax] under the quantized scales.
void quantize_k_scales(const float* x, int nmax, float rmin, int nstep, uint16_t* d, uint16_t* dmin, uint8_t* packed,
                       uint8_t* L) {
    float sc[8], mn[8], w[32];
    float max_sc = 0, max_mn = 0;
    for (int j = 0; j < 8; ++j) {
        const float* xs  = x + 32 * j;
        float        sx2 = 0;
        for (int l = 0; l < 32; ++l) sx2 += xs[l] * xs[l];
        const float av = std::sqrt(sx2 / 32);
        for (int l = 0; l < 32; ++l) w[l] = av + std::fabs(xs[l]);
        sc[j]  = fit_scale_min(32, nmax, xs, w, L + 32 * j, &mn[j], rmin, 0.1f, nstep);
        max_sc = std::max(max_sc, sc[j]);
        max_mn = std::max(max_mn, mn[j]);
    }
    const float inv_sc = max_sc > 0 ? 63.0f / max_sc : 0.0f;
    const float inv_mn = max_mn > 0 ? 63.0f / max_mn : 0.0f;
    std::memset(packed, 0, kQuantKScales);
    for (int j = 0; j < 8; ++j) {
        const uint8_t ls = uint8_t(std::min(63, nearest(inv_sc * sc[j])));
        const uint8_t lm = uint8_t(std::min(63, nearest(inv_mn * mn[j])));
        if (j < 4) {
            packed[j]     = ls;
            packed[j + 4] = lm;
        } else {
            packed[j + 4] = uint8_t((ls & 0xF) | ((lm & 0xF) << 4));
            packed[j - 4] |= uint8_t((ls >> 4) << 6);
            packed[j] |= uint8_t((lm >> 4) << 6);
        }
    }
    *d    = f2h(max_sc / 63.0f);
    *dmin = f2h(max_mn / 63.0f);
    for (int j = 0; j < 8; ++j) {
        uint8_t s, m;
        quant_k_scale_min(j, packed, &s, &m);
        const float dj = h2f(*d) * s;
        if (dj == 0.0f) continue;
        const float mj = h2f(*dmin) * m;
        for (int l = 0; l < 32; ++l) L[32 * j + l] = uint8_t(std::clamp(nearest((x[32 * j + l] + mj) / dj), 0, nmax));
    }
}

void quantize_q4_k(const float* x, BlockQ4_K* y, int64_t nb) {
    uint8_t L[kQuantBlockK];
    for (int64_t b = 0; b < nb; ++b, x += kQuantBlockK) {
        quantize_k_scales(x, 15, -1.0f, 20, &y[b].d, &y[b].dmin, y[b].scales, L);
        for (int g = 0; g < 4; ++g)
            for (int l = 0; l < 32; ++l) y[b].qs[32 * g + l] = uint8_t(L[64 * g + l] | (L[64 * g + 32 + l] << 4));
    }
}

void quantize_q5_k(const float* x, BlockQ5_K* y, int64_t nb) {
    uint8_t L[kQuantBlockK];
    for (int64_t b = 0; b < nb; ++b, x += kQuantBlockK) {
        quantize_k_scales(x, 31, -0.5f, 15, &y[b].d, &y[b].dmin, y[b].scales, L);
        std::memset(y[b].qh, 0, sizeof y[b].qh);
        for (int g = 0; g < 4; ++g)
            for (int l = 0; l < 32; ++l) {
                const int lo = L[64 * g + l], hi = L[64 * g + 32 + l];
                y[b].qs[32 * g + l] = uint8_t((lo & 0xF) | ((hi & 0xF) << 4));
                y[b].qh[l] |= uint8_t(((lo >> 4) << (2 * g)) | ((hi >> 4) << (2 * g + 1)));
            }
    }
}

// Scale of 16 values for levels in [-nmax, nmax - 1] maximising the x^2-weighted fit: the extreme's scale, then 18
// trial scales around it, each refitted by weighted least squares. L receives level + nmax.
float fit_scale_sym(int n, int nmax, const float* x, int8_t* L) {
    float amax = 0, vmax = 0;
    for (int i = 0; i < n; ++i)
        if (std::fabs(x[i]) > amax) {
            amax = std::fabs(x[i]);
            vmax = x[i];
        }
    if (amax < kGroupMaxEps) {
        std::fill(L, L + n, int8_t(0));
        return 0.0f;
    }
    auto  level  = [&](float is, int i) { return std::clamp(nearest(is * x[i]), -nmax, nmax - 1); };
    float iscale = -float(nmax) / vmax;
    float sum_lx = 0, sum_l2 = 0;
    for (int i = 0; i < n; ++i) {
        const int   l = level(iscale, i);
        const float w = x[i] * x[i];
        L[i]          = int8_t(l + nmax);
        sum_lx += w * x[i] * float(l);
        sum_l2 += w * float(l) * float(l);
    }
    float scale = sum_l2 != 0 ? sum_lx / sum_l2 : 0.0f;
    float best  = scale * sum_lx;
    for (int s = -9; s <= 9; ++s) {
        if (s == 0) continue;
        iscale = -(float(nmax) + 0.1f * float(s)) / vmax;
        sum_lx = sum_l2 = 0;
        for (int i = 0; i < n; ++i) {
            const int   l = level(iscale, i);
            const float w = x[i] * x[i];
            sum_lx += w * x[i] * float(l);
            sum_l2 += w * float(l) * float(l);
        }
        if (sum_l2 > 0 && sum_lx * sum_lx > best * sum_l2) {
            for (int i = 0; i < n; ++i) L[i] = int8_t(level(iscale, i) + nmax);
            scale = sum_lx / sum_l2;
            best  = scale * sum_lx;
        }
    }
    return scale;
}

void quantize_q6_k(const float* x, BlockQ6_K* y, int64_t nb) {
    int8_t L[kQuantBlockK];
    float  sc[16];
    for (int64_t b = 0; b < nb; ++b, x += kQuantBlockK) {
        float max_sc = 0, max_abs = 0;
        for (int j = 0; j < 16; ++j) {
            sc[j] = fit_scale_sym(16, 32, x + 16 * j, L + 16 * j);
            if (std::fabs(sc[j]) > max_abs) {
                max_abs = std::fabs(sc[j]);
                max_sc  = sc[j];
            }
        }
        std::memset(&y[b], 0, sizeof y[b]);
        if (max_abs < kGroupMaxEps) continue;  // an all-zero block: d = 0
        const float iscale = -128.0f / max_sc;
        y[b].d             = f2h(1.0f / iscale);
        for (int j = 0; j < 16; ++j) y[b].scales[j] = int8_t(std::min(127, nearest(iscale * sc[j])));
        for (int j = 0; j < 16; ++j) {
            const float dj = h2f(y[b].d) * float(y[b].scales[j]);
            if (dj == 0.0f) continue;
            for (int l = 0; l < 16; ++l) L[16 * j + l] = int8_t(std::clamp(nearest(x[16 * j + l] / dj), -32, 31) + 32);
        }
        for (int h = 0; h < 2; ++h) {
            const int8_t* Lh = L + 128 * h;
            uint8_t*      ql = y[b].ql + 64 * h;
            uint8_t*      qh = y[b].qh + 32 * h;
            for (int l = 0; l < 32; ++l) {
                const int q0 = Lh[l], q1 = Lh[l + 32], q2 = Lh[l + 64], q3 = Lh[l + 96];
                ql[l]      = uint8_t((q0 & 0xF) | ((q2 & 0xF) << 4));
                ql[l + 32] = uint8_t((q1 & 0xF) | ((q3 & 0xF) << 4));
                qh[l]      = uint8_t((q0 >> 4) | ((q1 >> 4) << 2) | ((q2 >> 4) << 4) | ((q3 >> 4) << 6));
            }
        }
    }
}

void dequantize_q8_0(const BlockQ8_0* x, float* y, int64_t nb) {
    for (int64_t b = 0; b < nb; ++b, y += kQuantBlock32) {
        const float d = h2f(x[b].d);
        for (int j = 0; j < kQuantBlock32; ++j) y[j] = d * float(x[b].qs[j]);
    }
}

void dequantize_q4_0(const BlockQ4_0* x, float* y, int64_t nb) {
    for (int64_t b = 0; b < nb; ++b, y += kQuantBlock32) {
        const float d = h2f(x[b].d);
        for (int j = 0; j < kQuantBlock32 / 2; ++j) {
            y[j]                     = d * float((x[b].qs[j] & 0xF) - 8);
            y[j + kQuantBlock32 / 2] = d * float((x[b].qs[j] >> 4) - 8);
        }
    }
}

void dequantize_q4_k(const BlockQ4_K* x, float* y, int64_t nb) {
    for (int64_t b = 0; b < nb; ++b) {
        const float d = h2f(x[b].d), dmin = h2f(x[b].dmin);
        for (int g = 0; g < 4; ++g) {
            uint8_t s0, m0, s1, m1;
            quant_k_scale_min(2 * g, x[b].scales, &s0, &m0);
            quant_k_scale_min(2 * g + 1, x[b].scales, &s1, &m1);
            const float    d0 = d * s0, n0 = dmin * m0, d1 = d * s1, n1 = dmin * m1;
            const uint8_t* q = x[b].qs + 32 * g;
            for (int l = 0; l < 32; ++l) *y++ = d0 * float(q[l] & 0xF) - n0;
            for (int l = 0; l < 32; ++l) *y++ = d1 * float(q[l] >> 4) - n1;
        }
    }
}

void dequantize_q5_k(const BlockQ5_K* x, float* y, int64_t nb) {
    for (int64_t b = 0; b < nb; ++b) {
        const float d = h2f(x[b].d), dmin = h2f(x[b].dmin);
        for (int g = 0; g < 4; ++g) {
            uint8_t s0, m0, s1, m1;
            quant_k_scale_min(2 * g, x[b].scales, &s0, &m0);
            quant_k_scale_min(2 * g + 1, x[b].scales, &s1, &m1);
            const float    d0 = d * s0, n0 = dmin * m0, d1 = d * s1, n1 = dmin * m1;
            const uint8_t* q  = x[b].qs + 32 * g;
            const uint8_t* qh = x[b].qh;
            for (int l = 0; l < 32; ++l) *y++ = d0 * float((q[l] & 0xF) | (((qh[l] >> (2 * g)) & 1) << 4)) - n0;
            for (int l = 0; l < 32; ++l) *y++ = d1 * float((q[l] >> 4) | (((qh[l] >> (2 * g + 1)) & 1) << 4)) - n1;
        }
    }
}

void dequantize_q6_k(const BlockQ6_K* x, float* y, int64_t nb) {
    for (int64_t b = 0; b < nb; ++b) {
        const float d = h2f(x[b].d);
        for (int h = 0; h < 2; ++h, y += 128) {
            const uint8_t* ql = x[b].ql + 64 * h;
            const uint8_t* qh = x[b].qh + 32 * h;
            const int8_t*  sc = x[b].scales + 8 * h;
            for (int l = 0; l < 32; ++l) {
                const int is = l / 16;
                const int q0 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
                const int q1 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
                const int q2 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                const int q3 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                y[l]         = d * float(sc[is]) * float(q0);
                y[l + 32]    = d * float(sc[is + 2]) * float(q1);
                y[l + 64]    = d * float(sc[is + 4]) * float(q2);
                y[l + 96]    = d * float(sc[is + 6]) * float(q3);
            }
        }
    }
}

}  // namespace

void quantize_row(QuantType t, const float* x, void* y, int64_t n) {
    const int64_t nb = n / quant_block_elems(t);
    switch (t) {
        case QuantType::Q8_0:
            return quantize_q8_0(x, static_cast<BlockQ8_0*>(y), nb);
        case QuantType::Q4_0:
            return quantize_q4_0(x, static_cast<BlockQ4_0*>(y), nb);
        case QuantType::Q4_K:
            return quantize_q4_k(x, static_cast<BlockQ4_K*>(y), nb);
        case QuantType::Q5_K:
            return quantize_q5_k(x, static_cast<BlockQ5_K*>(y), nb);
        case QuantType::Q6_K:
            return quantize_q6_k(x, static_cast<BlockQ6_K*>(y), nb);
    }
}

void dequantize_row(QuantType t, const void* x, float* y, int64_t n) {
    const int64_t nb = n / quant_block_elems(t);
    switch (t) {
        case QuantType::Q8_0:
            return dequantize_q8_0(static_cast<const BlockQ8_0*>(x), y, nb);
        case QuantType::Q4_0:
            return dequantize_q4_0(static_cast<const BlockQ4_0*>(x), y, nb);
        case QuantType::Q4_K:
            return dequantize_q4_k(static_cast<const BlockQ4_K*>(x), y, nb);
        case QuantType::Q5_K:
            return dequantize_q5_k(static_cast<const BlockQ5_K*>(x), y, nb);
        case QuantType::Q6_K:
            return dequantize_q6_k(static_cast<const BlockQ6_K*>(x), y, nb);
    }
}

namespace ref {

void quant_matmul(CMatF x, QuantMat w, ConstMat bias, MatF y) {
    std::vector<float> wr(size_t(w.cols));
    for (int64_t o = 0; o < y.cols; ++o) {
        dequantize_row(w.type, w.row_ptr(o), wr.data(), w.cols);
        for (int64_t i = 0; i < y.rows; ++i) {
            double acc = bias.data ? double(bias.at(0, o)) : 0.0;
            for (int64_t c = 0; c < x.cols; ++c) acc += double(x.row(i)[c]) * double(wr[size_t(c)]);
            y.row(i)[o] = float(acc);
        }
    }
}

}  // namespace ref
}  // namespace dyllm::cpu
