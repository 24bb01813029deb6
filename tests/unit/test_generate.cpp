// Tests of `dyllm generate` and `dyllm bench` on tiny random checkpoints of both families: the --json schema and
// the unmasking invariants, determinism, lock-step batches equal to single runs (library calls), bad input giving
// one error line and a non-zero exit (the binary from DYLLM_CLI), and the bench row keys.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "engine/io/checkpoint.h"
#include "engine/io/config.h"
#include "engine/engine.h"
#include "engine/errors.h"
#include "engine/io/safetensors.h"
#include "tests/support/cli_run.h"
#include "tests/support/tiny_models.h"

namespace fs = std::filesystem;
using dyllm::Family;
using nlohmann::json;

namespace {

using dyllm::test::slurp;

// Multiplies one F32 tensor of a safetensors file in place.
void scale_tensor(const fs::path& file, const std::string& name, float factor) {
    std::string bytes = slurp(file);
    const auto  entries =
        dyllm::parse_safetensors(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), file.string());
    for (const auto& e : entries) {
        if (e.name != name) continue;
        REQUIRE(e.dtype == dyllm::DType::F32);
        float* v = reinterpret_cast<float*>(bytes.data() + (e.data - reinterpret_cast<const uint8_t*>(bytes.data())));
        for (int64_t i = 0; i < e.numel(); ++i) v[i] *= factor;
        std::ofstream out(file, std::ios::binary | std::ios::trunc);
        out.write(bytes.data(), std::streamsize(bytes.size()));
        return;
    }
    FAIL("tensor " << name << " not found in " << file);
}

// The tiny random checkpoint of each family (tests/support/tiny_models.h: LLaDA MHA 2 layers, Dream GQA 4:2 with
// biases 3 layers, n_embd 64, vocab 300, byte-level tokenizer), written once per family.
// The LM head is scaled by 10: with N(0, 0.02) weights the logits have std ~0.16 and every position's distribution is
// nearly uniform, so Dream's negative-entropy scores of different positions agree to ~1e-6, i.e. to within a few
// float ulps, and last-bit differences (the packed row a sequence lands on in a batch) reorder the unmasking.
// Scaled, the logits have std ~1.6 and the score gaps are orders of magnitude above rounding noise, so the batch
// tests below check the engine's logic rather than the conditioning of a random model.
fs::path tiny_model(Family f) {
    static std::map<Family, fs::path> dirs;
    auto                              it = dirs.find(f);
    if (it != dirs.end()) return it->second;
    const fs::path dir = dyllm::test::make_tiny_checkpoint(f, dyllm::DType::F32, 1, /*seed=*/1234);
    // Head tensor names: LLaDA model.transformer.ff_out.weight (engine/README.md §c.1), Dream lm_head.weight (§c.2).
    scale_tensor(dir / "model.safetensors", f == Family::LLaDA ? "model.transformer.ff_out.weight" : "lm_head.weight",
                 10.0f);
    dirs[f] = dir;
    return dir;
}

int n_layer_of(Family f) {
    return dyllm::parse_config(tiny_model(f) / "config.json").n_layer;
}

using dyllm::test::CliRun;

const char* cli_path() {
    return std::getenv("DYLLM_CLI");
}

// Runs the dyllm binary with `args` (each quoted), capturing stdout and stderr.
CliRun run_cli(const std::vector<std::string>& args) {
    static int     counter = 0;
    const fs::path base    = fs::temp_directory_path() /
                          ("dyllm_test_generate_io_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    return dyllm::test::run_command(cli_path(), args, base);
}

std::vector<std::string> nonempty_lines(const std::string& s) {
    std::vector<std::string> lines;
    std::istringstream       is(s);
    std::string              l;
    while (std::getline(is, l))
        if (!l.empty()) lines.push_back(l);
    return lines;
}

void require_keys(const json& j, const std::vector<std::string>& keys) {
    for (const auto& k : keys) {
        INFO("key " << k << " in " << j.dump().substr(0, 200));
        CHECK(j.contains(k));
    }
}

// Binary-level tests need the dyllm executable; ctest passes its path in DYLLM_CLI.
bool have_cli() {
    if (cli_path() && fs::exists(cli_path())) return true;
    WARN("DYLLM_CLI not set: skipping the end-to-end runs of the dyllm binary");
    return false;
}

}  // namespace

TEST_CASE("generate --json: schema, unmask invariants, determinism", "[generate][cli]") {
    if (!have_cli()) return;
    for (Family f : {Family::LLaDA, Family::Dream}) {
        for (const char* method : {"original", "dyllm"}) {
            INFO(dyllm::family_name(f) << " " << method);
            // gen 16 in 8 steps: n_u = 2; block 8 -> 4 steps per block. --ignore-eos: every step runs, so the
            // per-step counts below are exact.
            const std::vector<std::string> args = {"generate",
                                                   "-m",
                                                   tiny_model(f).string(),
                                                   "-p",
                                                   "hello there",
                                                   "-n",
                                                   "16",
                                                   "--steps",
                                                   "8",
                                                   "--block-length",
                                                   "8",
                                                   "--method",
                                                   method,
                                                   "--seed",
                                                   "7",
                                                   "--ignore-eos",
                                                   "--json",
                                                   "--backend",
                                                   "cpu",
                                                   "-t",
                                                   "1"};
            const CliRun                   r    = run_cli(args);
            INFO(r.err);
            REQUIRE(r.status == 0);
            const json j = json::parse(r.out);
            require_keys(j, {"model", "method", "params", "load_s", "denoise_s", "tokens_per_s", "forward_passes",
                             "sequences", "accounting"});
            CHECK(j["method"] == method);
            require_keys(j["params"],
                         {"gen_length", "steps", "block_length", "method", "tau", "full_steps", "fullq_every", "approx",
                          "conf_threshold", "temperature", "seed", "ignore_eos", "kp", "kr", "rho", "measure_cosine"});
            CHECK(j["params"]["tau"].get<double>() == Approx(dyllm::default_tau(f)));
            CHECK(j["params"]["conf_threshold"].is_null());
            CHECK(j["load_s"].get<double>() >= 0);
            CHECK(j["denoise_s"].get<double>() > 0);
            CHECK(j["tokens_per_s"].get<double>() > 0);
            CHECK(j["forward_passes"] == 8);  // one forward per denoising step for both methods (engine/README.md §a.3)

            REQUIRE(j["sequences"].size() == 1);
            const json& s = j["sequences"][0];
            require_keys(s, {"prompt", "text", "token_ids", "unmask_step", "steps_run", "finished_by_eos"});
            CHECK(s["prompt"] == "hello there");
            CHECK(s["steps_run"] == 8);
            REQUIRE(s["token_ids"].size() == 16);
            REQUIRE(s["unmask_step"].size() == 16);
            std::map<int, int> per_step;
            for (size_t pos = 0; pos < 16; ++pos) {
                const int st = s["unmask_step"][pos].get<int>();
                CHECK(st >= 1);
                CHECK(st <= 8);
                ++per_step[st];
                // Semi-AR blocks (engine/README.md §a.9 step 1): block b = pos / 8 is decoded in steps 4b+1 .. 4b+4.
                const int block = int(pos) / 8;
                CHECK(st > 4 * block);
                CHECK(st <= 4 * (block + 1));
            }
            for (int st = 1; st <= 8; ++st) CHECK(per_step[st] == 2);  // n_u = 16 / 8

            const json& acc = j["accounting"];
            require_keys(acc, {"steps", "total_flops", "total_dense_flops", "recompute_fraction", "cache_bytes"});
            REQUIRE(acc["steps"].size() == 8);
            for (const json& st : acc["steps"]) {
                require_keys(st, {"step", "kind", "tau", "seconds", "flops", "dense_flops", "layers"});
                REQUIRE(st["layers"].size() == size_t(n_layer_of(f)));
                for (const json& l : st["layers"])
                    require_keys(l,
                                 {"query_rows", "kv_rows", "attn_exact_rows", "attn_approx_rows", "ffn_rows", "flops"});
            }
            if (std::string(method) == "original") {
                for (const json& st : acc["steps"]) CHECK(st["kind"] == "full");
                CHECK(acc["recompute_fraction"].get<double>() == Approx(1.0));
            } else {
                CHECK(acc["steps"][0]["kind"] == "full");
                CHECK(acc["recompute_fraction"].get<double>() <= 1.0);
            }

            // Same seed -> same output.
            const CliRun r2 = run_cli(args);
            REQUIRE(r2.status == 0);
            const json j2 = json::parse(r2.out);
            CHECK(j2["sequences"][0]["token_ids"] == s["token_ids"]);
            CHECK(j2["sequences"][0]["unmask_step"] == s["unmask_step"]);
            CHECK(j2["sequences"][0]["text"] == s["text"]);
        }
    }
}

TEST_CASE("generate prints the text on stdout and the perf summary on stderr", "[generate][cli]") {
    if (!have_cli()) return;
    const CliRun r = run_cli(
        {"generate", "-m", tiny_model(Family::LLaDA).string(), "-p", "hi", "-n", "8", "--backend", "cpu", "-t", "1"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    CHECK(r.err.find("load time") != std::string::npos);
    CHECK(r.err.find("denoise time") != std::string::npos);
    CHECK(r.err.find("ms per step") != std::string::npos);
    CHECK(r.err.find("tokens/s") != std::string::npos);
    CHECK(r.err.find("recompute") != std::string::npos);        // dyllm is the default method
    CHECK(r.err.find("diffusion step:") == std::string::npos);  // stderr is not a terminal: no progress line
    CHECK(r.err.find("backend:") == std::string::npos);         // --backend cpu: nothing to fall back from
    CHECK(!r.out.empty());

    // --backend auto without a CUDA device: the CPU, and exactly one line saying why (the command-line contract).
    if (dyllm::cuda_device_count() == 0) {
        const CliRun a =
            run_cli({"generate", "-m", tiny_model(Family::LLaDA).string(), "-p", "hi", "-n", "8", "-t", "1"});
        REQUIRE(a.status == 0);
        size_t n_backend_lines = 0;
        for (const auto& l : nonempty_lines(a.err)) n_backend_lines += l.rfind("backend: ", 0) == 0;
        CHECK(n_backend_lines == 1);
        CHECK(a.out == r.out);  // same text as the explicit CPU run
    }
}

TEST_CASE("a lock-step batch gives each prompt the result it gets alone", "[generate]") {
    struct Shape {
        int gen, steps, block;
    };
    // n_u = 2 with two blocks, and n_u = 1 with one block (the paper's setting: steps = gen length).
    for (const Shape sh : {Shape{16, 8, 8}, Shape{16, 16, 16}})
        for (Family f : {Family::LLaDA, Family::Dream})
            for (dyllm::Method m : {dyllm::Method::Original, dyllm::Method::DyLLM}) {
                INFO(dyllm::family_name(f) << " " << dyllm::method_name(m) << " gen " << sh.gen << " steps " << sh.steps
                                           << " block " << sh.block);
                auto model = dyllm::Model::load(tiny_model(f).string(), dyllm::BackendKind::Cpu, 1);
                // Prompts of different lengths: packed varlen rows, no padding (engine/README.md §a.10).
                const auto pa = dyllm::encode_prompt(*model, "hi", true);
                const auto pb = dyllm::encode_prompt(*model, "a rather longer prompt, to differ in length", true);
                REQUIRE(pa.size() != pb.size());
                dyllm::DiffusionParams p;
                p.gen_length   = sh.gen;
                p.steps        = sh.steps;
                p.block_length = sh.block;
                p.method       = m;
                p.ignore_eos   = true;
                auto run       = [&](const std::vector<std::vector<int32_t>>& prompts) {
                    dyllm::Session s(*model);
                    s.start(prompts, p);
                    s.run();
                    return s.result();
                };
                const auto both    = run({pa, pb});
                const auto alone_a = run({pa});
                const auto alone_b = run({pb});
                REQUIRE(both.sequences.size() == 2);
                CHECK(both.sequences[0].token_ids == alone_a.sequences[0].token_ids);
                CHECK(both.sequences[0].unmask_step == alone_a.sequences[0].unmask_step);
                CHECK(both.sequences[1].token_ids == alone_b.sequences[0].token_ids);
                CHECK(both.sequences[1].unmask_step == alone_b.sequences[0].unmask_step);
                CHECK(both.sequences[0].text == alone_a.sequences[0].text);
                CHECK(both.sequences[1].text == alone_b.sequences[0].text);
                // Lock-step: one forward per step for the whole batch, not one per sequence.
                CHECK(both.forward_passes == alone_a.forward_passes);
                CHECK(both.generated_tokens == 2 * sh.gen);
                // No padding waste: the first (full) step pushes exactly the two sequences' rows, not 2 x the longer.
                REQUIRE(!both.steps.empty());
                REQUIRE(!both.steps[0].layers.empty());
                CHECK(both.steps[0].layers[0].query_rows == int32_t(pa.size() + sh.gen + pb.size() + sh.gen));

                // The same prompt twice in one batch: both sequences must come out identical (and equal to alone).
                const auto twice = run({pa, pa});
                REQUIRE(twice.sequences.size() == 2);
                CHECK(twice.sequences[0].token_ids == twice.sequences[1].token_ids);
                CHECK(twice.sequences[1].token_ids == alone_a.sequences[0].token_ids);
            }
}

TEST_CASE("generate with two -p prompts equals two single runs (binary)", "[generate][cli]") {
    if (!have_cli()) return;
    const std::string              dir    = tiny_model(Family::Dream).string();
    const std::vector<std::string> common = {"-n",        "16",  "--steps", "16", "--block-length", "16", "--json",
                                             "--backend", "cpu", "-t",      "1"};
    auto                           gen    = [&](std::vector<std::string> prompts) {
        std::vector<std::string> a = {"generate", "-m", dir};
        for (auto& p : prompts) {
            a.push_back("-p");
            a.push_back(p);
        }
        a.insert(a.end(), common.begin(), common.end());
        const CliRun r = run_cli(a);
        INFO(r.err);
        REQUIRE(r.status == 0);
        return json::parse(r.out);
    };
    const json both = gen({"one", "second prompt"});
    const json a    = gen({"one"});
    const json b    = gen({"second prompt"});
    REQUIRE(both["sequences"].size() == 2);
    CHECK(both["sequences"][0]["token_ids"] == a["sequences"][0]["token_ids"]);
    CHECK(both["sequences"][1]["token_ids"] == b["sequences"][0]["token_ids"]);
    CHECK(both["sequences"][1]["prompt"] == "second prompt");
}

TEST_CASE("bad input: non-zero exit and one clear error line", "[generate][cli]") {
    if (!have_cli()) return;
    const fs::path good = tiny_model(Family::LLaDA);
    // A corrupt copy: the safetensors file cut to 100 bytes (its header claims far more).
    const fs::path bad = dyllm::test::make_temp_dir("generate-corrupt");
    for (const auto& e : fs::directory_iterator(good)) fs::copy_file(e.path(), bad / e.path().filename());
    fs::resize_file(bad / "model.safetensors", 100);
    // A prompt longer than the model's positions.
    const int      max_pos     = dyllm::parse_config(good / "config.json").max_position;
    const fs::path long_prompt = dyllm::test::make_temp_dir("generate-long") / "long.txt";
    {
        std::ofstream f(long_prompt);
        f << std::string(size_t(max_pos) + 10, 'a') << "\n";
    }
    struct Case {
        std::vector<std::string> args;
        std::string              needle;
    };
    const std::string       g     = good.string();
    const std::vector<Case> cases = {
        {{"generate", "-m", g, "-p", "x", "--tau", "nan"}, "--tau must be a finite number"},
        {{"generate", "-m", g, "-p", "x", "-n", "16", "--steps", "7"}, "--steps 7 does not divide --gen-length 16"},
        {{"generate", "-m", g, "-p", "x", "--method", "bogus"}, "unknown method 'bogus'"},
        {{"generate", "-m", "/nonexistent/model/dir", "-p", "x"}, "/nonexistent/model/dir"},
        {{"generate", "-m", bad.string(), "-p", "x"}, "model.safetensors"},
        {{"generate", "-m", g, "-f", long_prompt.string(), "-n", "8"}, "too long"},
        {{"generate", "-m", g, "--prompt-ids", "1,2,99999", "-n", "8"}, "outside the vocabulary"},
        {{"generate", "-m", g}, "no prompt"},
        {{"generate", "-m", g, "-p", "x", "--backend", "tpu"}, "--backend must be cpu, cuda or auto"},
        {{"bench", "-m", g, "-n", "8", "-o", "xml"}, "-o/--output must be md, csv, json or a file name"},
        {{"bench", "-m", g, "-n", "8", "-o", "/nonexistent/dir/t.csv"}, "-o /nonexistent/dir/t.csv: cannot open"},
        {{"bench", "-m", g, "-n", "8", "--steps", "3"}, "--steps 3 does not divide --gen-length 8"},
        {{"bench", "-m", g, "-n", "8", "--tau", "0.9,nan"}, "--tau must be a finite number"},
        {{"bench", "-m", g, "-n", "8", "--methods", "original,warp"}, "unknown method 'warp'"},
    };
    for (const Case& c : cases) {
        std::vector<std::string> args = c.args;
        if (std::find(args.begin(), args.end(), "--backend") == args.end()) {
            // auto would add a (correct) "backend: ..." fallback line on a machine without CUDA.
            args.push_back("--backend");
            args.push_back("cpu");
        }
        const CliRun r = run_cli(args);
        INFO(c.needle << "\nstdout: " << r.out << "\nstderr: " << r.err);
        CHECK(r.status != 0);
        CHECK(r.status < 128);  // an error exit, not a crash (signal)
        const auto lines = nonempty_lines(r.err);
        REQUIRE(lines.size() == 1);
        CHECK(lines[0].rfind("error: ", 0) == 0);
        CHECK(lines[0].find(c.needle) != std::string::npos);
        CHECK(r.out.empty());
    }
}

TEST_CASE("bench: rows carry the documented keys; original is the speed-up baseline", "[bench][cli]") {
    if (!have_cli()) return;
    const std::string dir = tiny_model(Family::LLaDA).string();
    const CliRun r = run_cli({"bench", "-m", dir, "-n", "8", "--steps", "4,8", "--methods", "original,dyllm", "--tau",
                              "0.9,0.99", "-r", "2", "-o", "json", "--backend", "cpu", "-t", "1"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    const json rows = json::parse(r.out);
    REQUIRE(rows.is_array());
    REQUIRE(rows.size() == 6);  // 2 step counts x (original + dyllm at 2 taus)
    const std::set<std::string> documented = {"method",  "tau",          "steps",   "gen_length", "block_length",
                                              "batch",   "tokens_per_s", "speedup", "nfe",        "recompute_fraction",
                                              "accuracy"};
    const std::set<std::string> extras     = {"tokens_per_s_sd",
                                              "tokens_per_s_min",
                                              "tokens_per_s_max",
                                              "non_eos_tokens_per_s",
                                              "denoise_s",
                                              "cache_bytes",
                                              "model",
                                              "backend",
                                              "kernels",
                                              "flops_per_token",
                                              "flops_vs_dense",
                                              "gflops",
                                              "gflops_dense",
                                              "gflops_cached",
                                              "pct_sgemm",
                                              "pct_sgemm_dense",
                                              "pct_sgemm_cached",
                                              "sgemm_gflops",
                                              "blas_sgemm_gflops",
                                              "pct_blas_sgemm_dense",
                                              "threads",
                                              "sgemm_1thread_gflops",
                                              "threads_share_cores",
                                              "cross_core_ns",
                                              "dense_steps",
                                              "cached_steps",
                                              "samples"};
    for (const json& row : rows) {
        std::set<std::string> keys;
        for (auto it = row.begin(); it != row.end(); ++it) keys.insert(it.key());
        for (const auto& k : documented) CHECK(keys.count(k) == 1);
        for (const auto& k : keys) CHECK((documented.count(k) + extras.count(k)) == 1);
        CHECK(row["gen_length"] == 8);
        CHECK(row["block_length"] == 8);
        CHECK(row["batch"] == 1);
        CHECK(row["accuracy"].is_null());  // no --task
        CHECK(row["threads"] == 1);
        CHECK(row["sgemm_1thread_gflops"].is_null());  // -t 1: the probe already ran on one thread
        CHECK(row["threads_share_cores"] == false);
        CHECK(row["cross_core_ns"].is_null());  // one thread: no hand-off to measure
        CHECK(row["tokens_per_s"].get<double>() > 0);
        CHECK(row["tokens_per_s_min"].get<double>() <= row["tokens_per_s"].get<double>());
        CHECK(row["tokens_per_s_max"].get<double>() >= row["tokens_per_s"].get<double>());
        const double speedup = row["speedup"].get<double>();
        // Roofline: every step is dense or cached; rates are positive; the share is of the same run's sgemm rate.
        CHECK(row["dense_steps"].get<int>() + row["cached_steps"].get<int>() == row["nfe"].get<int>());
        CHECK(row["flops_per_token"].get<double>() > 0);
        CHECK(row["gflops"].get<double>() > 0);
        CHECK(row["sgemm_gflops"].get<double>() > 0);
        // Each repetition's share is of the sgemm rate measured around it; the row's share is the median of those
        // (with two repetitions, their mean), and the row's rates are the medians of the samples'.
        const json& samples = row["samples"];
        REQUIRE(samples.size() == 2);
        double share = 0, rate = 0, sgemm = 0, blas = 0, blas_dense_share = 0;
        for (const json& x : samples) {
            CHECK(x["sgemm_gflops"].get<double>() > 0);
            CHECK(x["blas_sgemm_gflops"].get<double>() > 0);  // a CPU run: the plain-weight BLAS probe ran too
            CHECK(x["cross_core_ns"].is_null());
            share += 0.5 * 100.0 * x["gflops"].get<double>() / x["sgemm_gflops"].get<double>();
            rate += 0.5 * x["gflops"].get<double>();
            sgemm += 0.5 * x["sgemm_gflops"].get<double>();
            blas += 0.5 * x["blas_sgemm_gflops"].get<double>();
            if (!x["gflops_dense"].is_null())
                blas_dense_share +=
                    0.5 * 100.0 * x["gflops_dense"].get<double>() / x["blas_sgemm_gflops"].get<double>();
        }
        CHECK(row["pct_sgemm"].get<double>() == Approx(share));
        CHECK(row["gflops"].get<double>() == Approx(rate));
        CHECK(row["sgemm_gflops"].get<double>() == Approx(sgemm));
        // The dense steps' share of the system BLAS's rate, each repetition's of the rate measured around it.
        CHECK(row["blas_sgemm_gflops"].get<double>() == Approx(blas));
        CHECK(row["pct_blas_sgemm_dense"].get<double>() == Approx(blas_dense_share));
        if (row["method"] == "original") {
            CHECK(row["tau"].is_null());
            CHECK(speedup == Approx(1.0));
            CHECK(row["nfe"] == row["steps"]);
            CHECK(row["recompute_fraction"].get<double>() == Approx(1.0));
            CHECK(row["flops_vs_dense"].get<double>() == Approx(1.0));
            CHECK(row["cached_steps"] == 0);
            CHECK(row["gflops_cached"].is_null());
            CHECK(row["gflops_dense"].get<double>() > 0);
        } else {
            CHECK(row["method"] == "dyllm");
            CHECK(row["tau"].is_number());
            CHECK(speedup > 0);
            // T_full is 4: the 4-step runs are all dense; a sparse step, when one ran, does less than dense work.
            if (row["steps"] == 4) CHECK(row["cached_steps"] == 0);
            if (row["cached_steps"].get<int>() > 0) {
                CHECK(row["flops_vs_dense"].get<double>() < 1.0);
                CHECK(row["gflops_cached"].get<double>() > 0);
            } else {
                CHECK(row["gflops_cached"].is_null());
            }
        }
    }
    // Group order: original first, then the dyllm rows of the same step count.
    CHECK(rows[0]["method"] == "original");
    CHECK(rows[0]["steps"] == 4);
    CHECK(rows[1]["tau"].get<double>() == Approx(0.9));
    CHECK(rows[2]["tau"].get<double>() == Approx(0.99));
    CHECK(rows[3]["method"] == "original");
    CHECK(rows[3]["steps"] == 8);

    const CliRun csv = run_cli(
        {"bench", "-m", dir, "-n", "8", "--methods", "dyllm", "-r", "1", "-o", "csv", "--backend", "cpu", "-t", "1"});
    REQUIRE(csv.status == 0);
    const auto csv_lines = nonempty_lines(csv.out);
    REQUIRE(csv_lines.size() == 2);  // header + the dyllm row (original runs as the baseline but is not listed)
    CHECK(csv_lines[0].rfind("method,tau,steps,gen_length,block_length,batch,tokens_per_s,speedup,nfe,"
                             "recompute_fraction,accuracy",
                             0) == 0);
    CHECK(csv_lines[1].rfind("\"dyllm\",", 0) == 0);

    const CliRun md = run_cli({"bench", "-m", dir, "-n", "8", "-r", "1", "--backend", "cpu", "-t", "1"});
    REQUIRE(md.status == 0);
    const auto md_lines = nonempty_lines(md.out);
    REQUIRE(md_lines.size() == 4);  // header, separator, original, dyllm
    CHECK(md_lines[0].rfind("| method | tau |", 0) == 0);
    CHECK(md_lines[0].find("| GFLOP/s | dense / cached GFLOP/s | sgemm GFLOP/s | % sgemm |") != std::string::npos);
    CHECK(md_lines[2].find("| original |") == 0);
    CHECK(md_lines[0].find("cross-core") == std::string::npos);  // one thread: no hand-off to show
    CHECK(md.err.find("bench: sgemm rate ") != std::string::npos);

    // -o FILE.csv: a tau sweep written as CSV, one row per tau; the markdown table still goes to stdout.
    const fs::path out_csv = fs::temp_directory_path() / "dyllm_bench_sweep.csv";
    fs::remove(out_csv);
    const CliRun sweep = run_cli({"bench", "-m", dir, "-n", "8", "--methods", "dyllm", "--tau", "0.9,0.99,0.999", "-r",
                                  "1", "-o", out_csv.string(), "--backend", "cpu", "-t", "1"});
    INFO(sweep.err);
    REQUIRE(sweep.status == 0);
    const auto file_lines = nonempty_lines(slurp(out_csv));
    REQUIRE(file_lines.size() == 4);  // header + one row per tau
    CHECK(file_lines[0].rfind("method,tau,", 0) == 0);
    CHECK(file_lines[1].rfind("\"dyllm\",0.9,", 0) == 0);
    CHECK(file_lines[3].rfind("\"dyllm\",0.999,", 0) == 0);
    CHECK(nonempty_lines(sweep.out).size() == 5);  // markdown: header, separator, 3 rows
    fs::remove(out_csv);
}

TEST_CASE("bench: a multi-thread run measures the cross-core hand-off around every repetition", "[bench][cli]") {
    if (!have_cli()) return;
    const std::string dir = tiny_model(Family::LLaDA).string();
    const CliRun r = run_cli({"bench", "-m", dir, "-n", "8", "--steps", "4", "--methods", "original", "-r", "3", "-o",
                              "json", "--backend", "cpu", "-t", "2"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    CHECK(r.err.find("bench: cross-core hand-off") != std::string::npos);
    const json rows = json::parse(r.out);
    REQUIRE(rows.size() == 1);
    const json& row = rows[0];
    CHECK(row["threads"] == 2);
    // Measured unless the two threads never ran at the same time (a busy CI host can deny that); when measured, the
    // row's value is the median of the repetitions' (three: the middle one).
    std::vector<double> reps;
    for (const json& x : row["samples"])
        if (!x["cross_core_ns"].is_null()) reps.push_back(x["cross_core_ns"].get<double>());
    for (double v : reps) CHECK(v > 0);
    if (reps.size() == 3) {
        std::sort(reps.begin(), reps.end());
        CHECK(row["cross_core_ns"].get<double>() == Approx(reps[1]));
    }
    if (reps.empty()) CHECK(row["cross_core_ns"].is_null());

    // The markdown table shows the row's value in a last column.
    const CliRun md = run_cli({"bench", "-m", dir, "-n", "8", "--steps", "4", "--methods", "original", "-r", "1",
                               "--backend", "cpu", "-t", "2"});
    INFO(md.err);
    REQUIRE(md.status == 0);
    const auto lines = nonempty_lines(md.out);
    REQUIRE(lines.size() == 3);  // header, separator, original
    if (lines[0].find("| cross-core ns |") == std::string::npos) {
        WARN("the cross-core hand-off was not measured in this run (the two threads never ran at the same time)");
    } else {
        CHECK(lines[0].size() - lines[0].find("| cross-core ns |") == std::string("| cross-core ns |").size());
        const std::string cell = lines[2].substr(lines[2].rfind('|', lines[2].size() - 2) + 1);
        CHECK(std::strtod(cell.c_str(), nullptr) > 0);
    }
}

TEST_CASE("bench --task: accuracy is reported on the suite's held-out items", "[bench][cli]") {
    if (!have_cli()) return;
    // The tiny random model cannot solve anything; the check is that the task path runs and reports a number.
    const CliRun r = run_cli({"bench",
                              "-m",
                              tiny_model(Family::LLaDA).string(),
                              "--task",
                              "add",
                              "--limit",
                              "3",
                              "-n",
                              "16",
                              "--methods",
                              "original,dyllm",
                              "--batch",
                              "2",
                              "-r",
                              "1",
                              "-o",
                              "json",
                              "--backend",
                              "cpu",
                              "-t",
                              "1"});
    INFO(r.err);
    REQUIRE(r.status == 0);
    const json rows = json::parse(r.out);
    REQUIRE(rows.size() == 2);
    for (const json& row : rows) {
        REQUIRE(row["accuracy"].is_number());
        CHECK(row["accuracy"].get<double>() >= 0.0);
        CHECK(row["accuracy"].get<double>() <= 1.0);
        CHECK(row["batch"] == 2);
    }
    // 3 items in chunks of 2 -> two lock-step sessions of 16 steps each.
    CHECK(rows[0]["nfe"] == 32);

    const CliRun bad = run_cli({"bench", "-m", tiny_model(Family::LLaDA).string(), "--task", "nosuchtask", "-n", "16",
                                "-r", "1", "--backend", "cpu"});
    CHECK(bad.status != 0);
    CHECK(bad.status < 128);
    REQUIRE(nonempty_lines(bad.err).size() == 1);
    CHECK(bad.err.find("nosuchtask") != std::string::npos);

    // With the built-in trained model (when assets/models holds it), bench scores exactly as `dyllm eval` does on the
    // same items and knobs: same prompts, same response cut and answer rule.
    const fs::path builtin = dyllm::resolve_model_path("tiny-llada");
    if (!fs::exists(builtin / "config.json")) {
        WARN("built-in tiny-llada not found: skipping the bench-vs-eval accuracy check");
        return;
    }
    const std::vector<std::string> knobs      = {"-n",        "32",      "--steps", "32",      "--block-length",
                                                 "32",        "--batch", "4",       "--limit", "8",
                                                 "--backend", "cpu",     "-t",      "1"};
    std::vector<std::string>       bench_args = {"bench",    "-m", "tiny-llada", "--task", "add", "--methods",
                                                 "original", "-r", "1",          "-o",     "json"};
    bench_args.insert(bench_args.end(), knobs.begin(), knobs.end());
    std::vector<std::string> eval_args = {"eval", "-m",       "tiny-llada", "--task",
                                          "add",  "--method", "original",   "--json"};
    eval_args.insert(eval_args.end(), knobs.begin(), knobs.end());
    const CliRun tb = run_cli(bench_args);
    const CliRun te = run_cli(eval_args);
    INFO(tb.err << te.err);
    REQUIRE(tb.status == 0);
    REQUIRE(te.status == 0);
    const json bj = json::parse(tb.out);
    const json ej = json::parse(nonempty_lines(te.out).at(0));
    REQUIRE(bj.size() == 1);
    CHECK(ej["n"] == 8);
    CHECK(bj[0]["accuracy"].get<double>() == Approx(ej["accuracy"].get<double>()));
}
