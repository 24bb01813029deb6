// The response decoded so far as one readable string for the Canvas panel's large text: unmasked tokens' text joined,
// each [MASK] a box, special tokens (end of text, chat markers) left out.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "app/model/run_history.h"
#include "app/model/vocab.h"

namespace dyllm::app {

// A run of at least this many masks is written as one box and a count ("□×40"), so 64 boxes do not bury the text.
constexpr int kMaskRunCollapse = 6;

// cells: one response sequence at one step. stop_pos >= 0: the sequence stopped at the end of text there, and what
// follows is not text. Without a tokenizer, ids are written "#id" separated by spaces. Invalid UTF-8 (a byte-level
// token split from its neighbours by a mask) becomes U+FFFD; control characters other than '\n' become spaces.
std::string decoded_so_far(const std::vector<CanvasCell>& cells, const Vocab& vocab, int32_t stop_pos = -1);

}  // namespace dyllm::app
