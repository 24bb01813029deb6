// A one-line notice (export results) shown until a deadline. Set and cleared against the same clock, which the
// caller passes in: the studio's notice once vanished the frame after it was set (ImGui time vs a steady clock).
#pragma once
#include <string>

namespace dyllm::app {

class TimedNotice {
public:
    void               show(std::string text, double now_s, double seconds = kDefaultSeconds);
    void               expire(double now_s);  // clears the text once its deadline passed
    bool               visible() const { return !text_.empty(); }
    const std::string& text() const { return text_; }

    static constexpr double kDefaultSeconds = 8.0;  // long enough to read a full path

private:
    std::string text_;
    double      until_s_ = 0;
};

}  // namespace dyllm::app
