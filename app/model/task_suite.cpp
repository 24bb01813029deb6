// Task-suite loading (JSONL with file:line errors), the few-shot prompt rule, the held-out hash split and the
// answer-extraction rule; all mirror assets/train/tasks.py so that C++ and Python score identically.
#include "app/model/task_suite.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <sstream>
#include <system_error>

#include "engine/errors.h"
#include "engine/io/asset_paths.h"
#include "engine/io/json_file.h"

namespace dyllm {

namespace {

std::string where(const std::filesystem::path& f, size_t line) {
    return f.string() + ":" + std::to_string(line);
}

const nlohmann::json& require_key(const nlohmann::json& j, const char* key, const std::string& at) {
    auto it = j.find(key);
    if (it == j.end()) throw LoadError(at + ": missing key \"" + key + "\"");
    return *it;
}

std::string require_string(const nlohmann::json& j, const char* key, const std::string& at) {
    const auto& v = require_key(j, key, at);
    if (!v.is_string()) throw LoadError(at + ": key \"" + key + "\" must be a string (got " + json_excerpt(v) + ")");
    return v.get<std::string>();
}

bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

}  // namespace

TaskSuite load_task_file(const std::filesystem::path& jsonl) {
    TaskSuite           suite;
    std::vector<size_t> lines;  // line number of each item
    suite.name = jsonl.stem().string();
    suite.file = jsonl;
    // The engine's one JSON reader: regular files only (a FIFO never blocks), a size cap, nesting bounded, and every
    // parser error (bad JSON, 1e400) as one "<file>:<line>: ..." line.
    read_jsonl_file(jsonl, kMaxTaskFileBytes, "task", [&](size_t n, const nlohmann::json& j) {
        const std::string at = where(jsonl, n);
        if (!j.is_object()) throw LoadError(at + ": expected a JSON object, got " + std::string(j.type_name()));
        TaskItem item;
        item.prompt   = require_string(j, "prompt", at);
        item.answer   = require_string(j, "answer", at);
        item.task     = require_string(j, "task", at);
        const auto& s = require_key(j, "shots", at);
        if (!s.is_number_integer())
            throw LoadError(at + ": key \"shots\" must be an integer (got " + json_excerpt(s) + ")");
        const int64_t shots = s.get<int64_t>();
        if (shots < 0 || shots > 1000)
            throw LoadError(at + ": \"shots\" must be in [0, 1000] (got " + std::to_string(shots) + ")");
        item.shots  = static_cast<int>(shots);
        item.source = jsonl.filename().string() + ":" + std::to_string(n);
        suite.items.push_back(std::move(item));
        lines.push_back(n);
    });
    if (suite.items.empty()) throw LoadError(jsonl.string() + ": task file has no items");
    // An item's own shot count must leave it out of its examples (build_prompt's rule); said here with file:line,
    // not later as a --shots error the user never typed.
    for (size_t i = 0; i < suite.items.size(); ++i) {
        if (size_t(suite.items[i].shots) >= suite.items.size()) {
            throw LoadError(where(jsonl, lines[i]) + ": \"shots\" = " + std::to_string(suite.items[i].shots) +
                            " needs more items than the file's " + std::to_string(suite.items.size()) +
                            " (an item cannot be its own example)");
        }
    }
    return suite;
}

namespace {
// Why a *.jsonl entry is not a task file ("" when it is one): stat() follows symlinks, so a dangling link, a loop
// or a link to a FIFO or device is named for what it is instead of being followed (a FIFO would block the reader).
std::string not_a_task_file(const std::filesystem::path& p) {
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0)
        return errno == ELOOP ? "a symlink loop" : errno == ENOENT ? "a dangling symlink" : std::strerror(errno);
    if (S_ISREG(st.st_mode)) return "";
    return S_ISDIR(st.st_mode)    ? "a directory"
           : S_ISFIFO(st.st_mode) ? "a FIFO"
           : S_ISCHR(st.st_mode)  ? "a character device"
           : S_ISBLK(st.st_mode)  ? "a block device"
                                  : "a socket";
}
}  // namespace

std::vector<std::string> list_tasks(const std::filesystem::path& dir, std::vector<std::string>* skipped) {
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) throw LoadError(dir.string() + ": task directory not found");
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
        if (e.path().extension() != ".jsonl") continue;
        if (const std::string why = not_a_task_file(e.path()); !why.empty()) {
            if (skipped) skipped->push_back(e.path().string() + ": skipped, " + why + " (not a task file)");
            continue;
        }
        names.push_back(e.path().stem().string());
    }
    std::sort(names.begin(), names.end());
    if (skipped) std::sort(skipped->begin(), skipped->end());
    return names;
}

std::vector<TaskSuite> load_tasks(const std::filesystem::path& dir, const std::string& name) {
    std::vector<std::string>       skipped;
    const std::vector<std::string> names = list_tasks(dir, &skipped);
    for (const auto& s : skipped) {
        // A task asked for by name that is not a regular file: the reason, not "unknown task".
        if (s.rfind((dir / (name + ".jsonl")).string() + ":", 0) == 0) throw LoadError(s);
        std::fprintf(stderr, "tasks: %s\n", s.c_str());
    }
    if (names.empty()) throw LoadError(dir.string() + ": no *.jsonl task files");
    std::vector<TaskSuite> out;
    if (name == "all") {
        for (const auto& n : names) out.push_back(load_task_file(dir / (n + ".jsonl")));
        return out;
    }
    if (std::find(names.begin(), names.end(), name) == names.end()) {
        std::string known;
        for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
        throw InputError("--task " + name + ": unknown task (known: " + known + ", or all)");
    }
    out.push_back(load_task_file(dir / (name + ".jsonl")));
    return out;
}

std::filesystem::path find_tasks_dir(const std::filesystem::path& model_dir) {
    std::error_code ec;
    if (!model_dir.empty()) {
        // Tasks shipped with this model: inside its directory, or beside its models/ folder (models/X -> tasks).
        for (const auto& c : {model_dir / "tasks", model_dir / ".." / ".." / "tasks"})
            if (std::filesystem::is_directory(c, ec)) return std::filesystem::weakly_canonical(c, ec);
    }
    return find_asset(AssetKind::Tasks);
}

std::string task_query(const TaskItem& item) {
    const size_t p = item.prompt.rfind("Q: ");
    return p == std::string::npos ? item.prompt : item.prompt.substr(p + 3);
}

std::string build_prompt(const TaskSuite& suite, size_t i, int k) {
    const size_t n = suite.items.size();
    if (i >= n) throw InputError("task " + suite.name + ": item " + std::to_string(i) + " out of range");
    if (k < 0 || size_t(k) >= n)
        throw InputError("--shots " + std::to_string(k) + ": must be in [0, " + std::to_string(n - 1) + "] for task " +
                         suite.name + " (" + std::to_string(n) + " items; an item cannot be its own example)");
    std::string out;
    for (int j = 0; j < k; ++j) {
        const TaskItem& s = suite.items[(i + n - size_t(k) + size_t(j)) % n];
        out += "Q: " + task_query(s) + "\nA: " + s.answer + "\n";
    }
    return out + "Q: " + task_query(suite.items[i]);
}

uint32_t fnv1a32(std::string_view s) {
    uint32_t h = 0x811C9DC5u;  // FNV-1a 32-bit offset basis and prime (same constants as tasks.py)
    for (unsigned char c : s) {
        h ^= c;
        h *= 0x01000193u;
    }
    return h;
}

std::string split_key(std::string_view q) {
    if (q.substr(0, 4) == "add ") {
        const std::string body(q.substr(4));
        const size_t      plus = body.find('+');
        if (plus != std::string::npos) {
            char*      end = nullptr;
            const long a   = std::strtol(body.c_str(), &end, 10);
            const long b   = std::strtol(body.c_str() + plus + 1, &end, 10);
            return "add " + std::to_string(std::min(a, b)) + "+" + std::to_string(std::max(a, b));
        }
        return std::string(q);
    }
    if (q.substr(0, 5) == "sort ") {
        std::istringstream       ss{std::string(q.substr(5))};
        std::vector<std::string> xs;
        for (std::string t; ss >> t;) xs.push_back(t);
        std::sort(xs.begin(), xs.end());  // Python sorted() on strings: same order for single digits
        std::string out = "sort";
        for (const auto& x : xs) out += " " + x;
        return out;
    }
    return std::string(q);
}

bool is_held_out(std::string_view query) {
    return fnv1a32(split_key(query)) % kHoldoutMod == 0;
}

std::string normalise_whitespace(std::string_view s) {
    std::string out;
    bool        pending = false;
    for (char c : s) {
        if (is_space(c)) {
            pending = !out.empty();
            continue;
        }
        if (pending) out += ' ';
        pending = false;
        out += c;
    }
    return out;
}

std::string extract_answer(std::string_view text) {
    std::string  t = normalise_whitespace(text);
    const size_t p = t.rfind("answer");
    if (p == std::string::npos) return t;
    return normalise_whitespace(std::string_view(t).substr(p + 6));
}

bool answer_matches(std::string_view generated, std::string_view expected) {
    return extract_answer(generated) == extract_answer(expected);
}

bool full_match(std::string_view generated, std::string_view expected) {
    return normalise_whitespace(generated) == normalise_whitespace(expected);
}

}  // namespace dyllm
