// Error kinds of the engine: DYLLM_ASSERT for broken invariants (always on, aborts), LoadError for bad
// model files, InputError for bad user input, BackendError for CUDA/cuBLAS failures. Boundaries (CLI, app, tests)
// catch.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace dyllm {

// A model directory, checkpoint, config or tokenizer file is malformed. The message names the file, the tensor or
// key, the expected and the actual value.
struct LoadError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// A user-supplied parameter or prompt is out of range (tau, lengths, prompt too long, unknown method...).
struct InputError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// A backend could not be created or failed at run time (no CUDA device, CUDA/cuBLAS error).
struct BackendError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

[[noreturn]] inline void assert_fail(const char* expr, const char* file, int line, const std::string& msg) {
    std::fprintf(stderr, "%s:%d: DYLLM_ASSERT(%s) failed: %s\n", file, line, expr, msg.c_str());
    std::fflush(stderr);
    std::abort();
}

}  // namespace dyllm

// Invariant check, on in every build type (GGML_ASSERT).
#define DYLLM_ASSERT(cond, msg)                                                         \
    do {                                                                                \
        if (!(cond)) ::dyllm::assert_fail(#cond, __FILE__, __LINE__, std::string(msg)); \
    } while (0)
