// Optimised RoPE: cos/sin from a per-thread table of the positions seen (shared by all heads, rows and layers), then a
// vectorisable rotation of each head's two halves. Bitwise equal to the reference (same fp32 formulas, same order).
#include "kernels/cpu/rope.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/common/scalar_math.h"
#include "kernels/cpu/simd.h"

namespace dyllm::cpu {

namespace {
DYLLM_CPU_CLONES void rotate_heads(float* xr, int n_head, int head_dim, const float* cs, const float* sn) {
    const int half = head_dim / 2;
    for (int h = 0; h < n_head; ++h) {
        float* x1 = xr + int64_t(h) * head_dim;
        float* x2 = x1 + half;
        for (int c = 0; c < half; ++c) {
            const float a = x1[c] * cs[c] - x2[c] * sn[c];
            const float b = x2[c] * cs[c] + x1[c] * sn[c];
            x1[c]         = a;
            x2[c]         = b;
        }
    }
}
}  // namespace

// cos and sin of every (position, pair) angle seen so far for one (head_dim, theta), computed with the same fp32
// formulas as the reference and kept per thread: a step rotates the same positions in every layer (and the next step
// mostly the same ones again), and the cosf/sinf pair per element was 1-2% of a step. Grows, never shrinks.
constexpr int64_t kRopeTableMaxPos = int64_t(1) << 20;  // positions tabulated (1 Mi x head_dim floats at most)

struct RopeTable {
    int                head_dim = 0;
    float              theta    = 0;
    int64_t            n_pos    = 0;  // positions [0, n_pos) filled
    std::vector<float> inv, cs, sn;   // inv[half]; cs/sn[n_pos * half]

    void reset(int hd, float th) {
        head_dim       = hd;
        theta          = th;
        n_pos          = 0;
        const int half = hd / 2;
        inv.resize(size_t(half));
        for (int c = 0; c < half; ++c) inv[size_t(c)] = rope_inv_freq(c, hd, th);
        cs.clear();
        sn.clear();
    }
    void cover(int64_t pos) {
        if (pos < n_pos) return;
        const int     half = head_dim / 2;
        const int64_t grow = std::max<int64_t>(pos + 1, 2 * n_pos);
        cs.resize(size_t(grow * half));
        sn.resize(size_t(grow * half));
        for (int64_t p = n_pos; p < grow; ++p)
            for (int c = 0; c < half; ++c) {
                const float a            = float(p) * inv[size_t(c)];
                cs[size_t(p * half + c)] = cosf(a);
                sn[size_t(p * half + c)] = sinf(a);
            }
        n_pos = grow;
    }
};

void rope(MatF x, const int32_t* positions, int n_head, int head_dim, float theta, ThreadPool& pool) {
    if (x.rows == 0) return;
    thread_local RopeTable t;
    if (t.head_dim != head_dim || t.theta != theta) t.reset(head_dim, theta);
    int64_t min_pos = 0, max_pos = 0;
    for (int64_t i = 0; i < x.rows; ++i) {
        min_pos = std::min<int64_t>(min_pos, positions[i]);
        max_pos = std::max<int64_t>(max_pos, positions[i]);
    }
    const int half = head_dim / 2;
    if (min_pos < 0 || max_pos >= kRopeTableMaxPos) {  // outside any context the engine runs: angles row by row
        thread_local std::vector<float> cs, sn;
        cs.resize(size_t(half));
        sn.resize(size_t(half));
        for (int64_t i = 0; i < x.rows; ++i) {
            for (int c = 0; c < half; ++c) {
                const float a = float(positions[i]) * t.inv[size_t(c)];
                cs[size_t(c)] = cosf(a);
                sn[size_t(c)] = sinf(a);
            }
            rotate_heads(x.row(i), n_head, head_dim, cs.data(), sn.data());
        }
        return;
    }
    t.cover(max_pos);  // on the calling thread: the tasks only read the table
    const float *cs = t.cs.data(), *sn = t.sn.data();
    // Split by rows: split by heads, the two threads wrote alternate halves of every row and ran 2x slower than one
    // thread (the lines of each row moved between the cores; tiny-llada's [336, 128], 2-core Zen 3), while row halves
    // ran 1.2-1.3x faster. About two streaming element-operations per element (four products and two sums per pair,
    // the table reads).
    pool.parallel_rows_warm(x.rows, 2 * x.rows * x.cols, [&](int64_t r0, int64_t r1) {
        for (int64_t i = r0; i < r1; ++i) {
            const size_t off = size_t(int64_t(positions[i]) * half);
            rotate_heads(x.row(i), n_head, head_dim, cs + off, sn + off);
        }
    });
}

}  // namespace dyllm::cpu
