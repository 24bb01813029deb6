// The shared asset lookup (engine/io/asset_paths.h): search order (environment overrides, the install layout beside
// the executable, the source tree only for a build-tree binary) and find_asset's existence checks.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/io/asset_paths.h"

using namespace dyllm;
namespace fs = std::filesystem;

namespace {

// Sets or unsets one environment variable for the scope, restoring the old value after.
struct ScopedEnv {
    std::string                name;
    std::optional<std::string> old;
    ScopedEnv(const char* n, const char* value) : name(n) {
        if (const char* v = std::getenv(n)) old = v;
        if (value)
            setenv(n, value, 1);
        else
            unsetenv(n);
    }
    ~ScopedEnv() {
        if (old)
            setenv(name.c_str(), old->c_str(), 1);
        else
            unsetenv(name.c_str());
    }
};

fs::path exe_dir() {
    return fs::read_symlink("/proc/self/exe").parent_path();
}
fs::path source_assets() {
    return fs::path(DYLLM_SOURCE_DIR) / "assets";
}

}  // namespace

TEST_CASE("asset_dirs: install layout first, then the source tree for this build-tree binary") {
    ScopedEnv                   models("DYLLM_MODELS_DIR", nullptr), source("DYLLM_SOURCE_DIR", nullptr);
    const std::vector<fs::path> dirs = asset_dirs(AssetKind::Models);
    REQUIRE(dirs.size() == 2);
    CHECK(dirs[0] == (exe_dir() / ".." / "share" / "dyllm-studio" / "models").lexically_normal());
    CHECK(dirs[1] == source_assets() / "models");
    const std::vector<fs::path> fonts = asset_dirs(AssetKind::Fonts);
    REQUIRE(fonts.size() == 2);
    CHECK(fonts[0].filename() == "fonts");
    CHECK(fonts[1] == source_assets() / "fonts");
}

TEST_CASE("asset_dirs: environment overrides come first, DYLLM_MODELS_DIR for models only") {
    ScopedEnv  models("DYLLM_MODELS_DIR", "/nonexistent/models"), source("DYLLM_SOURCE_DIR", "/nonexistent/src");
    const auto m = asset_dirs(AssetKind::Models);
    REQUIRE(m.size() == 4);
    CHECK(m[0] == fs::path("/nonexistent/models"));
    CHECK(m[1] == fs::path("/nonexistent/src/assets/models"));
    const auto t = asset_dirs(AssetKind::Tasks);
    REQUIRE(t.size() == 3);
    CHECK(t[0] == fs::path("/nonexistent/src/assets/tasks"));
    CHECK(t[2] == source_assets() / "tasks");
}

TEST_CASE("find_asset: first existing match, canonical; empty when nothing matches") {
    ScopedEnv      models("DYLLM_MODELS_DIR", "/nonexistent/models"), source("DYLLM_SOURCE_DIR", nullptr);
    const fs::path cfg = source_assets() / "models" / "tiny-llada" / "config.json";
    REQUIRE(fs::exists(cfg));  // the built-in models are tracked in assets/models
    CHECK(find_asset(AssetKind::Models, "tiny-llada/config.json") == fs::canonical(cfg));
    CHECK(resolve_model_path("tiny-llada") == fs::canonical(cfg.parent_path()));
    CHECK(resolve_model_path("") == fs::canonical(cfg.parent_path()));
    CHECK(find_asset(AssetKind::Tasks) == fs::canonical(source_assets() / "tasks"));  // empty rel: the directory
    CHECK(find_asset(AssetKind::Fonts, "no-such-font.ttf").empty());
    CHECK(find_asset(AssetKind::Models, "no-such-model/config.json").empty());
    // A path spec is returned unchanged, never looked up.
    CHECK(resolve_model_path("some/dir") == fs::path("some/dir"));
}

TEST_CASE("find_asset: DYLLM_MODELS_DIR wins over the source tree") {
    const fs::path dir = fs::temp_directory_path() / "dyllm_test_asset_paths" / "tiny-llada";
    fs::create_directories(dir);
    std::ofstream(dir / "config.json") << "{}";
    ScopedEnv models("DYLLM_MODELS_DIR", dir.parent_path().c_str()), source("DYLLM_SOURCE_DIR", nullptr);
    CHECK(resolve_model_path("tiny-llada") == fs::canonical(dir));
    fs::remove_all(dir.parent_path());
}
