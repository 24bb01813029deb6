// Window PNG export (glReadPixels of the back buffer, written by app/model/plot_canvas.h's checked PNG writer).
#include "app/studio/window_png.h"

#include <GLFW/glfw3.h>

#include <chrono>
#include <vector>

#include "app/model/plot_canvas.h"
#include "app/studio/studio.h"

namespace dyllm::app {

bool write_window_png(GLFWwindow* win, const std::string& path, std::string* err) {
    int w = 0, h = 0;
    glfwGetFramebufferSize(win, &w, &h);
    if (w <= 0 || h <= 0) {
        *err = "window has no pixels";
        return false;
    }
    std::vector<unsigned char> px(size_t(w) * h * 4);
    glPixelStorei(GL_PACK_ALIGNMENT, 1);
    glReadBuffer(GL_BACK);
    glReadPixels(0, 0, w, h, GL_RGBA, GL_UNSIGNED_BYTE, px.data());
    for (size_t i = 3; i < px.size(); i += 4) px[i] = 255;    // opaque PNG whatever the framebuffer alpha holds
    return write_png_rgba(path, w, h, px.data(), true, err);  // flipped: GL's origin is bottom-left
}

void serve_png_request(Studio& s, GLFWwindow* win) {
    if (s.png_request.empty()) return;
    std::string err;
    if (write_window_png(win, s.png_request, &err)) {
        s.show_notice("wrote " + s.png_request);
    } else {
        s.message = "PNG export failed: " + err;
    }
    s.png_request.clear();
}

}  // namespace dyllm::app
