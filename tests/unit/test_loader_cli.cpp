// The `dyllm` binary on corrupted or extreme inputs: each case ends with exactly one line "error: ..."
// naming the file or knob, a non-zero exit code, and within 20 s (run under `timeout`, so a hang fails the test
// instead of stalling ctest). Needs DYLLM_CLI (set by ctest when dyllm is built); skipped (exit 77) without it.
#include "tests/support/skippable_main.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/support/tiny_models.h"
#include "tests/support/text_file.h"

using namespace dyllm;
using json   = nlohmann::json;
namespace fs = std::filesystem;

namespace {

using test::sh_quote;
using test::slurp;
using test::spit;

struct Run {
    int         rc = -1;
    std::string out;  // stdout + stderr
};

Run run_cli(const std::string& args) {
    Run r;
    // -k: a run that ignores SIGTERM is killed 2 s later; exit 124 then reads as a hang.
    const std::string cmd = "timeout -k 2 20 " + sh_quote(std::getenv("DYLLM_CLI")) + " " + args + " 2>&1";
    FILE*             p   = popen(cmd.c_str(), "r");
    REQUIRE(p);
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) r.out.append(buf, n);
    const int st = pclose(p);
    r.rc         = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return r;
}

// The run failed cleanly: non-zero exit that is not a timeout or a signal, one line "error: ..." holding every
// fragment.
void require_one_line_error(const Run& r, int code, std::initializer_list<std::string> fragments) {
    INFO("exit " << r.rc << ", output:\n" << r.out);
    CHECK(r.rc == code);
    CHECK(r.out.rfind("error: ", 0) == 0);
    CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 1);
    for (const auto& f : fragments) {
        INFO("fragment: " << f);
        CHECK(r.out.find(f) != std::string::npos);
    }
}

void set_raw(const fs::path& file, const std::string& key, const std::string& raw) {
    json j           = json::parse(slurp(file));
    j[key]           = "@@RAW@@";
    std::string text = j.dump();
    text.replace(text.find("\"@@RAW@@\""), 9, raw);
    spit(file, text);
}

fs::path tiny() {
    return test::make_tiny_checkpoint(Family::LLaDA, DType::F32, 1, 5);
}

std::string gen(const fs::path& dir, const std::string& extra = "") {
    return "generate -m " + sh_quote(dir.string()) + " -p hi -n 4 --backend cpu" + extra;
}

}  // namespace

TEST_CASE("control: the tiny checkpoint generates", "[loader][cli]") {
    const Run r = run_cli(gen(tiny(), " --threads 1"));
    INFO(r.out);
    CHECK(r.rc == 0);
}

TEST_CASE("deep JSON in config.json, tokenizer.json and a safetensors header", "[loader][cli]") {
    const std::string deep = std::string(100000, '[') + std::string(100000, ']');
    {
        const fs::path d = tiny();
        set_raw(d / "config.json", "d_model", deep);
        require_one_line_error(run_cli(gen(d)), 2, {"config.json", "nested deeper than 256"});
    }
    {
        const fs::path d = tiny();
        set_raw(d / "tokenizer.json", "normalizer", deep);
        require_one_line_error(run_cli(gen(d)), 2, {"tokenizer.json", "nested deeper than 256"});
    }
}

TEST_CASE("FIFO, /dev/zero, directory and symlink loop in the model directory", "[loader][cli]") {
    {
        const fs::path d = tiny();
        fs::remove(d / "config.json");
        REQUIRE(::mkfifo((d / "config.json").c_str(), 0600) == 0);
        require_one_line_error(run_cli(gen(d)), 2, {"config.json", "FIFO"});
    }
    {
        const fs::path d = tiny();
        fs::remove(d / "model.safetensors");
        REQUIRE(::mkfifo((d / "model.safetensors").c_str(), 0600) == 0);
        require_one_line_error(run_cli(gen(d)), 2, {"model.safetensors", "FIFO"});
    }
    {
        const fs::path d = tiny();
        fs::remove(d / "tokenizer.json");
        fs::create_symlink("/dev/zero", d / "tokenizer.json");
        require_one_line_error(run_cli(gen(d)), 2, {"tokenizer.json", "character device"});
    }
    {
        const fs::path d = tiny();
        fs::remove(d / "config.json");
        fs::create_directory(d / "config.json");
        require_one_line_error(run_cli(gen(d)), 2, {"config.json: is a directory"});
    }
    {
        const fs::path d = tiny();
        fs::remove(d / "model.safetensors");
        fs::create_symlink(d / "b", d / "a");
        fs::create_symlink(d / "a", d / "b");
        fs::create_symlink(d / "a", d / "model.safetensors");
        require_one_line_error(run_cli(gen(d)), 2, {"model.safetensors: symlink loop"});
    }
}

TEST_CASE("a FIFO given as the prompt file (-f) is refused, not waited on", "[loader][cli]") {
    const fs::path d = tiny();
    const fs::path f = test::make_temp_dir("fifo") / "prompts.txt";
    REQUIRE(::mkfifo(f.c_str(), 0600) == 0);
    const std::string args = "generate -m " + sh_quote(d.string()) + " --backend cpu -n 4 -f " + sh_quote(f.string());
    require_one_line_error(run_cli(args), 2, {"-f: " + f.string() + ": is a FIFO"});
}

TEST_CASE("huge n_layers and an mlp_ratio overflow", "[loader][cli]") {
    {
        const fs::path d = tiny();
        set_raw(d / "config.json", "n_layers", "10000000");
        require_one_line_error(run_cli(gen(d)), 2, {"config.json", "'n_layers' = 10000000 exceeds the limit"});
    }
    {
        const fs::path d = tiny();
        set_raw(d / "config.json", "n_layers", "3000");
        require_one_line_error(run_cli(gen(d)), 2, {"config.json: n_layers = 3000 needs", "holds 21"});
    }
    {
        const fs::path d = tiny();
        json           j = json::parse(slurp(d / "config.json"));
        j.erase("mlp_hidden_size");
        j["mlp_ratio"] = 1 << 30;
        spit(d / "config.json", j.dump());
        require_one_line_error(run_cli(gen(d)), 2, {"config.json", "mlp_ratio * d_model"});
    }
}

TEST_CASE("1e400 and an empty vocabulary in tokenizer.json", "[loader][cli]") {
    {
        const fs::path d = tiny();
        set_raw(d / "tokenizer.json", "version", "1e400");
        require_one_line_error(run_cli("tokenize -m " + sh_quote(d.string()) + " -p hi"), 2,
                               {"tokenizer.json: number out of range"});
    }
    {
        const fs::path d    = tiny();
        json           j    = json::parse(slurp(d / "tokenizer.json"));
        j["model"]["vocab"] = json::object();
        j["added_tokens"]   = json::array();
        spit(d / "tokenizer.json", j.dump());
        require_one_line_error(run_cli("tokenize -m " + sh_quote(d.string()) + " -p hi"), 2,
                               {"tokenizer.json", "the vocabulary is empty"});
    }
}

TEST_CASE("task files: 1e400 and an item's own shots name the file and line", "[loader][cli]") {
    const fs::path tasks = test::make_temp_dir("tasks");
    spit(tasks / "t.jsonl",
         "{\"prompt\": \"Q: a\", \"answer\": \"b\", \"task\": \"t\", \"shots\": 0}\n"
         "{\"prompt\": \"Q: a\", \"answer\": \"b\", \"task\": \"t\", \"shots\": 1e400}\n");
    const std::string args =
        "eval --backend cpu -m " + sh_quote(tiny().string()) + " --task t --tasks-dir " + sh_quote(tasks.string());
    require_one_line_error(run_cli(args), 2, {(tasks / "t.jsonl").string() + ":2: number out of range"});
    spit(tasks / "t.jsonl", "{\"prompt\": \"Q: a\", \"answer\": \"b\", \"task\": \"t\", \"shots\": 3}\n");
    const Run r = run_cli(args);
    require_one_line_error(r, 2, {(tasks / "t.jsonl").string() + ":1: \"shots\" = 3"});
    CHECK(r.out.find("--shots") == std::string::npos);
}

TEST_CASE("--threads and --seed out of range", "[loader][cli]") {
    const fs::path d = tiny();
    require_one_line_error(run_cli(gen(d, " --threads 100000")), 2, {"--threads must be in [0, 1024]", "100000"});
    require_one_line_error(run_cli(gen(d, " --threads -1")), 2, {"--threads must be in [0, 1024]"});
    const Run r = run_cli(gen(d, " --seed -1"));
    INFO(r.out);
    CHECK(r.rc != 0);
    CHECK(r.out.rfind("error: --seed: must be >= 0 (got -1)", 0) == 0);
    CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 1);
}

TEST_CASE("--quant-isa: one line naming the allowed values, and the kernels in use named with the run",
          "[loader][cli]") {
    const fs::path d = tiny();
    require_one_line_error(run_cli(gen(d, " --quant-isa sse9")), 2,
                           {"--quant-isa must be auto, amx, avx512, avx-vnni, avx2 or baseline", "sse9"});
    // baseline (the block decoders alone) runs on every CPU; the backend line that goes with a run's figures says so.
    const Run r = run_cli(gen(d, " --quant-isa baseline --json"));
    INFO(r.out);
    CHECK(r.rc == 0);
    CHECK(r.out.find("quantized baseline)") != std::string::npos);
}

TEST_CASE("make-model --force replaces a model by rename", "[loader][cli]") {
    const fs::path d = test::make_temp_dir("mm") / "m";
    REQUIRE(run_cli("make-model -o " + sh_quote(d.string())).rc == 0);
    // Held open like a process that has the model mapped (this also keeps the old inode number from being reused).
    const int fd = ::open((d / "model.safetensors").c_str(), O_RDONLY);
    REQUIRE(fd >= 0);
    struct stat before {};
    REQUIRE(::fstat(fd, &before) == 0);
    const Run r = run_cli("make-model --force --seed 7 -o " + sh_quote(d.string()));
    INFO(r.out);
    REQUIRE(r.rc == 0);
    struct stat after {};
    REQUIRE(::stat((d / "model.safetensors").c_str(), &after) == 0);
    CHECK(after.st_ino != before.st_ino);  // a new file beside the old one, which is not truncated under its reader
    struct stat held {};
    REQUIRE(::fstat(fd, &held) == 0);
    CHECK(held.st_size == before.st_size);
    ::close(fd);
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
