// The slowed slider drag (app/model/fine_drag.h).
#include "app/model/fine_drag.h"

namespace dyllm::app {

float FineDrag::pointer_x(float real_x, bool fine, bool dragging) {
    if (!dragging) {
        dragging_ = fine_ = false;
        last_virtual_     = real_x;
        return real_x;
    }
    if (!dragging_ || fine != fine_) {  // a new drag, or the modifier changed: continue from where the slider is
        anchor_real_    = real_x;
        anchor_virtual_ = dragging_ ? last_virtual_ : real_x;
        dragging_       = true;
        fine_           = fine;
    }
    last_virtual_ = anchor_virtual_ + (real_x - anchor_real_) * (fine_ ? kFineFactor : 1.f);
    return last_virtual_;
}

}  // namespace dyllm::app
