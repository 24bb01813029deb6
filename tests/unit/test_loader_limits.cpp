// Loaders never crash or hang: deep JSON in every file kind, FIFOs, /dev/zero and symlink loops, a
// directory named config.json, sizes over the limits, numbers out of range, empty vocabularies, deep Sequence
// normalizers, the thread pool when threads cannot start, and atomic checkpoint writes. Each case asserts the one
// LoadError line and the names in it.
#include <catch2/catch.hpp>

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "app/model/task_suite.h"
#include "engine/errors.h"
#include "engine/io/checkpoint.h"
#include "engine/io/checkpoint_writer.h"
#include "engine/io/config.h"
#include "engine/io/json_file.h"
#include "engine/io/safetensors.h"
#include "engine/tokenizer/tokenizer.h"
#include "kernels/cpu/thread_pool.h"
#include "tests/support/tiny_models.h"
#include "tests/support/text_file.h"

using namespace dyllm;
using json   = nlohmann::json;
namespace fs = std::filesystem;

namespace {

using test::slurp;
using test::spit;

// 100k levels: the depth that overflowed the stack (about 85k levels, 170 KB) with room to spare.
std::string deep_array(size_t depth = 100000) {
    return std::string(depth, '[') + std::string(depth, ']');
}

// The message of the LoadError fn throws; fails the test when it throws nothing or something else. The message must
// be one line.
template <class Fn>
std::string load_error(Fn&& fn) {
    try {
        fn();
    } catch (const LoadError& e) {
        const std::string msg = e.what();
        CHECK(msg.find('\n') == std::string::npos);
        CHECK(msg.size() < 600);  // an excerpt, never a dump
        return msg;
    }
    FAIL("no LoadError");
    return "";
}

bool has(const std::string& msg, const std::string& frag) {
    INFO("message: " << msg << "\nexpected fragment: " << frag);
    CHECK(msg.find(frag) != std::string::npos);
    return msg.find(frag) != std::string::npos;
}

fs::path tiny(Family f = Family::LLaDA) {
    return test::make_tiny_checkpoint(f, DType::F32, 1, 3);
}

// Replaces the value of `key` in a JSON text object by raw text (so the file can hold what json::dump never writes).
void set_raw(const fs::path& file, const std::string& key, const std::string& raw) {
    json j           = json::parse(slurp(file));
    j[key]           = "@@RAW@@";
    std::string text = j.dump();
    text.replace(text.find("\"@@RAW@@\""), 9, raw);
    spit(file, text);
}

std::string le64(uint64_t n) {
    std::string s(8, '\0');
    for (int i = 0; i < 8; ++i) s[size_t(i)] = char(uint8_t(n >> (8 * i)));
    return s;
}

// model.safetensors with its header text replaced (padded to 8 bytes) and the data section kept.
void rewrite_header(const fs::path& st, const std::function<std::string(const std::string&)>& edit) {
    const std::string b = slurp(st);
    uint64_t          n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | uint8_t(b[size_t(i)]);
    std::string h = edit(b.substr(8, n));
    h.append((8 - h.size() % 8) % 8, ' ');
    spit(st, le64(h.size()) + h + b.substr(8 + n));
}

}  // namespace

TEST_CASE("deep JSON in config.json is one LoadError, not a stack overflow", "[loader][limits]") {
    const fs::path d = tiny();
    set_raw(d / "config.json", "d_model", deep_array());
    std::string msg = load_error([&] { Checkpoint::open(d); });
    has(msg, "config.json");
    has(msg, "nested deeper than 256");

    const fs::path d2 = tiny();
    set_raw(d2 / "config.json", "architectures", deep_array());
    has(load_error([&] { parse_config(d2 / "config.json"); }), "nested deeper");

    // Within the depth bound, a nested value where a number belongs is named by its type, never dumped.
    const fs::path d3 = tiny();
    set_raw(d3 / "config.json", "d_model", deep_array(200));
    msg = load_error([&] { parse_config(d3 / "config.json"); });
    has(msg, "key 'd_model' = an array of 1 elements is not an integer");
}

TEST_CASE("deep JSON in a safetensors header and an index.json", "[loader][limits]") {
    const fs::path d = tiny();
    rewrite_header(d / "model.safetensors", [](const std::string& h) {
        json j            = json::parse(h);
        j["__metadata__"] = {{"format", "@@RAW@@"}};
        std::string t     = j.dump();
        return t.replace(t.find("\"@@RAW@@\""), 9, deep_array());
    });
    std::string msg = load_error([&] { Checkpoint::open(d); });
    has(msg, "model.safetensors: header");
    has(msg, "nested deeper than 256");

    const fs::path d2 = tiny();
    rewrite_header(d2 / "model.safetensors", [](const std::string& h) {
        json j                                      = json::parse(h);
        j["model.transformer.ln_f.weight"]["shape"] = "@@RAW@@";
        std::string t                               = j.dump();
        return t.replace(t.find("\"@@RAW@@\""), 9, deep_array());
    });
    has(load_error([&] { Checkpoint::open(d2); }), "nested deeper");

    // Metadata that is not a string (the format says string -> string) is kept as an excerpt on the success path.
    const fs::path d3 = tiny();
    rewrite_header(d3 / "model.safetensors", [](const std::string& h) {
        json j            = json::parse(h);
        j["__metadata__"] = {{"format", "pt"}, {"nested", json::parse(deep_array(100))}};
        return j.dump();
    });
    const auto f = SafetensorsFile::open(d3 / "model.safetensors");
    CHECK(f->metadata().at("nested") == "an array of 1 elements");

    const fs::path s = test::make_tiny_checkpoint(Family::Dream, DType::F32, 2, 3);
    set_raw(s / "model.safetensors.index.json", "weight_map", "{\"model.norm.weight\": " + deep_array() + "}");
    msg = load_error([&] { Checkpoint::open(s); });
    has(msg, "model.safetensors.index.json");
    has(msg, "nested deeper");
}

TEST_CASE("deep JSON and deep Sequence normalizers in tokenizer.json", "[loader][limits]") {
    const fs::path    d    = tiny();
    const fs::path    t    = d / "tokenizer.json";
    const std::string good = slurp(t);
    for (const char* key : {"normalizer", "pre_tokenizer", "decoder"}) {
        set_raw(t, key, deep_array());
        has(load_error([&] { Tokenizer::load(t); }), "nested deeper");
        spit(t, good);
    }
    {
        json j               = json::parse(good);
        j["model"]["merges"] = "@@RAW@@";
        std::string text     = j.dump();
        spit(t, text.replace(text.find("\"@@RAW@@\""), 9, "[" + deep_array() + "]"));
        has(load_error([&] { Tokenizer::load(t); }), "nested deeper");
    }
    // 100 nested Sequence normalizers fit the JSON depth bound but not the normalizer bound; refused at once.
    std::string seq = "{\"type\": \"NFC\"}";
    for (int k = 0; k < 100; ++k) seq = "{\"type\": \"Sequence\", \"normalizers\": [" + seq + "]}";
    spit(t, good);
    set_raw(t, "normalizer", seq);
    const auto  t0  = std::chrono::steady_clock::now();
    std::string msg = load_error([&] { Tokenizer::load(t); });
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2));
    has(msg, "Sequence normalizers nested deeper than 16");
    // A merge that is neither form is shown by its type, not dumped.
    json j               = json::parse(good);
    j["model"]["merges"] = json::array({json::array({json::array({1, 2}), "b"})});
    spit(t, j.dump());
    has(load_error([&] { Tokenizer::load(t); }),
        "merges[0]: expected a \"left right\" string or a [\"left\", \"right\"] pair, got an array of 2 elements");
}

TEST_CASE("FIFOs, devices, directories and symlink loops are refused without blocking", "[loader][limits]") {
    const fs::path d = tiny();
    for (const char* name : {"config.json", "model.safetensors", "tokenizer.json"}) {
        const fs::path dir = tiny();
        fs::remove(dir / name);
        REQUIRE(::mkfifo((dir / name).c_str(), 0600) == 0);  // nobody ever writes: an open() without O_NONBLOCK hangs
        const std::string msg = load_error([&] {
            if (std::string(name) == "tokenizer.json")
                Tokenizer::load(dir / name);
            else
                Checkpoint::open(dir);
        });
        has(msg, name);
        has(msg, "FIFO");
    }
    for (const char* name : {"config.json", "model.safetensors", "tokenizer.json"}) {
        const fs::path dir = tiny();
        fs::remove(dir / name);
        fs::create_symlink("/dev/zero", dir / name);  // reading it would never end
        const std::string msg = load_error([&] {
            if (std::string(name) == "tokenizer.json")
                Tokenizer::load(dir / name);
            else
                Checkpoint::open(dir);
        });
        has(msg, name);
        has(msg, "character device");
    }
    {
        const fs::path dir = tiny();
        fs::remove(dir / "config.json");
        fs::create_directory(dir / "config.json");
        has(load_error([&] { Checkpoint::open(dir); }), "config.json: is a directory");
    }
    {
        const fs::path dir = tiny();
        fs::remove(dir / "model.safetensors");
        fs::create_symlink(dir / "loop_b", dir / "loop_a");
        fs::create_symlink(dir / "loop_a", dir / "loop_b");
        fs::create_symlink(dir / "loop_a", dir / "model.safetensors");
        has(load_error([&] { Checkpoint::open(dir); }), "model.safetensors: symlink loop");
        fs::remove(dir / "config.json");
        fs::create_symlink(dir / "loop_a", dir / "config.json");
        has(load_error([&] { Checkpoint::open(dir); }), "config.json: symlink loop");
        has(load_error([&] { Checkpoint::open(dir / "loop_a"); }), "symlink loop");
    }
}

TEST_CASE("size caps per kind of file", "[loader][limits]") {
    const fs::path dir = tiny();
    // A sparse config.json one byte over the cap: refused from fstat's size, never read.
    { std::ofstream(dir / "config.json", std::ios::trunc) << "{}"; }
    fs::resize_file(dir / "config.json", kMaxConfigJsonBytes + 1);
    const std::string msg = load_error([&] { Checkpoint::open(dir); });
    has(msg, "config.json");
    has(msg, "limit");
}

TEST_CASE("config sizes are bounded and checked against the files before allocation", "[loader][limits]") {
    {
        const fs::path d = tiny();
        set_raw(d / "config.json", "n_layers", "10000000");
        has(load_error([&] { Checkpoint::open(d); }), "key 'n_layers' = 10000000 exceeds the limit 4096");
    }
    {
        const fs::path d = tiny();
        set_raw(d / "config.json", "n_layers", "4000");  // within the limit, far more than the 2 layers in the file
        const std::string msg = load_error([&] { Checkpoint::open(d); });
        has(msg, "config.json: n_layers = 4000 needs 36003 tensors");
        has(msg, "holds 21");
    }
    {
        const fs::path d = tiny();
        json           j = json::parse(slurp(d / "config.json"));
        j.erase("mlp_hidden_size");
        j["mlp_ratio"] = 2000000000;
        j["d_model"]   = 64;
        spit(d / "config.json", j.dump());
        has(load_error([&] { parse_config(d / "config.json"); }),
            "mlp_ratio * d_model = 2000000000 * 64 = 128000000000 exceeds the limit");
    }
    {
        const fs::path d = tiny();
        set_raw(d / "config.json", "rope_theta", "1e400");
        const std::string msg = load_error([&] { parse_config(d / "config.json"); });
        has(msg, "config.json");
        has(msg, "number out of range");
    }
}

TEST_CASE("1e400 in the tokenizer files and a task line names the file (and line)", "[loader][limits]") {
    const fs::path    d    = tiny();
    const fs::path    t    = d / "tokenizer.json";
    const std::string good = slurp(t);
    set_raw(t, "version", "1e400");
    std::string msg = load_error([&] { Tokenizer::load(t); });
    has(msg, t.string() + ": number out of range");
    spit(t, good);
    spit(d / "tokenizer_config.json", "{\"model_max_length\": 1e400}");
    msg = load_error([&] { Tokenizer::load(t); });
    has(msg, (d / "tokenizer_config.json").string() + ": number out of range");

    const fs::path task = test::make_temp_dir("task") / "add.jsonl";
    spit(task,
         "{\"prompt\": \"a\", \"answer\": \"b\", \"task\": \"t\", \"shots\": 0}\n"
         "{\"prompt\": \"a\", \"answer\": \"b\", \"task\": \"t\", \"shots\": 1e400}\n");
    msg = load_error([&] { load_task_file(task); });
    has(msg, task.string() + ":2: number out of range");
}

TEST_CASE("empty vocabulary and a task's own shots are load errors naming the file", "[loader][limits]") {
    const fs::path d    = tiny();
    json           j    = json::parse(slurp(d / "tokenizer.json"));
    j["model"]["vocab"] = json::object();
    j["added_tokens"]   = json::array();
    spit(d / "tokenizer.json", j.dump());
    has(load_error([&] { Tokenizer::load(d / "tokenizer.json"); }), "model.vocab: the vocabulary is empty");

    const fs::path task = test::make_temp_dir("task") / "add.jsonl";
    spit(task,
         "{\"prompt\": \"a\", \"answer\": \"b\", \"task\": \"t\", \"shots\": 0}\n"
         "\n"
         "{\"prompt\": \"a\", \"answer\": \"b\", \"task\": \"t\", \"shots\": 5}\n");
    const std::string msg = load_error([&] { load_task_file(task); });
    has(msg, task.string() + ":3: \"shots\" = 5 needs more items than the file's 2");
    CHECK(msg.find("--shots") == std::string::npos);
}

TEST_CASE("json_excerpt never dumps a whole value", "[loader][limits]") {
    CHECK(json_excerpt(json("short")) == "\"short\"");
    CHECK(json_excerpt(json(std::string(1000, 'x'))).size() < 60);
    CHECK(json_excerpt(json::parse("[\"Qwen2ForCausalLM\"]")) == "[\"Qwen2ForCausalLM\"]");
    CHECK(json_excerpt(json::parse("[[1]]")) == "an array of 1 elements");
    CHECK(json_excerpt(json::parse("{\"a\": {\"b\": 1}}")) == "an object of 1 keys");
    CHECK(json_excerpt(json::parse("{\"type\": \"yarn\"}")) == "{\"type\": \"yarn\"}");
}

// GCC defines __SANITIZE_*__; clang answers __has_feature.
#if defined(__has_feature)
#define DYLLM_TEST_CLANG_SANITIZED (__has_feature(address_sanitizer) || __has_feature(thread_sanitizer))
#else
#define DYLLM_TEST_CLANG_SANITIZED 0
#endif

TEST_CASE("the thread pool joins what it started when threads cannot start", "[loader][limits][threads]") {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || DYLLM_TEST_CLANG_SANITIZED
    WARN("address-space limits conflict with the sanitizer's shadow memory: covered by the non-sanitized build");
    return;
#else
    // In a child process: an address-space limit makes thread stacks fail to map after a few threads.
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        struct rlimit rl {};
        getrlimit(RLIMIT_AS, &rl);
        rl.rlim_cur = 512ull << 20;  // 512 MiB: 8 MiB stacks, so well under 64 threads fit
        setrlimit(RLIMIT_AS, &rl);
        try {
            cpu::ThreadPool pool(4096);
        } catch (const std::runtime_error& e) {
            _exit(std::strstr(e.what(), "could not start 4096 threads") ? 0 : 2);
        }
        _exit(1);  // no exception: the limit did not bite
    }
    int status = 0;
    waitpid(pid, &status, 0);
    REQUIRE(WIFEXITED(status));  // not killed, not hung
    CHECK(WEXITSTATUS(status) == 0);
#endif
}

TEST_CASE("checkpoint writes replace files atomically; a mapped model keeps its bytes", "[loader][limits]") {
    const ModelConfig cfg = test::tiny_config(Family::LLaDA);
    const fs::path    d   = test::make_checkpoint(cfg, DType::F32, 1, 1);
    const auto        old = SafetensorsFile::open(d / "model.safetensors");
    const auto*       e   = old->find("model.transformer.ln_f.weight");
    const auto*       q   = old->find("model.transformer.blocks.0.q_proj.weight");
    REQUIRE(e);
    REQUIRE(q);
    const std::vector<uint8_t> before(q->data, q->data + (q->end - q->begin));
    // make-model --force: a new seed into the same directory while the old file is mapped.
    write_random_checkpoint(d, cfg, 2, DType::F32, 1);
    CHECK(std::vector<uint8_t>(q->data, q->data + (q->end - q->begin)) == before);  // no SIGBUS, same bytes
    const auto  now = SafetensorsFile::open(d / "model.safetensors");
    const auto* q2  = now->find("model.transformer.blocks.0.q_proj.weight");
    REQUIRE(q2);
    CHECK(std::memcmp(q2->data, before.data(), before.size()) != 0);  // the new weights are in place
    for (const auto& entry : fs::directory_iterator(d))
        CHECK(entry.path().filename().string().find(".tmp-") == std::string::npos);  // no temporary file left
}
