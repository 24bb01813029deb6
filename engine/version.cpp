// dyllm::version(): DYLLM_VERSION is defined on this file only, from CMake's project version, so a version bump
// recompiles this file and nothing else.
#include "engine/version.h"

namespace dyllm {

const char* version() {
    return DYLLM_VERSION;
}

}  // namespace dyllm
