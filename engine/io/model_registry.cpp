// Built-in model names ("tiny-llada", "tiny-dream") -> directories, searched relative to the executable, the
// DYLLM_MODELS_DIR environment variable and the source tree this binary was built from.
#include <cstdlib>
#include <system_error>
#include <unistd.h>

#include "engine/engine.h"

namespace dyllm {

namespace {

constexpr const char* kDefaultModel = "tiny-llada";

bool is_builtin_name(const std::string& s) { return s == "tiny-llada" || s == "tiny-dream"; }

std::filesystem::path executable_dir() {
    std::error_code ec;
    auto            exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    return ec ? std::filesystem::path() : exe.parent_path();
}

}  // namespace

std::filesystem::path resolve_model_path(const std::string& spec_in) {
    const std::string spec = spec_in.empty() ? kDefaultModel : spec_in;
    if (!is_builtin_name(spec)) return spec;

    std::vector<std::filesystem::path> roots;
    if (const char* env = std::getenv("DYLLM_MODELS_DIR")) roots.emplace_back(env);
    const auto exe = executable_dir();
    if (!exe.empty()) {
        roots.push_back(exe / "models");                          // installed beside the binary
        roots.push_back(exe / ".." / "share" / "dyllm" / "models");  // make install layout
        for (auto p = exe; !p.empty() && p != p.root_path(); p = p.parent_path())
            roots.push_back(p / "assets" / "models");             // build tree inside the source tree
    }
#ifdef DYLLM_SOURCE_DIR
    roots.push_back(std::filesystem::path(DYLLM_SOURCE_DIR) / "assets" / "models");
#endif
    std::error_code ec;
    for (const auto& r : roots) {
        const auto dir = r / spec;
        if (std::filesystem::exists(dir / "config.json", ec)) return std::filesystem::weakly_canonical(dir, ec);
    }
    // Not found: return the conventional source-tree location so the loader's error names a real path.
#ifdef DYLLM_SOURCE_DIR
    return std::filesystem::path(DYLLM_SOURCE_DIR) / "assets" / "models" / spec;
#else
    return spec;
#endif
}

}  // namespace dyllm
