// Compare's op times per op name (q, gate, up, down, ...) or per op name and layer: the two runs' Op stats joined by
// row (app/model/op_stats.h), each run's total, count and median, and the ratio B/A.
#pragma once
#include <string>
#include <vector>

#include "app/model/op_stats.h"

namespace dyllm::app {

struct OpNameDiff {
    std::string label;  // "gate" or "gate L3" (as OpStat::label)
    OpName      name    = OpName::Other;
    int         layer   = -2;
    int         count_a = 0, count_b = 0;
    double      total_a = 0, total_b = 0;    // seconds over each run's steps
    double      median_a = 0, median_b = 0;  // seconds per sample
    double      ratio = 0;                   // total_b / total_a; 0 when A has none
};

// Rows of either run in op-name order (then layer), each joined with the same row of the other (0 where it has none).
std::vector<OpNameDiff> op_name_diff(const RunHistory& a, const RunHistory& b, bool by_layer);

}  // namespace dyllm::app
