// A Catch2 v2 main for tests that need something a machine may lack (a downloaded file, the dyllm binary): when it is
// missing the test prints "SKIPPED: <why>" and exits 77, which ctest reports as skipped (SKIP_RETURN_CODE 77, set by
// tests/CMakeLists.txt for every file using this header), never as passed. Include once, in place of the shared main.
#pragma once
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>
#include <vector>

namespace dyllm::test {

inline constexpr int kSkipExitCode = 77;

// One requirement of the test file: the test cases tagged `tag` need it; `missing()` returns why it is not there
// ("" when it is).
struct SkipRequirement {
    std::string tag;  // e.g. "[qwen3]"; "" = every test case of the file
    std::string (*missing)();
};

// Runs the test cases whose requirements are met. Exit code: Catch's when something failed; 77 when everything that
// ran passed but something was skipped; 0 when everything ran and passed.
inline int run_skippable(int argc, char** argv, const std::vector<SkipRequirement>& reqs) {
    std::vector<std::string> run_tags, skipped;
    bool                     all_file = false;
    for (const auto& r : reqs) {
        const std::string why = r.missing();
        if (why.empty()) {
            if (!r.tag.empty()) run_tags.push_back(r.tag);
        } else {
            skipped.push_back(why);
            if (r.tag.empty()) all_file = true;
        }
    }
    if (all_file || (!skipped.empty() && run_tags.empty())) {
        for (const auto& s : skipped) std::printf("SKIPPED: %s\n", s.c_str());
        return kSkipExitCode;
    }
    Catch::Session session;
    if (const int rc = session.applyCommandLine(argc, argv); rc != 0) return rc;
    if (!skipped.empty()) {
        std::string spec;
        for (const auto& t : run_tags) spec += (spec.empty() ? "" : ",") + t;
        session.configData().testsOrTags = {spec};
    }
    const int failed = session.run();
    if (failed != 0) return failed;
    for (const auto& s : skipped) std::printf("SKIPPED: %s\n", s.c_str());
    return skipped.empty() ? 0 : kSkipExitCode;
}

}  // namespace dyllm::test
