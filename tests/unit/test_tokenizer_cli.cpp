// `dyllm tokenize` end to end on a tokenizer-only directory (the fixture BPE): ids as JSON, --decode, --chat with
// --family, --show-tokens, and one-line errors. Runs the binary named by DYLLM_CLI (set by CMake when the dyllm
// target is built); without the binary the test exits 77 and ctest reports it skipped.
#include "tests/support/skippable_main.h"
#include "tests/support/text_file.h"

#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "test_tokenizer_fixture.h"

using namespace dyllm::test;

namespace {

struct Run {
    int         rc = -1;
    std::string out;  // stdout and stderr together
};

Run run_cli(const std::string& args) {
    Run   r;
    FILE* p = popen((sh_quote(std::getenv("DYLLM_CLI")) + " tokenize " + args + " 2>&1").c_str(), "r");
    REQUIRE(p);
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof(buf), p)) > 0;) r.out.append(buf, n);
    const int st = pclose(p);
    r.rc         = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return r;
}

}  // namespace

TEST_CASE("dyllm tokenize on a tokenizer-only directory", "[tokenizer][cli]") {
    TempDir d;
    d.write("tokenizer.json", make_bpe_json().dump());
    const std::string m = "-m " + sh_quote(d.path.string());

    Run r = run_cli(m + " -p " + sh_quote(" the hello<|eot|>"));
    CHECK(r.rc == 0);
    CHECK(r.out == "[258,32,261,300]\n");

    r = run_cli(m + " --decode -p " + sh_quote("[258, 32, 261, 300]"));
    CHECK(r.rc == 0);
    CHECK(r.out == " the hello<|eot|>\n");
    r = run_cli(m + " --decode --skip-special -p " + sh_quote("258,32,261,300"));
    CHECK(r.out == " the hello\n");

    r = run_cli(m + " --show-tokens -p " + sh_quote("a\n"));
    CHECK(r.out == "97\t\"a\"\n10\t\"\\n\"\n");

    // --chat needs the family: from config.json, or --family.
    r = run_cli(m + " --chat -p hi");
    CHECK(r.rc == 2);
    CHECK_THAT(r.out, Catch::Matchers::Contains("no config.json") && Catch::Matchers::Contains("--family"));
    r = run_cli(m + " --chat --family dream -p hi");
    CHECK(r.rc == 0);
    CHECK(r.out.front() == '[');

    // Errors: one line each.
    r = run_cli(m + " --decode -p " + sh_quote("1,x"));
    CHECK(r.rc == 2);
    CHECK(r.out == "error: -p: item 1 ('x') is not a token id\n");
    r = run_cli(m + " --decode -p 400");
    CHECK(r.rc == 2);
    CHECK_THAT(r.out, Catch::Matchers::Contains("outside the vocabulary [0, 305)"));
    r = run_cli("-m " + sh_quote((d.path / "missing").string()) + " -p x");
    CHECK(r.rc == 2);
    CHECK_THAT(r.out, Catch::Matchers::Contains("no such model directory"));
    d.write("tokenizer.json", "{\"model\": ");
    r = run_cli(m + " -p x");
    CHECK(r.rc == 2);
    CHECK_THAT(r.out, Catch::Matchers::StartsWith("error: ") && Catch::Matchers::Contains("not valid JSON at byte"));
    CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 1);
}

int main(int argc, char** argv) {
    return dyllm::test::run_skippable(
        argc, argv, {{"", [] {
                          // ctest sets DYLLM_CLI whenever the dyllm target exists, built or not (tests do not depend on
                          // it).
                          const char* cli = std::getenv("DYLLM_CLI");
                          if (!cli || !*cli) return std::string("DYLLM_CLI is not set (dyllm not built)");
                          if (!std::filesystem::exists(cli))
                              return "DYLLM_CLI = " + std::string(cli) + " does not exist (dyllm not built)";
                          return std::string();
                      }}});
}
