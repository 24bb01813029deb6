// The fuzz entry points, plain functions so that the libFuzzer targets (clang, DYLLM_FUZZ) and the replay test run
// under the normal GCC build (test_fuzz_replay) call exactly the same code. Each takes one input, feeds it to a
// loader, and returns 0. Expected rejections (LoadError, InputError) are fine; anything else escaping is a bug and
// aborts (so libFuzzer records a crash and the replay test fails).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dyllm::fuzz {

// safetensors header + data: parse_safetensors on the bytes, then Checkpoint::open of a directory holding them as
// model.safetensors next to a valid tiny config.json.
int safetensors(const uint8_t* data, size_t size);
// A GGUF file: parse_gguf on the bytes, the tokenizer from its metadata, then Checkpoint::open of it as a .gguf file.
int gguf(const uint8_t* data, size_t size);
// config.json text through parse_config.
int config(const uint8_t* data, size_t size);
// tokenizer.json text through Tokenizer::load, then encode/decode round trips of a few strings.
int tokenizer(const uint8_t* data, size_t size);
// A task JSONL file through load_task_file.
int task(const uint8_t* data, size_t size);

struct Target {
    const char* name;  // the corpus folder name under tests/fuzz/corpus and tests/fuzz/reproducers
    int (*fn)(const uint8_t*, size_t);
};
const std::vector<Target>& targets();

}  // namespace dyllm::fuzz
