// dyllm-studio's look: the font (DejaVu Sans with the ranges token text needs) and the ImGui style.
#pragma once

struct ImFont;

namespace dyllm::app {

// Pixel size of the large font (the Canvas's decoded text); drawn at 0.5-1x of it, so ui scales up to 1.8 stay sharp.
constexpr float kLargeFontPx = 40.f;

void    load_fonts();   // call after ImGui::CreateContext(), before the first frame
ImFont* large_font();   // the decoded text's font; the default font when no TTF was found
void    apply_style();  // dark style, square corners (cheap on software rasterisers)

}  // namespace dyllm::app
