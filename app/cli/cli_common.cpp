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
#include <thread>

#include "app/cli/progress.h"
#include "engine/backend_cpu.h"
#include "engine/errors.h"
#include "engine/params.h"
#include "instrumentation/json_number.h"
#include "engine/io/gguf.h"
#include "engine/io/json_file.h"
#include "engine/io/restored_checkpoint.h"

namespace dyllm::cli {

namespace {

std::string trim(const std::string& s) {
    size_t b = 0, e = s.size();
    while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
    while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
    return s.substr(b, e - b);
}

}  // namespace

void add_model_options(CLI::App& app, ModelOptions& opts) {
    scalar(app, "-m,--model", opts.model,
           "checkpoint directory, .gguf file or built-in name (tiny-llada, tiny-dream); default: tiny-llada", false);
    scalar(app, "--backend", opts.backend, "cpu | cuda | auto (auto: CUDA when a device is present)");
    scalar(app, "-t,--threads", opts.threads, "CPU threads (0 = all cores)");
    scalar(app, "--quant-isa", opts.quant_isa,
           "instruction set of the CPU's quantized-weight products: auto, amx, avx512 (no AMX), avx-vnni, avx2 or "
           "baseline (a smaller one measures what a CPU without the wider one runs)");
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
    errno            = 0;
    char*        end = nullptr;
    const double v   = std::strtod(t.c_str(), &end);
    if (end != t.c_str() + t.size()) throw InputError(what + ": '" + text + "' is not a number");
    if (errno == ERANGE) throw InputError(what + ": '" + text + "' is out of range");
    return v;
}

int64_t parse_int_arg(const std::string& what, const std::string& text) {
    const std::string t = trim(text);
    if (t.empty()) throw InputError(what + ": empty value");
    errno               = 0;
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

std::unique_ptr<Model> load_model_for_cli(const ModelOptions& opts, bool quiet) {
    const BackendKind kind = parse_backend(opts.backend);
    if (opts.threads < 0 || opts.threads > kMaxThreads) {
        throw InputError("--threads must be in [0, " + std::to_string(kMaxThreads) + "] (0 = all cores; got " +
                         std::to_string(opts.threads) + ")");
    }
    set_cpu_quant_isa(opts.quant_isa);
    if (!opts.model.empty()) {
        const std::filesystem::path dir = resolve_model_path(opts.model);
        std::error_code             ec;
        if (!std::filesystem::exists(dir, ec))
            throw LoadError("model '" + opts.model + "': no such directory and not a built-in model name " +
                            "(built-ins: tiny-llada, tiny-dream)");
        if (!std::filesystem::is_directory(dir, ec) && !is_gguf_path(dir))
            throw LoadError("model '" + opts.model + "': " + dir.string() + " is not a directory or a .gguf file");
    }
    std::string note;
    // Packing a real-size model's weights takes seconds: a progress line on a terminal (never in pipes or logs).
    ProgressLine   line(stderr, !quiet && isatty(fileno(stderr)));
    LoadProgressFn progress = [&line](const LoadProgress& p) {
        if (p.bytes_total < (uint64_t(64) << 20)) return;  // the built-in models load in milliseconds: no line
        char gb[64];
        std::snprintf(gb, sizeof gb, " (%.1f/%.1f GB)", double(p.bytes_done) * 1e-9, double(p.bytes_total) * 1e-9);
        line.draw(format_progress(p.tensors_done, p.tensors_total, 30, "loading weights") + gb);
    };
    std::unique_ptr<Model> model;
    if (opts.type.empty()) {
        model = Model::load(opts.model, kind, opts.threads, &note, progress);
    } else {  // engine/io/restored_checkpoint.h: the checkpoint's weights re-stored at --type before they are prepared
        check_restore_type(opts.type);
        const int threads = opts.threads > 0 ? opts.threads : int(std::max(1u, std::thread::hardware_concurrency()));
        model             = Model::from_checkpoint(
                        restore_checkpoint(Checkpoint::open(resolve_model_path(opts.model)), opts.type, threads),
            opts.model.empty() ? "tiny-llada" : opts.model, kind, opts.threads, &note, progress);
    }
    line.finish();
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
        const std::string t   = trim(item);
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
            // 16 MiB: far above any prompt a model's positions hold (128k tokens are ~0.5 MB of text), far below what
            // the prompts' copies and their encodings would cost in memory for a file of gigabytes.
            text = read_regular_file(o.file, 16ull << 20, "prompt");
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
    std::vector<PromptInput> out     = read_prompt_texts(o);
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

bool is_terminal(std::FILE* f) {
    return f && ::isatty(::fileno(f)) == 1;
}

}  // namespace dyllm::cli
