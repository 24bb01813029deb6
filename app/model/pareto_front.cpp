// Pareto front over two "higher is better" coordinates (app/model/pareto_front.h): the plain O(n^2) test, the sweeps
// hold a few dozen points.
#include "app/model/pareto_front.h"

#include <algorithm>
#include <cmath>

namespace dyllm::app {

namespace {
bool usable(const ParetoInput& p) {
    return p.valid && !std::isnan(p.x) && !std::isnan(p.y);
}
}  // namespace

std::vector<bool> pareto_front(const std::vector<ParetoInput>& pts) {
    std::vector<bool> front(pts.size(), false);
    for (size_t i = 0; i < pts.size(); ++i) {
        if (!usable(pts[i])) continue;
        bool dominated = false;
        for (size_t j = 0; j < pts.size() && !dominated; ++j) {
            if (j == i || !usable(pts[j])) continue;
            const ParetoInput &p = pts[i], &q = pts[j];
            dominated = q.x >= p.x && q.y >= p.y && (q.x > p.x || q.y > p.y);
        }
        front[i] = !dominated;
    }
    return front;
}

std::vector<size_t> pareto_order(const std::vector<ParetoInput>& pts, const std::vector<bool>& front) {
    std::vector<size_t> idx;
    for (size_t i = 0; i < pts.size() && i < front.size(); ++i)
        if (front[i]) idx.push_back(i);
    std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
        return pts[a].x != pts[b].x ? pts[a].x < pts[b].x : pts[a].y < pts[b].y;
    });
    return idx;
}

}  // namespace dyllm::app
