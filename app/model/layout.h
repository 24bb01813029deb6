// Fixed top-level layout of dyllm-studio: panel rectangles computed from the window size.
// Pure math without ImGui, so the screenshot test can find where each panel must be drawn.
#pragma once

namespace dyllm::app {

struct Rect {
    float x = 0, y = 0, w = 0, h = 0;
    float right() const { return x + w; }
    float bottom() const { return y + h; }
    bool  contains(float px, float py) const { return px >= x && px < x + w && py >= y && py < y + h; }
};

struct StudioLayout {
    Rect controls;  // two rows of knobs and transport buttons (plus the red message bar when there is an error)
    Rect prompt;    // editable prompt and task-suite examples
    Rect canvas;    // response tokens grid
    Rect summary;   // tok/s, speed-up, rows recomputed, FLOPs, cache memory, accuracy
    Rect cosine;    // per-layer cosine histograms (small multiples)
    Rect salient;   // salient map (layers x positions / steps x positions)
    Rect lsal;      // L_sal per layer (bars now, lines over steps)
    Rect time;      // stacked per-step op-class bars, op timeline, top ops
    Rect scrubber;  // history scrubber and the Explain/Compare/Export buttons
};

// Heights in pixels of the fixed bars; the rest is split by fractions chosen by looking at 1600x1000 screenshots.
constexpr float kControlsHeight   = 64.f;
constexpr float kMessageBarHeight = 26.f;
constexpr float kScrubberHeight   = 40.f;

// bottom_frac: the bottom (Time/Op stats/Tune) band's share of the body height, clamped to [kBottomMin, kBottomMax]
// (the splitter above it sets it).
constexpr float kBottomDefault = 0.28f, kBottomMin = 0.15f, kBottomMax = 0.7f;
// ... but never below kBottomMinPx (tabs, legend and a readable plot; at 1280x720 28% left 170 px) or, in a small
// window (or a large UI scale), kBottomMinShare of the body, so the canvas band keeps its share too.
constexpr float kBottomMinPx = 230.f, kBottomMinShare = 0.38f;
// The salient map sits above the L_sal panel; in a band shorter than this (1280x720: 193 px, where an 8-layer model
// got 5 px per map row and the L_sal plots about 35 px) the two stand side by side, each the band's full height.
constexpr float kSaliencyStackMinPx     = 300.f;
constexpr float kSalientShareSideBySide = 0.6f;  // of the right column's width: the map needs it more than the bars
StudioLayout    compute_layout(float width, float height, bool message_bar, float bottom_frac = kBottomDefault);

}  // namespace dyllm::app
