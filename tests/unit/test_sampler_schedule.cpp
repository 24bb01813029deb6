// Sampler decisions and step schedules: candidate window, tie-break, threshold mode, EOS rule, DyLLM step kinds
// (engine/README.md §a.3 examples) and the dLLM-Cache refresh rule.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "engine/sampler.h"
#include "engine/methods/dyllm.h"
#include "engine/methods/dllm_cache.h"

using namespace dyllm;

TEST_CASE("block candidates are the masked positions of the current block", "[sampler]") {
    const int32_t        M = 99;
    std::vector<int32_t> resp{M, M, M, M, M, M, M, M};
    CHECK(block_candidates(resp, M, 4) == std::vector<int32_t>{0, 1, 2, 3});
    resp[0] = 5;
    resp[2] = 6;
    CHECK(block_candidates(resp, M, 4) == std::vector<int32_t>{1, 3});
    resp[1] = 7;
    resp[3] = 8;  // block 0 complete: window moves to block 1
    CHECK(block_candidates(resp, M, 4) == std::vector<int32_t>{4, 5, 6, 7});
    std::vector<int32_t> odd{M, M, M};
    CHECK(block_candidates(odd, M, 2) == std::vector<int32_t>{0, 1});
}

TEST_CASE("selection keeps n_u by score, ties to the lower position", "[sampler]") {
    std::vector<Candidate> c{{3, 10, 0.5f}, {1, 11, 0.9f}, {2, 12, 0.5f}, {0, 13, 0.1f}};
    auto                   k = select_candidates(c, 2, std::numeric_limits<float>::infinity());
    REQUIRE(k.size() == 2);
    CHECK(k[0].pos == 1);
    CHECK(k[1].pos == 2);  // tie with pos 3 at 0.5: lower position first (engine/README.md decision 4)
}

TEST_CASE("threshold mode takes the top-1 plus every score above the threshold", "[sampler]") {
    std::vector<Candidate> c{{0, 1, 0.95f}, {1, 2, 0.2f}, {2, 3, 0.91f}, {3, 4, 0.89f}};
    auto                   k = select_candidates(c, 1, 0.9f);
    REQUIRE(k.size() == 2);
    CHECK(k[0].pos == 0);
    CHECK(k[1].pos == 2);
    std::vector<Candidate> low{{0, 1, 0.3f}, {1, 2, 0.2f}};
    CHECK(select_candidates(low, 1, 0.9f).size() == 1);  // the top-1 always goes
    std::vector<Candidate> neg{{0, 1, -std::numeric_limits<float>::infinity()}};
    CHECK(select_candidates(neg, 1, 0.9f).empty());  // never a -inf score
}

TEST_CASE("EOS finishes only with no mask before it", "[sampler]") {
    const int32_t        M = 99, E = 2;
    std::vector<int32_t> r{5, M, E, M};
    CHECK_FALSE(finished_by_eos(r, std::vector<int32_t>{2}, E, M));
    r[1] = 6;
    CHECK(finished_by_eos(r, std::vector<int32_t>{2}, E, M));
    CHECK_FALSE(finished_by_eos(r, std::vector<int32_t>{1}, E, M));  // only newly decoded EOS counts
}

TEST_CASE("DyLLM step kinds follow the schedule of engine/README.md §a.3", "[schedule]") {
    auto seq = [](int tf, int n) {
        std::string s;
        for (int st = 1; st <= n; ++st) {
            const StepKind k = dyllm_step_kind(st, tf, 4);
            s += k == StepKind::Full ? 'F' : (k == StepKind::SparseFullQuery ? 'Q' : 'R');
        }
        return s;
    };
    // T_full = 4: 1-4 FULL, 5-7 response-only, 8 full-Q, 9-11 response-only, 12 full-Q.
    CHECK(seq(4, 12) == "FFFFRRRQRRRQ");
    // T_full = 8: 1-8 FULL, 9-11 response-only, 12 full-Q.
    CHECK(seq(8, 13) == "FFFFFFFFRRRQR");
    // T_full = 2: 1-2 FULL, 3-4 full-Q (not > 4), 5-7 response-only, 8 full-Q.
    CHECK(seq(2, 9) == "FFQQRRRQR");
    // T_full = 1 (and 0): step 1 is always FULL.
    CHECK(seq(1, 9) == "FQQQRRRQR");
    CHECK(seq(0, 2) == "FQ");
    // A period of 1 makes every sparse step full-query.
    CHECK(dyllm_step_kind(7, 1, 1) == StepKind::SparseFullQuery);
}

TEST_CASE("dLLM-Cache refresh intervals", "[schedule]") {
    CHECK(dllm_cache_refresh(1, 50, 7).prompt);
    CHECK(dllm_cache_refresh(1, 50, 7).gen);
    CHECK_FALSE(dllm_cache_refresh(2, 50, 7).gen);
    CHECK(dllm_cache_refresh(8, 50, 7).gen);
    CHECK_FALSE(dllm_cache_refresh(8, 50, 7).prompt);
    CHECK(dllm_cache_refresh(51, 50, 7).prompt);
}
