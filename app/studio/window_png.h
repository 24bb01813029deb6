// PNG of the window: read the back buffer after rendering (before the swap) and write it with stb_image_write.
#pragma once
#include <string>

struct GLFWwindow;

namespace dyllm::app {

struct Studio;

// Writes the rendered back buffer as an opaque PNG; false with *err set when there are no pixels or the write fails.
bool write_window_png(GLFWwindow* win, const std::string& path, std::string* err);

// Serves the Export panel's "PNG of the window" request (Studio::png_request), if any, with a notice or a message.
void serve_png_request(Studio& s, GLFWwindow* win);

}  // namespace dyllm::app
