// Shared option parsing of the dyllm subcommands: the flags (with llama.cpp's diffusion spellings as aliases), the
// model-independent range checks, model loading with backend fallback notes, and prompt reading.
#include "app/cli/cli_common.h"

#include <CLI/CLI.hpp>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/errors.h"
#include "engine/io/json_file.h"

namespace dyllm::cli {

namespace {

std::string trim(const std::string& s) {
    size_t b = 0, e = s.size();
    while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
    while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
    return s.substr(b, e - b);
}

std::string fmt_double(double v) {
    std::ostringstream os;
    os << v;
    return os.str();
}

// A scalar flag given twice keeps the last value (llama.cpp's behaviour, handy for scripts that append overrides)
// instead of CLI11's default error. `shown`: print the current value as the default in --help.
template <class T>
CLI::Option* scalar(CLI::App& app, const std::string& names, T& var, const std::string& help, bool shown = true) {
    CLI::Option* opt = app.add_option(names, var, help)->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    return shown ? opt->capture_default_str() : opt;
}

// A scalar whose presence matters (the value goes to `var`, `set` becomes true), same take-last policy.
CLI::Option* scalar_set(CLI::App& app, const std::string& names, double& var, bool& set, const std::string& help) {
    return app
        .add_option_function<double>(
            names,
            [&var, &set](const double& v) {
                var = v;
                set = true;
            },
            help)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
}

}  // namespace

void add_model_options(CLI::App& app, ModelOptions& opts) {
    scalar(app, "-m,--model", opts.model,
           "checkpoint directory or built-in name (tiny-llada, tiny-dream); default: tiny-llada", false);
    scalar(app, "--backend", opts.backend, "cpu | cuda | auto (auto: CUDA when a device is present)");
    scalar(app, "-t,--threads", opts.threads, "CPU threads (0 = all cores)");
}

void add_diffusion_options(CLI::App& app, DiffusionOptions& o, DiffusionFlags which) {
    // Aliases: llama.cpp's -n/--n-predict and --diffusion-* flags, and --dyllm-* for the DyLLM knobs
    // (product-anchors.md section 5: accept the existing diffusion flags unchanged).
    scalar(app, "-n,--gen-length,--n-predict", o.gen_length, "response length R (tokens)");
    if (which == DiffusionFlags::All) {
        scalar(app, "--steps,--diffusion-steps", o.steps, "total denoising steps (default: gen length, n_u = 1)",
               false);
        scalar(app, "--block-length,--diffusion-block-length", o.block_length,
               "semi-autoregressive block length (default: min(32, gen length))", false);
        scalar(app, "--method", o.method, "original | dyllm | fast-prefix | fast-dual | dllm-cache");
        scalar_set(app, "--tau,--dyllm-tau", o.tau, o.tau_set,
                   "DyLLM cosine threshold (default: LLaDA 0.99, Dream 0.995)");
    }
    scalar(app, "--full-steps,--dyllm-full-steps", o.full_steps, "T_full: initial dense steps");
    scalar(app, "--fullq-every", o.fullq_every, "period of full-query sparse steps");
    app.add_flag("--no-approx", o.no_approx, "exact attention for every query (the paper's 'Salient' ablation)");
    scalar_set(app, "--threshold", o.threshold, o.threshold_set,
               "confidence-threshold parallel decoding (off by default)");
    scalar(app, "--temp", o.temperature, "sampling temperature (0 = greedy)");
    // CLI11 reads "-1" into a uint64_t as 2^64-1; a seed is refused when it is written negative.
    scalar(app, "-s,--seed", o.seed, "random seed (>= 0)")
        ->check(CLI::Validator(
            [](std::string& v) {
                const size_t b = v.find_first_not_of(" \t");
                return b != std::string::npos && v[b] == '-' ? "must be >= 0 (got " + v + ")" : std::string();
            },
            "SEED >= 0", "seed"));
    app.add_flag("--ignore-eos", o.ignore_eos, "do not stop a sequence at EOS");
    scalar(app, "--kp", o.kp, "dLLM-Cache prompt refresh interval K_P");
    scalar(app, "--kr", o.kr, "dLLM-Cache response refresh interval K_R");
    scalar(app, "--rho", o.rho, "dLLM-Cache adaptive transfer ratio");
    app.add_flag("--measure-cosine", o.measure_cosine,
                 "cosine histograms for methods without saliency (an extra cosine per layer)");
}

void add_prompt_options(CLI::App& app, PromptOptions& o) {
    // One value per occurrence; repeating the flag adds prompts (they run as one lock-step batch).
    app.add_option("-p,--prompt", o.prompts, "prompt text (repeat for a batch)")->allow_extra_args(false);
    scalar(app, "-f,--file", o.file, "file with one prompt per line (empty lines skipped)", false);
    app.add_option("--prompt-ids", o.prompt_ids, "prompt as token ids, e.g. 1,2,3 (repeat for a batch)")
        ->allow_extra_args(false);
    app.add_flag("--no-chat", o.no_chat, "do not apply the family's chat template");
}

BackendKind parse_backend(const std::string& s) {
    if (s == "cpu") return BackendKind::Cpu;
    if (s == "cuda") return BackendKind::Cuda;
    if (s == "auto") return BackendKind::Auto;
    throw InputError("--backend must be cpu, cuda or auto (got '" + s + "')");
}

double parse_double_arg(const std::string& what, const std::string& text) {
    const std::string t = trim(text);
    if (t.empty()) throw InputError(what + ": empty value");
    errno = 0;
    char*        end = nullptr;
    const double v   = std::strtod(t.c_str(), &end);
    if (end != t.c_str() + t.size()) throw InputError(what + ": '" + text + "' is not a number");
    if (errno == ERANGE) throw InputError(what + ": '" + text + "' is out of range");
    return v;
}

int64_t parse_int_arg(const std::string& what, const std::string& text) {
    const std::string t = trim(text);
    if (t.empty()) throw InputError(what + ": empty value");
    errno = 0;
    char*           end = nullptr;
    const long long v   = std::strtoll(t.c_str(), &end, 10);
    if (end != t.c_str() + t.size()) throw InputError(what + ": '" + text + "' is not an integer");
    if (errno == ERANGE) throw InputError(what + ": '" + text + "' is out of range");
    return v;
}

std::vector<std::string> split_list(const std::string& what, const std::string& text) {
    std::vector<std::string> out;
    std::string              item;
    std::istringstream       is(text);
    int                      index = 0;
    while (std::getline(is, item, ',')) {
        std::string t = trim(item);
        if (t.empty()) throw InputError(what + ": empty item at index " + std::to_string(index) + " in '" + text + "'");
        out.push_back(t);
        ++index;
    }
    if (!text.empty() && text.back() == ',') throw InputError(what + ": trailing ',' in '" + text + "'");
    if (out.empty()) throw InputError(what + ": empty list");
    return out;
}

DiffusionParams to_diffusion_params(const DiffusionOptions& o) {
    DiffusionParams p;
    if (o.gen_length <= 0) throw InputError("--gen-length must be positive (got " + std::to_string(o.gen_length) + ")");
    p.gen_length = o.gen_length;

    p.steps = o.steps == -1 ? o.gen_length : o.steps;
    if (p.steps <= 0) throw InputError("--steps must be positive (got " + std::to_string(o.steps) + ")");
    if (p.steps > p.gen_length)
        throw InputError("--steps " + std::to_string(p.steps) + " exceeds --gen-length " +
                         std::to_string(p.gen_length) + " (at least one token is unmasked per step)");
    if (p.gen_length % p.steps != 0)
        throw InputError("--steps " + std::to_string(p.steps) + " does not divide --gen-length " +
                         std::to_string(p.gen_length) + " (n_u = gen_length / steps must be whole, spec a.9)");
    const int n_u = p.gen_length / p.steps;

    // Project decision 5: block 32 by default; shorter responses use one block.
    p.block_length = o.block_length == -1 ? std::min(32, p.gen_length) : o.block_length;
    if (p.block_length <= 0)
        throw InputError("--block-length must be positive (got " + std::to_string(o.block_length) + ")");
    if (p.gen_length % p.block_length != 0)
        throw InputError("--block-length " + std::to_string(p.block_length) + " does not divide --gen-length " +
                         std::to_string(p.gen_length));
    // Each block takes block_length / n_u steps (spec a.9 notes); a fractional count would leave masks behind.
    if (p.block_length % n_u != 0)
        throw InputError("--block-length " + std::to_string(p.block_length) + " is not a multiple of n_u = " +
                         std::to_string(n_u) + " (gen_length / steps): each block must take a whole number of steps");

    const auto m = parse_method(o.method);
    if (!m)
        throw InputError("--method: unknown method '" + o.method +
                         "' (expected original, dyllm, fast-prefix, fast-dual or dllm-cache)");
    p.method = *m;

    if (o.tau_set) {
        if (!std::isfinite(o.tau)) throw InputError("--tau must be a finite number (got " + fmt_double(o.tau) + ")");
        // tau is compared with a cosine similarity, which lies in [-1, 1] (spec a.7).
        if (o.tau < -1.0 || o.tau > 1.0)
            throw InputError("--tau must be in [-1, 1] (a cosine similarity threshold; got " + fmt_double(o.tau) + ")");
        p.tau = static_cast<float>(o.tau);
    } else {
        p.tau = NAN;
    }

    if (o.full_steps < 1)
        throw InputError("--full-steps must be at least 1 (got " + std::to_string(o.full_steps) +
                         "): the first step fills the caches");
    p.full_steps = o.full_steps;
    if (o.fullq_every < 1)
        throw InputError("--fullq-every must be at least 1 (got " + std::to_string(o.fullq_every) + ")");
    p.fullq_every = o.fullq_every;
    p.approx      = !o.no_approx;

    if (o.threshold_set) {
        if (!std::isfinite(o.threshold))
            throw InputError("--threshold must be a finite number (got " + fmt_double(o.threshold) + ")");
        p.conf_threshold = static_cast<float>(o.threshold);
    } else {
        p.conf_threshold = NAN;
    }

    if (!std::isfinite(o.temperature) || o.temperature < 0)
        throw InputError("--temp must be a finite number >= 0 (got " + fmt_double(o.temperature) + ")");
    p.temperature = static_cast<float>(o.temperature);
    p.seed        = o.seed;
    p.ignore_eos  = o.ignore_eos;

    if (o.kp < 1) throw InputError("--kp must be at least 1 (got " + std::to_string(o.kp) + ")");
    if (o.kr < 1) throw InputError("--kr must be at least 1 (got " + std::to_string(o.kr) + ")");
    if (!std::isfinite(o.rho) || o.rho < 0 || o.rho > 1)
        throw InputError("--rho must be in [0, 1] (got " + fmt_double(o.rho) + ")");
    p.kp  = o.kp;
    p.kr  = o.kr;
    p.rho = static_cast<float>(o.rho);

    p.measure_cosine = o.measure_cosine;
    return p;
}

float effective_tau(const DiffusionParams& p, Family family) {
    return std::isnan(p.tau) ? default_tau(family) : p.tau;
}

std::unique_ptr<Model> load_model_for_cli(const ModelOptions& opts, bool quiet) {
    const BackendKind kind = parse_backend(opts.backend);
    if (opts.threads < 0 || opts.threads > kMaxThreads) {
        throw InputError("--threads must be in [0, " + std::to_string(kMaxThreads) + "] (0 = all cores; got " +
                         std::to_string(opts.threads) + ")");
    }
    if (!opts.model.empty()) {
        const std::filesystem::path dir = resolve_model_path(opts.model);
        std::error_code             ec;
        if (!std::filesystem::exists(dir, ec))
            throw LoadError("model '" + opts.model + "': no such directory and not a built-in model name " +
                            "(built-ins: tiny-llada, tiny-dream)");
        if (!std::filesystem::is_directory(dir, ec))
            throw LoadError("model '" + opts.model + "': " + dir.string() + " is not a directory");
    }
    std::string note;
    auto        model = Model::load(opts.model, kind, opts.threads, &note);
    if (!note.empty() && !quiet) std::fprintf(stderr, "backend: %s\n", note.c_str());
    return model;
}

std::unique_ptr<Model> load_model_or_exit(const ModelOptions& opts, bool quiet) {
    try {
        return load_model_for_cli(opts, quiet);
    } catch (const BackendError& e) {
        std::fprintf(stderr, "error: backend: %s\n", e.what());
        std::exit(3);
    } catch (const std::exception& e) {  // LoadError, InputError
        std::fprintf(stderr, "error: %s\n", e.what());
        std::exit(2);
    }
}

std::vector<int32_t> parse_id_list(const std::string& text) {
    std::vector<int32_t> ids;
    std::string          item;
    std::istringstream   is(text);
    int                  index = 0;
    while (std::getline(is, item, ',')) {
        const std::string t = trim(item);
        char*             end = nullptr;
        errno                 = 0;
        const long long v     = t.empty() ? 0 : std::strtoll(t.c_str(), &end, 10);
        if (t.empty() || end != t.c_str() + t.size() || errno == ERANGE || v < 0 || v > INT32_MAX)
            throw InputError("--prompt-ids: item " + std::to_string(index) + " ('" + t +
                             "') is not a non-negative token id in '" + text + "'");
        ids.push_back(static_cast<int32_t>(v));
        ++index;
    }
    if (!text.empty() && text.back() == ',') throw InputError("--prompt-ids: trailing ',' in '" + text + "'");
    if (ids.empty()) throw InputError("--prompt-ids: empty id list");
    return ids;
}

std::vector<PromptInput> read_prompt_texts(const PromptOptions& o) {
    std::vector<PromptInput> out;
    for (const auto& p : o.prompts) {
        if (p.empty()) throw InputError("-p: empty prompt");
        out.push_back({p, {}, false});
    }
    if (!o.file.empty()) {
        // The engine's bounded reader: a FIFO or device given as -f is refused instead of blocking or reading forever.
        std::string text;
        try {
            text = read_regular_file(o.file, 256ull << 20, "prompt");
        } catch (const LoadError& e) {
            throw InputError(std::string("-f: ") + e.what());
        }
        std::istringstream in(text);
        std::string        line;
        size_t             n_before = out.size();
        while (std::getline(in, line)) {
            if (!line.empty() && line.back() == '\r') line.pop_back();
            if (trim(line).empty()) continue;
            out.push_back({line, {}, false});
        }
        if (in.bad()) throw InputError("-f " + o.file + ": read error");
        if (out.size() == n_before) throw InputError("-f " + o.file + ": no prompts (every line is empty)");
    }
    for (const auto& s : o.prompt_ids) out.push_back({s, parse_id_list(s), true});
    if (out.empty()) throw InputError("no prompt: give -p PROMPT, -f FILE or --prompt-ids IDS");
    return out;
}

std::vector<PromptInput> read_prompts(const PromptOptions& o, const Model& model) {
    std::vector<PromptInput> out = read_prompt_texts(o);
    const int                n_vocab = model.config().n_vocab;
    for (size_t i = 0; i < out.size(); ++i) {
        PromptInput& p = out[i];
        if (p.from_ids) {
            for (size_t j = 0; j < p.ids.size(); ++j)
                if (p.ids[j] >= n_vocab)
                    throw InputError("--prompt-ids: id " + std::to_string(p.ids[j]) + " at index " + std::to_string(j) +
                                     " is outside the vocabulary [0, " + std::to_string(n_vocab) + ")");
            continue;
        }
        if (!model.tokenizer())
            throw InputError("model '" + model.name() + "' has no tokenizer.json: give the prompt as --prompt-ids");
        p.ids = encode_prompt(model, p.text, !o.no_chat);
        if (p.ids.empty()) throw InputError("prompt " + std::to_string(i) + " encodes to zero tokens");
    }
    return out;
}

void check_prompt_lengths(const std::vector<PromptInput>& prompts, const DiffusionParams& p, const ModelConfig& cfg) {
    for (size_t i = 0; i < prompts.size(); ++i) {
        const int64_t total = int64_t(prompts[i].ids.size()) + p.gen_length;
        if (total > cfg.max_position)
            throw InputError("prompt " + std::to_string(i) + " is too long: " + std::to_string(prompts[i].ids.size()) +
                             " prompt tokens + gen length " + std::to_string(p.gen_length) + " = " +
                             std::to_string(total) + " exceeds the model's max_position " +
                             std::to_string(cfg.max_position));
    }
}

double json_float(float v) {
    if (!std::isfinite(v)) return double(v);
    char buf[32];
    // 9 significant digits always round-trip a float (FLT_DECIMAL_DIG); fewer usually suffice.
    for (int prec = 6; prec <= 9; ++prec) {
        std::snprintf(buf, sizeof buf, "%.*g", prec, double(v));
        const double d = std::strtod(buf, nullptr);
        if (static_cast<float>(d) == v) return d;
    }
    return double(v);
}

nlohmann::ordered_json params_to_json(const DiffusionParams& p, Family family) {
    nlohmann::ordered_json j;
    j["gen_length"]   = p.gen_length;
    j["steps"]        = p.steps;
    j["n_u"]          = p.steps > 0 ? p.gen_length / p.steps : 0;
    j["block_length"] = p.block_length;
    j["method"]       = method_name(p.method);
    j["tau"]          = json_float(effective_tau(p, family));
    j["tau_is_default"] = std::isnan(p.tau);
    j["full_steps"]   = p.full_steps;
    j["fullq_every"]  = p.fullq_every;
    j["approx"]       = p.approx;
    if (std::isnan(p.conf_threshold))
        j["conf_threshold"] = nullptr;
    else
        j["conf_threshold"] = json_float(p.conf_threshold);
    j["temperature"]    = json_float(p.temperature);
    j["seed"]           = p.seed;
    j["ignore_eos"]     = p.ignore_eos;
    j["kp"]             = p.kp;
    j["kr"]             = p.kr;
    j["rho"]            = json_float(p.rho);
    j["measure_cosine"] = p.measure_cosine;
    return j;
}

nlohmann::ordered_json accounting_to_json(const GenerationResult& r) {
    nlohmann::ordered_json steps = nlohmann::ordered_json::array();
    for (const StepRecord& s : r.steps) {
        nlohmann::ordered_json layers = nlohmann::ordered_json::array();
        for (const LayerAccount& l : s.layers) {
            layers.push_back({{"query_rows", l.query_rows},
                              {"kv_rows", l.kv_rows},
                              {"attn_exact_rows", l.attn_exact_rows},
                              {"attn_approx_rows", l.attn_approx_rows},
                              {"ffn_rows", l.ffn_rows},
                              {"flops", l.flops}});
        }
        steps.push_back({{"step", s.step},
                         {"kind", step_kind_name(s.kind)},
                         {"tau", json_float(s.tau)},
                         {"seconds", s.seconds},
                         {"flops", s.flops},
                         {"dense_flops", s.dense_flops},
                         {"tokens_committed", s.tokens_committed},
                         {"layers", std::move(layers)}});
    }
    nlohmann::ordered_json j;
    j["steps"]              = std::move(steps);
    j["total_flops"]        = r.total_flops;
    j["total_dense_flops"]  = r.total_dense_flops;
    j["recompute_fraction"] = r.recompute_fraction;
    j["cache_bytes"]        = r.cache_bytes;
    return j;
}

bool is_terminal(std::FILE* f) { return f && ::isatty(::fileno(f)) == 1; }

}  // namespace dyllm::cli
