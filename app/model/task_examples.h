// Task-suite examples for the Prompt panel: reads assets/tasks/*.jsonl ({"prompt", "answer", "task", "shots"} per line)
// and scores a generated response against the expected answer.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace dyllm::app {

struct TaskExample {
    std::string task, prompt, answer;
    int         shots = 0;
    std::string source;  // "file.jsonl:line"
};

struct TaskExamples {
    std::vector<TaskExample> items;
    std::vector<std::string> warnings;  // one per skipped line, naming file and line
};

// Loads up to `per_file` examples from every *.jsonl under dir (sorted by name). A missing dir gives no items and no
// warning; a bad line is skipped with a warning naming file:line and what is wrong.
TaskExamples load_task_examples(const std::filesystem::path& dir, size_t per_file = 40);

// The task suite's scoring rule (app/model/task_suite.h answer_matches: the text after the last "answer" marker, or the
// whole whitespace-normalised response when there is none); an empty expected answer never matches.
bool answer_matches(const std::string& response, const std::string& expected);

}  // namespace dyllm::app
