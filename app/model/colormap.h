// Colormaps for the studio plots (pure functions, no ImGui): viridis for ordered quantities (unmask step, counts) and
// a diverging blue-white-red map for signed differences. RGB components in [0, 1].
#pragma once
#include <array>

namespace dyllm::app {

using Rgb = std::array<float, 3>;

// Viridis, t in [0, 1] (clamped). Degree-6 polynomial fit of matplotlib's viridis table (Matt Zucconi's public fit);
// within ~1% of the table, enough for a display colormap.
Rgb viridis(float t);
// Viridis restricted to [0.22, 1]: the darkest purple disappears on the studio's dark background.
Rgb viridis_on_dark(float t);
// Blue (t = -1) - light grey (0) - red (+1), t clamped to [-1, 1].
Rgb diverging(float t);
// 0xAABBGGRR as ImGui's IM_COL32 packs it, alpha in [0, 1].
unsigned pack_rgba(const Rgb& c, float alpha = 1.f);

}  // namespace dyllm::app
