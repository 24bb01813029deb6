// When dyllm-studio may block for input instead of drawing the next frame: only after a few idle frames (nothing
// running, no events queued), so the idle app does not spin a core yet every input still gets frames at full rate
// (ImGui needs a frame or two after an input for hover and click states).
#pragma once

namespace dyllm::app {

class FrameThrottle {
public:
    // Seconds to wait for input before the next frame (0: draw at once). busy: the engine or a comparison is working.
    double wait_before_frame(bool busy);
    // After the wait: waking before the timeout means input arrived, so the next frames run at full rate.
    void woke(double waited_s, double asked_s);

    static constexpr int    kActiveFrames = 3;    // frames at full rate after input or work
    static constexpr double kIdleWaitS    = 0.5;  // upper bound on a wait: timed notices expire at most 0.5 s late

private:
    int idle_frames_ = 0;
};

}  // namespace dyllm::app
