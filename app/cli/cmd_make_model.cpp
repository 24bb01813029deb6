// dyllm make-model: writes a random-weight checkpoint directory (config.json in the family's keys, safetensors in one
// file or shards + index, and a byte-level tokenizer.json with the family's special tokens) so generation can be
// demonstrated and benchmarked without a trained model.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "app/cli/command.h"
#include "engine/io/checkpoint.h"
#include "engine/io/checkpoint_writer.h"
#include "engine/io/config.h"
#include "engine/errors.h"

namespace dyllm::cli {
namespace {

namespace fs = std::filesystem;

struct MakeModelOptions {
    std::string out;
    std::string family = "llada";
    std::string dtype  = "f32";
    int         shards = 1;
    uint64_t    seed   = 1;
    bool        force  = false;
    bool        tie    = false;
    // 0 = the family's tiny default (the sizes of tests/support/tiny_models: 64 wide, 4 heads, ffn 128, vocab 300).
    int layers = 0, embd = 0, heads = 0, kv_heads = 0, ffn = 0, vocab = 0;
};

int run_make_model(const MakeModelOptions& o) {
    const Family f  = o.family == "dream" ? Family::Dream : Family::LLaDA;
    const DType  dt = o.dtype == "bf16" ? DType::BF16 : o.dtype == "f16" ? DType::F16 : DType::F32;
    const int    L  = o.layers ? o.layers : (f == Family::LLaDA ? 2 : 3);
    const int    E  = o.embd ? o.embd : 64;
    const int    H  = o.heads ? o.heads : 4;
    const int    KV = o.kv_heads ? o.kv_heads : (f == Family::LLaDA ? H : (H % 2 == 0 ? H / 2 : H));
    const int    F  = o.ffn ? o.ffn : 2 * E;
    const int    V  = o.vocab ? o.vocab : 300;

    // Flag-level checks first, so the message names the flag rather than a config.json key.
    if (E % H != 0) throw InputError("--heads " + std::to_string(H) + " does not divide --embd " + std::to_string(E));
    if (H % KV != 0)
        throw InputError("--kv-heads " + std::to_string(KV) + " does not divide --heads " + std::to_string(H));
    if ((E / H) % 2 != 0) {
        throw InputError("head_dim = --embd / --heads = " + std::to_string(E / H) +
                         " is odd; rotate-half RoPE needs an even head_dim");
    }
    const fs::path dir(o.out);
    if (fs::exists(dir / "config.json") && !o.force) {
        throw InputError(dir.string() + " already holds a config.json; pass --force to overwrite the model there");
    }
    if (fs::exists(dir) && !fs::is_directory(dir)) throw InputError(dir.string() + " exists and is not a directory");

    ModelConfig cfg = small_config(f, L, E, H, KV, F, V);  // InputError when the vocabulary cannot hold the tokenizer
    cfg.tie_embeddings     = o.tie;
    const size_t n_tensors = expected_tensor_names(cfg).size();
    if (size_t(o.shards) > n_tensors) {
        throw InputError("--shards " + std::to_string(o.shards) + " exceeds the " + std::to_string(n_tensors) +
                         " tensors of this model (every shard holds at least one)");
    }
    // Weights, tokenizer and config.json (last) are renamed into place together once all are written: a failed or
    // interrupted --force rewrite leaves the old model loadable.
    write_random_checkpoint(dir, cfg, o.seed, dt, o.shards, 0.02f, true);

    // Read back what was written: the same validation every user of the directory will get.
    const auto         ck = Checkpoint::open(dir);
    const ModelConfig& c  = ck->config();
    std::printf("wrote %s: %s, %d layers, n_embd %d, %d heads (%d kv, head_dim %d), ffn %d, vocab %d, %s%s\n",
                dir.string().c_str(), family_name(c.family), c.n_layer, c.n_embd, c.n_head, c.n_kv_head, c.head_dim,
                c.n_ff, c.n_vocab, dtype_name(ck->weight_dtype()), c.tie_embeddings ? ", tied embeddings" : "");
    std::printf("  %lld parameters, %zu bytes in %d safetensors file%s (seed %llu), tokenizer.json (byte-level)\n",
                static_cast<long long>(c.n_params()), ck->file_bytes(), o.shards, o.shards == 1 ? "" : "s",
                static_cast<unsigned long long>(o.seed));
    std::printf("  mask id %d, eos id %d: try `dyllm generate -m %s -p \"hi\"`\n", c.mask_id, c.eos_id,
                dir.string().c_str());
    return 0;
}

const CommandRegistrar kRegistrar{Command{
    "make-model", [](CLI::App& app) -> std::function<int()> {
        auto o = std::make_shared<MakeModelOptions>();
        app.description("write a random-weight checkpoint directory (config.json, safetensors, tokenizer.json)");
        app.add_option("-o,--output", o->out, "directory to write (created if needed)")->required();
        app.add_option("--family", o->family, "llada (MHA, no biases) or dream (GQA, q/k/v biases)")
            ->check(CLI::IsMember({"llada", "dream"}));
        app.add_option("--dtype", o->dtype, "stored dtype: f32, f16 or bf16")
            ->check(CLI::IsMember({"f32", "f16", "bf16"}));
        app.add_option("--shards", o->shards, "number of safetensors files (>1 writes model.safetensors.index.json)")
            ->check(CLI::Range(1, 99999));
        app.add_option("--seed", o->seed, "random seed of the weights");
        app.add_option("--layers", o->layers, "decoder layers (default: llada 2, dream 3)")
            ->check(CLI::Range(1, int(kMaxConfigLayers)));
        app.add_option("--embd", o->embd, "hidden size (default 64)")->check(CLI::Range(1, int(kMaxConfigEmbd)));
        app.add_option("--heads", o->heads, "attention heads (default 4)")->check(CLI::Range(1, int(kMaxConfigHeads)));
        app.add_option("--kv-heads", o->kv_heads, "key/value heads (default: llada = heads, dream = heads / 2)")
            ->check(CLI::Range(1, int(kMaxConfigHeads)));
        app.add_option("--ffn", o->ffn, "SwiGLU hidden size (default 2 x embd)")
            ->check(CLI::Range(1, int(kMaxConfigFf)));
        app.add_option("--vocab", o->vocab, "vocabulary rows (default 300; at least 256 bytes + the special tokens)")
            ->check(CLI::Range(1, int(kMaxConfigVocab)));
        app.add_flag("--tie", o->tie, "tie the LM head to the token embedding");
        app.add_flag("--force", o->force,
                     "overwrite a model already in the output directory (files are replaced by rename, so a process "
                     "that has the old model mapped keeps it)");
        return [o] { return run_make_model(*o); };
    }}};

}  // namespace
}  // namespace dyllm::cli
