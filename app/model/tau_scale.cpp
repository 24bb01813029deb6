// log(1 - tau) slider mapping (app/model/tau_scale.h).
#include "app/model/tau_scale.h"

#include <algorithm>
#include <cmath>

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

}  // namespace dyllm::app
