// The studio's runs, rebuilt from the event stream alone: each RunBegin opens a RunEntry, and its label (which the
// worker sets with Session::set_label) finds what the UI knew when it asked for the run (tag, prompt, expected
// answer). Everything else a run shows (steps, decoded texts, cache bytes, cancelled) comes from its own events.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "app/model/run_history.h"

namespace dyllm::app {

// What the UI attaches to a run when it asks for it.
struct RunRequest {
    std::string tag;     // "", "compare-a", "compare-b"
    std::string prompt;  // the user message it runs
    std::string answer;  // expected answer when the prompt came from the task suite ("" otherwise)
};

// One run as the UI keeps it.
struct RunEntry {
    RunHistory  history;
    uint64_t    serial = 0;  // the request's number (#N in the run lists)
    std::string label;       // RunBegin.label
    RunRequest  request;     // empty for a run nobody asked for under this label
};

// What a run picker adds to a run's label so two runs of different models or prompts read apart: the model and the
// start of the prompt, "tiny-llada, \"Q: add 477+298\"" (line breaks as spaces, cut on a UTF-8 boundary with "...").
std::string run_context(const RunEntry& e, size_t max_prompt_bytes = 28);

class RunList {
public:
    explicit RunList(size_t keep = 12) : keep_(keep) {}

    // Registers a request and returns the unique label the engine must carry in its RunBegin ("#N" or "#N tag").
    std::string expect(RunRequest req);

    // Applies one event in stream order: a RunBegin opens a new entry (the oldest beyond `keep` is dropped); every
    // other event goes to the newest entry. Returns true when this event opened an entry.
    bool apply(const EventRecord& ev);

    size_t          size() const { return runs_.size(); }
    bool            empty() const { return runs_.empty(); }
    RunEntry&       operator[](size_t i) { return *runs_[i]; }
    const RunEntry& operator[](size_t i) const { return *runs_[i]; }
    RunEntry*       newest() { return runs_.empty() ? nullptr : runs_.back().get(); }
    RunEntry*       find(const std::string& label);  // nullptr when no run began under that label (or it was dropped)
    int             index_of(const std::string& label) const;  // the newest run under that label, -1 when none
    uint64_t        dropped_runs() const { return dropped_; }  // entries removed to keep memory bounded

private:
    struct Pending {
        uint64_t   serial = 0;
        RunRequest request;
    };
    size_t                                 keep_;
    uint64_t                               next_serial_ = 1;
    uint64_t                               dropped_     = 0;
    std::map<std::string, Pending>         requests_;  // by label, until their RunBegin arrives
    std::vector<std::unique_ptr<RunEntry>> runs_;      // oldest first
};

}  // namespace dyllm::app
