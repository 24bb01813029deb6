// Task-suite scoring shared by `dyllm eval` and `dyllm report`: prompts built with the few-shot rule, sessions of
// o.batch sequences, exact-match and full-match counts, tokens and FLOPs summed over the sessions.
#include "app/model/task_eval.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "engine/errors.h"

namespace dyllm {

TaskScore eval_task(const Model& model, const TaskSuite& suite, const DiffusionParams& params, const TaskEvalOptions& o,
                    EventSink* sink) {
    const size_t n = o.limit > 0 ? std::min(suite.items.size(), size_t(o.limit)) : suite.items.size();
    TaskScore    sc;
    sc.name = suite.name;
    std::vector<std::vector<int32_t>> prompts(n);
    for (size_t i = 0; i < n; ++i) {
        const int         k    = o.shots < 0 ? suite.items[i].shots : o.shots;
        const std::string text = build_prompt(suite, i, k);
        prompts[i]             = encode_prompt(model, text, /*chat=*/true);
        if (int64_t(prompts[i].size()) + params.gen_length > model.config().max_position)
            throw InputError(suite.items[i].source + ": prompt of " + std::to_string(prompts[i].size()) +
                             " tokens + gen length " + std::to_string(params.gen_length) + " exceeds max position " +
                             std::to_string(model.config().max_position));
    }
    const size_t batch = size_t(std::max(1, o.batch));
    for (size_t b0 = 0; b0 < n; b0 += batch) {
        const size_t                      b1 = std::min(n, b0 + batch);
        std::vector<std::vector<int32_t>> chunk(prompts.begin() + long(b0), prompts.begin() + long(b1));
        Session                           session(model, sink);
        session.start(chunk, params);
        while (session.step())
            if (o.cancel && o.cancel->load(std::memory_order_relaxed)) {
                sc.cancelled = true;
                sc.wall_s    = sc.denoise_s;
                return sc;
            }
        const GenerationResult r = session.result();
        sc.generated_tokens += r.generated_tokens;
        sc.denoise_s += r.denoise_seconds;
        sc.forward_passes += r.forward_passes;
        sc.flops += r.total_flops;
        sc.dense_flops += r.total_dense_flops;
        for (size_t i = 0; i < r.sequences.size(); ++i) {
            const TaskItem&   item = suite.items[b0 + i];
            const std::string text = r.sequences[i].text;
            const bool        ok   = answer_matches(text, item.answer);
            sc.correct += ok;
            sc.full += full_match(text, item.answer);
            if (o.verbose)
                std::fprintf(stderr, "%s %s | got: %s | want: %s\n", ok ? "OK  " : "FAIL", item.source.c_str(),
                             text.c_str(), item.answer.c_str());
        }
        sc.n += int(r.sequences.size());
    }
    sc.wall_s = sc.denoise_s;
    return sc;
}

}  // namespace dyllm
