// The diffusion settings' command-line options, generated from the engine's parameter table (engine/params.h) and
// shared by `dyllm` and `dyllm-studio`, and the take-last scalar option both use.
#pragma once
#include <set>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "engine/engine.h"

namespace dyllm::cli {

// Upper bound of --threads (CLI and studio): far above any core count this engine targets, low enough that a typo
// (100000) is refused with one line instead of exhausting the system's thread limit.
inline constexpr int kMaxThreads = 1024;

// A scalar flag given twice keeps the last value (llama.cpp's behaviour, handy for scripts that append overrides)
// instead of CLI11's default error. `shown`: print the current value as the default in --help.
template <class T>
CLI::Option* scalar(CLI::App& app, const std::string& names, T& var, const std::string& help, bool shown = true) {
    CLI::Option* opt = app.add_option(names, var, help)->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    return shown ? opt->capture_default_str() : opt;
}

// The validator of the float flags outside the parameter table (the studio's --speed, --ui-scale; the table's own are
// checked by to_diffusion_params): engine/params.h finite_flag_error, so NaN, inf and trailing text are refused with
// one line naming the flag.
CLI::Validator finite_number();

// The diffusion settings as given on the command line: the flags are generated from the engine's parameter table
// (engine/params.h) and bound to `params`; `given` records which table keys were on the command line, so that
// derived defaults (steps, block length) are resolved in to_diffusion_params() only when not given.
struct DiffusionOptions {
    DiffusionParams       params;
    std::string           method  = method_name(DiffusionParams{}.method);  // as typed, checked in to_diffusion_params
    std::string           compute = compute_mode_name(DiffusionParams{}.compute);  // as typed, checked there too
    std::set<std::string> given;

    // Sets a setting as if given on the command line (dyllm bench's sweeps).
    template <class T>
    void set(T DiffusionParams::*member, const char* key, T value) {
        params.*member = value;
        given.insert(key);
    }
};

// Which diffusion flags to add: All, or every flag except those a sweep command takes as lists
// (--steps, --block-length, --method, --tau), as `dyllm bench` does (kSweptKeys).
enum class DiffusionFlags : uint8_t { All, FixedOnly };
inline constexpr std::string_view kSweptKeys[] = {"steps", "block_length", "method", "tau"};

void add_diffusion_options(CLI::App& app, DiffusionOptions& opts, DiffusionFlags which = DiffusionFlags::All);

// Resolves the derived defaults and checks everything that needs no model (validate_params(p) of the engine, plus
// the method name and explicit NaNs). Throws InputError naming the flag, the value and the allowed range.
DiffusionParams to_diffusion_params(const DiffusionOptions& opts);

// Every setting of the table as JSON (the commands' --json "params"): tau resolved to the value in force, unset
// floats (threshold off) null, plus n_u and tau_is_default.
nlohmann::ordered_json params_to_json(const DiffusionParams& p, Family family);

// tau actually in force: the explicit value, or the family default for NaN.
float effective_tau(const DiffusionParams& p, Family family);

}  // namespace dyllm::cli
