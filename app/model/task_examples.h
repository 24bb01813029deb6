// Task-suite examples for the Prompt panel: the items of assets/tasks/*.jsonl (read by the suite's loader,
// app/model/task_suite.h) and the scoring of a generated response against the expected answer.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "app/model/task_suite.h"

namespace dyllm::app {

using TaskExample = TaskItem;  // {task, prompt, answer, shots, source "file.jsonl:line"}

struct TaskExamples {
    std::vector<TaskExample> items;
    std::vector<std::string> warnings;  // one per skipped file, naming file:line and what is wrong
};

// Loads the first `per_file` items of every *.jsonl under dir (sorted by name). A missing dir gives no items and no
// warning; a file the suite's loader refuses is skipped with its error as a warning.
TaskExamples load_task_examples(const std::filesystem::path& dir, size_t per_file = 40);

// The task suite's scoring rule (app/model/task_suite.h answer_matches: the text after the last "answer" marker, or the
// whole whitespace-normalised response when there is none); an empty expected answer never matches.
bool answer_matches(const std::string& response, const std::string& expected);

}  // namespace dyllm::app
