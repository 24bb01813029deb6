// Method names and factories from the one registry list (engine/methods/method_list.def).
#include <memory>

#include "engine/methods/method.h"

namespace dyllm {

#define DYLLM_METHOD(id, name, factory) \
    std::unique_ptr<DecodingMethod> factory(const ModelConfig& cfg, const DiffusionParams& p);
#include "engine/methods/method_list.def"
#undef DYLLM_METHOD

namespace {

struct MethodEntry {
    Method      id;
    const char* name;
    std::unique_ptr<DecodingMethod> (*make)(const ModelConfig&, const DiffusionParams&);
};

constexpr MethodEntry kMethods[] = {
#define DYLLM_METHOD(id, name, factory) {Method::id, name, &factory},
#include "engine/methods/method_list.def"
#undef DYLLM_METHOD
};

}  // namespace

const char* method_name(Method m) {
    for (const auto& e : kMethods)
        if (e.id == m) return e.name;
    return "?";
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
#define DYLLM_METHOD(id, name, factory) Method::id,
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
