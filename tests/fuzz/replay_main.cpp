// test_fuzz_replay: runs every file of tests/fuzz/corpus/<target>/ and tests/fuzz/reproducers/<target>/ through the
// same entry functions the libFuzzer targets call, in the normal (GCC) build and under the ASan/UBSan pass of CI.
// A crash, a sanitizer report or an unexpected exception fails it; a missing corpus folder fails it too (nothing
// replayed must not read as passed). Usage: test_fuzz_replay <tests/fuzz dir> [target]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_entries.h"

namespace fs = std::filesystem;

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s <tests/fuzz dir> [target]\n", argv[0]);
        return 2;
    }
    const fs::path root    = argv[1];
    int            n_total = 0;
    for (const auto& t : dyllm::fuzz::targets()) {
        if (argc > 2 && std::string(argv[2]) != t.name) continue;
        int n = 0;
        for (const char* kind : {"corpus", "reproducers"}) {
            const fs::path  dir = root / kind / t.name;
            std::error_code ec;
            if (!fs::is_directory(dir, ec)) {
                if (std::string(kind) == "corpus") {
                    std::fprintf(stderr, "%s: missing seed corpus\n", dir.string().c_str());
                    return 1;
                }
                continue;
            }
            std::vector<fs::path> files;
            for (const auto& e : fs::directory_iterator(dir))
                if (e.is_regular_file()) files.push_back(e.path());
            std::sort(files.begin(), files.end());
            for (const auto& f : files) {
                std::ifstream              in(f, std::ios::binary);
                const std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(in), {}};
                const auto                 t0 = std::chrono::steady_clock::now();
                t.fn(bytes.data(), bytes.size());
                const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                // The campaign's budget is 20 s per input; a replay far slower than the rest is worth a look.
                if (s > 5.0) std::printf("  slow: %s took %.1f s\n", f.string().c_str(), s);
                ++n;
            }
        }
        std::printf("%-12s %d inputs replayed\n", t.name, n);
        if (n == 0) {
            std::fprintf(stderr, "%s: no inputs replayed\n", t.name);
            return 1;
        }
        n_total += n;
    }
    std::printf("%d inputs, no crash\n", n_total);
    return n_total > 0 ? 0 : 1;
}
