// The tau entry shared by the Controls bar and Compare: a text field that takes the typed tau itself (any value in
// the parameter table's range) and a slider on the log(1 - tau) axis that arrow keys step exactly.
#pragma once
#include <string>

namespace dyllm::app {

// Draws the field (input_w wide) and the slider (slider_w) on one line. Returns true when *tau changed (typed and
// Enter, dragged, or stepped). A refused text leaves *tau and puts one line naming the field and the range in *error.
// *arrows_taken is set when the arrow keys went to the slider this frame (the scrubber then leaves them alone).
bool tau_field(const char* id, float* tau, float input_w, float slider_w, std::string* error, bool* arrows_taken);

}  // namespace dyllm::app
