// Small file and shell helpers the tests share: a whole file as a string and back, a CSV file's rows, and /bin/sh
// quoting for the command lines the CLI tests run.
#pragma once
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

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

// A CSV file as rows of fields, for the files the CLI writes: no quoted fields (method names, numbers, model names);
// a trailing comma gives a last empty field.
inline std::vector<std::vector<std::string>> read_csv(const std::filesystem::path& p) {
    std::vector<std::vector<std::string>> rows;
    std::istringstream                    is(slurp(p));
    for (std::string line; std::getline(is, line);) {
        std::vector<std::string> f;
        std::stringstream        ls(line);
        for (std::string x; std::getline(ls, x, ',');) f.push_back(x);
        if (!line.empty() && line.back() == ',') f.push_back("");
        rows.push_back(f);
    }
    return rows;
}

// Single-quotes an argument for /bin/sh.
inline std::string sh_quote(const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

}  // namespace dyllm::test
