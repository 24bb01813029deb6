// `dyllm trace` end to end (the binary from DYLLM_CLI): writes a Chrome trace that parses and a JSONL that reads back,
// prints one summary line; a bad output path or a missing -o fails with one clear error before any model load.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "instrumentation/jsonl.h"
#include "support/tiny_models.h"
#include "tests/support/cli_run.h"

namespace fs = std::filesystem;
using namespace dyllm;

namespace {

using test::CliRun;
using test::slurp;

const char* cli_path() {
    return std::getenv("DYLLM_CLI");
}

bool have_cli() {
    if (cli_path() && fs::exists(cli_path())) return true;
    WARN("DYLLM_CLI not set or not built: skipping the end-to-end runs of dyllm trace");
    return false;
}

CliRun run_cli(const fs::path& dir, const std::vector<std::string>& args) {
    return test::run_command(cli_path(), args, dir / "cli");
}

}  // namespace

TEST_CASE("dyllm trace writes a Chrome trace and a JSONL of the run", "[trace][cli]") {
    if (!have_cli()) return;
    const fs::path ckpt = test::make_tiny_checkpoint(Family::LLaDA);
    const fs::path out  = test::make_temp_dir("trace-cli");
    const CliRun   r = run_cli(out, {"trace", "-m", ckpt.string(), "--prompt-ids", "5,6,7,8", "-n", "8", "--steps", "8",
                                     "--block-length", "8", "--ignore-eos", "--backend", "cpu", "-o",
                                     (out / "t.json").string(), "--jsonl", (out / "s.jsonl").string()});
    INFO("stdout: " << r.out << "\nstderr: " << r.err);
    REQUIRE(r.status == 0);
    CHECK(r.out.rfind("trace: ", 0) == 0);
    CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 1);  // one summary line

    const auto j = nlohmann::json::parse(slurp(out / "t.json"));
    CHECK(j["displayTimeUnit"] == "ns");
    CHECK(j["metadata"]["method"] == "dyllm");
    CHECK(j["metadata"]["cupti"] == "off (cpu backend)");
    size_t steps = 0, ops = 0;
    for (const auto& e : j["traceEvents"]) {
        steps += e.value("cat", "") == "step";
        ops += e.value("cat", "") == "op";
    }
    CHECK(steps == 8);
    CHECK(ops > 0);

    std::ifstream in(out / "s.jsonl");
    const auto    ev = read_jsonl(in);
    REQUIRE(!ev.empty());
    CHECK(record_kind(ev.front()) == RecordKind::RunBegin);
    CHECK(record_kind(ev.back()) == RecordKind::RunEnd);
    size_t step_ends = 0;
    for (const auto& e : ev) step_ends += record_kind(e) == RecordKind::StepEnd;
    CHECK(step_ends == 8);
}

TEST_CASE("--measure-drift reaches the trace, the JSONL and dyllm generate's report", "[trace][cli][drift]") {
    if (!have_cli()) return;
    const fs::path                 ckpt = test::make_tiny_checkpoint(Family::LLaDA);
    const fs::path                 out  = test::make_temp_dir("trace-cli-drift");
    const std::vector<std::string> run  = {"-m",
                                           ckpt.string(),
                                           "--prompt-ids",
                                           "5,6,7,8",
                                           "-n",
                                           "8",
                                           "--steps",
                                           "8",
                                           "--block-length",
                                           "8",
                                           "--ignore-eos",
                                           "--backend",
                                           "cpu",
                                           "--measure-drift"};
    std::vector<std::string> args = {"trace", "-o", (out / "t.json").string(), "--jsonl", (out / "s.jsonl").string()};
    args.insert(args.end(), run.begin(), run.end());
    CliRun r = run_cli(out, args);
    INFO("stdout: " << r.out << "\nstderr: " << r.err);
    REQUIRE(r.status == 0);
    std::ifstream in(out / "s.jsonl");
    int64_t       measured = 0;
    for (const auto& e : read_jsonl(in))
        if (auto* l = std::get_if<LayerSaliencyRecord>(&e)) measured += l->drift_count;
    CHECK(measured > 0);  // steps 5..8 are sparse: layer 0 approximates every row but the one decoded before
    size_t     counters = 0;
    const auto trace    = nlohmann::json::parse(slurp(out / "t.json"));
    for (const auto& e : trace["traceEvents"]) counters += e.value("name", "").rfind("drift_min_cos L", 0) == 0;
    CHECK(counters == 8 * 2);  // one per step and layer (the tiny model has 2 layers)

    args = {"generate", "--json"};
    args.insert(args.end(), run.begin(), run.end());
    r = run_cli(out, args);
    REQUIRE(r.status == 0);
    const auto j = nlohmann::json::parse(r.out);
    REQUIRE(j["drift"].is_array());
    REQUIRE(!j["drift"].empty());
    CHECK(j["drift"][0]["approx_rows"].get<int64_t>() > 0);
    CHECK(j["drift"][0]["min_cos"].get<double>() <= 1.0);
}

TEST_CASE("dyllm trace --warmup: the untraced runs leave the trace one run long, and say so", "[trace][cli]") {
    if (!have_cli()) return;
    const fs::path ckpt = test::make_tiny_checkpoint(Family::LLaDA);
    const fs::path out  = test::make_temp_dir("trace-cli-warm");
    for (const int warm : {0, 2}) {
        const CliRun r = run_cli(out, {"trace", "-m", ckpt.string(), "--prompt-ids", "5,6,7,8", "-n", "8", "--steps",
                                       "8", "--block-length", "8", "--ignore-eos", "--backend", "cpu", "--warmup",
                                       std::to_string(warm), "-o", (out / "t.json").string()});
        INFO("warmup " << warm << "\nstderr: " << r.err);
        REQUIRE(r.status == 0);
        const auto j     = nlohmann::json::parse(slurp(out / "t.json"));
        size_t     steps = 0;
        for (const auto& e : j["traceEvents"]) steps += e.value("cat", "") == "step";
        CHECK(steps == 8);  // the warm-up runs' 2 x 8 steps are not in it
        CHECK(j["metadata"]["warmup_runs"] == std::to_string(warm));
    }
    // Refused before the model load (the model path does not exist).
    const CliRun r = run_cli(out, {"trace", "-m", (out / "no-model").string(), "--prompt-ids", "1,2", "--warmup", "-1",
                                   "-o", (out / "u.json").string()});
    INFO("stderr: " << r.err);
    CHECK(r.status != 0);
    CHECK(r.err.find("--warmup must be 0 or more (got -1)") != std::string::npos);
}

TEST_CASE("dyllm trace: unwritable output and missing -o fail with one clear error", "[trace][cli]") {
    if (!have_cli()) return;
    const fs::path    out = test::make_temp_dir("trace-cli-bad");
    const std::string bad = (out / "no-such-dir" / "t.json").string();
    // Model spec that does not exist: the output check must come first (before any load).
    CliRun r = run_cli(out, {"trace", "-m", (out / "no-model").string(), "--prompt-ids", "1,2", "-o", bad});
    INFO("stderr: " << r.err);
    CHECK(r.status != 0);
    CHECK(r.err.find(bad) != std::string::npos);
    CHECK(r.err.find("cannot open") != std::string::npos);
    CHECK(!fs::exists(bad));

    r = run_cli(out, {"trace", "--prompt-ids", "1,2"});
    INFO("stderr: " << r.err);
    CHECK(r.status != 0);
    CHECK(r.err.find("--output") != std::string::npos);
}
