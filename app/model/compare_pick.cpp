// ComparePick: the Compare panel's choice of runs, resolved against the run list every frame.
#include "app/model/compare_pick.h"

namespace dyllm::app {

void ComparePick::start_pair(const std::string& label_a) {
    a_ = label_a;
    b_.clear();
    following_ = true;
}

void ComparePick::pair_b_started(const std::string& label_b) {
    if (following_) b_ = label_b;
}

void ComparePick::drop_pair() {
    if (!following_) return;
    a_.clear();
    b_.clear();
    following_ = false;
}

void ComparePick::choose(const std::string& label_a, const std::string& label_b) {
    a_         = label_a;
    b_         = label_b;
    following_ = false;
}

namespace {

// The newest compare-b whose run just before it is its compare-a; else the last two runs.
ComparePair default_pair(const RunList& runs) {
    ComparePair p;
    const int   n = int(runs.size());
    for (int i = n - 1; i >= 1; --i)
        if (runs[size_t(i)].request.tag == "compare-b" && runs[size_t(i - 1)].request.tag == "compare-a") {
            p.a = i - 1;
            p.b = i;
            return p;
        }
    if (n >= 2) {
        p.a = n - 2;
        p.b = n - 1;
    }
    return p;
}

}  // namespace

ComparePair resolve_compare(const RunList& runs, const ComparePick& pick) {
    const int ia = pick.label_a().empty() ? -1 : runs.index_of(pick.label_a());
    const int ib = pick.label_b().empty() ? -1 : runs.index_of(pick.label_b());
    if (pick.following_pair()) {
        // Never fall back to older runs while the requested pair is on its way: that hid the new pair before.
        ComparePair p;
        p.a       = ia;
        p.b       = ib;
        p.waiting = ia < 0 || ib < 0;
        return p;
    }
    if (ia >= 0 && ib >= 0) return ComparePair{ia, ib, false};
    return default_pair(runs);  // nothing chosen, or a chosen run was dropped from the list
}

}  // namespace dyllm::app
