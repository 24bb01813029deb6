// The project's version (CMake's `project(... VERSION ...)`): the runs' trace environment and both programs' --version
// print it.
#pragma once

namespace dyllm {

const char* version();  // "0.1.0"

}  // namespace dyllm
