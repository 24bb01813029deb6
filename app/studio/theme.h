// dyllm-studio's look: the font (DejaVu Sans with the ranges token text needs) and the ImGui style.
#pragma once

namespace dyllm::app {

void load_fonts();   // call after ImGui::CreateContext(), before the first frame
void apply_style();  // dark style, square corners (cheap on software rasterisers)

}  // namespace dyllm::app
