// Task suites of the built-in models (assets/tasks/<task>.jsonl, written by assets/train/make_tasks.py): loading with
// file:line errors, the few-shot prompt rule, the held-out hash split, and the answer-extraction / exact-match rule.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace dyllm {

// One line of a task file: {"prompt", "answer", "task", "shots"}. prompt is the user message WITHOUT the chat
// template (the engine applies it); answer is the full expected response.
struct TaskItem {
    std::string prompt, answer, task;
    int         shots = 0;
    std::string source;  // "file.jsonl:line"
};

struct TaskSuite {
    std::string           name;  // file stem ("add", "sort", ...)
    std::filesystem::path file;
    std::vector<TaskItem> items;
};

// Loads one JSONL file. Empty lines are skipped. Throws LoadError "<file>:<line>: <what is wrong>" for a line that is
// not a JSON object, lacks a key, has a key of the wrong type or a negative shot count, and for an unreadable or
// empty file.
TaskSuite load_task_file(const std::filesystem::path& jsonl);

// Task names (file stems of *.jsonl, sorted) in dir. Throws LoadError if dir is not a directory. A *.jsonl that is
// not a regular file (FIFO, device, directory, dangling link, symlink loop) is left out, with its reason in *skipped.
// load_tasks prints those reasons on stderr ("tasks: FILE: skipped, a FIFO ...") and names it when asked for by name.
std::vector<std::string> list_tasks(const std::filesystem::path& dir, std::vector<std::string>* skipped = nullptr);

// `name` = one task or "all". Throws LoadError for a missing dir, InputError for an unknown task (naming the known
// ones).
std::vector<TaskSuite> load_tasks(const std::filesystem::path& dir, const std::string& name);

// Where the task files are, tried in order: <model_dir>/tasks, <model_dir>/../../tasks (assets/models/X ->
// assets/tasks), then the shared asset lookup (engine/io/asset_paths.h: $DYLLM_SOURCE_DIR, the install layout, the
// build tree's sources). Returns the first that exists, or an empty path. An empty model_dir skips the first two.
std::filesystem::path find_tasks_dir(const std::filesystem::path& model_dir);

// ---- prompt format (must match assets/train/tasks.py format_prompt) ----

// The item's own query: the text after the last "Q: " marker of its prompt (the whole prompt when there is none).
std::string task_query(const TaskItem& item);
// Prompt of item i with k solved examples: the k items before it in the suite (cyclically), each "Q: {query}\nA:
// {answer}\n", then "Q: {query}". For k = item.shots this reproduces the shipped prompt. Throws InputError when
// k < 0 or k >= number of items (an item would be its own example).
std::string build_prompt(const TaskSuite& suite, size_t i, int k);

// ---- held-out split (must match assets/train/tasks.py split_key / is_held_out) ----

uint32_t fnv1a32(std::string_view s);
// The string the split hashes: addition keyed by its unordered operand pair ("add 285+347" for either order), sorting
// by its digit multiset, any other query by itself.
std::string split_key(std::string_view query);
// Training never sees a query in the held-out bucket: fnv1a32(split_key(q)) % 10 == 0.
constexpr uint32_t kHoldoutMod = 10;
bool               is_held_out(std::string_view query);

// ---- scoring ----

// Runs of whitespace collapsed to one space, ends trimmed.
std::string normalise_whitespace(std::string_view s);
// The rule (same as tasks.py final_answer): normalise whitespace; if the text contains "answer", keep what follows its
// last occurrence (trimmed). Responses without the marker (sort, word, rev) are compared whole.
std::string extract_answer(std::string_view text);
// Exact match of extract_answer(generated) and extract_answer(expected).
bool answer_matches(std::string_view generated, std::string_view expected);
// Exact match of the whole whitespace-normalised response (worked steps included).
bool full_match(std::string_view generated, std::string_view expected);

}  // namespace dyllm
