// The software plotter's RGBA canvas: anti-aliased lines, filled rectangles, markers and text drawn with
// stb_easy_font's quads (ASCII, scaled), then written as a PNG with stb_image_write.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace dyllm::app {

struct Rgba {
    uint8_t r = 0, g = 0, b = 0, a = 255;
};

enum class MarkerShape { Circle, Square, Diamond, Triangle };

class Canvas {
public:
    Canvas(int width, int height, Rgba background = {255, 255, 255, 255});
    int                         width() const { return w_; }
    int                         height() const { return h_; }
    const std::vector<uint8_t>& pixels() const { return px_; }  // row-major RGBA, top row first
    Rgba                        pixel(int x, int y) const;      // {0,0,0,0} outside

    // Blends c over pixel (x, y) with coverage in [0, 1]; outside the canvas: nothing.
    void blend(int x, int y, Rgba c, double coverage = 1.0);
    void fill_rect(double x0, double y0, double x1, double y1, Rgba c);
    void rect_outline(double x0, double y0, double x1, double y1, Rgba c, double width = 1);
    // A segment `width` pixels wide with round caps, anti-aliased by the distance to the segment; dash > 0 draws
    // dash-pixel dashes with dash-pixel gaps.
    void line(double x0, double y0, double x1, double y1, Rgba c, double width = 2, double dash = 0);
    void marker(double x, double y, MarkerShape shape, double size, Rgba c);

    // Text in stb_easy_font's bitmap font at an integer `scale` (1 = about 7 px tall capitals). (x, y) is the
    // top-left corner; vertical text runs bottom to top with (x, y) its bottom-left corner.
    void       text(double x, double y, const std::string& s, Rgba c, int scale = 2, bool vertical = false);
    static int text_width(const std::string& s, int scale = 2);
    static int text_height(int scale = 2);

    // Writes the canvas as an 8-bit RGBA PNG (write_png_rgba); false (and *err set) when the file cannot be written.
    bool write_png(const std::string& path, std::string* err) const;

private:
    int                  w_, h_;
    std::vector<uint8_t> px_;
};

// The one PNG writer of the report and the studio: w x h RGBA pixels (rows top to bottom, or bottom to top with
// `flip`), encoded in memory and written through engine/io/atomic_file.h. False with *err ("FILE: reason", one line)
// when encoding or any write fails; an existing file is then left as it was.
bool write_png_rgba(const std::string& path, int w, int h, const uint8_t* rgba, bool flip, std::string* err);

}  // namespace dyllm::app
