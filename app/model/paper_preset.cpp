// The paper-regime preset's knobs and prompt choice (app/model/paper_preset.h).
#include "app/model/paper_preset.h"

#include <algorithm>
#include <iterator>

namespace dyllm::app {

bool paper_regime_nu_ok(int n) {
    return std::find(std::begin(kPaperRegimeNu), std::end(kPaperRegimeNu), n) != std::end(kPaperRegimeNu);
}

int paper_regime_steps(int n_u) {
    return n_u > 0 ? kPaperRegime.gen_length / n_u : kPaperRegime.gen_length;
}

int paper_regime_item(const std::vector<TaskItem>& items, const std::string& prefer) {
    int any = -1;
    for (size_t i = 0; i < items.size(); ++i) {
        if (items[i].shots != kPaperRegime.shots) continue;
        if (items[i].task == prefer) return int(i);
        if (any < 0) any = int(i);
    }
    return any;
}

}  // namespace dyllm::app
