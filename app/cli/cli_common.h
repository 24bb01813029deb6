// Option parsing shared by every dyllm subcommand (llama.cpp flag conventions): model/backend/threads, the diffusion
// knobs, prompts from -p / -f / --prompt-ids, conversion to DiffusionParams with one clear InputError per bad value.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/backend.h"
#include "engine/engine.h"
#include "app/model/param_options.h"

namespace CLI {
class App;
}  // namespace CLI

namespace dyllm::cli {

// -m/--model, --backend, -t/--threads, --quant-isa.
struct ModelOptions {
    std::string model;               // checkpoint directory or built-in name; "" = default built-in (tiny-llada)
    std::string backend = "auto";    // cpu | cuda | auto
    int         threads = 0;         // 0 = all cores
    std::string type;                // --type (dyllm bench): weights re-stored in memory at load; "" = as stored
    std::string quant_isa = "auto";  // --quant-isa: instruction set of the quantized products (set_cpu_quant_isa)
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

void add_model_options(CLI::App& app, ModelOptions& opts);
void add_prompt_options(CLI::App& app, PromptOptions& opts);

// "cpu" | "cuda" | "auto" -> BackendKind; InputError otherwise.
BackendKind parse_backend(const std::string& s);

// Strict number parsing for list flags (bench): the whole string must be a number. InputError names `what`.
double  parse_double_arg(const std::string& what, const std::string& text);
int64_t parse_int_arg(const std::string& what, const std::string& text);
// "a,b,c" -> {"a","b","c"} (spaces trimmed, empty items rejected with InputError naming `what`).
std::vector<std::string> split_list(const std::string& what, const std::string& text);

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

// JSON view shared by the commands' --json outputs: per step and per layer work from GenerationResult.steps plus
// totals (params_to_json: app/model/param_options.h).
nlohmann::ordered_json accounting_to_json(const GenerationResult& r);

// Is this FILE* an interactive terminal (progress display on/off)?
bool is_terminal(std::FILE* f);

}  // namespace dyllm::cli
