// The studio's engine thread count: all cores but the UI's unless asked.
#include "app/model/engine_threads.h"

#include <algorithm>

namespace dyllm::app {

int studio_engine_threads(int requested, unsigned hardware_threads) {
    if (requested > 0) return requested;
    return std::max(1, int(hardware_threads) - 1);
}

}  // namespace dyllm::app
