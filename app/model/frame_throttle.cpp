// FrameThrottle: full-rate frames while working or just after input, blocking waits otherwise.
#include "app/model/frame_throttle.h"

namespace dyllm::app {

double FrameThrottle::wait_before_frame(bool busy) {
    if (busy) {
        idle_frames_ = 0;
        return 0.0;
    }
    if (idle_frames_ < kActiveFrames) {
        ++idle_frames_;
        return 0.0;
    }
    return kIdleWaitS;
}

void FrameThrottle::woke(double waited_s, double asked_s) {
    if (asked_s > 0 && waited_s < asked_s * 0.9) idle_frames_ = 0;  // 10% slack: a timeout can return a bit early
}

}  // namespace dyllm::app
