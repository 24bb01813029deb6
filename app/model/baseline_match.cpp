// Speed-up baselines matched on every setting that changes tokens/s (app/model/baseline_match.h).
#include "app/model/baseline_match.h"

#include "app/model/run_compare.h"

namespace dyllm::app {

namespace {

std::string differs(const char* what, const std::string& base, const std::string& run) {
    return std::string(what) + " " + base + ", not " + run;
}

std::string lengths_text(const std::vector<int32_t>& v) {
    std::string t;
    for (size_t i = 0; i < v.size(); ++i) t += (i ? "," : "") + std::to_string(v[i]);
    return t;
}

}  // namespace

std::string baseline_mismatch(const RunEntry& run, const RunEntry& base) {
    const RunHistory& r = run.history;
    const RunHistory& b = base.history;
    if (!b.has_run() || !r.has_run()) return "no run";
    if (b.info().method != "original") return differs("method", b.info().method, "original");
    if (const std::string note = run_state_note(b); !note.empty()) return "baseline " + note;
    if (b.info().model != r.info().model) return differs("model", b.info().model, r.info().model);
    if (b.env("model_dir") != r.env("model_dir")) return differs("model", b.env("model_dir"), r.env("model_dir"));
    // The backend text carries the thread count and the BLAS (cpu) or the device (cuda).
    if (b.info().backend != r.info().backend) return differs("backend", b.info().backend, r.info().backend);
    if (base.request.prompt != run.request.prompt) return "another prompt";
    // The same message can tokenize to another prompt (chat template on or off).
    if (b.info().prompt_lengths != r.info().prompt_lengths)
        return differs("prompt tokens", lengths_text(b.info().prompt_lengths), lengths_text(r.info().prompt_lengths));
    if (b.gen_length() != r.gen_length())
        return differs("gen", std::to_string(b.gen_length()), std::to_string(r.gen_length()));
    if (b.info().steps != r.info().steps)
        return differs("steps", std::to_string(b.info().steps), std::to_string(r.info().steps));
    if (b.env("block_length") != r.env("block_length"))
        return differs("block", b.env("block_length"), r.env("block_length"));
    return "";
}

const RunEntry* find_baseline(const RunList& runs, const RunEntry& run) {
    for (size_t i = runs.size(); i-- > 0;) {
        const RunEntry& e = runs[i];
        if (&e != &run && baseline_mismatch(run, e).empty()) return &e;
    }
    return nullptr;
}

std::string baseline_name(const RunEntry& base) {
    const RunBegin& i = base.history.info();
    return "#" + std::to_string(base.serial) + " " + i.method + ", " + i.model;
}

}  // namespace dyllm::app
