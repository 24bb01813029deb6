// The tau control's log(1 - tau) mapping, text, parser and step (app/model/tau_scale.h).
#include "app/model/tau_scale.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "engine/params.h"

namespace dyllm::app {

float tau_to_slider(float tau) {
    const double d = 1.0 - double(tau);
    if (!(d > 0)) return kTauSliderMax;  // tau >= 1 or NaN: the top end
    return std::clamp(float(-std::log10(d)), kTauSliderMin, kTauSliderMax);
}

float slider_to_tau(float u) {
    u = std::clamp(u, kTauSliderMin, kTauSliderMax);
    return float(1.0 - std::pow(10.0, -double(u)));
}

std::string tau_text(float tau) {
    if (!std::isfinite(tau)) return "default";
    char buf[32];
    // 9 significant digits always round-trip a float; the first shorter one that does is the text.
    for (int prec = 1; prec <= 9; ++prec) {
        std::snprintf(buf, sizeof buf, "%.*g", prec, double(tau));
        if (std::strtof(buf, nullptr) == tau) break;
    }
    return buf;
}

bool parse_tau(std::string_view text, float* tau, std::string* error) {
    const ParamSpec*  spec = find_param("tau");
    const double      lo = spec ? spec->lo : -1.0, hi = spec ? spec->hi : 2.0;
    const std::string s(text);
    char*             end = nullptr;
    errno                 = 0;
    const double v        = std::strtod(s.c_str(), &end);
    while (end && (*end == ' ' || *end == '\t')) ++end;
    char range[96];
    std::snprintf(range, sizeof range, "a number in [%g, %g]", lo, hi);
    if (s.empty() || end == s.c_str() || *end != '\0' || errno == ERANGE || !std::isfinite(v)) {
        *error = "tau: '" + s + "' is not a number; expected " + range;
        return false;
    }
    if (v < lo || v > hi) {
        *error = "tau: " + s + " is out of range; expected " + range;
        return false;
    }
    *tau = float(v);
    return true;
}

float tau_step(float tau, int dir, bool fine) {
    const double tmin = 1.0 - std::pow(10.0, -double(kTauSliderMin));
    const double tmax = 1.0 - std::pow(10.0, -double(kTauSliderMax));
    // A float tau near 1 carries 1 - tau with a relative error up to 6e-3 (at 0.99999): snap it to two significant
    // digits first, so the grid below is exact.
    auto snap = [](double d) {
        const double q = std::pow(10.0, std::floor(std::log10(d)) - 1);
        return std::round(d / q) * q;
    };
    double d = snap(1.0 - std::clamp(double(tau), tmin, tmax));
    // The decade of the value the step goes to: towards 1 from d = 0.01 the step is 0.001 (0.99 -> 0.991).
    const double probe = dir > 0 ? d * (1 - 1e-9) : d * (1 + 1e-9);
    const double step  = std::pow(10.0, std::floor(std::log10(probe))) * (fine ? 0.1 : 1.0);
    if (dir > 0)
        d = (std::ceil(d / step - 1e-6) - 1) * step;  // the next grid value below d
    else
        d = (std::floor(d / step + 1e-6) + 1) * step;  // the next grid value above d
    if (!(d > 0)) return float(tmax);
    return float(std::clamp(1.0 - snap(d), tmin, tmax));
}

}  // namespace dyllm::app
