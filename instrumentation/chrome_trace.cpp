// Chrome Trace Event JSON writer. Events are grouped per track and sorted by timestamp before writing, because
// Perfetto's JSON importer expects monotone timestamps per track and proper nesting of X events.
#include "instrumentation/chrome_trace.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "instrumentation/json_number.h"
#include "instrumentation/step_end_json.h"

namespace dyllm {
namespace {

using Json = nlohmann::ordered_json;

// Non-finite numbers are not valid JSON: written as null.
Json jnum(double v) {
    return json_number(v);
}

// Process and thread ids of the fixed tracks.
constexpr int kPidEngine = 1, kPidGpu = 2;
constexpr int kTidRun = 1, kTidSteps = 2, kTidOpsCpu = 3, kTidOpsCuda = 4;
constexpr int kTidKernel = 1, kTidMemcpy = 2, kTidMemset = 3;

struct TraceEvent {
    int64_t ts_ns  = 0;  // relative to the trace base
    int64_t dur_ns = 0;
    Json    json;  // everything except ts/dur, filled in when written
};

struct Track {
    int                     pid = 0, tid = 0;
    std::vector<TraceEvent> events;
};

double to_us(int64_t ns) {
    return double(ns) / 1000.0;
}

Json run_env_json(const RunBegin& rb) {
    Json m              = Json::object();
    m["label"]          = rb.label;
    m["method"]         = rb.method;
    m["model"]          = rb.model;
    m["family"]         = rb.family;
    m["backend"]        = rb.backend;
    m["n_layer"]        = rb.n_layer;
    m["n_seq"]          = rb.n_seq;
    m["gen_length"]     = rb.gen_length;
    m["steps"]          = rb.steps;
    m["prompt_lengths"] = rb.prompt_lengths;
    // Parameters, seed, versions, device. The typed fields above win over an env string of the same name.
    for (const auto& [k, v] : rb.env)
        if (!m.contains(k)) m[k] = v;
    return m;
}

struct StepInfo {
    const StepBegin* begin          = nullptr;
    const StepEnd*   end            = nullptr;
    int64_t          last_op_end_ns = std::numeric_limits<int64_t>::min();
    int64_t          n_rows = 0, n_salient = 0;
    // Drift per layer over the step's sequences (only layers with approximated rows measured).
    struct Drift {
        int64_t count = 0;
        double  min = 1, sum = 0;
    };
    std::map<int32_t, Drift> drift;
};

// The events sorted out by what each track needs, and the trace base.
struct Gathered {
    const RunBegin*                 run_begin = nullptr;
    const RunEnd*                   run_end   = nullptr;
    std::vector<const ErrorRecord*> errors;
    std::map<int32_t, StepInfo>     steps;  // by step number, ascending
    std::vector<const OpTiming*>    ops;
    std::string                     method;
    int32_t                         n_layer   = 0;
    bool                            has_drift = false;  // some layer of some step measured drift
    int64_t                         base = 0;  // earliest timed event: timestamps start near 0, ns fractions survive
};

Gathered gather(const std::vector<EventRecord>& events, const std::vector<KernelRecord>& kernels) {
    Gathered g;
    for (const auto& r : events) {
        if (auto* e = std::get_if<RunBegin>(&r)) {
            if (!g.run_begin) g.run_begin = e;
        } else if (auto* e = std::get_if<RunEnd>(&r)) {
            g.run_end = e;
        } else if (auto* e = std::get_if<StepBegin>(&r)) {
            g.steps[e->step].begin = e;
        } else if (auto* e = std::get_if<StepEnd>(&r)) {
            g.steps[e->step].end = e;
        } else if (auto* e = std::get_if<OpTiming>(&r)) {
            g.ops.push_back(e);
            auto& s          = g.steps[e->step];
            s.last_op_end_ns = std::max(s.last_op_end_ns, e->t_begin_ns + std::max<int64_t>(e->dur_ns, 0));
        } else if (auto* e = std::get_if<LayerSaliencyRecord>(&r)) {
            auto& s = g.steps[e->step];
            s.n_rows += e->n_rows;
            s.n_salient += e->n_salient;
            if (e->drift_count > 0 && std::isfinite(e->drift_min) && std::isfinite(e->drift_mean)) {
                auto& d = s.drift[e->layer];
                d.count += e->drift_count;
                d.min = std::min(d.min, double(e->drift_min));
                d.sum += double(e->drift_mean) * e->drift_count;
                g.has_drift = true;
            }
            g.n_layer = std::max(g.n_layer, e->layer + 1);
        } else if (auto* e = std::get_if<ErrorRecord>(&r)) {
            g.errors.push_back(e);
        }
    }
    g.method = g.run_begin ? g.run_begin->method : std::string();
    if (g.run_begin) g.n_layer = std::max(g.n_layer, g.run_begin->n_layer);
    int64_t base = std::numeric_limits<int64_t>::max();
    for (const auto& [n, s] : g.steps) {
        if (s.begin) base = std::min(base, s.begin->t_ns);
        if (s.end && s.end->t_ns != 0) base = std::min(base, s.end->t_ns - std::max<int64_t>(s.end->wall_ns, 0));
    }
    for (const auto* o : g.ops) base = std::min(base, o->t_begin_ns);
    for (const auto& k : kernels) base = std::min(base, k.start_ns);
    g.base = base == std::numeric_limits<int64_t>::max() ? 0 : base;
    return g;
}

// Time covered by the steps and ops (the run track's span).
struct Span {
    int64_t first = std::numeric_limits<int64_t>::max(), last = std::numeric_limits<int64_t>::min();
    void    add(int64_t t0, int64_t t1) {
           first = std::min(first, t0);
           last  = std::max(last, t1);
    }
};

using Counters = std::map<std::string, std::vector<TraceEvent>>;  // counter name -> samples

// Steps track: one X event per step with its totals; the per-step counters (tau, salient fraction, tokens/s).
void add_steps(const Gathered& g, Track& track, Counters& counters, Span& span) {
    int64_t tokens_so_far = 0, wall_so_far = 0;
    for (const auto& [n, s] : g.steps) {
        if (!s.begin && !s.end) continue;  // ops or saliency of a step that never began: only on the op track
        int64_t t0 = 0, t1 = 0;
        if (s.begin) {
            t0 = s.begin->t_ns - g.base;
            if (s.end && s.end->t_ns != 0)
                t1 = s.end->t_ns - g.base;
            else if (s.end)
                t1 = t0 + s.end->wall_ns;
            else if (s.last_op_end_ns != std::numeric_limits<int64_t>::min())
                t1 = s.last_op_end_ns - g.base;
            else
                t1 = t0;
        } else {  // an end without a begin (the recorder joined mid-step): place it by its wall time
            t1 = (s.end->t_ns != 0 ? s.end->t_ns : g.base) - g.base;
            t0 = std::max<int64_t>(t1 - std::max<int64_t>(s.end->wall_ns, 0), 0);
        }
        t1 = std::max(t1, t0);
        span.add(t0, t1);

        TraceEvent ev;
        ev.ts_ns     = t0;
        ev.dur_ns    = t1 - t0;
        Json args    = Json::object();
        args["step"] = n;
        if (s.begin) {
            args["kind"]         = step_kind_name(s.begin->kind);
            args["tau"]          = json_float(s.begin->tau);
            args["n_query_rows"] = s.begin->n_query_rows;
        }
        args["n_rows_tested"] = s.n_rows;
        args["n_salient"]     = s.n_salient;
        if (!s.drift.empty()) {
            int64_t n  = 0;
            double  mn = 1;
            for (const auto& [l, d] : s.drift) {
                n += d.count;
                mn = std::min(mn, d.min);
            }
            args["drift_rows"]    = n;
            args["drift_min_cos"] = jnum(mn);
        }
        if (s.end) add_step_end_counters(args, *s.end);
        args["method"] = g.method;
        ev.json        = Json{{"name", "step " + std::to_string(n) +
                                           (s.begin ? std::string(" ") + step_kind_name(s.begin->kind) : std::string())},
                       {"cat", "step"},
                       {"ph", "X"},
                       {"args", std::move(args)}};
        track.events.push_back(std::move(ev));

        // Counters: values hold from their timestamp on, so the per-step ones are stamped at the step's start.
        auto counter = [&](const char* name, int64_t ts, double v) {
            TraceEvent c;
            c.ts_ns = ts;
            c.json  = Json{{"name", name}, {"cat", "counter"}, {"ph", "C"}, {"args", Json{{"value", jnum(v)}}}};
            counters[name].push_back(std::move(c));
        };
        if (s.begin) counter("tau", t0, float_for_json(s.begin->tau));
        if (s.n_rows > 0) counter("salient_fraction", t0, double(s.n_salient) / double(s.n_rows));
        // Drift per layer (approx-vs-exact context cosine): a layer with no approximated row at this step is exact (1).
        if (g.has_drift && s.begin)
            for (int32_t l = 0; l < g.n_layer; ++l) {
                char name[2][48];
                std::snprintf(name[0], sizeof name[0], "drift_min_cos L%02d", l);
                std::snprintf(name[1], sizeof name[1], "drift_mean_cos L%02d", l);
                const auto it  = s.drift.find(l);
                const bool has = it != s.drift.end() && it->second.count > 0;
                counter(name[0], t0, has ? it->second.min : 1.0);
                counter(name[1], t0, has ? it->second.sum / double(it->second.count) : 1.0);
            }
        if (s.end) {
            // Running average over the steps so far (committed tokens / summed step wall time): converges to the
            // run's tokens/s and is not dominated by the noise of a single step.
            tokens_so_far += s.end->tokens_committed;
            wall_so_far += std::max<int64_t>(s.end->wall_ns, 0);
            if (wall_so_far > 0) counter("tokens_per_s", t1, double(tokens_so_far) * 1e9 / double(wall_so_far));
        }
    }
}

// Op tracks: engine ops as X events, one track per device (CUDA ops are host-timed).
void add_ops(const Gathered& g, const std::vector<OpAnnotation>& names, Track& cpu, Track& cuda, Span& span) {
    const bool annotate = !names.empty() && names.size() == g.ops.size();  // a list of another run is ignored
    for (size_t i = 0; i < g.ops.size(); ++i) {
        const OpTiming*   o    = g.ops[i];
        const std::string name = annotate && !names[i].name.empty() ? names[i].name : op_class_name(o->op);
        TraceEvent        ev;
        ev.ts_ns       = o->t_begin_ns - g.base;
        ev.dur_ns      = std::max<int64_t>(o->dur_ns, 0);
        Json args      = Json::object();
        args["step"]   = o->step;
        args["layer"]  = o->layer;
        args["op"]     = name;
        args["class"]  = op_class_name(o->op);
        args["method"] = g.method;
        args["rows"]   = o->rows;
        args["flops"]  = jnum(o->flops);
        args["bytes"]  = jnum(o->bytes);
        args["device"] = o->device == EventDevice::Cuda ? "cuda" : "cpu";
        if (o->cpu_ns >= 0) {  // thread CPU time (older recordings have none)
            args["cpu_ns"]     = o->cpu_ns;
            args["cpu_gap_ns"] = o->cpu_gap_ns;  // the op's CPU time: cpu_ns to cpu_ns + cpu_gap_ns
            args["split"]      = o->split;
            if (annotate) args["preempted"] = names[i].preempted;
        }
        ev.json = Json{{"name", name}, {"cat", "op"}, {"ph", "X"}, {"args", std::move(args)}};
        span.add(ev.ts_ns, ev.ts_ns + ev.dur_ns);
        (o->device == EventDevice::Cuda ? cuda : cpu).events.push_back(std::move(ev));
    }
}

// GPU tracks: CUPTI kernel, memcpy and memset records.
void add_gpu_activity(const Gathered& g, const std::vector<KernelRecord>& kernels, Track& kernel, Track& memcpy,
                      Track& memset) {
    for (const auto& k : kernels) {
        TraceEvent ev;
        ev.ts_ns               = k.start_ns - g.base;
        ev.dur_ns              = std::max<int64_t>(k.end_ns - k.start_ns, 0);
        Json args              = Json::object();
        args["step"]           = k.step;
        args["layer"]          = k.layer;
        args["op"]             = op_class_name(OpClass(k.op));
        args["method"]         = g.method;
        args["kind"]           = kernel_kind_name(k.kind);
        args["correlation_id"] = k.correlation_id;
        args["external_id"]    = k.external_id;
        if (k.bytes) args["bytes"] = k.bytes;
        ev.json  = Json{{"name", k.name}, {"cat", kernel_kind_name(k.kind)}, {"ph", "X"}, {"args", std::move(args)}};
        Track& t = k.kind == int(KernelKind::Memcpy) ? memcpy : k.kind == int(KernelKind::Memset) ? memset : kernel;
        t.events.push_back(std::move(ev));
    }
}

// Run track: one X event over the whole run with the RunEnd totals, then the errors as instant events at its end.
// paused_ns >= 0: the step gaps were closed and this much waiting was cut (the run slice covers the work only).
void add_run(const Gathered& g, Span span, int64_t paused_ns, Track& track) {
    if (span.first == std::numeric_limits<int64_t>::max()) span.first = span.last = 0;
    TraceEvent ev;
    ev.ts_ns  = span.first;
    ev.dur_ns = std::max<int64_t>(span.last - span.first, 0);
    Json args = Json::object();
    if (g.run_begin) args["label"] = g.run_begin->label;
    if (g.run_end) {
        args["steps"]       = g.run_end->steps;
        args["wall_ns"]     = g.run_end->wall_ns;
        args["tokens"]      = g.run_end->tokens;
        args["cancelled"]   = g.run_end->cancelled;
        args["cache_bytes"] = jnum(g.run_end->cache_bytes);
        args["texts"]       = g.run_end->texts;
    }
    args["errors"] = g.errors.size();
    if (paused_ns >= 0) args["paused_ns"] = paused_ns;
    ev.json = Json{{"name", "run " + g.method}, {"cat", "run"}, {"ph", "X"}, {"args", std::move(args)}};
    track.events.push_back(std::move(ev));
    for (const auto* e : g.errors) {
        TraceEvent err;
        err.ts_ns = span.last;
        err.json  = Json{{"name", "error"},
                        {"cat", "error"},
                        {"ph", "i"},
                        {"s", "g"},
                        {"args", Json{{"where", e->where}, {"message", e->message}}}};
        track.events.push_back(std::move(err));
    }
}

// Writes the traceEvents array one event per line.
class Writer {
public:
    explicit Writer(std::ostream& os) : os_(os) {}
    void emit(const Json& j) {
        os_ << (first_ ? "" : ",\n") << j.dump();
        first_ = false;
    }
    // Process/thread names and sort order ("M" events); tid < 0: a process-level record.
    void name(const char* what, int pid, int tid, const std::string& name) { meta(what, pid, tid, {{"name", name}}); }
    void sort_index(const char* what, int pid, int tid, int index) { meta(what, pid, tid, {{"sort_index", index}}); }
    // A track's events by time. Equal starts: the longer (enclosing) event first, so nested X events stay nested.
    void track(Track& t) {
        std::stable_sort(t.events.begin(), t.events.end(), [](const TraceEvent& a, const TraceEvent& b) {
            return a.ts_ns != b.ts_ns ? a.ts_ns < b.ts_ns : a.dur_ns > b.dur_ns;
        });
        for (auto& ev : t.events) {
            Json& j = ev.json;
            j["ts"] = to_us(ev.ts_ns);
            if (j["ph"] == "X") j["dur"] = to_us(ev.dur_ns);
            j["pid"] = t.pid;
            j["tid"] = t.tid;
            emit(j);
        }
    }

private:
    void meta(const char* what, int pid, int tid, Json args) {
        Json j{{"name", what}, {"ph", "M"}, {"pid", pid}};
        if (tid >= 0) j["tid"] = tid;
        j["args"] = std::move(args);
        emit(j);
    }
    std::ostream& os_;
    bool          first_ = true;
};

// Track names and order: the engine process (run, steps, ops per device), then the GPU process when CUPTI ran.
void write_track_metadata(Writer& w, const Gathered& g, bool cuda_ops, bool gpu) {
    w.name("process_name", kPidEngine, -1,
           "dyllm engine" + (g.run_begin ? " (" + g.run_begin->backend + ")" : std::string()));
    w.sort_index("process_sort_index", kPidEngine, -1, 0);
    w.name("thread_name", kPidEngine, kTidRun, "run");
    w.name("thread_name", kPidEngine, kTidSteps, "steps");
    w.name("thread_name", kPidEngine, kTidOpsCpu, "ops (cpu)");
    if (cuda_ops) w.name("thread_name", kPidEngine, kTidOpsCuda, "ops (cuda, host-timed)");
    for (int tid : {kTidRun, kTidSteps, kTidOpsCpu}) w.sort_index("thread_sort_index", kPidEngine, tid, tid);
    if (cuda_ops) w.sort_index("thread_sort_index", kPidEngine, kTidOpsCuda, kTidOpsCuda);
    if (gpu) {
        w.name("process_name", kPidGpu, -1, "GPU (CUPTI)");
        w.sort_index("process_sort_index", kPidGpu, -1, 1);
        w.name("thread_name", kPidGpu, kTidKernel, "kernels");
        w.name("thread_name", kPidGpu, kTidMemcpy, "memcpy");
        w.name("thread_name", kPidGpu, kTidMemset, "memset");
    }
}

}  // namespace

void write_chrome_trace(std::ostream& os, const std::vector<EventRecord>& events) {
    write_chrome_trace(os, events, {});
}

void write_chrome_trace(std::ostream& os, const std::vector<EventRecord>& events,
                        const std::vector<KernelRecord>& kernels) {
    write_chrome_trace(os, events, kernels, ExportOptions{});
}

namespace {

// The events and kernels with every wait between steps cut out: each step's records move back by the gaps before it
// (a step's begin after the previous step's end). Returns the time cut.
int64_t close_step_gaps(std::vector<EventRecord>& events, std::vector<KernelRecord>& kernels) {
    std::map<int32_t, int64_t> begin_ns, end_ns;
    for (const auto& r : events) {
        if (auto* e = std::get_if<StepBegin>(&r)) begin_ns[e->step] = e->t_ns;
        if (auto* e = std::get_if<StepEnd>(&r))
            if (e->t_ns != 0) end_ns[e->step] = e->t_ns;
    }
    std::map<int32_t, int64_t> shift;  // step -> ns to subtract
    int64_t                    cut = 0, prev_end = 0;
    bool                       have_prev = false;
    for (const auto& [step, t0] : begin_ns) {
        if (have_prev && t0 > prev_end) cut += t0 - prev_end;
        shift[step]  = cut;
        const auto e = end_ns.find(step);
        have_prev    = e != end_ns.end();
        if (have_prev) prev_end = e->second;
    }
    auto of = [&](int32_t step) {
        const auto it = shift.find(step);
        return it == shift.end() ? int64_t(0) : it->second;
    };
    for (auto& r : events) {
        if (auto* e = std::get_if<StepBegin>(&r)) e->t_ns -= of(e->step);
        if (auto* e = std::get_if<StepEnd>(&r))
            if (e->t_ns != 0) e->t_ns -= of(e->step);
        if (auto* e = std::get_if<OpTiming>(&r)) e->t_begin_ns -= of(e->step);
    }
    for (auto& k : kernels) {
        const int64_t d = of(k.step);
        k.start_ns -= d;
        k.end_ns -= d;
    }
    return cut;
}

}  // namespace

void write_chrome_trace(std::ostream& os, const std::vector<EventRecord>& events_in,
                        const std::vector<KernelRecord>& kernels_in, const ExportOptions& opt) {
    std::vector<EventRecord>  closed_events;
    std::vector<KernelRecord> closed_kernels;
    int64_t                   paused_ns = 0;
    if (opt.close_step_gaps) {
        closed_events  = events_in;
        closed_kernels = kernels_in;
        paused_ns      = close_step_gaps(closed_events, closed_kernels);
    }
    const std::vector<EventRecord>&  events  = opt.close_step_gaps ? closed_events : events_in;
    const std::vector<KernelRecord>& kernels = opt.close_step_gaps ? closed_kernels : kernels_in;
    const Gathered                   g       = gather(events, kernels);
    Track                            run{kPidEngine, kTidRun, {}}, steps{kPidEngine, kTidSteps, {}};
    Track                            ops_cpu{kPidEngine, kTidOpsCpu, {}}, ops_cuda{kPidEngine, kTidOpsCuda, {}};
    Track gpu_kernel{kPidGpu, kTidKernel, {}}, gpu_memcpy{kPidGpu, kTidMemcpy, {}}, gpu_memset{kPidGpu, kTidMemset, {}};
    Counters counters;
    Span     span;
    add_steps(g, steps, counters, span);
    add_ops(g, opt.ops, ops_cpu, ops_cuda, span);
    add_gpu_activity(g, kernels, gpu_kernel, gpu_memcpy, gpu_memset);
    add_run(g, span, opt.close_step_gaps ? paused_ns : -1, run);

    Json env = g.run_begin ? run_env_json(*g.run_begin) : Json::object();
    if (opt.close_step_gaps) {
        env["step_gaps_closed"] = true;
        env["paused_ns"]        = paused_ns;
    }
    os << "{\"traceEvents\":[\n";
    Writer w(os);
    // First event: the run's environment, so it survives tools that drop the top-level "metadata" object.
    w.emit(Json{{"name", "run_begin"},
                {"cat", "run"},
                {"ph", "i"},
                {"s", "g"},
                {"ts", 0},
                {"pid", kPidEngine},
                {"tid", kTidRun},
                {"args", env}});
    write_track_metadata(w, g, !ops_cuda.events.empty(), !kernels.empty());
    for (Track* t : {&run, &steps, &ops_cpu, &ops_cuda, &gpu_kernel, &gpu_memcpy, &gpu_memset}) w.track(*t);
    for (auto& [name, samples] : counters) {
        Track t{kPidEngine, 0, std::move(samples)};
        w.track(t);
    }
    os << "\n],\n\"displayTimeUnit\":\"ns\",\n\"metadata\":" << env.dump() << "}\n";
}

}  // namespace dyllm
