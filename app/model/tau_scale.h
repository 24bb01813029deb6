// The tau slider's scale: position u = -log10(1 - tau), so 0.9, 0.99, 0.999 and 0.9999 sit evenly spaced (one unit
// apart) and the range near 1, where the paper's settings are (0.98-0.9975), gets most of the slider.
#pragma once

namespace dyllm::app {

constexpr float kTauSliderMin = 1.f;  // tau 0.9
constexpr float kTauSliderMax = 5.f;  // tau 0.99999

float tau_to_slider(float tau);  // clamped to [kTauSliderMin, kTauSliderMax]
float slider_to_tau(float u);    // inverse; u clamped to the same range

}  // namespace dyllm::app
