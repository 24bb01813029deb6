// Asset lookup (see asset_paths.h). DYLLM_INSTALL_DATA_REL and DYLLM_BUILD_DIR are set for this file alone by
// engine/CMakeLists.txt; DYLLM_SOURCE_DIR comes from dyllm_flags.
#include "engine/io/asset_paths.h"

#include <algorithm>
#include <cstdlib>
#include <system_error>

#ifndef DYLLM_INSTALL_DATA_REL
#define DYLLM_INSTALL_DATA_REL "../share/dyllm-studio"
#endif

namespace dyllm {

namespace fs = std::filesystem;

namespace {

const char* kind_dir(AssetKind kind) {
    switch (kind) {
        case AssetKind::Models:
            return "models";
        case AssetKind::Tasks:
            return "tasks";
        case AssetKind::Fonts:
            return "fonts";
    }
    return "";
}

fs::path executable_dir() {
    std::error_code ec;
    const fs::path  exe = fs::read_symlink("/proc/self/exe", ec);  // already absolute and free of symlinks
    return ec ? fs::path() : exe.parent_path();
}

// True when `p` is `root` or below it (both canonical; compared component by component, not as strings, so that
// /src/build2 is not "inside" /src/build).
bool is_within(const fs::path& p, const fs::path& root) {
    if (root.empty() || p.empty()) return false;
    auto [ri, pi] = std::mismatch(root.begin(), root.end(), p.begin(), p.end());
    return ri == root.end() || (std::next(ri) == root.end() && ri->empty());  // tolerate a trailing '/' on root
}

}  // namespace

std::vector<fs::path> asset_dirs(AssetKind kind) {
    const char*           sub = kind_dir(kind);
    std::vector<fs::path> dirs;
    if (kind == AssetKind::Models)
        if (const char* env = std::getenv("DYLLM_MODELS_DIR"); env && *env) dirs.emplace_back(env);
    if (const char* env = std::getenv("DYLLM_SOURCE_DIR"); env && *env) dirs.push_back(fs::path(env) / "assets" / sub);

    const fs::path exe = executable_dir();
    if (!exe.empty()) dirs.push_back((exe / DYLLM_INSTALL_DATA_REL / sub).lexically_normal());
#if defined(DYLLM_BUILD_DIR) && defined(DYLLM_SOURCE_DIR)
    std::error_code ec;
    const fs::path  build = fs::weakly_canonical(DYLLM_BUILD_DIR, ec);
    if (!ec && is_within(exe, build)) dirs.push_back(fs::path(DYLLM_SOURCE_DIR) / "assets" / sub);
#endif
    return dirs;
}

fs::path find_asset(AssetKind kind, const fs::path& rel) {
    std::error_code ec;
    for (const auto& dir : asset_dirs(kind)) {
        const fs::path p  = rel.empty() ? dir : dir / rel;
        const bool     ok = rel.empty() ? fs::is_directory(p, ec) : fs::exists(p, ec);  // exists() follows symlinks
        if (ok) return fs::weakly_canonical(p, ec);
    }
    return {};
}

}  // namespace dyllm
