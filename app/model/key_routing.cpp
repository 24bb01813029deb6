// The studio's key routing between its shortcuts and ImGui (app/model/key_routing.h).
#include "app/model/key_routing.h"

namespace dyllm::app {

bool studio_takes(StudioKey k, const KeyContext& c) {
    if (c.text_input || c.ctrl_or_alt) return false;
    if (c.keyboard_nav && (k == StudioKey::Space || k == StudioKey::Arrow)) return false;
    return true;
}

bool keyboard_nav_next(bool on, bool tab, bool escape, bool mouse_click, bool text_input) {
    if (mouse_click) return false;
    if (text_input) return on;  // Tab and Escape belong to the field
    if (on && escape) return false;
    return on || tab;
}

}  // namespace dyllm::app
