// A slower mouse drag for a slider: while a modifier is held the slider is fed a virtual pointer that moves a tenth
// as far as the real one (ImGui's sliders take the pointer's position as the value; the tau slider's log axis spans
// 0.9 to 0.99999 in a hundred pixels or so). Changing the modifier mid-drag re-anchors, so the value never jumps.
#pragma once

namespace dyllm::app {

class FineDrag {
public:
    static constexpr float kFineFactor = 0.1f;  // pointer motion per real motion with the modifier held

    // Call once a frame with the real pointer x, whether the modifier is held and whether the slider was being
    // dragged as of last frame; returns the x to give the slider. Not dragging: the real x, and the state resets.
    float pointer_x(float real_x, bool fine, bool dragging);
    bool  fine() const { return fine_; }

private:
    bool  dragging_ = false, fine_ = false;
    float anchor_real_ = 0, anchor_virtual_ = 0, last_virtual_ = 0;
};

}  // namespace dyllm::app
