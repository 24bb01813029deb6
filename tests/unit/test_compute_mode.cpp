// --compute f32 and the weights re-stored at load (engine/io/restored_checkpoint.h): a BF16 model under f32 matches
// the same values stored as F32; q4_k_m's per-tensor mix; a bad --type or --compute is one clear error.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <algorithm>
#include <filesystem>
#include <map>
#include <vector>

#include "engine/engine.h"
#include "engine/errors.h"
#include "engine/io/checkpoint.h"
#include "engine/io/restored_checkpoint.h"
#include "engine/params.h"
#include "engine/weight_storage.h"
#include "tests/support/cli_run.h"
#include "tests/support/tiny_models.h"

using namespace dyllm;

namespace {

std::map<int, std::vector<float>> step_logits(const Model& m, const std::vector<int32_t>& prompt, ComputeMode c) {
    std::map<int, std::vector<float>> out;
    Session                           s(m);
    s.set_logits_observer([&](int step, const std::vector<std::pair<int, int>>&, const std::vector<float>& lg,
                              int64_t) { out[step] = lg; });
    DiffusionParams p;
    p.gen_length = 16, p.steps = 8, p.block_length = 16, p.method = Method::Original, p.compute = c;
    s.start({prompt}, p);
    s.run();
    return out;
}

double max_rel_diff(const std::map<int, std::vector<float>>& a, const std::map<int, std::vector<float>>& b) {
    REQUIRE(a.size() == b.size());
    double worst = 0;
    for (const auto& [step, la] : a) {
        const auto& lb = b.at(step);
        REQUIRE(la.size() == lb.size());
        double big = 0, d = 0;
        for (size_t i = 0; i < la.size(); ++i) {
            big = std::max(big, std::fabs(double(lb[i])));
            d   = std::max(d, std::fabs(double(la[i]) - double(lb[i])));
        }
        worst = std::max(worst, d / big);
    }
    return worst;
}

}  // namespace

TEST_CASE("--compute f32 multiplies BF16 weights as their F32 values", "[compute]") {
    ModelConfig cfg = test::tiny_config(Family::LLaDA);
    const auto  dir = test::make_temp_dir("compute");
    write_random_checkpoint(dir, cfg, 5, DType::BF16, 1, 0.1f);
    const auto prompt = test::random_prompt(cfg, 10, 2);
    auto       bf16   = Model::from_checkpoint(Checkpoint::open(dir), "bf16", BackendKind::Cpu, 2);
    // The same values widened exactly to F32 (bf16 -> fp32 is exact).
    auto f32 = Model::from_checkpoint(restore_checkpoint(Checkpoint::open(dir), "f32", 2), "f32", BackendKind::Cpu, 2);
    REQUIRE(f32->weights().layers[0].wq.dtype == DType::F32);
    const auto ref = step_logits(*f32, prompt, ComputeMode::Stored);
    // fp32 products on both sides, summed in different orders (panels of widened rows vs the packed fp32 GEMM):
    // ~k u_32 per product carried through 2 layers, far below 1e-4 of the largest logit. A product that rounded x
    // to bf16 would move each one by ~2^-9.
    CHECK(max_rel_diff(step_logits(*bf16, prompt, ComputeMode::F32), ref) <= 1e-4);
    // And back to stored: the same logits as a fresh stored run.
    const auto stored = step_logits(*bf16, prompt, ComputeMode::Stored);
    CHECK(max_rel_diff(step_logits(*bf16, prompt, ComputeMode::Stored), stored) == 0.0);
}

TEST_CASE("weights re-stored at load: types per tensor and the q4_k_m mix", "[compute][quant]") {
    // llama.cpp's use_more_bits over 32 layers: 0-3, 28-31, and every third from layer 4 on (6, 9, ...).
    CHECK(restored_dtype("q4_k_m", "lm_head", 0, 32, 4096) == DType::Q6_K);
    CHECK(restored_dtype("q4_k_m", "wv", 0, 32, 4096) == DType::Q6_K);
    CHECK(restored_dtype("q4_k_m", "wv", 4, 32, 4096) == DType::Q4_K);
    CHECK(restored_dtype("q4_k_m", "w_down", 6, 32, 12288) == DType::Q6_K);
    CHECK(restored_dtype("q4_k_m", "w_down", 31, 32, 12288) == DType::Q6_K);
    CHECK(restored_dtype("q4_k_m", "wq", 0, 32, 4096) == DType::Q4_K);
    CHECK(restored_dtype("q4_k_m", "tok_embd", 0, 32, 4096) == DType::Q4_K);
    // Rows that are not whole super-blocks fall back to Q8_0, then F16.
    CHECK(restored_dtype("q4_k_m", "wq", 0, 2, 64) == DType::Q8_0);
    CHECK(restored_dtype("q8_0", "wq", 0, 2, 48) == DType::F16);
    CHECK(restored_dtype("bf16", "wq", 0, 2, 48) == DType::BF16);
    CHECK_THROWS_WITH(check_restore_type("q3_k"),
                      "--type: unknown value 'q3_k' (expected f32, f16, bf16, q8_0, q4_0, q4_k_m)");

    ModelConfig cfg = test::tiny_config(Family::Dream);
    cfg.n_embd = 256, cfg.head_dim = 64, cfg.n_ff = 512;
    const auto dir = test::make_temp_dir("restore");
    write_random_checkpoint(dir, cfg, 9, DType::BF16, 1, 0.1f);
    auto ck = restore_checkpoint(Checkpoint::open(dir), "q4_k_m", 2);
    CHECK(ck->weights().layers[0].wq.dtype == DType::Q4_K);
    CHECK(ck->weights().lm_head.dtype == DType::Q6_K);
    CHECK(ck->weights().layers[0].bq.dtype == DType::BF16);  // biases and norms kept as stored
    CHECK(weight_storage_text(ck->weights()) == "embd Q4_K, attn Q4_K/Q6_K, ffn Q4_K/Q6_K, head Q6_K");
    auto m = Model::from_checkpoint(std::move(ck), "q4_k_m", BackendKind::Cpu, 2);
    CHECK(step_logits(*m, test::random_prompt(cfg, 8, 1), ComputeMode::Stored).size() > 0);
}

TEST_CASE("--compute takes stored or f32", "[compute]") {
    const ParamSpec* s = find_param("compute");
    REQUIRE(s != nullptr);
    DiffusionParams p;
    CHECK(param_text(*s, p) == "stored");
    p.compute = ComputeMode::F32;
    CHECK(param_text(*s, p) == "f32");
    CHECK(parse_compute_mode("f32") == ComputeMode::F32);
    CHECK(!parse_compute_mode("fp32").has_value());
}

TEST_CASE("dyllm: a bad --compute or --type is one error line and a non-zero exit", "[compute][cli]") {
    const char* cli = std::getenv("DYLLM_CLI");
    if (!cli) {
        WARN("DYLLM_CLI not set: the CLI checks are not run");
        return;
    }
    const auto dir     = test::make_tiny_checkpoint(Family::LLaDA);
    const auto base    = std::filesystem::temp_directory_path() / ("dyllm_test_compute_" + std::to_string(::getpid()));
    const auto compute = test::run_command(
        cli, {"generate", "-m", dir.string(), "--prompt-ids", "1,2,3", "-n", "4", "--compute", "fp64"}, base);
    CHECK(compute.status != 0);
    CHECK(compute.err.find("--compute: unknown value 'fp64' (expected stored, f32)") != std::string::npos);
    CHECK(std::count(compute.err.begin(), compute.err.end(), '\n') == 1);
    const auto type = test::run_command(cli, {"bench", "-m", dir.string(), "--type", "q3_k", "--reps", "1"}, base);
    CHECK(type.status != 0);
    CHECK(type.err.find("--type: unknown value 'q3_k'") != std::string::npos);
    CHECK(std::count(type.err.begin(), type.err.end(), '\n') == 1);
    // Re-stored at q8_0 (tiny rows of 64 are whole Q8_0 blocks), the bench runs.
    const auto ok = test::run_command(
        cli, {"bench", "-m", dir.string(), "--type", "q8_0", "--reps", "1", "-n", "8", "--methods", "dyllm"}, base);
    CHECK(ok.status == 0);
    INFO(ok.err);
}
