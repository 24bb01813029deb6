// Whole runs on CUDA against the CPU: original (all dense) and dyllm on tiny random checkpoints of both families
// (bf16 weights, so both backends multiply the same weight values). The CUDA backend rounds GEMM activations and the
// caches to bf16, so logits differ by about a percent; tokens must agree, or differ first at a step whose CPU
// decision was a near tie that such a difference can flip (the documented bf16 ties).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "engine/backend_cuda.h"
#include "engine/engine.h"
#include "engine/errors.h"
#include "support/tiny_models.h"

using namespace dyllm;
using dyllm::test::random_prompt;

namespace {

struct Run {
    GenerationResult                                result;
    std::map<int, std::vector<float>>               logits;
    std::map<int, std::vector<std::pair<int, int>>> where;
    int64_t                                         n_vocab = 0;
};

Run run(const Model& m, const std::vector<std::vector<int32_t>>& prompts, const DiffusionParams& p) {
    Run     r;
    Session s(m);
    s.set_logits_observer(
        [&](int step, const std::vector<std::pair<int, int>>& w, const std::vector<float>& lg, int64_t V) {
            r.logits[step] = lg;
            r.where[step]  = w;
            r.n_vocab      = V;
        });
    s.start(prompts, p);
    s.run();
    r.result = s.result();
    return r;
}

// (sequence, position, token) committed at each step.
std::map<int, std::set<std::tuple<int, int, int>>> commits(const GenerationResult& r) {
    std::map<int, std::set<std::tuple<int, int, int>>> c;
    for (size_t s = 0; s < r.sequences.size(); ++s) {
        const auto& q = r.sequences[s];
        for (size_t p = 0; p < q.token_ids.size(); ++p)
            if (q.unmask_step[p] > 0) c[q.unmask_step[p]].insert({int(s), int(p), q.token_ids[p]});
    }
    return c;
}

// Softmax probability of the maximum and the gap between the two largest logits of a row.
void row_stats(const float* row, int64_t V, double& conf, double& gap) {
    double top1 = -INFINITY, top2 = -INFINITY;
    for (int64_t v = 0; v < V; ++v) {
        const double x = row[v];
        if (x > top1) {
            top2 = top1;
            top1 = x;
        } else if (x > top2) {
            top2 = x;
        }
    }
    double l = 0;
    for (int64_t v = 0; v < V; ++v) l += std::exp(double(row[v]) - top1);
    conf = 1.0 / l;
    gap  = top1 - top2;
}

}  // namespace

TEST_CASE("original and dyllm runs give the same tokens on CUDA and the CPU", "[cuda][run]") {
    const Family fam    = GENERATE(Family::LLaDA, Family::Dream);
    const Method method = GENERATE(Method::Original, Method::DyLLM);
    const auto   dir    = test::make_tiny_checkpoint(fam, DType::BF16, 1, 41);
    auto         mc     = Model::load(dir.string(), BackendKind::Cpu);
    auto         mg     = Model::load(dir.string(), BackendKind::Cuda);
    REQUIRE(std::string(mg->backend().name()) == "cuda");

    DiffusionParams p;
    p.method                                        = method;
    p.gen_length                                    = 16;
    p.steps                                         = 16;
    p.block_length                                  = 8;
    p.ignore_eos                                    = true;
    const std::vector<std::vector<int32_t>> prompts = {random_prompt(mc->config(), 11, 1),
                                                       random_prompt(mc->config(), 5, 2)};
    const Run                               rc      = run(*mc, prompts, p);
    const Run                               rg      = run(*mg, prompts, p);
    REQUIRE(rc.result.sequences.size() == rg.result.sequences.size());

    const auto cc = commits(rc.result), cg = commits(rg.result);
    int        first_diff = 0;
    for (const auto& [step, set] : cc) {
        auto it = cg.find(step);
        if (it == cg.end() || it->second != set) {
            first_diff = step;
            break;
        }
    }
    // Logits up to the first differing step: within the bf16 budget. Each of the tiny model's 2-3 layers rounds its
    // GEMM inputs and cached K/V/context to bf16 (2^-8 relative each, kernels/README.md §f.10), a handful of roundings
    // compounding to a few percent of the logit scale at most; 0.05 * max|logit| + 0.05 also catches a broken kernel
    // (O(1) relative errors).
    const int last          = first_diff > 0 ? first_diff : (rc.logits.empty() ? 0 : rc.logits.rbegin()->first);
    double    delta_at_diff = 0;
    for (const auto& [step, lc] : rc.logits) {
        if (step > last) break;
        const auto it = rg.logits.find(step);
        REQUIRE(it != rg.logits.end());
        REQUIRE(rg.where.at(step) == rc.where.at(step));
        REQUIRE(it->second.size() == lc.size());
        double delta = 0, scale = 0;
        for (size_t i = 0; i < lc.size(); ++i) {
            delta = std::max(delta, std::fabs(double(lc[i]) - double(it->second[i])));
            scale = std::max(scale, std::fabs(double(lc[i])));
        }
        INFO("step " << step << ": max |logit diff| " << delta << ", max |logit| " << scale);
        CHECK(delta <= 0.05 * scale + 0.05);
        if (step == last) delta_at_diff = delta;
    }
    if (first_diff == 0) {
        SUCCEED("identical tokens on both backends");
        return;
    }
    // A difference must start at a near tie of the CPU's decision at that step: a row whose top-2 logits are within
    // 2 delta (the argmax can flip), or two rows of one sequence whose scores are within what 2 delta of logit
    // movement changes a softmax probability by (d p_max <= 2 delta p_max), for the position order.
    const auto&         lc  = rc.logits.at(first_diff);
    const auto&         wh  = rc.where.at(first_diff);
    const double        d   = delta_at_diff;
    bool                tie = false;
    std::vector<double> conf(wh.size()), gap(wh.size());
    for (size_t r = 0; r < wh.size(); ++r) {
        row_stats(lc.data() + r * size_t(rc.n_vocab), rc.n_vocab, conf[r], gap[r]);
        if (gap[r] <= 2 * d) tie = true;
    }
    for (size_t a = 0; a < wh.size() && !tie; ++a)
        for (size_t b = a + 1; b < wh.size() && !tie; ++b)
            if (wh[a].first == wh[b].first && std::fabs(conf[a] - conf[b]) <= 4 * d * std::max(conf[a], conf[b]))
                tie = true;
    INFO("first differing step " << first_diff << " (max |logit diff| " << d << ")");
    CHECK(tie);
}

TEST_CASE("the CUDA backend is deterministic: the same run twice gives the same tokens", "[cuda][run]") {
    const auto      dir = test::make_tiny_checkpoint(Family::Dream, DType::BF16, 1, 43);
    auto            mg  = Model::load(dir.string(), BackendKind::Cuda);
    DiffusionParams p;
    p.gen_length                                    = 16;
    p.steps                                         = 16;
    p.block_length                                  = 8;
    p.ignore_eos                                    = true;
    const std::vector<std::vector<int32_t>> prompts = {random_prompt(mg->config(), 9, 3)};
    const Run                               a = run(*mg, prompts, p), b = run(*mg, prompts, p);
    CHECK(a.result.sequences[0].token_ids == b.result.sequences[0].token_ids);
    CHECK(a.logits == b.logits);  // no atomics in the logits path: bit-identical
}

TEST_CASE("make_backend: cuda names its reason when it cannot start, auto falls back with one line",
          "[cuda][factory]") {
    std::string why;
    const int   n = cuda_device_count(&why);
    REQUIRE(n > 0);  // main() skips the whole binary otherwise
    std::string note;
    auto        be = make_backend(BackendKind::Auto, 1, &note);
    CHECK(std::string(be->name()) == "cuda");
    CHECK(note.empty());
    CHECK_THROWS_AS(make_cuda_backend(n), BackendError);  // one past the last device
}
