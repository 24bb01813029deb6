// Fuzz entry points: each writes its input where the loader expects a file (a per-process temporary directory, as the
// loaders take paths) and runs the loader; expected errors are swallowed, anything else aborts.
#include "tests/fuzz/fuzz_entries.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>

#include "app/model/task_suite.h"
#include "engine/errors.h"
#include "engine/io/checkpoint.h"
#include "engine/io/checkpoint_writer.h"
#include "engine/io/config.h"
#include "engine/io/gguf.h"
#include "engine/io/gguf_model.h"
#include "engine/io/safetensors.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/tokenizer_gguf.h"

namespace dyllm::fuzz {

namespace {

namespace fs = std::filesystem;

const fs::path& work_dir() {
    static const fs::path dir = [] {
        std::string tmpl = (fs::temp_directory_path() / "dyllm-fuzz-XXXXXX").string();
        if (!::mkdtemp(tmpl.data())) std::abort();
        fs::create_directories(fs::path(tmpl) / "ckpt");
        fs::create_directories(fs::path(tmpl) / "tok");
        fs::create_directories(fs::path(tmpl) / "task");
        // The checkpoint target's config.json: the tiny LLaDA, so a fuzzed file that happens to be valid opens fully.
        write_config_json(fs::path(tmpl) / "ckpt" / "config.json", small_config(Family::LLaDA, 1, 16, 2, 2, 32, 262));
        std::atexit([] {
            std::error_code ec;
            fs::remove_all(work_dir(), ec);
        });
        return fs::path(tmpl);
    }();
    return dir;
}

void write_file(const fs::path& p, const uint8_t* data, size_t size) {
    std::ofstream f(p, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data), std::streamsize(size));
    if (!f) std::abort();
}

// Runs fn; LoadError and InputError are the loaders' documented rejections. Anything else is a finding.
template <class Fn>
int guarded(const char* target, Fn&& fn) {
    try {
        fn();
    } catch (const LoadError&) {
    } catch (const InputError&) {
    } catch (const std::exception& e) {
        std::fprintf(stderr, "fuzz %s: unexpected exception: %s\n", target, e.what());
        std::abort();
    }
    return 0;
}

}  // namespace

int safetensors(const uint8_t* data, size_t size) {
    return guarded("safetensors", [&] {
        try {
            (void)parse_safetensors(data, size, "fuzz.safetensors");
        } catch (const LoadError&) {
            return;  // the checkpoint open would refuse it the same way
        }
        write_file(work_dir() / "ckpt" / "model.safetensors", data, size);
        (void)Checkpoint::open(work_dir() / "ckpt");
    });
}

int gguf(const uint8_t* data, size_t size) {
    return guarded("gguf", [&] {
        GgufContents g;
        try {
            g = parse_gguf(data, size, "fuzz.gguf");
        } catch (const LoadError&) {
            return;  // the checkpoint open would refuse it the same way
        }
        // The tokenizer and the model config from the metadata, each on its own (a file may hold one without the
        // other), then the whole checkpoint from a file.
        try {
            if (const auto tok = tokenizer_from_gguf(g, "fuzz.gguf")) {
                for (const char* text : {"Hello, world!", " caf\xc3\xa9 12345\n", "\xff bad utf8"}) {
                    const std::vector<int32_t> ids = tok->encode(text);
                    (void)tok->decode(ids, true);
                }
            }
        } catch (const LoadError&) {
        }
        write_file(work_dir() / "fuzz.gguf", data, size);
        (void)Checkpoint::open(work_dir() / "fuzz.gguf");
    });
}

int config(const uint8_t* data, size_t size) {
    return guarded("config", [&] {
        write_file(work_dir() / "ckpt" / "fuzz_config.json", data, size);
        const ModelConfig c = parse_config(work_dir() / "ckpt" / "fuzz_config.json");
        (void)c.n_params();
    });
}

int tokenizer(const uint8_t* data, size_t size) {
    return guarded("tokenizer", [&] {
        write_file(work_dir() / "tok" / "tokenizer.json", data, size);
        const auto tok = Tokenizer::load(work_dir() / "tok" / "tokenizer.json");
        for (const char* text : {"Hello, world!", " the  12345 caf\xc3\xa9 \xe2\x82\xac\n", "\xff\xfe bad utf8", ""}) {
            const std::vector<int32_t> ids = tok->encode(text);
            (void)tok->decode(ids, false);
            (void)tok->decode(ids, true);
            for (int32_t id : ids) (void)tok->token_text(id);
        }
        (void)tok->vocab_size();
    });
}

int task(const uint8_t* data, size_t size) {
    return guarded("task", [&] {
        write_file(work_dir() / "task" / "fuzz.jsonl", data, size);
        const TaskSuite s = load_task_file(work_dir() / "task" / "fuzz.jsonl");
        for (size_t i = 0; i < s.items.size() && i < 4; ++i) (void)build_prompt(s, i, s.items[i].shots);
    });
}

const std::vector<Target>& targets() {
    static const std::vector<Target> t = {
        {"safetensors", safetensors}, {"gguf", gguf}, {"config", config}, {"tokenizer", tokenizer}, {"task", task}};
    return t;
}

}  // namespace dyllm::fuzz
