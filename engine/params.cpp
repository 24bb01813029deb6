// Method names, default thresholds and validation of DiffusionParams (one InputError per bad value, naming it).
#include <cmath>
#include <sstream>

#include "engine/engine.h"
#include "engine/errors.h"

namespace dyllm {

const char* method_name(Method m) {
    switch (m) {
        case Method::Original: return "original";
        case Method::DyLLM: return "dyllm";
        case Method::FastPrefix: return "fast-prefix";
        case Method::FastDual: return "fast-dual";
        case Method::DllmCache: return "dllm-cache";
    }
    return "?";
}

std::optional<Method> parse_method(std::string_view s) {
    for (Method m : {Method::Original, Method::DyLLM, Method::FastPrefix, Method::FastDual, Method::DllmCache})
        if (s == method_name(m)) return m;
    return std::nullopt;
}

// Spec project decision 5: 0.99 for the LLaDA family, 0.995 for Dream.
float default_tau(Family f) { return f == Family::Dream ? 0.995f : 0.99f; }

namespace {
template <class T>
[[noreturn]] void bad(const char* name, T value, const std::string& rule) {
    std::ostringstream os;
    os << "parameter " << name << " = " << value << " is out of range: " << rule;
    throw InputError(os.str());
}
}  // namespace

void validate_params(const DiffusionParams& p, const ModelConfig& cfg) {
    if (p.gen_length < 1) bad("gen_length", p.gen_length, "must be >= 1");
    if (p.gen_length > cfg.max_position) bad("gen_length", p.gen_length, "exceeds the model's max_position " + std::to_string(cfg.max_position));
    if (p.steps < 1) bad("steps", p.steps, "must be >= 1");
    if (p.steps > p.gen_length) bad("steps", p.steps, "must be <= gen_length (" + std::to_string(p.gen_length) + ")");
    if (p.gen_length % p.steps != 0)
        bad("steps", p.steps, "must divide gen_length (" + std::to_string(p.gen_length) + ") so n_u is constant");
    if (p.block_length < 1) bad("block_length", p.block_length, "must be >= 1");
    if (p.gen_length % p.block_length != 0)
        bad("block_length", p.block_length, "must divide gen_length (" + std::to_string(p.gen_length) + ")");
    const int n_u = p.gen_length / p.steps;
    if (std::isnan(p.conf_threshold) && p.block_length % n_u != 0)
        bad("block_length", p.block_length, "must be a multiple of n_u = gen_length/steps = " + std::to_string(n_u));
    if (!std::isnan(p.conf_threshold) && !std::isfinite(p.conf_threshold))
        bad("threshold", p.conf_threshold, "must be finite");
    if (!std::isnan(p.tau) && !std::isfinite(p.tau)) bad("tau", p.tau, "must be finite (or unset for the default)");
    if (!std::isnan(p.tau) && (p.tau < -1.5f || p.tau > 1.5f))
        bad("tau", p.tau, "must lie in [-1.5, 1.5] (cosines lie in [-1, 1]; > 1 makes every token salient)");
    if (!(p.temperature >= 0.f) || !std::isfinite(p.temperature)) bad("temperature", p.temperature, "must be >= 0");
    if (p.full_steps < 0) bad("full_steps", p.full_steps, "must be >= 0");
    if (p.fullq_every < 1) bad("fullq_every", p.fullq_every, "must be >= 1");
    if (p.kp < 1) bad("kp", p.kp, "must be >= 1");
    if (p.kr < 1) bad("kr", p.kr, "must be >= 1");
    if (!(p.rho >= 0.f && p.rho <= 1.f)) bad("rho", p.rho, "must lie in [0, 1]");
}

}  // namespace dyllm
