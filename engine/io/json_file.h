// The one JSON reader of every loader (config.json, index.json, safetensors headers, tokenizer files, task JSONL):
// regular files only (checked without blocking), a size cap per kind of file, nesting depth bounded, and every
// json::exception turned into one LoadError line naming the file (and the line for JSONL).
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace dyllm {

// Size caps. The largest real files: a Qwen2/Llama-3 tokenizer.json is 7-11 MB and its tokenizer_config.json under
// 1 MB, an HF index.json about 100 KB, config.json about 1 KB, the built-in task files under 1 MB. The caps leave
// 10-100x headroom and keep the parsed DOM (about 10x the text) well under a few GiB.
inline constexpr uint64_t kMaxConfigJsonBytes          = 16ull << 20;
inline constexpr uint64_t kMaxIndexJsonBytes           = 64ull << 20;
inline constexpr uint64_t kMaxTokenizerJsonBytes       = 256ull << 20;
inline constexpr uint64_t kMaxTokenizerConfigJsonBytes = 64ull << 20;
inline constexpr uint64_t kMaxTaskFileBytes            = 256ull << 20;

// No file these loaders read nests deeper than about 8 levels; 256 keeps the DOM and every recursive walk over it
// (type checks, dump of a short excerpt, destruction) far from the stack limit.
inline constexpr int kMaxJsonDepth = 256;

// Reads a whole file. Refuses (LoadError "<path>: ...") a path that does not exist, a symlink loop, a directory
// ("is a directory"), a FIFO, socket or device (opened with O_NONBLOCK and checked with fstat, so nothing blocks),
// and a file larger than max_bytes (naming `what`, e.g. "tokenizer.json", and the cap).
std::string read_regular_file(const std::filesystem::path& path, uint64_t max_bytes, const char* what);

// Called for each key at nesting depth 1 (the top-level object's keys), duplicates included (nlohmann keeps only
// the last of duplicate keys in the DOM).
using JsonTopKeyFn = std::function<void(const std::string& key)>;

// Parses JSON text. Nesting deeper than max_depth, invalid JSON and numbers out of range (1e400) each give one
// LoadError "<label>: <what is wrong>" (the parser's message cut to a short excerpt).
nlohmann::json parse_json_text(std::string_view text, const std::string& label, const JsonTopKeyFn& on_top_key = {},
                               int max_depth = kMaxJsonDepth);

// read_regular_file + parse_json_text.
nlohmann::json read_json_file(const std::filesystem::path& path, uint64_t max_bytes, const char* what);

// JSONL: each line that is not blank is parsed on its own and handed to fn(line_number, value) (1-based). Errors
// name "<path>:<line>". '\r' before '\n' is dropped.
void read_jsonl_file(const std::filesystem::path& path, uint64_t max_bytes, const char* what,
                     const std::function<void(size_t line, const nlohmann::json& value)>& fn);

// A value for an error message, never a full dump: scalars as JSON text cut to max_chars ("..." appended), arrays
// and objects as their type and size ("an array of 3 elements").
std::string json_excerpt(const nlohmann::json& v, size_t max_chars = 40);
// A key or name from a file for an error message: cut to max_chars with "..." appended.
std::string text_excerpt(std::string_view s, size_t max_chars = 120);

}  // namespace dyllm
