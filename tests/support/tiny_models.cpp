// Tiny configs and random checkpoint directories for tests (see tiny_models.h).
#include "tests/support/tiny_models.h"

#include <stdlib.h>

#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "engine/io/checkpoint.h"
#include "engine/io/checkpoint_writer.h"

namespace dyllm::test {

namespace {

namespace fs = std::filesystem;

// Removes the directories this process created when it exits.
struct TempDirRegistry {
    std::mutex            mu;
    std::vector<fs::path> dirs;
    ~TempDirRegistry() {
        const char* keep = std::getenv("DYLLM_KEEP_TEST_DIRS");
        if (keep && std::string(keep) == "1") return;
        for (const auto& d : dirs) {
            std::error_code ec;
            fs::remove_all(d, ec);
        }
    }
};

TempDirRegistry& registry() {
    static TempDirRegistry r;
    return r;
}

}  // namespace

ModelConfig tiny_config(Family f) {
    if (f == Family::LLaDA)
        return small_config(f, /*n_layer=*/2, /*n_embd=*/64, /*n_head=*/4, /*n_kv_head=*/4,
                            /*n_ff=*/128, /*n_vocab=*/300);
    return small_config(f, /*n_layer=*/3, /*n_embd=*/64, /*n_head=*/4, /*n_kv_head=*/2, /*n_ff=*/128, /*n_vocab=*/300);
}

fs::path make_temp_dir(const std::string& tag) {
    std::string       tmpl = (fs::temp_directory_path() / ("dyllm-" + tag + "-XXXXXX")).string();
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (!mkdtemp(buf.data())) throw std::runtime_error("mkdtemp failed for " + tmpl);
    fs::path                    p(buf.data());
    auto&                       r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    r.dirs.push_back(p);
    return p;
}

void write_tiny_tokenizer(const fs::path& dir, const ModelConfig& cfg) {
    write_byte_level_tokenizer_json(dir / "tokenizer.json", cfg);
}

fs::path make_checkpoint(const ModelConfig& cfg, DType dtype, int n_shards, uint64_t seed) {
    const fs::path dir = make_temp_dir(std::string("ckpt-") + family_name(cfg.family));
    write_random_checkpoint(dir, cfg, seed, dtype, n_shards);
    if (cfg.n_vocab >= 256 + byte_level_special_count(cfg.family)) write_tiny_tokenizer(dir, cfg);
    return dir;
}

fs::path make_tiny_checkpoint(Family f, DType dtype, int n_shards, uint64_t seed) {
    return make_checkpoint(tiny_config(f), dtype, n_shards, seed);
}

std::vector<int32_t> random_prompt(const ModelConfig& cfg, int n, uint32_t seed) {
    std::vector<int32_t> p;
    uint32_t             x = seed * 2654435761u + 1;  // Knuth multiplicative hash, then an LCG (Numerical Recipes)
    while (int(p.size()) < n) {
        x               = x * 1664525u + 1013904223u;
        const int32_t t = int32_t((x >> 8) % uint32_t(cfg.vocab_size));
        if (t != cfg.mask_id && t != cfg.eos_id) p.push_back(t);
    }
    return p;
}

}  // namespace dyllm::test
