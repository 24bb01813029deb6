// `dyllm bench --task` end to end (the binary from DYLLM_CLI): bad arguments fail with one error line and exit 2; a
// tiny real sweep on the built-in tiny-llada (add, 2 items, one tau: about a second) writes a CSV with the documented
// columns, original and fast-dual as references, accuracies in [0, 1], and the markdown table on stdout.
#include "tests/support/skippable_main.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/cli_run.h"
#include "tests/support/tiny_models.h"
#include "engine/engine.h"

namespace fs = std::filesystem;
using namespace dyllm;

namespace {

using test::CliRun;
using test::read_csv;
using test::slurp;

CliRun run_cli(const fs::path& dir, const std::vector<std::string>& args) {
    return test::run_command(std::getenv("DYLLM_CLI"), args, dir / "cli");
}

}  // namespace

TEST_CASE("dyllm bench --task refuses bad arguments with one error line", "[bench][cli]") {
    const fs::path root = test::make_temp_dir("bench-task-bad");
    struct Case {
        std::vector<std::string> args;
        std::string              message;
    };
    const std::vector<Case> cases{
        {{"--task", "nope"}, "error: --task nope: unknown task (known: add, rev, sort, word, or all)"},
        {{"--task", "add", "--tau", "1"}, "error: --tau: tau 1 is outside (0, 1)"},
        {{"--task", "add", "--tau", "0"}, "error: --tau: tau 0 is outside (0, 1)"},
        {{"--task", "add", "--tau", "0.9,1.2"}, "error: --tau: tau 1.2 is outside (0, 1)"},
        {{"--task", "add", "--tau", ""}, "error: --tau: empty list"},
        {{"--task", "add", "--tau", "0.9,,0.99"}, "error: --tau: empty item in '0.9,,0.99'"},
        {{"--task", "add", "--methods", ""}, "error: --methods: empty list"},
        {{"--task", "add", "--methods", "dyllm,warp"}, "error: --methods: unknown method 'warp'"},
        {{"--task", "add", "--limit", "0"}, "error: --limit must be at least 1 (got 0)"},
        {{"--task", "add", "--limit", "-2"}, "error: --limit must be at least 1 (got -2)"},
        {{"--task", "add", "--steps", "64,32"}, "error: --steps 64,32: a --task sweep takes one value"},
        {{"--limit", "3"}, "error: --limit needs --task"},
        {{"--task", "add", "-o", "out.xml"}, "error: -o/--output must be md, csv, json or a file name"},
    };
    for (const auto& c : cases) {
        std::vector<std::string> args{"bench", "-m", "tiny-llada", "--backend", "cpu", "-t", "1"};
        args.insert(args.end(), c.args.begin(), c.args.end());
        const CliRun r = run_cli(root, args);
        INFO(c.message << "\nstderr: " << r.err);
        CHECK(r.status == 2);
        CHECK(r.err.find(c.message) == 0);
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
        CHECK(r.out.empty());
    }
}

TEST_CASE("dyllm bench --task add --limit 2 --tau 0.99 writes the sweep's CSV", "[bench][cli]") {
    const fs::path root = test::make_temp_dir("bench-task");
    const fs::path csv  = root / "sweep.csv";
    const CliRun   r = run_cli(root, {"bench", "-m", "tiny-llada", "--backend", "cpu", "--task", "add", "--limit", "2",
                                      "--tau", "0.99", "-o", csv.string()});
    INFO("stdout: " << r.out << "\nstderr: " << r.err);
    REQUIRE(r.status == 0);
    const auto rows = read_csv(csv);
    REQUIRE(rows.size() == 1 + 3);  // header; original and fast-dual (references), dyllm at 0.99
    const std::vector<std::string> header{
        "method",     "stable_rows", "tau",          "reference",       "pareto",         "task",      "items",
        "correct",    "accuracy",    "tokens_per_s", "flops_per_token", "flops_vs_dense", "denoise_s", "nfe",
        "gen_length", "steps",       "block_length", "batch",           "shots",          "model",     "backend"};
    REQUIRE(rows[0] == header);
    auto col = [&](const std::string& name) {
        return size_t(std::find(header.begin(), header.end(), name) - header.begin());
    };
    CHECK(rows[1][col("method")] == "original");
    CHECK(rows[2][col("method")] == "fast-dual");
    CHECK(rows[3][col("method")] == "dyllm");
    CHECK(rows[3][col("tau")] == "0.99");
    CHECK(rows[1][col("tau")] == "");  // original has no tau
    CHECK(rows[1][col("reference")] == "1");
    CHECK(rows[2][col("reference")] == "1");
    CHECK(rows[3][col("reference")] == "0");
    int on_front = 0;
    for (size_t i = 1; i < rows.size(); ++i) {
        INFO("row " << i);
        REQUIRE(rows[i].size() == header.size());
        CHECK(rows[i][col("task")] == "add");
        CHECK(rows[i][col("items")] == "2");
        const double acc = std::stod(rows[i][col("accuracy")]);
        CHECK(acc >= 0.0);
        CHECK(acc <= 1.0);
        CHECK(acc == Approx(std::stod(rows[i][col("correct")]) / 2.0));
        CHECK(std::stod(rows[i][col("tokens_per_s")]) > 0);
        CHECK(std::stod(rows[i][col("flops_per_token")]) > 0);
        on_front += rows[i][col("pareto")] == "1";
    }
    CHECK(on_front >= 1);
    CHECK(std::stod(rows[1][col("flops_vs_dense")]) == Approx(1.0));  // original: every step dense
    CHECK(std::stod(rows[3][col("flops_vs_dense")]) < 1.0);
    // The human table goes to stdout: a header, a separator and one row per run.
    CHECK(r.out.find("| method | update | tau | accuracy | items | tok/s |") == 0);
    CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 2 + 3);
}

int main(int argc, char** argv) {
    return test::run_skippable(argc, argv, {{"", [] {
                                                 const char* cli = std::getenv("DYLLM_CLI");
                                                 if (!cli || !*cli)
                                                     return std::string("DYLLM_CLI is not set (dyllm not built)");
                                                 if (!fs::exists(cli))
                                                     return "DYLLM_CLI = " + std::string(cli) +
                                                            " does not exist (dyllm not built)";
                                                 return std::string();
                                             }}});
}

TEST_CASE("dyllm bench --methods all runs every registered method once", "[bench][cli]") {
    const fs::path root = test::make_temp_dir("bench-all");
    const fs::path csv  = root / "all.csv";
    const CliRun   r    = run_cli(root, {"bench", "-m", "tiny-llada", "--backend", "cpu", "-t", "1", "-n", "8",
                                         "--block-length", "8", "-r", "1", "--methods", "all", "-o", csv.string()});
    INFO("stdout: " << r.out << "\nstderr: " << r.err);
    REQUIRE(r.status == 0);
    const auto rows = read_csv(csv);
    REQUIRE(!rows.empty());
    const size_t col = size_t(std::find(rows[0].begin(), rows[0].end(), "method") - rows[0].begin());
    REQUIRE(col < rows[0].size());
    std::vector<std::string> seen;
    for (size_t i = 1; i < rows.size(); ++i) {  // the CSV quotes its strings
        std::string v = rows[i][col];
        v.erase(std::remove(v.begin(), v.end(), '"'), v.end());
        seen.push_back(v);
    }
    std::vector<std::string> want;
    for (Method m : all_methods()) want.emplace_back(method_name(m));
    CHECK(seen == want);
}
