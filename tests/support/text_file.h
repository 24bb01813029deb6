// Small file and shell helpers the tests share: a whole file as a string and back, and /bin/sh quoting for the
// command lines the CLI tests run.
#pragma once
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace dyllm::test {

inline std::string slurp(const std::filesystem::path& p) {
    std::ifstream     in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

inline void spit(const std::filesystem::path& p, const std::string& s) {
    std::ofstream(p, std::ios::binary | std::ios::trunc) << s;
}

// Single-quotes an argument for /bin/sh.
inline std::string sh_quote(const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

}  // namespace dyllm::test
