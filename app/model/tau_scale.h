// The tau control's scale and text: slider position u = -log10(1 - tau), so 0.9, 0.99, 0.999 and 0.9999 sit evenly
// spaced (one unit apart) and the range near 1, where the paper's settings are (0.98-0.9975), gets most of the
// slider; the shortest text that gives tau back exactly; typed tau parsed against the parameter table's range; and the
// arrow-key step on the log axis.
#pragma once
#include <string>
#include <string_view>

namespace dyllm::app {

constexpr float kTauSliderMin = 1.f;  // tau 0.9
constexpr float kTauSliderMax = 5.f;  // tau 0.99999

float tau_to_slider(float tau);  // clamped to [kTauSliderMin, kTauSliderMax]
float slider_to_tau(float u);    // inverse; u clamped to the same range

// The shortest decimal text that reads back as the same float: "0.99", "0.9975", "0.99999" (never "1.00000" for a
// tau below 1).
std::string tau_text(float tau);

// A typed tau: a number in the parameter table's range of tau (engine/params.h). On failure returns false and says
// why in *error (one line naming the field and the range).
bool parse_tau(std::string_view text, float* tau, std::string* error);

// One arrow-key step of tau on the log axis: 1 - tau moves to the next multiple of its decade (0.99 -> 0.991 -> ...
// -> 0.999 -> 0.9991), or with `fine` of a tenth of it (0.995 -> 0.9951), so values like 0.995 and 0.9975 are hit
// exactly. dir > 0 moves towards 1; the result stays inside the slider's range [0.9, 0.99999].
float tau_step(float tau, int dir, bool fine = false);

}  // namespace dyllm::app
