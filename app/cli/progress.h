// One-line diffusion progress display on a terminal (llama.cpp's `diffusion step: i/N [=====     ] p%`), redrawn
// in place with '\r'; disabled when the stream is not a terminal so logs and pipes stay clean.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

namespace dyllm::cli {

// "diffusion step: 3/8 [===========                   ] 37%" with a bar of `width` cells; i is clamped to [0, n].
std::string format_progress(int i, int n, int width = 30, const std::string& label = "diffusion step");

class ProgressLine {
public:
    // enabled = false makes every call a no-op (e.g. stderr is not a terminal, or --json output).
    ProgressLine(std::FILE* out, bool enabled) : out_(out), enabled_(enabled) {}
    ~ProgressLine() { finish(); }
    ProgressLine(const ProgressLine&)            = delete;
    ProgressLine& operator=(const ProgressLine&) = delete;

    void update(int i, int n);           // redraws the line as format_progress(i, n)
    void draw(const std::string& line);  // redraws the line with any text
    void finish();                       // ends the line with '\n' once (only if something was drawn)

private:
    std::FILE* out_;
    bool       enabled_;
    bool       drawn_    = false;
    size_t     last_len_ = 0;
};

}  // namespace dyllm::cli
