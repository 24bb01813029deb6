// op_name_diff(): two runs' Op stats joined by op name (and layer) (app/model/op_name_diff.h).
#include "app/model/op_name_diff.h"

#include <algorithm>
#include <map>
#include <utility>

namespace dyllm::app {

std::vector<OpNameDiff> op_name_diff(const RunHistory& a, const RunHistory& b, bool by_layer) {
    std::map<std::pair<int, int>, OpNameDiff> rows;  // (name, layer): op-name order, then layer
    auto                                      add = [&](const RunHistory& h, bool is_a) {
        for (const OpStat& s : op_stats(h, 1, h.step_count(), by_layer)) {
            OpNameDiff& d                    = rows[{int(s.name), s.layer}];
            d.label                          = s.label;
            d.name                           = s.name;
            d.layer                          = s.layer;
            (is_a ? d.count_a : d.count_b)   = s.count;
            (is_a ? d.total_a : d.total_b)   = s.total_s;
            (is_a ? d.median_a : d.median_b) = s.median_s;
        }
    };
    add(a, true);
    add(b, false);
    std::vector<OpNameDiff> out;
    for (auto& [key, d] : rows) {
        d.ratio = d.total_a > 0 ? d.total_b / d.total_a : 0.0;
        out.push_back(std::move(d));
    }
    return out;
}

}  // namespace dyllm::app
