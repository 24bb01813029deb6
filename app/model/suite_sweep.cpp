// Task-suite sweep of tau and methods (app/model/suite_sweep.h): method and tau lists, the runs, one eval_task per run
// and suite, the Pareto front and the CSV table.
#include "app/model/suite_sweep.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "app/model/pareto_front.h"
#include "app/model/param_options.h"
#include "app/model/task_eval.h"
#include "engine/errors.h"
#include "instrumentation/json_number.h"

namespace dyllm::app {

namespace {

std::string trim(const std::string& s) {
    const auto b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
    return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// "a,b,c" -> items, trimmed; an empty item (or an empty list) is an InputError naming flag.
std::vector<std::string> split_items(const std::string& flag, const std::string& text, const char* example) {
    std::vector<std::string> items;
    size_t                   start = 0;
    while (start <= text.size()) {
        const size_t      comma = std::min(text.find(',', start), text.size());
        const std::string item  = trim(text.substr(start, comma - start));
        if (item.empty())
            throw InputError(flag + ": " +
                             (trim(text).empty() ? std::string("empty list") : "empty item in '" + text + "'") +
                             " (expected e.g. " + example + ")");
        items.push_back(item);
        start = comma + 1;
    }
    return items;
}

std::string tau_text(float tau) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4g", double(tau));
    return buf;
}

}  // namespace

std::string stable_rows_of(const DiffusionParams& p) {
    if (!p.approx) return "exact";
    if (p.approx_incremental) return "incremental";
    if (p.approx_columns) return "columns";
    return "authors";
}

bool set_stable_rows(DiffusionParams& p, const std::string& name) {
    if (std::find(std::begin(kStableRowNames), std::end(kStableRowNames), name) == std::end(kStableRowNames))
        return false;
    p.approx             = name != "exact";
    p.approx_incremental = name == "incremental";
    p.approx_columns     = name == "columns";
    return true;
}

SweepMethod parse_sweep_method(const std::string& flag, const std::string& text) {
    const size_t      colon = text.find(':');
    const std::string name  = text.substr(0, colon);
    const auto        m     = parse_method(name);
    if (!m) throw InputError(flag + ": unknown method '" + name + "' (expected " + method_names() + ")");
    SweepMethod out{*m, ""};
    if (colon == std::string::npos) return out;
    out.stable_rows = text.substr(colon + 1);
    if (*m != Method::DyLLM)
        throw InputError(flag + ": '" + text + "': only dyllm takes a stable-row update (dyllm:incremental, ...)");
    DiffusionParams probe;
    if (!set_stable_rows(probe, out.stable_rows))
        throw InputError(flag + ": unknown stable-row update '" + out.stable_rows +
                         "' (expected authors, incremental, columns or exact)");
    return out;
}

std::vector<SweepMethod> parse_sweep_methods(const std::string& flag, const std::string& list) {
    std::vector<SweepMethod> out;
    for (const auto& item : split_items(flag, list, "dyllm,dyllm:incremental")) {
        if (item == "all") {  // every registered method at its defaults
            for (Method m : all_methods()) out.push_back({m, ""});
            continue;
        }
        out.push_back(parse_sweep_method(flag, item));
    }
    return out;
}

std::vector<float> parse_sweep_taus(const std::string& flag, const std::string& text) {
    std::vector<float> taus;
    for (const auto& item : split_items(flag, text, "0.95,0.99")) {
        errno          = 0;
        char*        e = nullptr;
        const double v = std::strtod(item.c_str(), &e);
        if (e != item.c_str() + item.size() || errno == ERANGE || !std::isfinite(v))
            throw InputError(flag + ": '" + item + "' is not a number");
        if (!(v > 0 && v < 1))
            throw InputError(flag + ": tau " + item +
                             " is outside (0, 1) (the cosine threshold of a sweep lies strictly "
                             "between 0 and 1)");
        if (std::find(taus.begin(), taus.end(), float(v)) != taus.end())
            throw InputError(flag + ": tau " + item + " is given twice");
        taus.push_back(float(v));
    }
    return taus;
}

std::vector<float> default_suite_taus() {
    return {0.9f, 0.98f, 0.99f, 0.995f, 0.999f};
}

std::string SuiteRun::label() const {
    std::string s = method_name(method);
    if (!stable_rows.empty() && stable_rows != "authors") s += " " + stable_rows;
    if (!std::isnan(tau)) s += " " + tau_text(tau);
    return s;
}

std::vector<SuiteRun> suite_runs(const DiffusionParams& base, Family family, const std::vector<SweepMethod>& methods,
                                 const std::vector<float>& taus, bool references) {
    std::vector<SweepMethod> list;
    if (references) list = {{Method::Original, ""}, {Method::FastDual, ""}};
    list.insert(list.end(), methods.begin(), methods.end());
    std::vector<SuiteRun> out;
    auto                  add = [&](const SuiteRun& r) {
        for (const auto& o : out)  // a method named twice (or a reference listed again) runs once
            if (o.method == r.method && o.stable_rows == r.stable_rows &&
                (o.tau == r.tau || (std::isnan(o.tau) && std::isnan(r.tau))))
                return;
        out.push_back(r);
    };
    for (const auto& m : list) {
        SuiteRun r;
        r.method        = m.method;
        r.reference     = m.method == Method::Original || m.method == Method::FastDual;
        r.params        = base;
        r.params.method = m.method;
        r.tau           = NAN;
        if (m.method != Method::DyLLM) {
            add(r);
            continue;
        }
        if (!m.stable_rows.empty()) set_stable_rows(r.params, m.stable_rows);
        r.stable_rows = stable_rows_of(r.params);
        for (float t : taus.empty() ? std::vector<float>{base.tau} : taus) {
            r.params.tau = t;
            r.tau        = cli::effective_tau(r.params, family);
            r.params.tau = r.tau;
            add(r);
        }
    }
    return out;
}

SuitePoint run_suite_point(const Model& model, const std::vector<TaskSuite>& suites, const SuiteRun& run,
                           const SuiteOptions& o) {
    SuitePoint p;
    p.run        = run;
    double flops = 0, dense = 0;
    for (const auto& suite : suites) {
        TaskEvalOptions eo;
        eo.limit          = o.limit;
        eo.shots          = o.shots;
        eo.batch          = o.batch;
        eo.cancel         = o.cancel;
        const TaskScore s = eval_task(model, suite, run.params, eo);
        p.items += s.n;
        p.correct += s.correct;
        p.generated_tokens += s.generated_tokens;
        p.forward_passes += s.forward_passes;
        p.denoise_s += s.denoise_s;
        flops += s.flops;
        dense += s.dense_flops;
        if (s.cancelled) {
            p.cancelled = true;
            break;
        }
    }
    p.accuracy        = p.items ? double(p.correct) / double(p.items) : 0.0;
    p.tokens_per_s    = p.denoise_s > 0 ? double(p.generated_tokens) / p.denoise_s : 0.0;
    p.flops_per_token = p.generated_tokens ? flops / double(p.generated_tokens) : 0.0;
    p.flops_vs_dense  = dense > 0 ? flops / dense : 1.0;
    return p;
}

void mark_pareto(std::vector<SuitePoint>& pts) {
    std::vector<ParetoInput> in;
    for (const auto& p : pts) in.push_back({p.tokens_per_s, p.accuracy, !p.cancelled && p.items > 0});
    const std::vector<bool> front = pareto_front(in);
    for (size_t i = 0; i < pts.size(); ++i) pts[i].pareto = front[i];
}

CsvTable suite_csv(const std::vector<SuitePoint>& pts, const SuiteContext& c) {
    CsvTable t;
    t.header = {"method",    "stable_rows", "tau",        "reference",    "pareto",          "task",
                "items",     "correct",     "accuracy",   "tokens_per_s", "flops_per_token", "flops_vs_dense",
                "denoise_s", "nfe",         "gen_length", "steps",        "block_length",    "batch",
                "shots",     "model",       "backend"};
    for (const auto& p : pts) {
        const DiffusionParams& q = p.run.params;
        t.rows.push_back({method_name(p.run.method),
                          p.run.stable_rows,
                          csv_number(float_for_json(p.run.tau)),
                          p.run.reference ? "1" : "0",
                          p.pareto ? "1" : "0",
                          c.task,
                          std::to_string(p.items),
                          std::to_string(p.correct),
                          csv_number(p.accuracy),
                          csv_number(p.tokens_per_s),
                          csv_number(p.flops_per_token),
                          csv_number(p.flops_vs_dense),
                          csv_number(p.denoise_s),
                          std::to_string(p.forward_passes),
                          std::to_string(q.gen_length),
                          std::to_string(q.steps),
                          std::to_string(q.block_length),
                          std::to_string(c.batch),
                          c.shots < 0 ? std::string("file") : std::to_string(c.shots),
                          c.model,
                          c.backend});
    }
    return t;
}

SuitePoint merge_repetitions(const std::vector<SuitePoint>& reps) {
    if (reps.empty()) return SuitePoint{};
    SuitePoint          p = reps.front();
    std::vector<double> tps;
    for (const SuitePoint& r : reps) tps.push_back(r.tokens_per_s);
    std::sort(tps.begin(), tps.end());
    const size_t n    = tps.size();
    p.repetitions     = int(n);
    p.tokens_per_s    = n % 2 ? tps[n / 2] : 0.5 * (tps[n / 2 - 1] + tps[n / 2]);
    p.tokens_per_s_lo = tps.front();
    p.tokens_per_s_hi = tps.back();
    // The denoising time that goes with the median rate, so tokens_per_s stays tokens over time.
    if (p.tokens_per_s > 0) p.denoise_s = double(p.generated_tokens) / p.tokens_per_s;
    return p;
}

}  // namespace dyllm::app
