// Task-suite examples for the studio, read with the suite's own loader (one reader and one field list for the task
// files), and the exact-match answer scoring.
#include "app/model/task_examples.h"

#include <exception>

namespace dyllm::app {

TaskExamples load_task_examples(const std::filesystem::path& dir, size_t per_file) {
    TaskExamples    out;
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) return out;
    for (const auto& name : list_tasks(dir)) {
        try {
            TaskSuite suite = load_task_file(dir / (name + ".jsonl"));
            if (suite.items.size() > per_file) suite.items.resize(per_file);
            for (auto& item : suite.items) out.items.push_back(std::move(item));
        } catch (const std::exception& e) {
            out.warnings.push_back(e.what());  // "<file>:<line>: <what is wrong>": the file is skipped, the app goes on
        }
    }
    return out;
}

bool answer_matches(const std::string& response, const std::string& expected) {
    // The suite's own rule (app/model/task_suite.h, same as `dyllm eval` and the training script), so the studio's
    // "correct" agrees with the accuracy tables.
    if (dyllm::normalise_whitespace(expected).empty()) return false;
    return dyllm::answer_matches(response, expected);
}

}  // namespace dyllm::app
