// Task-suite example loading (nlohmann json, one object per line) and exact-match answer scoring for the studio.
#include "app/model/task_examples.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "app/model/task_suite.h"

namespace dyllm::app {

TaskExamples load_task_examples(const std::filesystem::path& dir, size_t per_file) {
    TaskExamples out;
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) return out;
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec))
        if (e.is_regular_file() && e.path().extension() == ".jsonl") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
        std::ifstream in(f);
        std::string   line;
        size_t        lineno = 0, taken = 0;
        while (taken < per_file && std::getline(in, line)) {
            ++lineno;
            if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
            const std::string where = f.filename().string() + ":" + std::to_string(lineno);
            try {
                const auto j = nlohmann::json::parse(line);
                if (!j.is_object() || !j.contains("prompt") || !j["prompt"].is_string()) {
                    out.warnings.push_back(where + ": missing string field \"prompt\"");
                    continue;
                }
                TaskExample ex;
                ex.prompt = j["prompt"].get<std::string>();
                if (j.contains("answer") && j["answer"].is_string()) ex.answer = j["answer"].get<std::string>();
                ex.task = j.contains("task") && j["task"].is_string() ? j["task"].get<std::string>()
                                                                       : f.stem().string();
                if (j.contains("shots") && j["shots"].is_number_integer()) ex.shots = j["shots"].get<int>();
                ex.source = where;
                out.items.push_back(std::move(ex));
                ++taken;
            } catch (const nlohmann::json::exception& e) {
                out.warnings.push_back(where + ": invalid JSON (" + e.what() + ")");
            }
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
