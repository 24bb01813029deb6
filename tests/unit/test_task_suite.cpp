// Task-suite loader, prompt rule, held-out split and answer extraction (app/model/task_suite.h), including checks on
// the shipped assets/tasks/*.jsonl and the long tasks of assets/tasks/long: every item is in the held-out bucket, so
// training never saw its query.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "engine/errors.h"
#include "app/model/task_suite.h"

using namespace dyllm;
namespace fs = std::filesystem;

namespace {

fs::path source_dir() {
    const char* env = std::getenv("DYLLM_SOURCE_DIR");
    return env ? fs::path(env) : fs::path(DYLLM_SOURCE_DIR);
}

fs::path write_temp(const std::string& name, const std::string& text) {
    const fs::path dir = fs::temp_directory_path() / "dyllm_test_task_suite";
    fs::create_directories(dir);
    const fs::path p = dir / name;
    std::ofstream(p, std::ios::binary) << text;
    return p;
}

std::string load_error(const fs::path& p) {
    try {
        load_task_file(p);
    } catch (const LoadError& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("task file loads items and skips blank lines", "[task_suite]") {
    const auto p =
        write_temp("ok.jsonl",
                   "{\"prompt\": \"Q: sort 3 1\", \"answer\": \"1 3\", \"task\": \"sort\", \"shots\": 0}\n"
                   "\n"
                   "{\"prompt\": \"Q: x\", \"answer\": \"y\", \"task\": \"t\", \"shots\": 1, \"extra\": 1}\n");
    const TaskSuite s = load_task_file(p);
    REQUIRE(s.name == "ok");
    REQUIRE(s.items.size() == 2);
    CHECK(s.items[0].answer == "1 3");
    CHECK(s.items[1].shots == 1);
    CHECK(s.items[1].source == "ok.jsonl:3");
}

TEST_CASE("bad task lines give one error naming file and line", "[task_suite]") {
    const std::string good = "{\"prompt\": \"a\", \"answer\": \"b\", \"task\": \"t\", \"shots\": 0}\n";
    struct Case {
        std::string line, expect;
    };
    const Case cases[] = {
        {"{not json\n", "not valid JSON"},
        {"[1, 2]\n", "expected a JSON object"},
        {"{\"answer\": \"b\", \"task\": \"t\", \"shots\": 0}\n", "missing key \"prompt\""},
        {"{\"prompt\": 3, \"answer\": \"b\", \"task\": \"t\", \"shots\": 0}\n", "\"prompt\" must be a string"},
        {"{\"prompt\": \"a\", \"answer\": \"b\", \"task\": \"t\", \"shots\": \"2\"}\n", "\"shots\" must be an integer"},
        {"{\"prompt\": \"a\", \"answer\": \"b\", \"task\": \"t\", \"shots\": -1}\n", "\"shots\" must be in"},
    };
    for (const auto& c : cases) {
        const auto        p   = write_temp("bad.jsonl", good + c.line);
        const std::string msg = load_error(p);
        INFO(c.line);
        CHECK(msg.find("bad.jsonl:2:") != std::string::npos);
        CHECK(msg.find(c.expect) != std::string::npos);
    }
    CHECK(load_error(write_temp("empty.jsonl", "\n\n")).find("no items") != std::string::npos);
    CHECK(load_error(fs::temp_directory_path() / "dyllm_no_such_file.jsonl").find("cannot open") != std::string::npos);
}

TEST_CASE("answer extraction rule", "[task_suite]") {
    CHECK(normalise_whitespace("  a \n b\t\tc ") == "a b c");
    CHECK(extract_answer("7+5=12, 4+8+1=13, 3+2+1=6, answer 632") == "632");
    CHECK(extract_answer("answer 1 answer  2 ") == "2");               // last marker wins
    CHECK(extract_answer(" 1  2 5 ") == "1 2 5");                      // no marker: whole response
    CHECK(answer_matches("9+9=18, answer 18", "8+9=17, answer  18"));  // final answer only
    CHECK_FALSE(full_match("9+9=18, answer 18", "8+9=17, answer 18"));
    CHECK_FALSE(answer_matches("answer 63", "answer 632"));
    CHECK_FALSE(answer_matches("", "1 2"));
}

TEST_CASE("prompt rule: shots are the preceding items, cyclically", "[task_suite]") {
    TaskSuite s;
    s.name = "t";
    for (int i = 0; i < 3; ++i) s.items.push_back({"Q: q" + std::to_string(i), "a" + std::to_string(i), "t", 0, ""});
    CHECK(build_prompt(s, 1, 0) == "Q: q1");
    CHECK(build_prompt(s, 1, 1) == "Q: q0\nA: a0\nQ: q1");
    CHECK(build_prompt(s, 0, 2) == "Q: q1\nA: a1\nQ: q2\nA: a2\nQ: q0");
    CHECK_THROWS_AS(build_prompt(s, 0, 3), InputError);
    CHECK_THROWS_AS(build_prompt(s, 0, -1), InputError);
    CHECK(task_query(TaskItem{"Q: a\nA: b\nQ: add 1+2", "", "", 0, ""}) == "add 1+2");
}

TEST_CASE("held-out split hash matches tasks.py", "[task_suite]") {
    CHECK(fnv1a32("") == 0x811C9DC5u);   // FNV-1a offset basis
    CHECK(fnv1a32("a") == 0xE40C292Cu);  // published FNV-1a 32-bit test vector
    CHECK(split_key("add 347+285") == "add 285+347");
    CHECK(split_key("add 285+347") == "add 285+347");
    CHECK(split_key("sort 5 2 9 2") == "sort 2 2 5 9");
    CHECK(split_key("reverse 1a 2b") == "reverse 1a 2b");
}

TEST_CASE("addition split holds out unordered operand pairs (whole training space)", "[task_suite]") {
    // Regenerates the training generator's addition space (both operands 100..999, tasks.py gen_add): a pair is held
    // out in one order iff in the other, so no held-out pair reaches training in either order.
    int64_t held = 0, total = 0;
    bool    symmetric = true;
    for (int a = 100; a <= 999; ++a)
        for (int b = a; b <= 999; ++b) {
            const bool h1 = is_held_out("add " + std::to_string(a) + "+" + std::to_string(b));
            const bool h2 = is_held_out("add " + std::to_string(b) + "+" + std::to_string(a));
            symmetric &= h1 == h2;
            held += h1;
            ++total;
        }
    CHECK(symmetric);
    const double frac = double(held) / double(total);
    CHECK(frac > 0.09);  // ~1/kHoldoutMod; a broken hash (all or nothing) fails
    CHECK(frac < 0.11);
}

TEST_CASE("shipped task files: held out, self-consistent, prompt rule reproduces them", "[task_suite][assets]") {
    const fs::path dir   = source_dir() / "assets" / "tasks";
    const auto     names = list_tasks(dir);
    REQUIRE(names == std::vector<std::string>{"add", "rev", "sort", "word"});
    CHECK(find_tasks_dir(source_dir() / "assets" / "models" / "tiny-llada") == fs::weakly_canonical(dir));
    CHECK_THROWS_AS(load_tasks(dir, "nope"), InputError);
    for (const TaskSuite& s : load_tasks(dir, "all")) {
        REQUIRE(s.items.size() >= 50);
        std::set<std::string> keys;
        for (size_t i = 0; i < s.items.size(); ++i) {
            const TaskItem&   it = s.items[i];
            const std::string q  = task_query(it);
            INFO(it.source << " query: " << q);
            CHECK(it.task == s.name);
            CHECK(is_held_out(q));                             // never produced by the training generator
            CHECK(build_prompt(s, i, it.shots) == it.prompt);  // --shots K uses the same rule
            CHECK(keys.insert(split_key(q)).second);           // no duplicate held-out problems
            CHECK(it.answer.size() > 0);
            if (s.name == "add") {
                const int a = std::stoi(q.substr(4)), b = std::stoi(q.substr(q.find('+') + 1));
                CHECK(extract_answer(it.answer) == std::to_string(a + b));
            }
        }
    }
}

namespace {

std::vector<std::string> words(const std::string& s) {
    std::istringstream       ss(s);
    std::vector<std::string> out;
    for (std::string w; ss >> w;) out.push_back(w);
    return out;
}

std::string join(const std::vector<std::string>& xs) {
    std::string out;
    for (const auto& x : xs) out += (out.empty() ? "" : " ") + x;
    return out;
}

// The expected final answer of a long task's query, recomputed here from the query alone (tasks_long.py generators).
std::string long_task_answer(const std::string& task, const std::string& q) {
    if (task == "mul") {
        const long a = std::stol(q.substr(4)), b = std::stol(q.substr(q.find('*') + 1));
        CHECK(a >= b);  // one spelling per pair: the plain query is its split key
        return std::to_string(a * b);
    }
    if (task == "sort-long") {
        std::vector<std::string> xs = words(q.substr(q.find(':') + 1));
        CHECK(xs.size() >= 12);
        std::sort(xs.begin(), xs.end());
        return join(xs);
    }
    if (task == "rev-long") {
        std::vector<std::string> xs = words(q.substr(8));
        CHECK(xs.size() >= 24);
        std::reverse(xs.begin(), xs.end());
        return join(xs);
    }
    // word-long: "NAME has N OBJ, gets b, gives away b, ... How many OBJ does NAME have?"
    const std::vector<std::string> w     = words(q);
    int                            total = std::stoi(w[2]);
    for (size_t i = 3; i + 1 < w.size(); ++i) {
        if (w[i] == "gets") total += std::stoi(w[i + 1]);
        if (w[i] == "away") total -= std::stoi(w[i + 1]);
    }
    std::string obj = w[3];
    obj.pop_back();  // "apples," -> "apples"
    return w[0] + " has " + std::to_string(total) + " " + obj + ".";
}

}  // namespace

TEST_CASE("long task files: held out, answers recomputed from the query, scored by their final answer",
          "[task_suite][assets]") {
    const fs::path dir = source_dir() / "assets" / "tasks" / "long";
    REQUIRE(list_tasks(dir) == std::vector<std::string>{"mul", "rev-long", "sort-long", "word-long"});
    for (const TaskSuite& s : load_tasks(dir, "all")) {
        REQUIRE(s.items.size() >= 50);
        std::set<std::string> keys;
        for (size_t i = 0; i < s.items.size(); ++i) {
            const TaskItem&   it = s.items[i];
            const std::string q  = task_query(it);
            INFO(it.source << " query: " << q);
            CHECK(it.task == s.name);
            CHECK(is_held_out(q));
            CHECK(build_prompt(s, i, it.shots) == it.prompt);
            CHECK(keys.insert(split_key(q)).second);
            CHECK(extract_answer(it.answer) == long_task_answer(s.name, q));
        }
    }
    // Scoring keeps the text after the last "answer": a slip in a worked step with the right result still counts
    // (full match tells them apart), a wrong result does not.
    const std::string want =
        "347*6: 7*6=42, 4*6+4=28, 3*6+2=20, so 2082; 347*80: 7*8=56, 4*8+5=37, 3*8+3=27, so "
        "27760; 2082+27760: 2+0=2, 8+6=14, 0+7+1=8, 2+7=9, 0+2=2, answer 29842";
    std::string slip = want;
    slip.replace(slip.find("4*6+4=28"), 8, "4*6+4=29");
    CHECK(answer_matches(slip, want));
    CHECK_FALSE(full_match(slip, want));
    CHECK_FALSE(answer_matches(want.substr(0, want.size() - 1) + "3", want));
}
