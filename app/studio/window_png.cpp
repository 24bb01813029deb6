// Window PNG export (glReadPixels of the back buffer).
#include "app/studio/window_png.h"

#include <GLFW/glfw3.h>
#include <stb_image_write.h>

#include <chrono>
#include <vector>

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
    for (size_t i = 3; i < px.size(); i += 4) px[i] = 255;  // opaque PNG whatever the framebuffer alpha holds
    stbi_flip_vertically_on_write(1);                       // GL's origin is bottom-left
    if (!stbi_write_png(path.c_str(), w, h, 4, px.data(), w * 4)) {
        *err = "cannot write " + path;
        return false;
    }
    return true;
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
