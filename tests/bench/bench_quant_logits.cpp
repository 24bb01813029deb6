// Logit error of each weight storage type against f32: one checkpoint is opened at f32 and re-stored in memory at
// every type (engine/io/restored_checkpoint.h, as `dyllm bench --type` does), the same prompt runs one dense step
// (original decoding) at each, and the first step's logits are compared with the f32 model's on every computed row:
//   rel_rms  sqrt(mean (l - l_f32)^2) / sqrt(mean l_f32^2)       over every row and vocabulary entry
//   kl       mean over rows of KL(softmax(l_f32) || softmax(l))  in nats, computed in fp64
//   top1     share of rows whose argmax equals f32's
// Not a test: prints one JSON object per type on stdout (performance_report.sh puts them in docs/performance.md and
// the README).
//   bench_quant_logits MODEL_DIR [--types f16,bf16,q8_0,q4_0,q4_k_m] [--prompt 64] [--gen 32] [--threads 2]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/io/checkpoint.h"
#include "engine/io/restored_checkpoint.h"

using namespace dyllm;

namespace {

std::vector<std::string> split_commas(const std::string& s) {
    std::vector<std::string> out;
    size_t                   a = 0;
    while (a <= s.size()) {
        const size_t b = std::min(s.find(',', a), s.size());
        if (b > a) out.push_back(s.substr(a, b - a));
        a = b + 1;
    }
    return out;
}

// The first step's logits, [rows, n_vocab] row-major, of one model on one prompt.
struct StepLogits {
    std::vector<float> values;
    int64_t            n_vocab = 0;
    double             seconds = 0;
};

StepLogits first_step_logits(const Model& m, const std::vector<int32_t>& prompt, int gen) {
    StepLogits out;
    Session    s(m);
    s.set_logits_observer(
        [&](int, const std::vector<std::pair<int, int>>&, const std::vector<float>& lg, int64_t n_vocab) {
            if (out.n_vocab != 0) return;  // the first step only
            out.values  = lg;
            out.n_vocab = n_vocab;
        });
    DiffusionParams p;
    p.gen_length   = gen;
    p.steps        = gen;
    p.block_length = gen;
    p.method       = Method::Original;
    p.ignore_eos   = true;
    s.start({prompt}, p);
    s.step();
    out.seconds = s.step_records().empty() ? 0.0 : s.step_records().front().seconds;
    return out;
}

struct Error {
    double rel_rms = 0, kl = 0, top1 = 0;
};

Error compare(const StepLogits& ref, const StepLogits& got) {
    if (ref.values.size() != got.values.size() || ref.n_vocab != got.n_vocab || ref.n_vocab == 0)
        throw std::runtime_error("the two models computed different logits rows");
    const int64_t V = ref.n_vocab, rows = int64_t(ref.values.size()) / V;
    double        se = 0, ss = 0, kl = 0;
    int64_t       same_top = 0;
    for (int64_t r = 0; r < rows; ++r) {
        const float* a  = ref.values.data() + r * V;
        const float* b  = got.values.data() + r * V;
        double       ma = a[0], mb = b[0];
        int64_t      ia = 0, ib = 0;
        for (int64_t v = 0; v < V; ++v) {
            se += (double(b[v]) - a[v]) * (double(b[v]) - a[v]);
            ss += double(a[v]) * a[v];
            if (a[v] > ma) ma = a[v], ia = v;
            if (b[v] > mb) mb = b[v], ib = v;
        }
        same_top += ia == ib;
        // log-sum-exp in fp64 around each row's maximum, then KL(p || q) = sum p (log p - log q).
        double za = 0, zb = 0;
        for (int64_t v = 0; v < V; ++v) {
            za += std::exp(double(a[v]) - ma);
            zb += std::exp(double(b[v]) - mb);
        }
        const double la = ma + std::log(za), lb = mb + std::log(zb);
        double       k = 0;
        for (int64_t v = 0; v < V; ++v) {
            const double lpa = double(a[v]) - la, lpb = double(b[v]) - lb;
            k += std::exp(lpa) * (lpa - lpb);
        }
        kl += k;
    }
    Error e;
    e.rel_rms = ss > 0 ? std::sqrt(se / ss) : 0.0;
    e.kl      = kl / double(rows);
    e.top1    = double(same_top) / double(rows);
    return e;
}

[[noreturn]] void usage() {
    std::fprintf(stderr,
                 "usage: bench_quant_logits MODEL_DIR [--types f16,bf16,q8_0,q4_0,q4_k_m] [--prompt 64] [--gen 32] "
                 "[--threads 2]\n");
    std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2 || argv[1][0] == '-') usage();
    const std::string dir    = argv[1];
    std::string       types  = "f16,bf16,q8_0,q4_0,q4_k_m";
    int               prompt = 64, gen = 32, threads = 2;
    for (int i = 2; i < argc; ++i) {
        const std::string a = argv[i];
        if (i + 1 >= argc) usage();
        if (a == "--types")
            types = argv[++i];
        else if (a == "--prompt")
            prompt = std::atoi(argv[++i]);
        else if (a == "--gen")
            gen = std::atoi(argv[++i]);
        else if (a == "--threads")
            threads = std::atoi(argv[++i]);
        else
            usage();
    }
    if (prompt < 1 || gen < 1 || threads < 1) usage();
    try {
        size_t weight_bytes = 0;  // of the model open_at opened last
        auto   open_at      = [&](const std::string& type) {
            auto ckpt    = restore_checkpoint(Checkpoint::open(dir), type, threads);
            weight_bytes = ckpt->file_bytes();
            return Model::from_checkpoint(std::move(ckpt), type, BackendKind::Cpu, threads);
        };
        const auto  ref_model = open_at("f32");
        const auto& cfg       = ref_model->config();
        // A fixed pseudo-random prompt of ordinary ids (below the special tokens at the top of the vocabulary).
        std::vector<int32_t> ids(static_cast<size_t>(prompt));
        uint64_t             s = 0x2545F4914F6CDD1Dull;
        for (auto& id : ids) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            id = int32_t(s % uint64_t(std::max<int64_t>(1, std::min<int64_t>(cfg.n_vocab - 8, 256))));
        }
        const StepLogits ref = first_step_logits(*ref_model, ids, gen);
        for (const std::string& t : split_commas(types)) {
            check_restore_type(t);
            const auto       m   = open_at(t);
            const StepLogits got = first_step_logits(*m, ids, gen);
            const Error      e   = compare(ref, got);
            std::printf(
                "{\"model\": \"%s\", \"n_embd\": %lld, \"n_layer\": %lld, \"type\": \"%s\", \"rows\": %lld, "
                "\"rel_rms\": %.4g, \"kl\": %.4g, \"top1\": %.4f, \"weight_gb\": %.4f, \"step_s\": %.4f, "
                "\"f32_step_s\": %.4f}\n",
                dir.c_str(), (long long)cfg.n_embd, (long long)cfg.n_layer, t.c_str(),
                (long long)(got.values.size() / size_t(got.n_vocab)), e.rel_rms, e.kl, e.top1,
                double(weight_bytes) * 1e-9, got.seconds, ref.seconds);
            std::fflush(stdout);
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_quant_logits: %s\n", e.what());
        return 1;
    }
    return 0;
}
