// `dyllm report` end to end (the binary from DYLLM_CLI) on a generated tiny checkpoint and a two-task suite with tiny
// limits (seconds): every CSV and PNG is written, the CSVs parse with the expected columns; bad arguments fail with
// one clear line before any run.
#include "tests/support/skippable_main.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "support/tiny_models.h"
#include "tests/support/cli_run.h"

namespace fs = std::filesystem;
using namespace dyllm;

namespace {

using test::CliRun;
using test::read_csv;
using test::slurp;

CliRun run_cli(const fs::path& dir, const std::vector<std::string>& args) {
    return test::run_command(std::getenv("DYLLM_CLI"), args, dir / "cli");
}

// A two-task suite of short items (byte-level tokens: a few dozen per prompt), in the shipped files' format.
fs::path write_tasks(const fs::path& root) {
    const fs::path dir = root / "tasks";
    fs::create_directories(dir);
    std::ofstream add(dir / "add.jsonl");
    for (int i = 0; i < 4; ++i)
        add << R"({"prompt": "Q: add )" << i << "+" << i + 1 << R"(", "answer": "answer )" << 2 * i + 1
            << R"(", "task": "add", "shots": 0})"
            << "\n";
    std::ofstream rev(dir / "rev.jsonl");
    for (const char* w : {"ab", "cd", "ef", "gh"})
        rev << R"({"prompt": "Q: rev )" << w << R"(", "answer": ")" << w[1] << w[0]
            << R"(", "task": "rev", "shots": 0})"
            << "\n";
    return dir;
}

}  // namespace

TEST_CASE("dyllm report writes five CSV + PNG figures", "[report][cli]") {
    const fs::path ckpt  = test::make_tiny_checkpoint(Family::LLaDA);
    const fs::path root  = test::make_temp_dir("report-cli");
    const fs::path tasks = write_tasks(root);
    const fs::path out   = root / "figs";  // created by the command
    const CliRun   r =
        run_cli(root, {"report",  "-m",     ckpt.string(), "-o",        out.string(), "--tasks-dir", tasks.string(),
                       "--limit", "2",      "--probe",     "1",         "--shots",    "1",           "-n",
                       "8",       "--taus", "0.9,0.99",    "--backend", "cpu",        "-t",          "1"});
    INFO("stdout: " << r.out << "\nstderr: " << r.err);
    REQUIRE(r.status == 0);

    const std::map<std::string, std::vector<std::string>> expected{
        {"cosine_by_layer", {"layer", "bin", "one_minus_cos_lo", "one_minus_cos_hi", "rows", "share"}},
        {"lsal_by_layer", {"update", "tau", "layer", "lsal_mean", "samples"}},
        {"drift_by_layer", {"update", "tau", "layer", "approx_rows", "min_cos", "mean_cos", "share_below_tau"}},
        {"accuracy_vs_tau", {"variant", "tau", "n", "correct", "accuracy", "flops_vs_dense", "tokens_per_s"}},
        {"throughput_vs_nu", {"method", "n_u", "steps", "tokens_per_s", "flops_per_token", "flops_vs_dense"}}};
    for (const auto& [name, header] : expected) {
        INFO(name);
        const auto rows = read_csv(out / (name + ".csv"));
        REQUIRE(rows.size() > 1);
        CHECK(rows[0] == header);
        for (const auto& row : rows) CHECK(row.size() == header.size());
        const std::string png = slurp(out / (name + ".png"));
        REQUIRE(png.size() > 24);
        CHECK(png.substr(1, 3) == "PNG");
    }
    // The tiny checkpoint has 2 layers: 16 cosine bins each; both probed updates per layer.
    CHECK(read_csv(out / "cosine_by_layer.csv").size() == 1 + 2 * 16);
    CHECK(read_csv(out / "drift_by_layer.csv").size() == 1 + 2 * 2);
    // original + 3 variants x 2 taus, each over 2 tasks x 2 items.
    const auto acc = read_csv(out / "accuracy_vs_tau.csv");
    REQUIRE(acc.size() == 1 + 1 + 3 * 2);
    CHECK(acc[1][0] == "original");
    CHECK(acc[1][1] == "");
    CHECK(acc[1][2] == "4");
    CHECK(acc[2][0] == "dyllm");
    CHECK(acc[2][1] == "0.9");
    CHECK(std::stod(acc[2][5]) < 1.0);  // DyLLM's sparse steps cost less than a dense forward
    const auto thr = read_csv(out / "throughput_vs_nu.csv");
    REQUIRE(thr.size() == 1 + 6);
    CHECK(thr[3][0] == "dyllm");
    CHECK(thr[3][1] == "4");
    CHECK(thr[3][2] == "2");  // 8 tokens in 2 steps
    CHECK(thr[4][0] == "fast-dual");
    CHECK(std::stod(thr[4][3]) > 0);
}

TEST_CASE("dyllm report refuses bad arguments with one line before loading anything", "[report][cli]") {
    const fs::path root = test::make_temp_dir("report-cli-bad");
    { std::ofstream(root / "file") << "x"; }
    struct Case {
        std::vector<std::string> args;
        std::string              message;
    };
    const std::vector<Case> cases{
        {{"-o", (root / "file" / "sub").string()}, "error: -o: cannot create directory"},
        {{"-o", (root / "file").string()},
         "error: -o: '" + (root / "file").string() + "' exists and is not a directory"},
        {{"-o", (root / "ok").string(), "--taus", "0.9,x"}, "error: --taus: 'x' is not a number"},
        {{"-o", (root / "ok").string(), "--taus", "0.9,2"}, "error: --taus: tau 2 is outside (0, 1]"},
        {{"-o", (root / "ok").string(), "--limit", "0"}, "error: --limit must be at least 1"},
        {{"-o", (root / "ok").string(), "-n", "6"}, "error: -n must be a positive multiple of 4"},
    };
    for (const auto& c : cases) {
        std::vector<std::string> args{"report", "-m", (root / "no-such-model").string()};
        args.insert(args.end(), c.args.begin(), c.args.end());
        const CliRun r = run_cli(root, args);
        INFO(r.err);
        CHECK(r.status == 2);
        CHECK(r.err.find(c.message) != std::string::npos);
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    }
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
