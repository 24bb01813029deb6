// How the studio shows each method's own knobs (the param table keys on its registry line): a dedicated control of
// the Controls bar, or a generic one drawn from the param table in the bar's "knobs" popup. Free of ImGui, so the
// registry test reads the same table the studio draws from.
#pragma once
#include <span>
#include <string_view>

namespace dyllm::app {

struct KnobControl {
    std::string_view key;        // param table key (engine/params.cpp)
    std::string_view label;      // the control's label
    bool             dedicated;  // drawn by its own control on the bar (not in the knobs popup)
};

// Every knob a method's registry line names, each with its control.
std::span<const KnobControl> knob_controls();
const KnobControl*           find_knob_control(std::string_view key);

}  // namespace dyllm::app
