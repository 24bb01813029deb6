// Option parsing shared by every dyllm subcommand (llama.cpp flag conventions): model/backend/threads, the diffusion
// knobs, prompts from -p / -f / --prompt-ids, conversion to DiffusionParams with one clear InputError per bad value.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/backend.h"
#include "engine/engine.h"

namespace CLI {
class App;
}

namespace dyllm::cli {

// Upper bound of --threads (CLI and studio): far above any core count this engine targets, low enough that a typo
// (100000) is refused with one line instead of exhausting the system's thread limit.
inline constexpr int kMaxThreads = 1024;

// -m/--model, --backend, -t/--threads.
struct ModelOptions {
    std::string model;              // checkpoint directory or built-in name; "" = default built-in (tiny-llada)
    std::string backend = "auto";   // cpu | cuda | auto
    int         threads = 0;        // 0 = all cores
};

// Every diffusion knob as typed on the command line. Unset values keep NaN / -1 so that defaults which depend on
// other flags (steps = gen length, block = min(32, gen length)) can be resolved in to_diffusion_params().
struct DiffusionOptions {
    int         gen_length   = 64;   // spec a.11 project default: 64 (DiffusionParams default)
    int         steps        = -1;   // -1: = gen_length (n_u = 1, project decision 5)
    int         block_length = -1;   // -1: min(32, gen_length) (project decision 5: block 32)
    std::string method       = "dyllm";
    double      tau          = NAN;  // NaN: family default (LLaDA 0.99, Dream 0.995)
    bool        tau_set      = false;
    int         full_steps   = 4;
    int         fullq_every  = 4;
    bool        no_approx    = false;
    double      threshold    = NAN;  // confidence threshold; NaN = off
    bool        threshold_set = false;
    double      temperature  = 0.0;
    uint64_t    seed         = 0;
    bool        ignore_eos   = false;
    int         kp           = 50;
    int         kr           = 7;
    double      rho          = 0.25;
    bool        measure_cosine = false;
};

// -p/--prompt (repeatable), -f/--file, --prompt-ids (repeatable), --no-chat.
struct PromptOptions {
    std::vector<std::string> prompts;
    std::string              file;
    std::vector<std::string> prompt_ids;  // each "1,2,3"
    bool                     no_chat = false;
};

// One prompt ready for Session::start: the text as given (or the id list as typed) and its token ids.
struct PromptInput {
    std::string          text;
    std::vector<int32_t> ids;
    bool                 from_ids = false;
};

// Which diffusion flags to add: All, or every flag except those a sweep command takes as lists
// (--steps, --block-length, --method, --tau), as `dyllm bench` does.
enum class DiffusionFlags : uint8_t { All, FixedOnly };

void add_model_options(CLI::App& app, ModelOptions& opts);
void add_diffusion_options(CLI::App& app, DiffusionOptions& opts, DiffusionFlags which = DiffusionFlags::All);
void add_prompt_options(CLI::App& app, PromptOptions& opts);

// "cpu" | "cuda" | "auto" -> BackendKind; InputError otherwise.
BackendKind parse_backend(const std::string& s);

// Strict number parsing for list flags (bench): the whole string must be a number. InputError names `what`.
double  parse_double_arg(const std::string& what, const std::string& text);
int64_t parse_int_arg(const std::string& what, const std::string& text);
// "a,b,c" -> {"a","b","c"} (spaces trimmed, empty items rejected with InputError naming `what`).
std::vector<std::string> split_list(const std::string& what, const std::string& text);

// Range checks that need no model (lengths positive, steps divides gen length, tau finite, ...); the rest is
// validate_params(). Throws InputError naming the flag, the value and the allowed range.
DiffusionParams to_diffusion_params(const DiffusionOptions& opts);

// tau actually in force: the explicit value, or the family default for NaN.
float effective_tau(const DiffusionParams& p, Family family);

// Loads the model on the requested backend. Backend fallback notes go to stderr as "backend: ..." lines.
// Throws LoadError / BackendError / InputError (the CLI boundary in main.cpp prints them as one line).
std::unique_ptr<Model> load_model_for_cli(const ModelOptions& opts, bool quiet = false);
// The same, but prints "error: ..." on one line and exits with status 2 (3 for backend errors) on failure.
std::unique_ptr<Model> load_model_or_exit(const ModelOptions& opts, bool quiet = false);

// Reads the prompts: every -p, every non-empty line of -f FILE, every --prompt-ids list. At least one is required.
// Text prompts go through encode_prompt(model, text, chat = !no_chat); ids are checked against the vocabulary.
std::vector<PromptInput> read_prompts(const PromptOptions& opts, const Model& model);
// The same without a model: only the texts / id lists (for commands that tokenize later). Throws InputError.
std::vector<PromptInput> read_prompt_texts(const PromptOptions& opts);
// "1, 2,3" -> {1,2,3}; InputError naming the bad item and its index.
std::vector<int32_t> parse_id_list(const std::string& text);

// Prompt tokens + gen length must fit the model's positions (max_position). InputError naming the prompt index.
void check_prompt_lengths(const std::vector<PromptInput>& prompts, const DiffusionParams& p, const ModelConfig& cfg);

// JSON views shared by the commands' --json outputs. params: every knob, tau resolved to the value in force,
// conf_threshold null when off. accounting: per step and per layer work from GenerationResult.steps plus totals.
// A float as the shortest decimal that reads back to the same float (0.99f -> 0.99, not 0.9900000095367432).
double json_float(float v);
nlohmann::ordered_json params_to_json(const DiffusionParams& p, Family family);
nlohmann::ordered_json accounting_to_json(const GenerationResult& r);

// Is this FILE* an interactive terminal (progress display on/off)?
bool is_terminal(std::FILE* f);

}  // namespace dyllm::cli
