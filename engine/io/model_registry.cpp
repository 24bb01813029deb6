// Built-in model names ("tiny-llada", "tiny-dream") -> directories, found by the shared asset lookup
// (engine/io/asset_paths.h: DYLLM_MODELS_DIR, the install layout beside the executable, the build tree's sources).
#include "engine/engine.h"
#include "engine/io/asset_paths.h"

namespace dyllm {

namespace {

constexpr const char* kDefaultModel = "tiny-llada";

bool is_builtin_name(const std::string& s) {
    return s == "tiny-llada" || s == "tiny-dream";
}

}  // namespace

std::filesystem::path resolve_model_path(const std::string& spec_in) {
    const std::string spec = spec_in.empty() ? kDefaultModel : spec_in;
    if (!is_builtin_name(spec)) return spec;
    const auto config = find_asset(AssetKind::Models, std::filesystem::path(spec) / "config.json");
    if (!config.empty()) return config.parent_path();
    // Not found: name the last place searched (the source tree for a build-tree binary, the share directory for an
    // installed one) so the loader's error points at where the model was expected.
    const auto dirs = asset_dirs(AssetKind::Models);
    return dirs.empty() ? std::filesystem::path(spec) : dirs.back() / spec;
}

}  // namespace dyllm
