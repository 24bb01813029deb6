// Where the shipped data files are found (built-in models, task suites, fonts): ONE lookup for every kind, used by
// the model registry, the task-suite loader and the studio's font loader.
#pragma once

#include <filesystem>
#include <vector>

namespace dyllm {

// Sub-directory names are the same under assets/ in the source tree and under share/dyllm-studio/ when installed.
enum class AssetKind { Models, Tasks, Fonts };

// Directories that may hold assets of `kind`, in search order:
//   1. explicit overrides from the environment: $DYLLM_MODELS_DIR (models only), then $DYLLM_SOURCE_DIR/assets/<kind>;
//   2. the install layout relative to the running executable: <exe dir>/../share/dyllm-studio/<kind>
//      (cmake --install and the .deb; the real relative path comes from CMAKE_INSTALL_BINDIR/DATADIR);
//   3. the source tree's assets/<kind>, only while the executable lives inside the build tree it was built in, so an
//      installed binary never reads the source tree behind its own share directory's back.
std::vector<std::filesystem::path> asset_dirs(AssetKind kind);

// The first dir / rel (from asset_dirs(kind)) that exists, canonical; an empty path when none does. An empty rel
// finds the first existing directory of that kind.
std::filesystem::path find_asset(AssetKind kind, const std::filesystem::path& rel = {});

}  // namespace dyllm
