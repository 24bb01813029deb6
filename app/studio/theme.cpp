// Font and style of dyllm-studio.
#include "app/studio/theme.h"

#include "engine/io/asset_paths.h"

#include <imgui.h>

#include <filesystem>

namespace dyllm::app {

namespace {
ImFont* g_large = nullptr;
}  // namespace

ImFont* large_font() {
    return g_large ? g_large : ImGui::GetFont();
}

void load_fonts() {
    ImGuiIO& io = ImGui::GetIO();
    // DejaVu Sans from the shared asset lookup (share/dyllm-studio/fonts when installed: a link to the Debian
    // fonts-dejavu-core file), else the system's copy; ImGui's built-in font otherwise. Latin-1 plus a few symbol
    // ranges (arrows, math, block elements) for token text, and U+FFFD, which the tokenizer uses for byte tokens
    // that are not complete UTF-8.
    static const ImWchar        kRanges[]    = {0x0020, 0x00FF, 0x2000, 0x206F, 0x2190, 0x21FF, 0x2200, 0x22FF,
                                                0x2500, 0x259F, 0x25A0, 0x25FF, 0xFFFD, 0xFFFD, 0};
    const std::filesystem::path candidates[] = {find_asset(AssetKind::Fonts, "DejaVuSans.ttf"),
                                                "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
                                                "/usr/share/fonts/TTF/DejaVuSans.ttf"};
    for (const auto& path : candidates) {
        std::error_code ec;
        if (!path.empty() && std::filesystem::exists(path, ec) &&
            io.Fonts->AddFontFromFileTTF(path.c_str(), 14.0f, nullptr, kRanges)) {
            g_large = io.Fonts->AddFontFromFileTTF(path.c_str(), kLargeFontPx, nullptr, kRanges);
            return;
        }
    }
    io.Fonts->AddFontDefault();
}

void apply_style() {
    ImGui::StyleColorsDark();
    ImGuiStyle& st    = ImGui::GetStyle();
    st.WindowRounding = 0.f;
    // Square corners and no anti-aliased fills: the software rasteriser (llvmpipe under Xvfb, no-GPU machines) pays
    // per triangle, and rounded AA shapes cost ~10x the vertices of a plain rectangle (measured with --bench-frames).
    st.FrameRounding                  = 0.f;
    st.GrabRounding                   = 0.f;
    st.AntiAliasedFill                = false;
    st.WindowPadding                  = ImVec2(8, 6);
    st.FramePadding                   = ImVec2(6, 3);
    st.ItemSpacing                    = ImVec2(7, 5);
    st.WindowBorderSize               = 1.f;
    st.Colors[ImGuiCol_WindowBg]      = ImVec4(0.085f, 0.09f, 0.105f, 1.f);
    st.Colors[ImGuiCol_TitleBg]       = ImVec4(0.13f, 0.15f, 0.20f, 1.f);
    st.Colors[ImGuiCol_TitleBgActive] = ImVec4(0.16f, 0.20f, 0.29f, 1.f);
    st.Colors[ImGuiCol_Border]        = ImVec4(0.25f, 0.27f, 0.32f, 1.f);
}

}  // namespace dyllm::app
