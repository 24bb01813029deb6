// TimedNotice: a notice line with a deadline on the caller's clock.
#include "app/model/timed_notice.h"

namespace dyllm::app {

void TimedNotice::show(std::string text, double now_s, double seconds) {
    text_    = std::move(text);
    until_s_ = now_s + seconds;
}

void TimedNotice::expire(double now_s) {
    if (!text_.empty() && now_s > until_s_) text_.clear();
}

}  // namespace dyllm::app
