// A step's end-of-step counters as JSON fields, shared by the JSONL and Chrome trace exporters (each adds its own
// time fields).
#pragma once
#include <nlohmann/json.hpp>

#include "instrumentation/events.h"
#include "instrumentation/json_number.h"

namespace dyllm {

inline void add_step_end_counters(nlohmann::ordered_json& j, const StepEnd& e) {
    j["wall_ns"]          = e.wall_ns;
    j["tokens_committed"] = e.tokens_committed;
    j["masked_left"]      = e.masked_left;
    j["flops"]            = json_number(e.flops);
    j["dense_flops"]      = json_number(e.dense_flops);
    j["ffn_rows"]         = e.ffn_rows;
    j["kv_rows"]          = e.kv_rows;
    j["attn_exact_rows"]  = e.attn_exact_rows;
    j["attn_approx_rows"] = e.attn_approx_rows;
    j["query_rows"]       = e.query_rows;
    j["dense_rows"]       = e.dense_rows;
}

}  // namespace dyllm
