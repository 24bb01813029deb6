// Colormap implementations (viridis polynomial fit, diverging map, RGBA packing in ImGui's byte order).
#include "app/model/colormap.h"

#include <algorithm>

namespace dyllm::app {

Rgb viridis(float t) {
    t = std::clamp(t, 0.f, 1.f);
    // Coefficients c0..c6 of the polynomial fit (per channel), evaluated with Horner's rule.
    static constexpr float c[7][3] = {
        {0.2777273272234177f, 0.005407344544966578f, 0.3340998053353061f},
        {0.1050930431085774f, 1.404613529898575f, 1.384590162594685f},
        {-0.3308618287255563f, 0.214847559468213f, 0.09509516302823659f},
        {-4.634230498983486f, -5.799100973351585f, -19.33244095627987f},
        {6.228269936347081f, 14.17993336680509f, 56.69055260068105f},
        {4.776384997670288f, -13.74514537774601f, -65.35303263337234f},
        {-5.435455855934631f, 4.645852612178535f, 26.3124352495832f},
    };
    Rgb out{};
    for (int ch = 0; ch < 3; ++ch) {
        float v = c[6][ch];
        for (int i = 5; i >= 0; --i) v = v * t + c[i][ch];
        out[ch] = std::clamp(v, 0.f, 1.f);
    }
    return out;
}

Rgb viridis_on_dark(float t) {
    return viridis(0.22f + 0.78f * std::clamp(t, 0.f, 1.f));
}

Rgb diverging(float t) {
    t = std::clamp(t, -1.f, 1.f);
    const Rgb   mid{0.86f, 0.86f, 0.86f}, lo{0.19f, 0.42f, 0.85f}, hi{0.86f, 0.22f, 0.20f};
    const Rgb&  end = t < 0 ? lo : hi;
    const float a   = t < 0 ? -t : t;
    return {mid[0] + (end[0] - mid[0]) * a, mid[1] + (end[1] - mid[1]) * a, mid[2] + (end[2] - mid[2]) * a};
}

unsigned pack_rgba(const Rgb& c, float alpha) {
    auto to_byte = [](float v) { return unsigned(std::clamp(v, 0.f, 1.f) * 255.f + 0.5f); };
    return (to_byte(alpha) << 24) | (to_byte(c[2]) << 16) | (to_byte(c[1]) << 8) | to_byte(c[0]);
}

}  // namespace dyllm::app
