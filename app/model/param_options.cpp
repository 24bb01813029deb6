// The diffusion settings' command-line options from the engine's parameter table (see param_options.h).
#include "app/model/param_options.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <type_traits>

#include "engine/errors.h"
#include "engine/params.h"
#include "instrumentation/json_number.h"

namespace dyllm::cli {

namespace {

// Boolean settings that are on by default also answer to their negation (--approx, --no-approx).
std::string bool_flag_names(const ParamSpec& spec, const std::string& names) {
    DiffusionParams defaults;
    if (!(defaults.*std::get<bool DiffusionParams::*>(spec.member))) return names;
    return names + ",!--no-" + std::string(spec.flag().substr(2));
}

}  // namespace

CLI::Validator finite_number() {
    return CLI::Validator([](std::string& v) { return finite_flag_error(v); }, "FLOAT", "finite");
}

void add_diffusion_options(CLI::App& app, DiffusionOptions& o, DiffusionFlags which) {
    for (const ParamSpec& spec : diffusion_param_table()) {
        if (which == DiffusionFlags::FixedOnly &&
            std::find(std::begin(kSweptKeys), std::end(kSweptKeys), spec.key) != std::end(kSweptKeys))
            continue;
        const std::string names(spec.flags), help(spec.help);
        auto              mark = [&o, key = std::string(spec.key)](const auto&...) { o.given.insert(key); };
        std::visit(
            [&](auto member) {
                using T = std::remove_reference_t<decltype(o.params.*member)>;
                if constexpr (std::is_same_v<T, bool>) {
                    // --approx also answers to --no-approx; plain flags stay flags.
                    const std::string flag_names = bool_flag_names(spec, names);
                    app.add_flag(flag_names, o.params.*member, help)->each(mark);
                } else if constexpr (std::is_same_v<T, Method>) {
                    scalar(app, names, o.method, help + ": " + method_names(" | "))->each(mark);
                } else if constexpr (std::is_same_v<T, ComputeMode>) {
                    scalar(app, names, o.compute, help + ": stored | f32")->each(mark);
                } else {
                    CLI::Option* opt = scalar(app, names, o.params.*member, help, !spec.derived && spec.unset.empty());
                    opt->each(mark);
                    // Floats: NaN and inf are refused in to_diffusion_params (one InputError naming the flag, exit 2).
                    // CLI11 reads "-1" into an unsigned as 2^64-1: an unsigned setting written negative is refused.
                    if constexpr (std::is_unsigned_v<T>)
                        opt->check(CLI::Validator(
                            [](std::string& v) {
                                const size_t at = v.find_first_not_of(" \t");
                                return at != std::string::npos && v[at] == '-' ? "must be >= 0 (got " + v + ")"
                                                                               : std::string();
                            },
                            "UINT >= 0", "non-negative"));
                }
            },
            spec.member);
    }
}

DiffusionParams to_diffusion_params(const DiffusionOptions& o) {
    DiffusionParams p = o.params;
    for (const ParamSpec& spec : diffusion_param_table()) {
        if (spec.derived && !o.given.count(std::string(spec.key)))
            p.*std::get<int DiffusionParams::*>(spec.member) = derived_default(spec, p);
        // NaN means "unset" for some floats; typed explicitly it is an error.
        if (const auto* f = std::get_if<float DiffusionParams::*>(&spec.member);
            f && o.given.count(std::string(spec.key)))
            if (std::isnan(p.**f)) throw InputError(std::string(spec.flag()) + " must be a finite number (got nan)");
    }
    const auto m = parse_method(o.method);
    if (!m) throw InputError("--method: unknown method '" + o.method + "' (expected " + method_names(", ") + ")");
    p.method     = *m;
    const auto c = parse_compute_mode(o.compute);
    if (!c) throw InputError("--compute: unknown value '" + o.compute + "' (expected stored, f32)");
    p.compute = *c;
    validate_params(p);
    return p;
}

nlohmann::ordered_json params_to_json(const DiffusionParams& p, Family family) {
    DiffusionParams shown = p;
    shown.tau             = effective_tau(p, family);  // the tau in force
    nlohmann::ordered_json j;
    for (const ParamSpec& spec : diffusion_param_table()) {
        std::visit(
            [&](const auto& v) {
                using T = std::decay_t<decltype(v)>;
                if constexpr (std::is_same_v<T, std::monostate>)
                    j[std::string(spec.key)] = nullptr;
                else if constexpr (std::is_same_v<T, double>)
                    j[std::string(spec.key)] = float_for_json(float(v));
                else
                    j[std::string(spec.key)] = v;
            },
            param_value(spec, shown));
    }
    j["n_u"]            = p.steps > 0 ? p.gen_length / p.steps : 0;
    j["tau_is_default"] = std::isnan(p.tau);
    return j;
}

float effective_tau(const DiffusionParams& p, Family family) {
    return std::isnan(p.tau) ? default_tau(family) : p.tau;
}

}  // namespace dyllm::cli
