// `dyllm make-model` end to end: the directory it writes opens with Checkpoint::open and holds the requested
// architecture; bad flags give one error line and exit code 2. Needs the dyllm binary (DYLLM_CLI, set by ctest).
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>

#include <sys/wait.h>

#include "engine/io/checkpoint.h"
#include "tests/support/tiny_models.h"

using namespace dyllm;
namespace fs = std::filesystem;

namespace {

struct RunResult {
    int         code = -1;
    std::string output;  // stdout + stderr
};

RunResult run_cli(const std::string& args) {
    const char* cli = std::getenv("DYLLM_CLI");
    RunResult   r;
    FILE*       p = popen(("'" + std::string(cli) + "' " + args + " 2>&1").c_str(), "r");
    REQUIRE(p != nullptr);
    char   buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
    const int status = pclose(p);
    r.code           = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
}

bool have_cli() {
    const char* cli = std::getenv("DYLLM_CLI");
    if (cli && fs::exists(cli)) return true;
    WARN("DYLLM_CLI not set or missing (dyllm not built): make-model tests NOT run");
    return false;
}

}  // namespace

TEST_CASE("make-model writes a checkpoint that opens", "[checkpoint][cli]") {
    if (!have_cli()) return;
    const fs::path dir = test::make_temp_dir("mm") / "model";
    const auto     r   = run_cli("make-model -o '" + dir.string() +
                                 "' --family dream --dtype bf16 --shards 2 --seed 3 --layers 2 --embd 32 --heads 4 "
                                       "--kv-heads 1 --ffn 48 --vocab 280");
    INFO(r.output);
    REQUIRE(r.code == 0);
    CHECK(r.output.find("Dream") != std::string::npos);
    CHECK(fs::exists(dir / "tokenizer.json"));
    CHECK(fs::exists(dir / "model.safetensors.index.json"));
    const auto  ck = Checkpoint::open(dir);
    const auto& c  = ck->config();
    CHECK(c.family == Family::Dream);
    CHECK(c.n_layer == 2);
    CHECK(c.n_embd == 32);
    CHECK(c.n_head == 4);
    CHECK(c.n_kv_head == 1);
    CHECK(c.n_ff == 48);
    CHECK(c.n_vocab == 280);
    CHECK(ck->weight_dtype() == DType::BF16);

    // A second run into the same directory refuses without --force, then overwrites with it.
    const auto again = run_cli("make-model -o '" + dir.string() + "'");
    CHECK(again.code == 2);
    CHECK(again.output.find("--force") != std::string::npos);
    const auto forced = run_cli("make-model -o '" + dir.string() + "' --force");
    CHECK(forced.code == 0);
    CHECK(Checkpoint::open(dir)->config().family == Family::LLaDA);
    CHECK_FALSE(fs::exists(dir / "model.safetensors.index.json"));  // the old shards' index is gone
}

TEST_CASE("make-model rejects bad flags with one clear line", "[checkpoint][cli]") {
    if (!have_cli()) return;
    const fs::path    dir = test::make_temp_dir("mm") / "model";
    const std::string o   = " -o '" + dir.string() + "'";
    auto              r   = run_cli("make-model" + o + " --heads 3");
    CHECK(r.code == 2);
    CHECK(r.output.find("--heads 3 does not divide --embd 64") != std::string::npos);
    r = run_cli("make-model" + o + " --vocab 100");
    CHECK(r.code == 2);
    CHECK(r.output.find("vocabulary 100 is too small") != std::string::npos);
    r = run_cli("make-model" + o + " --shards 1000");
    CHECK(r.code == 2);
    CHECK(r.output.find("--shards 1000") != std::string::npos);
    r = run_cli("make-model" + o + " --family gpt2");
    CHECK(r.code != 0);
    CHECK(r.output.find("gpt2") != std::string::npos);
    CHECK_FALSE(fs::exists(dir / "config.json"));  // nothing written by a rejected command
}
