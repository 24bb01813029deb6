// What a model's weights are stored as, by tensor class, and how many bytes one forward pass streams: shown in the
// studio's Summary and Time panels and carried in every run's environment ("weights", "weight_bytes").
#pragma once
#include <cstdint>
#include <string>

#include "engine/io/checkpoint.h"

namespace dyllm {

// "embd Q4_K, attn Q4_K, ffn Q4_K/Q6_K, head Q6_K": each class's storage types in order of first appearance (attn:
// q/k/v/o; ffn: gate/up/down; head: the LM head, "tied" when it is the embedding table).
std::string weight_storage_text(const ModelWeights& w);
// Bytes of every projection weight and the LM head: what a forward pass over all rows reads once (the embedding
// table is only gathered by rows, unless it is the tied head).
uint64_t weight_streamed_bytes(const ModelWeights& w);

}  // namespace dyllm
