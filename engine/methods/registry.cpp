// Method names and factories from the one registry list (engine/methods/method_list.def).
#include <memory>
#include <string_view>
#include <vector>

#include "engine/methods/method.h"

namespace dyllm {

#define DYLLM_METHOD(id, name, factory, step_kinds, knobs) \
    std::unique_ptr<DecodingMethod> factory(const ModelConfig& cfg, const DiffusionParams& p);
#include "engine/methods/method_list.def"
#undef DYLLM_METHOD

namespace {

struct MethodEntry {
    Method      id;
    const char* name;
    std::unique_ptr<DecodingMethod> (*make)(const ModelConfig&, const DiffusionParams&);
    std::string_view step_kinds, knobs;  // space-separated
};

// The words of a space-separated list.
std::vector<std::string_view> words(std::string_view s) {
    std::vector<std::string_view> out;
    while (!s.empty()) {
        const size_t b = s.find_first_not_of(' ');
        if (b == std::string_view::npos) break;
        s.remove_prefix(b);
        const size_t e = s.find(' ');
        out.push_back(s.substr(0, e));
        s.remove_prefix(e == std::string_view::npos ? s.size() : e);
    }
    return out;
}

const MethodEntry* entry(Method m);

constexpr MethodEntry kMethods[] = {
#define DYLLM_METHOD(id, name, factory, step_kinds, knobs) {Method::id, name, &factory, step_kinds, knobs},
#include "engine/methods/method_list.def"
#undef DYLLM_METHOD
};

const MethodEntry* entry(Method m) {
    for (const auto& e : kMethods)
        if (e.id == m) return &e;
    return nullptr;
}

}  // namespace

const char* method_name(Method m) {
    const MethodEntry* e = entry(m);
    return e ? e->name : "?";
}

std::vector<StepKind> method_step_kinds(Method m) {
    std::vector<StepKind> out;
    if (const MethodEntry* e = entry(m))
        for (std::string_view w : words(e->step_kinds)) out.push_back(parse_step_kind(w));
    return out;
}

std::vector<std::string_view> method_knobs(Method m) {
    const MethodEntry* e = entry(m);
    return e ? words(e->knobs) : std::vector<std::string_view>{};
}

std::optional<Method> parse_method(std::string_view s) {
    for (const auto& e : kMethods)
        if (s == e.name) return e.id;
    return std::nullopt;
}

std::string method_names(std::string_view sep) {
    std::string out;
    for (const auto& e : kMethods) {
        if (!out.empty()) out += sep;
        out += e.name;
    }
    return out;
}

std::span<const Method> all_methods() {
    static constexpr Method kAll[] = {
#define DYLLM_METHOD(id, name, factory, step_kinds, knobs) Method::id,
#include "engine/methods/method_list.def"
#undef DYLLM_METHOD
    };
    return kAll;
}

std::unique_ptr<DecodingMethod> make_method(Method m, const ModelConfig& cfg, const DiffusionParams& p) {
    for (const auto& e : kMethods)
        if (e.id == m) return e.make(cfg, p);
    return nullptr;
}

}  // namespace dyllm
