// The one table of diffusion settings (name, member, default, range, help). Validation, the run's JSON and trace
// environment, and the command-line options of `dyllm` and `dyllm-studio` are all generated from it, so a setting is
// written down once. Defaults are DiffusionParams' member initialisers; `unset` says what NaN means for a float.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>

#include "engine/engine.h"

namespace dyllm {

struct ParamSpec {
    using Member = std::variant<int DiffusionParams::*, float DiffusionParams::*, bool DiffusionParams::*,
                                uint64_t DiffusionParams::*, Method DiffusionParams::*, ComputeMode DiffusionParams::*>;

    std::string_view key;    // JSON / trace environment key (the member's name)
    std::string_view flags;  // command-line names, CLI11 style: "-n,--gen-length" (the first long one is canonical)
    std::string_view help;   // one line for --help
    Member           member;
    double           lo = 0, hi = 0;   // inclusive range of numeric settings
    std::string_view why     = {};     // reason for the range, printed with a range error
    std::string_view unset   = {};     // floats: what NaN means ("family default", "off"); "" = NaN is an error
    bool             derived = false;  // ints: the command line derives the default from gen_length when not given

    std::string_view flag() const {
        const std::string_view f = flags.substr(flags.find("--"));
        return f.substr(0, f.find(','));
    }
};

// Every setting, in the order --help and the JSON list them.
std::span<const ParamSpec> diffusion_param_table();
const ParamSpec*           find_param(std::string_view key);

// A setting's value: null (an unset float), a bool, an integer, a number or a name (the method, the compute mode).
using ParamValue = std::variant<std::monostate, bool, int64_t, double, std::string>;
ParamValue  param_value(const ParamSpec& s, const DiffusionParams& p);
std::string param_text(const ParamSpec& s, const DiffusionParams& p);  // "0.99", "true", "dyllm", "unset"

// The check every float flag of `dyllm` and `dyllm-studio` runs on its text before conversion: "" when it is a finite
// number, else "must be a finite number (got TEXT)" (NaN and inf parse as floats, and would slip through a range check
// or std::clamp).
std::string finite_flag_error(const std::string& text);

// The command line's derived defaults: steps = gen_length (n_u = 1), block_length = min(32, gen_length).
int derived_default(const ParamSpec& s, const DiffusionParams& p);

// The meaning of tau, stated once: a row is salient when the cosine between its attention context and the previous
// step's is below tau. Cosines lie in [-1, 1], so tau = -1 marks no row salient; any tau above 1 marks every row
// salient (a rounded cosine can reach exactly 1.0, so tau = 1 alone does not).
inline constexpr double kTauMin = -1.0, kTauMax = 2.0;

}  // namespace dyllm
