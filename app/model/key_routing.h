// Who gets a key: the studio's single-key shortcuts (Space play/pause, Left/Right scrub, N step, R restart, 1..8 the
// bottom band's tabs) or Dear ImGui (a text field's typing, keyboard focus navigation). Keyboard navigation is a mode:
// Tab turns it on (ImGui's NavEnableKeyboard: arrows move the focus, Space/Enter activate), Escape or a mouse click
// turns it off, so the arrows scrub and Space plays everywhere else.
#pragma once

namespace dyllm::app {

enum class StudioKey { Space, Arrow, Letter };  // Letter: N, R and the digits

struct KeyContext {
    bool text_input   = false;  // a text field has the keyboard (ImGuiIO::WantTextInput)
    bool keyboard_nav = false;  // the navigation mode is on
    bool ctrl_or_alt  = false;  // a modifier held: the key is a chord, not a shortcut
};

// Whether the studio's shortcut for k fires: never while typing or with Ctrl/Alt; Space and the arrows belong to the
// navigation while it is on; N, R and the digits stay the studio's.
bool studio_takes(StudioKey k, const KeyContext& c);

// The navigation mode after this frame's input: Tab (outside a text field) turns it on; Escape (outside a text field)
// or a mouse click turns it off.
bool keyboard_nav_next(bool on, bool tab, bool escape, bool mouse_click, bool text_input);

}  // namespace dyllm::app
