// The shipped built-in models (assets/models/tiny-llada, tiny-dream): they load in their real checkpoint formats, the
// C++ tokenizer and "original" decoding reproduce the torch training code (selftest.json, written by
// assets/train/make_selftest.py), and held-out accuracy stays above a floor set under the measured figure.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "app/model/task_suite.h"

using namespace dyllm;
namespace fs = std::filesystem;

namespace {

// Accuracy floors for the all-task exact match on the first 25 held-out items per task, 4-shot (see the accuracy tests
// below), five points under what these tests measure on the shipped models (an AVX2 EPYC); `dyllm eval --limit 50` on
// 200 items: assets/train/TRAINING.md.
constexpr double kFloorLlada      = 0.95;  // original: measured 1.00 (100/100; 0.995 on 200)
constexpr double kFloorDream      = 0.94;  // original: measured 0.99 (99/100; 0.990 on 200)
constexpr double kFloorLladaDyllm = 0.93;  // dyllm tau 0.99: measured 0.98 (98/100; 0.975 on 200)
constexpr double kFloorDreamDyllm = 0.93;  // dyllm tau 0.995: measured 0.98 (98/100; 0.985 on 200)
constexpr double kFloorLladaIncr  = 0.94;  // dyllm --approx-incremental tau 0.99: measured 0.99 (99/100)
constexpr double kFloorDreamIncr  = 0.94;  // dyllm --approx-incremental tau 0.995: measured 0.99 (99/100)

nlohmann::json read_json(const fs::path& p) {
    std::ifstream in(p);
    REQUIRE(in.good());
    return nlohmann::json::parse(in);
}

DiffusionParams original_params() {
    DiffusionParams p;
    p.method       = Method::Original;
    p.gen_length   = 64;  // engine defaults the models were trained for (every answer + end token fits in 32)
    p.steps        = 64;  // n_u = 1
    p.block_length = 32;
    return p;
}

}  // namespace

TEST_CASE("built-in models load in their real formats", "[builtin]") {
    for (const char* name : {"tiny-llada", "tiny-dream"}) {
        INFO(name);
        auto               m = Model::load(name, BackendKind::Cpu, 1);
        const ModelConfig& c = m->config();
        REQUIRE(m->tokenizer() != nullptr);
        const Tokenizer& tok = *m->tokenizer();
        CHECK(c.n_layer == 8);  // deep enough for the paper's layer-wise picture (TRAINING.md)
        CHECK(c.n_embd == 128);
        CHECK(c.n_vocab == tok.vocab_size());
        CHECK(c.n_params() < 1'500'000);  // < 6 MB of F32 (committed to git)
        if (std::string(name) == "tiny-llada") {
            CHECK(c.family == Family::LLaDA);
            CHECK(c.n_kv_head == c.n_head);
            CHECK_FALSE(c.qkv_bias);
            CHECK(c.mask_id == tok.token_id("<|mdm_mask|>"));
            CHECK(c.eos_id == tok.token_id("<|endoftext|>"));
            CHECK(std::count(c.extra_eos_ids.begin(), c.extra_eos_ids.end(), tok.token_id("<|eot_id|>")) == 1);
        } else {
            CHECK(c.family == Family::Dream);
            CHECK(c.n_kv_head * 2 == c.n_head);
            CHECK(c.qkv_bias);
            CHECK(c.mask_id == tok.token_id("<|mask|>"));
            CHECK(c.eos_id == tok.token_id("<|endoftext|>"));
            CHECK(std::count(c.extra_eos_ids.begin(), c.extra_eos_ids.end(), tok.token_id("<|im_end|>")) == 1);
        }
        // Digits are never merged: every digit string tokenizes to one token per digit.
        CHECK(tok.encode("12345").size() == 5);
    }
}

TEST_CASE("built-in models reproduce the torch tokenizer and original decoding", "[builtin]") {
    for (const char* name : {"tiny-llada", "tiny-dream"}) {
        INFO(name);
        auto        m     = Model::load(name, BackendKind::Cpu, 1);
        const auto  fix   = read_json(m->dir() / "selftest.json");
        const auto& cases = fix.at("cases");
        REQUIRE(cases.size() >= 4);
        std::vector<std::vector<int32_t>> prompts;
        for (const auto& c : cases) {
            const auto ids = encode_prompt(*m, c.at("prompt").get<std::string>(), true);
            CHECK(ids == c.at("prompt_ids").get<std::vector<int32_t>>());  // C++ BPE == Python BPE, exactly
            prompts.push_back(ids);
        }
        Session s(*m);
        s.start(prompts, original_params());
        s.run();
        const GenerationResult r = s.result();
        REQUIRE(r.sequences.size() == cases.size());
        size_t same = 0;
        for (size_t i = 0; i < cases.size(); ++i) {
            const std::string got  = decode_response(*m, r.sequences[i].token_ids);
            const std::string want = cases[i].at("text").get<std::string>();
            INFO("case " << i << " got '" << got << "' want '" << want << "'");
            same += got == want;
        }
        // fp32 torch vs the C++ engine differ in summation order (~1e-6 relative); a near-tie in the top-1
        // confidence could in principle flip one greedy choice, so one case of the set may differ.
        CHECK(same + 1 >= cases.size());
        WARN(name << ": " << same << "/" << cases.size() << " responses identical to torch");
    }
}

namespace {

// Held-out items per task in the accuracy tests: 25 (100 in all) keep the 8-layer models' six runs to a few minutes
// on a 2-core CI machine; TRAINING.md reports 50 per task (`dyllm eval --limit 50`).
constexpr size_t kItemsPerTask = 25;

// All-task exact match of `model` on the first kItemsPerTask held-out items of every task, 4-shot prompts (the goals'
// setting).
double held_out_accuracy(const char* model, const DiffusionParams& params) {
    auto       m       = Model::load(model, BackendKind::Cpu, 0);
    const auto dir     = fs::path(DYLLM_SOURCE_DIR) / "assets" / "tasks";
    int        correct = 0, n = 0;
    for (const TaskSuite& suite : load_tasks(dir, "all")) {
        std::vector<std::vector<int32_t>> prompts;
        const size_t                      k = std::min(kItemsPerTask, suite.items.size());
        for (size_t i = 0; i < k; ++i) prompts.push_back(encode_prompt(*m, build_prompt(suite, i, 4), true));
        Session s(*m);
        s.start(prompts, params);
        s.run();
        const GenerationResult r = s.result();
        int                    c = 0;
        for (size_t i = 0; i < k; ++i)
            c += answer_matches(decode_response(*m, r.sequences[i].token_ids), suite.items[i].answer);
        UNSCOPED_INFO(model << " " << suite.name << ": " << c << "/" << k);
        correct += c;
        n += int(k);
    }
    WARN(model << " " << method_name(params.method) << (params.approx_incremental ? " (incremental)" : "") << ": "
               << correct << "/" << n << " held-out items right");
    return double(correct) / n;
}

}  // namespace

// Floors: five points under what these tests measured on the same items (kFloor* above). Both runs are deterministic;
// the margin absorbs the near-ties that summation order may flip on another CPU (a flipped item costs 1/100 = 0.01).
TEST_CASE("built-in models: held-out accuracy with original decoding stays above the floor", "[builtin][accuracy]") {
    CHECK(held_out_accuracy("tiny-llada", original_params()) >= kFloorLlada);
    CHECK(held_out_accuracy("tiny-dream", original_params()) >= kFloorDream);
}

TEST_CASE("built-in models: held-out accuracy with DyLLM at the default tau stays above the floor",
          "[builtin][accuracy][dyllm]") {
    DiffusionParams p = original_params();
    p.method          = Method::DyLLM;  // tau: the family default (LLaDA 0.99, Dream 0.995)
    CHECK(held_out_accuracy("tiny-llada", p) >= kFloorLladaDyllm);
    CHECK(held_out_accuracy("tiny-dream", p) >= kFloorDreamDyllm);
}

// The studio's default (engine/README.md decision 12): the incremental update keeps original's accuracy.
TEST_CASE("built-in models: held-out accuracy with DyLLM's incremental update stays above the floor",
          "[builtin][accuracy][dyllm]") {
    DiffusionParams p    = original_params();
    p.method             = Method::DyLLM;
    p.approx_incremental = true;
    CHECK(held_out_accuracy("tiny-llada", p) >= kFloorLladaIncr);
    CHECK(held_out_accuracy("tiny-dream", p) >= kFloorDreamIncr);
}
