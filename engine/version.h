// The project's version (CMake's `project(... VERSION ...)`): the runs' trace environment and both programs' --version
// print it.
#pragma once

namespace dyllm {

const char* version();  // the project version from CMake, e.g. "0.2.0"

}  // namespace dyllm
