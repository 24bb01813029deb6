// Reference logit scoring: a banned mask for the argmax (first maximum), and an fp64 softmax over every id.
#include "kernels/cpu/ref/score_logits.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace dyllm::cpu::ref {

void score_logits(CMatF logits, ScoreRule rule, const int32_t* banned, int64_t n_banned, int32_t* tokens,
                  float* scores) {
    std::vector<bool> ban(size_t(logits.cols), false);
    for (int64_t t = 0; t < n_banned; ++t) ban[size_t(banned[t])] = true;
    for (int64_t i = 0; i < logits.rows; ++i) {
        const float* r    = logits.row(i);
        int32_t      best = -1;
        for (int64_t v = 0; v < logits.cols; ++v)
            if (!ban[size_t(v)] && (best < 0 || r[v] > r[best])) best = int32_t(v);
        tokens[i] = best;
        if (best < 0) {
            scores[i] = -INFINITY;
            continue;
        }
        double m = r[0];
        for (int64_t v = 1; v < logits.cols; ++v) m = std::max(m, double(r[v]));
        double l = 0.0;
        for (int64_t v = 0; v < logits.cols; ++v) l += std::exp(double(r[v]) - m);
        if (rule == ScoreRule::Confidence) {
            scores[i] = float(std::exp(double(r[best]) - m) / l);
        } else {
            double h = 0.0;
            for (int64_t v = 0; v < logits.cols; ++v) {
                const double p = std::exp(double(r[v]) - m) / l;
                h += p * std::log(p + 1e-10);  // engine/README.md §a.9 step 4: log(p + 1e-10)
            }
            scores[i] = float(h);
        }
    }
}

}  // namespace dyllm::cpu::ref
