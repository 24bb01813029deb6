// op_class_diff(): per-op-class time of two runs with the per-step spread (app/model/op_diff.h).
#include "app/model/op_diff.h"

#include <algorithm>
#include <array>

namespace dyllm::app {

Spread spread_of(std::vector<double> v) {
    Spread s;
    s.n = int(v.size());
    if (v.empty()) return s;
    std::sort(v.begin(), v.end());
    auto q = [&](double p) {
        const double pos = p * double(v.size() - 1);
        const size_t i   = size_t(pos);
        const double f   = pos - double(i);
        return i + 1 < v.size() ? v[i] + f * (v[i + 1] - v[i]) : v[i];
    };
    s.p10    = q(0.1);
    s.median = q(0.5);
    s.p90    = q(0.9);
    return s;
}

const char* diff_row_name(DiffRow r) {
    switch (r) {
        case DiffRow::OutsideOps:
            return "outside ops";
        case DiffRow::AllOps:
            return "all ops";
        case DiffRow::Wall:
            return "step wall";
        default:
            return "";
    }
}

namespace {

// Per-step seconds of each class, then outside ops, all ops and the wall (indices kOpClasses + 0..2), over the ended
// steps where it is > 0.
constexpr size_t                       kRows = kOpClasses + 3;
std::array<std::vector<double>, kRows> per_step(const RunHistory& h) {
    std::array<std::vector<double>, kRows> out;
    for (int k = 1; k <= h.step_count(); ++k) {
        const StepData* sd = h.step(k);
        if (!sd || !sd->ended) continue;
        for (size_t c = 0; c < kOpClasses; ++c)
            if (sd->op_seconds[c] > 0) out[c].push_back(sd->op_seconds[c]);
        const double extra[3] = {sd->outside_ops_seconds(), sd->ops_seconds(), sd->wall_seconds()};
        for (size_t i = 0; i < 3; ++i)
            if (extra[i] > 0) out[kOpClasses + i].push_back(extra[i]);
    }
    return out;
}

double sum(const std::vector<double>& v) {
    double t = 0;
    for (double x : v) t += x;
    return t;
}

}  // namespace

std::vector<OpClassDiff> op_class_diff(const RunHistory& a, const RunHistory& b) {
    const auto               sa = per_step(a), sb = per_step(b);
    std::vector<OpClassDiff> out;
    for (size_t c = 0; c < kRows; ++c) {
        if (sa[c].empty() && sb[c].empty()) continue;
        OpClassDiff d;
        d.row          = c < kOpClasses ? DiffRow::Class : DiffRow(c - kOpClasses + 1);
        d.op           = c < kOpClasses ? OpClass(c) : OpClass::Count;
        d.total_a      = sum(sa[c]);
        d.total_b      = sum(sb[c]);
        d.a            = spread_of(sa[c]);
        d.b            = spread_of(sb[c]);
        d.ratio        = d.total_a > 0 ? d.total_b / d.total_a : 0.0;
        d.median_ratio = d.a.median > 0 ? d.b.median / d.a.median : 0.0;
        out.push_back(d);
    }
    return out;
}

}  // namespace dyllm::app
