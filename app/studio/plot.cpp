// ImDrawList plotting helpers shared by the studio panels.
#include "app/studio/plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "instrumentation/events.h"

namespace dyllm::app {

ImU32 text_on(ImU32 bg) {
    const float r = float((bg >> 0) & 255) / 255.f, g = float((bg >> 8) & 255) / 255.f,
                b = float((bg >> 16) & 255) / 255.f;
    // Rec. 709 luma; 0.55 chosen by eye on viridis cells.
    return 0.2126f * r + 0.7152f * g + 0.0722f * b > 0.55f ? IM_COL32(10, 10, 10, 255) : IM_COL32(245, 245, 245, 255);
}

ImU32 op_class_color(int c) {
    // One fixed hue per OpClass (events.h order), so the stacked bars, timeline and table agree.
    static const ImU32 kCols[] = {
        IM_COL32(150, 150, 150, 255),  // embed
        IM_COL32(120, 200, 200, 255),  // norm
        IM_COL32(80, 140, 230, 255),   // qkv
        IM_COL32(160, 120, 230, 255),  // rope
        IM_COL32(230, 90, 90, 255),    // attn_exact
        IM_COL32(240, 150, 80, 255),   // attn_approx
        IM_COL32(110, 190, 110, 255),  // o_proj
        IM_COL32(240, 210, 70, 255),   // ffn
        IM_COL32(200, 110, 180, 255),  // lm_head
        IM_COL32(90, 220, 160, 255),   // sampling
        IM_COL32(170, 170, 100, 255),  // gather_scatter
        IM_COL32(230, 120, 160, 255),  // cosine
        IM_COL32(175, 125, 85, 255),   // residual
        IM_COL32(110, 110, 130, 255),  // other
    };
    static_assert(sizeof(kCols) / sizeof(kCols[0]) == size_t(OpClass::Count), "one colour per op class");
    return c >= 0 && c < int(OpClass::Count) ? kCols[c] : IM_COL32(128, 128, 128, 255);
}

PlotArea plot_area(const char* id, float w, float h) {
    PlotArea a;
    w    = std::max(w, 4.f);
    h    = std::max(h, 4.f);
    a.p0 = ImGui::GetCursorScreenPos();
    a.p1 = ImVec2(a.p0.x + w, a.p0.y + h);
    ImGui::InvisibleButton(id, ImVec2(w, h));
    a.hovered = ImGui::IsItemHovered();
    a.clicked = ImGui::IsItemClicked(ImGuiMouseButton_Left);
    a.active  = ImGui::IsItemActive();
    a.mouse   = ImGui::GetIO().MousePos;
    return a;
}

void colorbar(ImDrawList* dl, ImVec2 p0, ImVec2 size, Rgb (*map)(float), const char* lo, const char* hi) {
    const int n = 32;
    for (int i = 0; i < n; ++i) {
        const float x0 = p0.x + size.x * float(i) / n, x1 = p0.x + size.x * float(i + 1) / n;
        dl->AddRectFilled(ImVec2(x0, p0.y), ImVec2(x1 + 0.5f, p0.y + size.y), to_col(map((i + 0.5f) / n)));
    }
    const ImVec2 lo_sz = ImGui::CalcTextSize(lo);
    dl->AddText(ImVec2(p0.x - lo_sz.x - 4, p0.y + (size.y - lo_sz.y) * 0.5f), IM_COL32(220, 220, 220, 255), lo);
    dl->AddText(ImVec2(p0.x + size.x + 4, p0.y + (size.y - lo_sz.y) * 0.5f), IM_COL32(220, 220, 220, 255), hi);
}

void empty_note(const PlotArea& a, const char* text) {
    const ImVec2 sz = ImGui::CalcTextSize(text);
    ImGui::GetWindowDrawList()->AddText(ImVec2(a.p0.x + (a.w() - sz.x) * 0.5f, a.p0.y + (a.h() - sz.y) * 0.5f),
                                        IM_COL32(160, 160, 160, 255), text);
}

void fit_text(ImDrawList* dl, ImVec2 p, float w, ImU32 col, std::initializer_list<const char*> texts) {
    const char* pick = "";
    for (const char* t : texts) {
        pick = t;
        if (ImGui::CalcTextSize(t).x <= w) break;
    }
    dl->AddText(p, col, pick);
}

std::string fmt_si(double v, const char* unit) {
    const char* prefix[] = {"", " k", " M", " G", " T", " P"};
    int         i        = 0;
    double      a        = std::fabs(v);
    while (a >= 1000.0 && i < 5) {
        a /= 1000.0;
        v /= 1000.0;
        ++i;
    }
    char buf[48];
    std::snprintf(buf, sizeof buf, a >= 100 ? "%.0f%s%s" : a >= 10 ? "%.1f%s%s" : "%.2f%s%s", v, prefix[i], unit);
    return buf;
}

std::string fmt_ms(double seconds) {
    char         buf[32];
    const double ms = seconds * 1e3;
    // Below a millisecond in microseconds: a sub-microsecond op printed "0.000 ms".
    if (ms < 1 && ms > 0)
        std::snprintf(buf, sizeof buf,
                      ms >= 0.1     ? "%.0f \xC2\xB5s"
                      : ms >= 0.001 ? "%.1f \xC2\xB5s"
                                    : "%.3f \xC2\xB5s",
                      ms * 1e3);
    else
        std::snprintf(buf, sizeof buf, ms >= 100 ? "%.0f ms" : ms >= 1 ? "%.2f ms" : "%.3f ms", ms);
    return buf;
}

}  // namespace dyllm::app
