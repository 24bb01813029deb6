// The one-line progress display of dyllm generate (see progress.h).
#include "app/cli/progress.h"

#include <algorithm>

namespace dyllm::cli {

std::string format_progress(int i, int n, int width, const std::string& label) {
    n                = std::max(n, 0);
    i                = std::clamp(i, 0, n);
    width            = std::max(width, 1);
    const int   pct  = n > 0 ? static_cast<int>(int64_t(i) * 100 / n) : 100;
    const int   fill = n > 0 ? static_cast<int>(int64_t(i) * width / n) : width;
    std::string s    = label + ": " + std::to_string(i) + "/" + std::to_string(n) + " [";
    s.append(static_cast<size_t>(fill), '=');
    s.append(static_cast<size_t>(width - fill), ' ');
    s += "] " + std::to_string(pct) + "%";
    return s;
}

void ProgressLine::update(int i, int n) {
    draw(format_progress(i, n));
}

void ProgressLine::draw(const std::string& text) {
    if (!enabled_ || !out_) return;
    std::string line = text;
    // Pad with spaces when the new line is shorter (e.g. "10/10" after "9/10" never is, but N may change).
    const size_t len = line.size();
    if (len < last_len_) line.append(last_len_ - len, ' ');
    last_len_ = len;
    std::fprintf(out_, "\r%s", line.c_str());
    std::fflush(out_);
    drawn_ = true;
}

void ProgressLine::finish() {
    if (!enabled_ || !out_ || !drawn_) return;
    std::fputc('\n', out_);
    std::fflush(out_);
    drawn_ = false;
}

}  // namespace dyllm::cli
