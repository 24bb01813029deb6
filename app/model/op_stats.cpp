// Per-op statistics over a range of steps (app/model/op_stats.h).
#include "app/model/op_stats.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <utility>

#include "app/model/op_preempt.h"

namespace dyllm::app {

int run_n_embd(const RunHistory& h) {
    const std::string v = h.env("n_embd");
    try {
        return v.empty() ? 0 : std::max(0, std::stoi(v));
    } catch (...) {
        return 0;  // a malformed environment value only costs the shapes
    }
}

std::vector<OpStat> op_stats(const RunHistory& h, int lo, int hi, bool by_layer, bool exclude_preempted,
                             bool outside_ops) {
    const int n_embd = run_n_embd(h);
    lo               = std::max(lo, 1);
    hi               = std::min(hi, h.step_count());
    std::map<std::pair<int, int>, std::vector<double>> durs;  // (name, layer) -> durations
    std::map<std::pair<int, int>, OpStat>              acc;
    double                                             all = 0;
    for (int k = lo; k <= hi; ++k) {
        const StepData* sd = h.step(k);
        if (!sd) continue;
        const auto names = name_ops(sd->ops, n_embd);
        for (size_t i = 0; i < sd->ops.size(); ++i) {
            const OpTiming& o   = sd->ops[i];
            const NamedOp&  nm  = names[i];
            const auto      key = std::make_pair(int(nm.name), by_layer ? o.layer : -2);
            OpStat&         s   = acc[key];
            const double    t   = double(o.dur_ns) * 1e-9;
            s.name              = nm.name;
            s.layer             = key.second;
            durs[key];  // the row stays even when every sample is excluded
            const bool pre = op_preempted(o);
            s.preempted += pre;
            if (pre && exclude_preempted) continue;
            s.split += o.split;
            if (o.cpu_ns >= 0) {
                s.cpu_s += double(o.cpu_ns) * 1e-9;
                ++s.cpu_count;
            }
            s.flops += o.flops;
            s.bytes += o.bytes;
            s.total_s += t;
            if (nm.is_gemm() && nm.m >= s.m) {
                s.m = nm.m;
                s.n = nm.n;
                s.k = nm.k;
            }
            durs[key].push_back(t);
            if (t >
                s.max_s) {  // max_s is the running maximum here; the final pass sets it again from the sorted samples
                s.max_s    = t;
                s.max_step = k;
            }
            all += t;
        }
        if (outside_ops && sd->ended) {
            const auto key = std::make_pair(int(OpName::Count), -1);
            OpStat&    s   = acc[key];
            s.name         = OpName::Count;
            s.layer        = -1;
            s.total_s += sd->outside_ops_seconds();
            if (sd->outside_ops_seconds() > s.max_s) {
                s.max_s    = sd->outside_ops_seconds();
                s.max_step = k;
            }
            durs[key].push_back(sd->outside_ops_seconds());
            all += sd->outside_ops_seconds();
        }
    }
    std::vector<OpStat> out;
    for (auto& [key, s] : acc) {
        std::vector<double>& d = durs[key];
        std::sort(d.begin(), d.end());
        s.count = int(d.size());
        if (!d.empty()) {
            s.mean_s   = s.total_s / double(d.size());
            s.median_s = d.size() % 2 ? d[d.size() / 2] : 0.5 * (d[d.size() / 2 - 1] + d[d.size() / 2]);
            s.min_s    = d.front();
            s.max_s    = d.back();
            double ss  = 0;
            for (double x : d) ss += (x - s.mean_s) * (x - s.mean_s);
            s.sigma_s        = std::sqrt(ss / double(d.size()));
            const double pos = 0.9 * double(d.size() - 1);  // linear interpolation between order statistics
            const size_t i   = size_t(pos);
            s.p90_s          = i + 1 < d.size() ? d[i] + (pos - double(i)) * (d[i + 1] - d[i]) : d[i];
        }
        s.share = all > 0 ? s.total_s / all : 0.0;
        s.label = s.name == OpName::Count ? "outside ops" : op_name_text(s.name);
        if (s.layer >= 0) s.label += " L" + std::to_string(s.layer);
        out.push_back(std::move(s));
    }
    return out;
}

void sort_stats(std::vector<OpStat>& v, StatColumn c, bool ascending) {
    auto key = [c](const OpStat& s) -> double {
        switch (c) {
            case StatColumn::Count:
                return s.count;
            case StatColumn::Total:
                return s.total_s;
            case StatColumn::Mean:
                return s.mean_s;
            case StatColumn::Median:
                return s.median_s;
            case StatColumn::Min:
                return s.min_s;
            case StatColumn::Max:
                return s.max_s;
            case StatColumn::Share:
                return s.share;
            case StatColumn::GFlops:
                return s.gflops_per_s();
            case StatColumn::GBytes:
                return s.gbytes_per_s();
            case StatColumn::CpuMean:
                return s.cpu_mean_s();
            case StatColumn::Preempted:
                return s.preempted;
            case StatColumn::Sigma:
                return s.sigma_s;
            case StatColumn::P90:
                return s.p90_s;
            case StatColumn::Label:
                break;
        }
        return 0.0;
    };
    std::stable_sort(v.begin(), v.end(), [&](const OpStat& a, const OpStat& b) {
        if (c == StatColumn::Label) {  // model order (op name, then layer), not alphabetical
            const auto ka = std::make_pair(int(a.name), a.layer), kb = std::make_pair(int(b.name), b.layer);
            return ascending ? ka < kb : kb < ka;
        }
        return ascending ? key(a) < key(b) : key(b) < key(a);
    });
}

bool stat_matches(const OpStat& s, std::string_view filter) {
    if (filter.empty()) return true;
    auto lower = [](std::string_view t) {
        std::string r(t);
        for (char& ch : r) ch = char(std::tolower(static_cast<unsigned char>(ch)));
        return r;
    };
    return lower(s.label).find(lower(filter)) != std::string::npos;
}

bool parse_op_label(std::string_view label, int* name, int* layer) {
    int              l    = -2;
    std::string_view head = label;
    if (const size_t sp = label.rfind(" L"); sp != std::string_view::npos && label != "outside ops") {
        const std::string_view num = label.substr(sp + 2);
        if (num.empty() || num.size() > 6 ||
            !std::all_of(num.begin(), num.end(), [](char c) { return c >= '0' && c <= '9'; }))
            return false;
        l    = std::stoi(std::string(num));
        head = label.substr(0, sp);
    }
    int n = -1;
    if (head == "outside ops" && l == -2) n = int(OpName::Count);
    for (size_t i = 0; i < kOpNames && n < 0; ++i)
        if (head == op_name_text(OpName(i))) n = int(i);
    if (n < 0) return false;
    if (name) *name = n;
    if (layer) *layer = n == int(OpName::Count) ? -1 : l;
    return true;
}

bool op_matches(OpName name, int layer, std::string_view filter) {
    if (filter.empty()) return true;
    OpStat s;
    s.label = op_name_text(name);
    if (stat_matches(s, filter)) return true;
    if (layer < 0) return false;
    s.label += " L" + std::to_string(layer);
    return stat_matches(s, filter);
}

std::string op_stats_csv(const std::vector<OpStat>& v) {
    std::string out =
        "op,layer,count,total_ms,mean_ms,median_ms,min_ms,max_ms,sigma_ms,p90_ms,cpu_mean_ms,preempted,share,"
        "gflops_per_s,gbytes_per_s,m,n,k,slowest_step\n";
    char buf[512];
    for (const OpStat& s : v) {
        const std::string name = s.name == OpName::Count ? "outside ops" : op_name_text(s.name);
        std::snprintf(buf, sizeof buf,
                      "%s,%d,%d,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%d,%.6f,%.4f,%.4f,%lld,%lld,%lld,%d\n",
                      name.c_str(), s.layer, s.count, s.total_s * 1e3, s.mean_s * 1e3, s.median_s * 1e3, s.min_s * 1e3,
                      s.max_s * 1e3, s.sigma_s * 1e3, s.p90_s * 1e3, s.cpu_mean_s() * 1e3, s.preempted, s.share,
                      s.gflops_per_s(), s.gbytes_per_s(), (long long)s.m, (long long)s.n, (long long)s.k, s.max_step);
        out += buf;
    }
    return out;
}

}  // namespace dyllm::app
