// Which two runs the Compare panel shows, by run label (RunBegin.label) so picks survive runs dropped from the list:
// the pair the user just asked for as soon as its runs begin, a pair chosen by hand, or by default the newest
// compare-a/compare-b pair (else the last two runs).
#pragma once
#include <string>

#include "app/model/run_list.h"

namespace dyllm::app {

class ComparePick {
public:
    // A comparison was started: show its run A (once it begins) and its run B (once labelled and begun).
    void start_pair(const std::string& label_a);
    // The started comparison's run B got its label (ignored when the user chose runs by hand since).
    void pair_b_started(const std::string& label_b);
    // The started comparison will not run (A refused): back to the default choice.
    void drop_pair();
    // The user chose both runs by hand.
    void choose(const std::string& label_a, const std::string& label_b);

    const std::string& label_a() const { return a_; }
    const std::string& label_b() const { return b_; }
    bool               following_pair() const { return following_; }

private:
    std::string a_, b_;
    bool        following_ = false;  // showing a comparison started from the UI (its runs may not have begun yet)
};

struct ComparePair {
    int  a = -1, b = -1;   // indices into the RunList; -1 = none
    bool waiting = false;  // the started comparison's runs have not all begun yet (a and/or b is -1)
};

ComparePair resolve_compare(const RunList& runs, const ComparePick& pick);

}  // namespace dyllm::app
