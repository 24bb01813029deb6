// The Pareto front of a set of 2-D points where both coordinates are better when higher (the Tune panel's sweeps:
// tokens/s and accuracy, or -FLOPs and agreement).
#pragma once
#include <cstddef>
#include <vector>

namespace dyllm::app {

struct ParetoInput {
    double x = 0, y = 0;  // both: higher is better
    bool   valid = true;  // false (or a NaN coordinate): neither on the front nor dominating anything
};

// front[i] is true when point i is valid and no valid point is at least as good on both axes and better on one.
// Equal points do not dominate each other, so duplicates are on the front together.
std::vector<bool> pareto_front(const std::vector<ParetoInput>& pts);

// The indices of the front's points ordered by x, then y (the order its staircase is drawn in).
std::vector<size_t> pareto_order(const std::vector<ParetoInput>& pts, const std::vector<bool>& front);

}  // namespace dyllm::app
