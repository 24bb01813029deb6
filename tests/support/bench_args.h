// Small helpers shared by the benchmarks in tests/bench: comma-separated integer options and the CPU's model name
// (printed with every figure).
#pragma once
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace dyllm::test {

// "1,8,33" -> {1, 8, 33}
inline std::vector<int> parse_ints(const std::string& s) {
    std::vector<int>  v;
    std::stringstream ss(s);
    for (std::string p; std::getline(ss, p, ',');) v.push_back(std::atoi(p.c_str()));
    return v;
}

// /proc/cpuinfo's first "model name", or "?".
inline std::string cpu_model() {
    std::ifstream in("/proc/cpuinfo");
    for (std::string line; std::getline(in, line);)
        if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
    return "?";
}

}  // namespace dyllm::test
