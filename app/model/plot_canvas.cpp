// RGBA canvas of the software plotter: distance-based anti-aliased lines and markers, stb_easy_font text, PNG output.
#include "app/model/plot_canvas.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/errors.h"
#include "engine/io/atomic_file.h"

// stb's implementations compiled here, private to this file (STB_*_STATIC): no link dependency and no clash with the
// studio's libstb. They are third-party code: their warnings are not ours.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wconversion"
#define STB_IMAGE_WRITE_STATIC
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image_write.h>
#include <stb/stb_easy_font.h>
#pragma GCC diagnostic pop

namespace dyllm::app {

Canvas::Canvas(int width, int height, Rgba bg) : w_(std::max(1, width)), h_(std::max(1, height)) {
    px_.resize(size_t(w_) * size_t(h_) * 4);
    for (size_t i = 0; i < px_.size(); i += 4) {
        px_[i]     = bg.r;
        px_[i + 1] = bg.g;
        px_[i + 2] = bg.b;
        px_[i + 3] = bg.a;
    }
}

Rgba Canvas::pixel(int x, int y) const {
    if (x < 0 || y < 0 || x >= w_ || y >= h_) return {0, 0, 0, 0};
    const uint8_t* p = &px_[(size_t(y) * size_t(w_) + size_t(x)) * 4];
    return {p[0], p[1], p[2], p[3]};
}

void Canvas::blend(int x, int y, Rgba c, double coverage) {
    if (x < 0 || y < 0 || x >= w_ || y >= h_ || !(coverage > 0)) return;
    const double a = std::min(1.0, coverage) * c.a / 255.0;
    uint8_t*     p = &px_[(size_t(y) * size_t(w_) + size_t(x)) * 4];
    p[0]           = uint8_t(std::lround(p[0] + (c.r - p[0]) * a));
    p[1]           = uint8_t(std::lround(p[1] + (c.g - p[1]) * a));
    p[2]           = uint8_t(std::lround(p[2] + (c.b - p[2]) * a));
    p[3]           = uint8_t(std::lround(p[3] + (255 - p[3]) * a));
}

void Canvas::fill_rect(double x0, double y0, double x1, double y1, Rgba c) {
    if (x1 < x0) std::swap(x0, x1);
    if (y1 < y0) std::swap(y0, y1);
    // Pixel (x, y) covers [x, x+1) x [y, y+1): partial edge pixels get their covered share.
    for (int y = int(std::floor(y0)); y < int(std::ceil(y1)); ++y)
        for (int x = int(std::floor(x0)); x < int(std::ceil(x1)); ++x) {
            const double cx = std::min(x1, x + 1.0) - std::max(x0, double(x));
            const double cy = std::min(y1, y + 1.0) - std::max(y0, double(y));
            blend(x, y, c, cx * cy);
        }
}

void Canvas::rect_outline(double x0, double y0, double x1, double y1, Rgba c, double width) {
    fill_rect(x0, y0, x1, y0 + width, c);
    fill_rect(x0, y1 - width, x1, y1, c);
    fill_rect(x0, y0, x0 + width, y1, c);
    fill_rect(x1 - width, y0, x1, y1, c);
}

void Canvas::line(double x0, double y0, double x1, double y1, Rgba c, double width, double dash) {
    if (dash > 0) {
        const double len = std::hypot(x1 - x0, y1 - y0);
        for (double s = 0; s < len; s += 2 * dash) {
            const double e = std::min(len, s + dash);
            line(x0 + (x1 - x0) * s / len, y0 + (y1 - y0) * s / len, x0 + (x1 - x0) * e / len, y0 + (y1 - y0) * e / len,
                 c, width, 0);
        }
        return;
    }
    const double r = width / 2, dx = x1 - x0, dy = y1 - y0, len2 = dx * dx + dy * dy;
    const int    xa = int(std::floor(std::min(x0, x1) - r - 1)), xb = int(std::ceil(std::max(x0, x1) + r + 1));
    const int    ya = int(std::floor(std::min(y0, y1) - r - 1)), yb = int(std::ceil(std::max(y0, y1) + r + 1));
    for (int y = std::max(0, ya); y <= std::min(h_ - 1, yb); ++y)
        for (int x = std::max(0, xa); x <= std::min(w_ - 1, xb); ++x) {
            // Distance from the pixel centre to the segment; coverage falls off over one pixel at the edge.
            const double px = x + 0.5 - x0, py = y + 0.5 - y0;
            const double t = len2 > 0 ? std::clamp((px * dx + py * dy) / len2, 0.0, 1.0) : 0.0;
            const double d = std::hypot(px - t * dx, py - t * dy);
            blend(x, y, c, std::clamp(r + 0.5 - d, 0.0, 1.0));
        }
}

void Canvas::marker(double x, double y, MarkerShape shape, double size, Rgba c) {
    const double r = size / 2;
    for (int py = int(std::floor(y - r - 1)); py <= int(std::ceil(y + r + 1)); ++py)
        for (int px = int(std::floor(x - r - 1)); px <= int(std::ceil(x + r + 1)); ++px) {
            const double dx = px + 0.5 - x, dy = py + 0.5 - y;
            double       d = 0;  // signed distance-like measure: <= 0 inside the shape's edge
            switch (shape) {
                case MarkerShape::Circle:
                    d = std::hypot(dx, dy) - r;
                    break;
                case MarkerShape::Square:
                    d = std::max(std::abs(dx), std::abs(dy)) - r * 0.85;
                    break;
                case MarkerShape::Diamond:
                    d = (std::abs(dx) + std::abs(dy)) / std::sqrt(2.0) - r * 0.8;
                    break;
                case MarkerShape::Triangle:
                    // Upward triangle: below the base or outside the two slanted sides.
                    d = std::max(dy - r * 0.7, (std::abs(dx) * 2 - (r * 0.7 - dy)) / std::sqrt(5.0) - r * 0.15);
                    break;
            }
            blend(px, py, c, std::clamp(0.5 - d, 0.0, 1.0));
        }
}

void Canvas::text(double x, double y, const std::string& s, Rgba c, int scale, bool vertical) {
    if (s.empty()) return;
    // stb_easy_font: 4 vertices of 16 bytes = 64 bytes per quad, at most 12 quads per glyph in its tables.
    std::vector<char> buf(s.size() * 64 * 12 + 64);
    std::vector<char> text(s.begin(), s.end());
    text.push_back('\0');
    unsigned char col[4] = {c.r, c.g, c.b, c.a};
    const int     quads  = stb_easy_font_print(0, 0, text.data(), col, buf.data(), int(buf.size()));
    const float*  v      = reinterpret_cast<const float*>(buf.data());
    const int     stride = 4;  // floats per vertex: x, y, z, packed colour
    for (int q = 0; q < quads; ++q) {
        const float* a   = v + size_t(q) * 4 * stride;
        double       qx0 = a[0], qy0 = a[1], qx1 = a[0], qy1 = a[1];
        for (int k = 1; k < 4; ++k) {
            qx0 = std::min(qx0, double(a[k * stride]));
            qx1 = std::max(qx1, double(a[k * stride]));
            qy0 = std::min(qy0, double(a[k * stride + 1]));
            qy1 = std::max(qy1, double(a[k * stride + 1]));
        }
        if (!vertical) {
            fill_rect(x + qx0 * scale, y + qy0 * scale, x + qx1 * scale, y + qy1 * scale, c);
        } else {
            // Rotated 90 degrees counter-clockwise: the text's x runs up from y, its y runs right from x.
            fill_rect(x + qy0 * scale, y - qx1 * scale, x + qy1 * scale, y - qx0 * scale, c);
        }
    }
}

int Canvas::text_width(const std::string& s, int scale) {
    std::vector<char> text(s.begin(), s.end());
    text.push_back('\0');
    return stb_easy_font_width(text.data()) * scale;
}

// stb_easy_font draws capitals 7 units tall below y and descenders 2 units lower; 10 units leaves a little room.
int Canvas::text_height(int scale) {
    return 10 * scale;
}

bool Canvas::write_png(const std::string& path, std::string* err) const {
    return write_png_rgba(path, w_, h_, px_.data(), false, err);
}

bool write_png_rgba(const std::string& path, int w, int h, const uint8_t* rgba, bool flip, std::string* err) {
    // Encoded in memory, then written through the atomic writer: stbi_write_png ignores fwrite's result, so a full
    // disk would leave an empty PNG behind a success.
    std::string png;
    stbi_flip_vertically_on_write(flip ? 1 : 0);
    const int ok = stbi_write_png_to_func(
        [](void* ctx, void* data, int n) {
            static_cast<std::string*>(ctx)->append(static_cast<const char*>(data), size_t(n));
        },
        &png, w, h, 4, rgba, w * 4);
    stbi_flip_vertically_on_write(0);
    try {
        if (!ok) throw LoadError(path + ": PNG encoding failed");
        write_file_atomic(path, png);
    } catch (const LoadError& e) {
        if (err) *err = e.what();
        return false;
    }
    return true;
}

}  // namespace dyllm::app
