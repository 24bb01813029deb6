// libFuzzer target for the GGUF loader (built with clang when DYLLM_FUZZ=ON; see tests/fuzz/fuzz_entries.h).
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/fuzz_entries.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    return dyllm::fuzz::gguf(data, size);
}
