// The diffusion settings table (see params.h), default thresholds and validation of DiffusionParams (one InputError
// per bad value, naming the setting by its command-line flag, the value and the allowed range).
#include "engine/params.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cmath>
#include <limits>
#include <sstream>

#include "engine/errors.h"

namespace dyllm {

namespace {

constexpr double kIntMax = std::numeric_limits<int>::max();
constexpr double kInf    = std::numeric_limits<double>::infinity();

using P = DiffusionParams;

// clang-format off
const ParamSpec kTable[] = {
    {"gen_length", "-n,--gen-length,--n-predict", "response length R (tokens)", &P::gen_length, 1, kIntMax},
    {"steps", "--steps,--diffusion-steps", "total denoising steps; n_u = gen_length / steps (default: gen length, n_u = 1)",
     &P::steps, 1, kIntMax, {}, {}, true},
    {"block_length", "--block-length,--diffusion-block-length",
     "semi-autoregressive block length (default: min(32, gen length))", &P::block_length, 1, kIntMax, {}, {}, true},
    {"method", "--method", "decoding method", &P::method},
    {"tau", "--tau,--dyllm-tau", "DyLLM cosine threshold: rows with cosine below tau are salient (default: LLaDA 0.99, "
     "Dream 0.995)", &P::tau, kTauMin, kTauMax, "-1 marks no row salient, above 1 every row", "family default"},
    {"full_steps", "--full-steps,--dyllm-full-steps", "T_full: initial dense steps of dyllm", &P::full_steps, 1, kIntMax,
     "the first step fills the caches"},
    {"fullq_every", "--fullq-every", "dyllm: period of full-query sparse steps", &P::fullq_every, 1, kIntMax},
    {"approx", "--approx", "dyllm: approximate attention for non-salient rows (false: the paper's 'Salient' ablation, "
     "exact attention for every query)", &P::approx},
    {"approx_columns", "--approx-columns", "dyllm: the approximate update reads only the salient keys' score columns, "
     "normalised by each row's softmax statistics from its last exact attention (the paper's O(N|A|d) path; default: "
     "the authors' code, which scores every key)", &P::approx_columns},
    {"approx_incremental", "--approx-incremental", "dyllm: column-sparse update that also swaps the salient keys' old "
     "softmax terms for the new ones and renormalises (exact for an unchanged query; rows it cannot serve fall back to "
     "exact attention)", &P::approx_incremental},
    {"exact_refresh", "--exact-refresh", "dyllm drift guard: steps whose number is a multiple of N compute exact "
     "attention for every query row, refreshing the approximated contexts (0: off)", &P::exact_refresh, 0, kIntMax},
    {"dream_prompt_row", "--dream-prompt-row", "dyllm on Dream: response-only steps also query the last prompt row, so "
     "the first response position reads its shifted logits (--no-dream-prompt-row: the authors' code, where it reads "
     "its own row)", &P::dream_prompt_row},
    {"conf_threshold", "--threshold", "confidence-threshold parallel decoding (off by default)", &P::conf_threshold,
     -kInf, kInf, {}, "off"},
    {"random_order", "--random-order", "unmask each block in a random order drawn from --seed (replayable; dKV-Cache "
     "Greedy always does) instead of by confidence", &P::random_order},
    {"temperature", "--temp", "sampling temperature (0 = greedy)", &P::temperature, 0, kInf},
    {"seed", "-s,--seed", "random seed", &P::seed},
    {"ignore_eos", "--ignore-eos", "do not stop a sequence at EOS", &P::ignore_eos},
    {"kp", "--kp", "dLLM-Cache prompt refresh interval K_P", &P::kp, 1, kIntMax},
    {"kr", "--kr", "dLLM-Cache response refresh interval K_R", &P::kr, 1, kIntMax},
    {"rho", "--rho", "dLLM-Cache adaptive transfer ratio", &P::rho, 0, 1},
    {"dkv_window", "--dkv-window", "dKV-Cache Greedy: masked neighbours (alternately left and right) of each position "
     "to unmask that are recomputed with it (the authors' window_size)", &P::dkv_window, 0, kIntMax},
    {"dkv_refresh", "--dkv-refresh", "dKV-Cache: every row's K/V is refreshed at every N-th step of a block (1: every "
     "step, the original decode)", &P::dkv_refresh, 1, kIntMax},
    {"d2_k", "--d2-k", "d2Cache: masked positions recomputed per step, the highest certainty prior x density from the "
     "current block on (the authors' current_k)", &P::d2_k, 1, kIntMax},
    {"d2_sigma", "--d2-sigma", "d2Cache: width of the Gaussian certainty-density kernel over decoded positions (the "
     "authors' sigma)", &P::d2_sigma, 1e-3, kInf},
    {"d2_rollout_p", "--d2-rollout-p", "d2Cache: the other rows recomputed are the most important by attention rollout, "
     "up to this share of its importance (at least one; 1: every row, the original decode)", &P::d2_rollout_p, 0, 1},
    {"d2_inflate", "--d2-inflate", "d2Cache: rows between two recomputed rows at most N apart are recomputed too (the "
     "authors' inflate_w; 0: off, as their scripts)", &P::d2_inflate, 0, kIntMax},
    {"d2_update_prior", "--d2-update-prior", "d2Cache: each step's confidences of the recomputed masked positions "
     "refresh the certainty prior, as the paper describes (default: the authors' code, whose prior stays at step 1's "
     "confidences because its update writes into a copy)", &P::d2_update_prior},
    {"d2_queried_only", "--d2-queried-only", "d2Cache: only recomputed masked positions can be unmasked, as the paper "
     "describes (default: the authors' code, where the others stay candidates scored from all-zero logits because its "
     "filter writes into a copy)", &P::d2_queried_only},
    {"d2_block_window", "--d2-block-window", "d2Cache: the masked positions' search window ends at a block boundary, as "
     "the paper describes (default: the authors' code, which rounds it to a multiple of the number of the block's "
     "positions masked at the previous step's start, its block mask having been narrowed in place)",
     &P::d2_block_window},
    {"sparse_keep_ratio", "--sparse-keep-ratio", "Sparse-dLLM: share of the keys outside the current block each layer "
     "keeps for the block's cached steps, the most attended by the block's mean query (the authors' keep_ratio)",
     &P::sparse_keep_ratio, 0, 1},
    {"sparse_kernel_size", "--sparse-kernel-size", "Sparse-dLLM: window of the max-pooling over the keys' importance "
     "before the top share is kept (the authors' kernel_size; 1: no pooling)", &P::sparse_kernel_size, 1, kIntMax,
     "odd"},
    {"elastic_gamma", "--elastic-gamma", "Elastic-Cache: a step recomputes every row from the layer after the first whose "
     "tracked tokens' attention has a mean cosine to the last step's below this (the authors' gamma; above 1: every "
     "step dense)", &P::elastic_gamma, 0, kInf},
    {"elastic_window", "--elastic-window", "Elastic-Cache: the sliding window, the first N masked positions, decoded "
     "from and queried (the authors' window_length; 0: the --block-length blocks)", &P::elastic_window, 0, kIntMax},
    {"elastic_track", "--elastic-track", "Elastic-Cache: the most-attended decoded tokens tracked per layer for the "
     "drift test (the authors' track_num)", &P::elastic_track, 1, kIntMax},
    {"elastic_block_caching", "--elastic-block-caching", "Elastic-Cache: masked positions past the window are read "
     "from the cache (the authors' block_caching; off: every masked position is queried)", &P::elastic_block_caching},
    {"measure_cosine", "--measure-cosine", "cosine histograms for methods without saliency (an extra cosine per layer)",
     &P::measure_cosine},
    {"measure_drift", "--measure-drift", "dyllm: also compute exact attention for the rows the approximation serves "
     "and report the approx-vs-exact context cosine per layer (measured only: same decode, FLOPs not counted)",
     &P::measure_drift},
    {"compute", "--compute", "arithmetic of the weight products: stored (in the weights' stored type where the backend "
     "multiplies in it, e.g. bf16 on AVX512-BF16 CPUs) or f32 (every stored type widened to fp32; CPU only)",
     &P::compute},
};
// clang-format on

std::string num(double v) {
    std::ostringstream os;
    os << v;
    return os.str();
}

[[noreturn]] void bad(std::string_view flag, const std::string& rule) {
    throw InputError(std::string(flag) + " " + rule);
}

}  // namespace

const char* compute_mode_name(ComputeMode c) {
    return c == ComputeMode::F32 ? "f32" : "stored";
}

std::optional<ComputeMode> parse_compute_mode(std::string_view s) {
    if (s == "stored") return ComputeMode::Stored;
    if (s == "f32") return ComputeMode::F32;
    return std::nullopt;
}

std::span<const ParamSpec> diffusion_param_table() {
    return kTable;
}

const ParamSpec* find_param(std::string_view key) {
    for (const auto& s : kTable)
        if (s.key == key) return &s;
    return nullptr;
}

ParamValue param_value(const ParamSpec& s, const DiffusionParams& p) {
    return std::visit(
        [&](auto m) -> ParamValue {
            const auto& v = p.*m;
            using T       = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, bool>)
                return v;
            else if constexpr (std::is_same_v<T, Method>)
                return std::string(method_name(v));
            else if constexpr (std::is_same_v<T, ComputeMode>)
                return std::string(compute_mode_name(v));
            else if constexpr (std::is_same_v<T, float>) {
                if (std::isnan(v)) return std::monostate{};
                return double(v);
            } else
                return int64_t(v);
        },
        s.member);
}

std::string param_text(const ParamSpec& s, const DiffusionParams& p) {
    return std::visit(
        [](const auto& v) -> std::string {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, std::monostate>)
                return "unset";
            else if constexpr (std::is_same_v<T, bool>)
                return v ? "true" : "false";
            else if constexpr (std::is_same_v<T, std::string>)
                return v;
            else
                return num(double(v));
        },
        param_value(s, p));
}

int derived_default(const ParamSpec& s, const DiffusionParams& p) {
    if (s.key == "steps") return p.gen_length;
    if (s.key == "block_length") return std::min(32, p.gen_length);
    return 0;
}

// engine/README.md decision 5: 0.99 for the LLaDA family, 0.995 for Dream.
float default_tau(Family f) {
    return f == Family::Dream ? 0.995f : 0.99f;
}

std::string finite_flag_error(const std::string& text) {
    const char* b   = text.c_str();
    char*       end = nullptr;
    errno           = 0;
    const double v  = std::strtod(b, &end);
    // Whole text, no leading space (strtod skips it), finite, and not out of double range ("1e999" reads as inf).
    const bool ok = !text.empty() && !std::isspace(static_cast<unsigned char>(text[0])) && *end == '\0' &&
                    std::isfinite(v) && errno != ERANGE;
    return ok ? std::string() : "must be a finite number (got '" + text + "')";
}

void validate_params(const DiffusionParams& p) {
    // Ranges from the table.
    for (const ParamSpec& s : kTable) {
        const ParamValue v = param_value(s, p);
        if (std::holds_alternative<std::monostate>(v)) {
            if (s.unset.empty()) bad(s.flag(), "must be a finite number (got nan)");
            continue;
        }
        double x = 0;
        if (const auto* i = std::get_if<int64_t>(&v))
            x = double(*i);
        else if (const auto* d = std::get_if<double>(&v))
            x = *d;
        else
            continue;                                                                 // bool, method, compute
        if (std::holds_alternative<uint64_t DiffusionParams::*>(s.member)) continue;  // any seed is valid
        const std::string why = s.why.empty() ? "" : " (" + std::string(s.why) + ")";
        if (std::holds_alternative<double>(v) && !std::isfinite(x))
            bad(s.flag(), "must be a finite number (got " + num(x) + ")");
        if (x >= s.lo && x <= s.hi) continue;
        if (s.hi == kIntMax) bad(s.flag(), "must be at least " + num(s.lo) + why + " (got " + num(x) + ")");
        if (s.hi == kInf) bad(s.flag(), "must be a finite number >= " + num(s.lo) + why + " (got " + num(x) + ")");
        bad(s.flag(), "must be in [" + num(s.lo) + ", " + num(s.hi) + "]" + why + " (got " + num(x) + ")");
    }
    // Rules between settings.
    const std::string gen = std::to_string(p.gen_length), steps = std::to_string(p.steps),
                      block = std::to_string(p.block_length);
    if (p.steps > p.gen_length)
        bad("--steps", steps + " exceeds --gen-length " + gen + " (at least one token is unmasked per step)");
    if (p.gen_length % p.steps != 0)
        bad("--steps", steps + " does not divide --gen-length " + gen + " (n_u = gen_length / steps must be whole)");
    if (p.gen_length % p.block_length != 0) bad("--block-length", block + " does not divide --gen-length " + gen);
    if (p.sparse_kernel_size % 2 == 0)
        bad("--sparse-kernel-size", std::to_string(p.sparse_kernel_size) +
                                        " is even (the max-pooling window is centred on each key: it must be odd)");
    // Each block takes block_length / n_u steps; a fractional count would leave masks behind.
    const int n_u = p.gen_length / p.steps;
    if (std::isnan(p.conf_threshold) && p.block_length % n_u != 0)
        bad("--block-length", block + " is not a multiple of n_u = " + std::to_string(n_u) +
                                  " (gen_length / steps): each block must take a whole number of steps");
}

void validate_params(const DiffusionParams& p, const ModelConfig& cfg) {
    validate_params(p);
    if (p.gen_length > cfg.max_position)
        bad("--gen-length",
            std::to_string(p.gen_length) + " exceeds the model's max_position " + std::to_string(cfg.max_position));
}

}  // namespace dyllm
