// main of test_cuda: runs the Catch2 session only when a CUDA device is present; otherwise prints why and returns 77,
// which ctest's SKIP_RETURN_CODE reports as skipped (Catch2 v2 has no SKIP()).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>

#include "engine/backend.h"

int main(int argc, char** argv) {
    std::string why;
    if (dyllm::cuda_device_count(&why) == 0) {
        std::printf("no CUDA device: skipping (%s)\n", why.c_str());
        return 77;
    }
    return Catch::Session().run(argc, argv);
}
