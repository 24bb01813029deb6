// compute_layout(): the panel grid of dyllm-studio (controls on top, three bands of panels, scrubber at the bottom).
#include "app/model/layout.h"

#include <algorithm>

namespace dyllm::app {

StudioLayout compute_layout(float width, float height, bool message_bar, float bottom_frac) {
    StudioLayout L;
    const float  w   = std::max(width, 200.f);
    const float  h   = std::max(height, 200.f);
    const float  top = kControlsHeight + (message_bar ? kMessageBarHeight : 0.f);
    L.controls       = {0, 0, w, top};
    L.scrubber       = {0, h - kScrubberHeight, w, kScrubberHeight};

    const float body_y = top;
    const float body_h = std::max(L.scrubber.y - body_y, 60.f);
    // Band heights: the token canvas and the saliency plots are the reason the app exists, the Time band can be
    // smaller (fractions tuned on 1600x1000 screenshots).
    const float f     = std::clamp(bottom_frac, kBottomMin, kBottomMax);
    const float band3 = std::max(body_h * f, std::min(kBottomMinPx, body_h * kBottomMinShare));
    const float band1 = (body_h - band3) * 0.5f;
    const float band2 = band1;

    const float prompt_w  = w * 0.21f;
    const float summary_w = w * 0.24f;
    L.prompt              = {0, body_y, prompt_w, band1};
    L.canvas              = {prompt_w, body_y, w - prompt_w - summary_w, band1};
    L.summary             = {w - summary_w, body_y, summary_w, band1};

    const float y2       = body_y + band1;
    const float cosine_w = w * 0.56f;
    const float right_w  = w - cosine_w;
    L.cosine             = {0, y2, cosine_w, band2};
    if (band2 >= kSaliencyStackMinPx) {
        const float sal_h = band2 * 0.58f;
        L.salient         = {cosine_w, y2, right_w, sal_h};
        L.lsal            = {cosine_w, y2 + sal_h, right_w, band2 - sal_h};
    } else {
        const float sal_w = right_w * kSalientShareSideBySide;
        L.salient         = {cosine_w, y2, sal_w, band2};
        L.lsal            = {cosine_w + sal_w, y2, right_w - sal_w, band2};
    }

    L.time = {0, y2 + band2, w, band3};
    return L;
}

}  // namespace dyllm::app
