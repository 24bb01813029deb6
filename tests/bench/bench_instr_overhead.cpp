// Instrumentation overhead: the same denoising run with no sink and with a QueueSink (cosines and op timings on)
// drained by a consumer thread, as the GUI runs it. Repetitions are interleaved (none, queue, none, queue, ...) so
// drift affects both; prints the median per-pair time ratio (goal: <= 1.03).
// Usage: bench_instr_overhead [-m MODEL] [-r REPS] [-n GEN_LEN] [--steps N] [--method M] [-t THREADS] [--breakdown]
// [--frame-us US]
//        [--only none|queue|lean|discard|discard-ops|discard-cos]  (--only: REPS runs of that one configuration and
//        nothing else, to profile it)
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine.h"
#include "engine/op_scope.h"
#include "instrumentation/queue_sink.h"

using namespace dyllm;

namespace {

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Timing {
    double   wall = 0, cpu = 0;    // seconds: wall clock, engine thread CPU
    uint64_t cpu_clock_reads = 0;  // the op timer's thread CPU clock reads (a system call each)
};

// An EventSink that asks for cosines and op timings (each can be turned off) and keeps nothing: isolates what the
// engine spends timing ops and building events from what the QueueSink spends copying and queueing them.
struct DiscardSink : EventSink {
    bool cosines = true, op_timings = true;
    bool wants_cosines() const override { return cosines; }
    bool wants_op_timings() const override { return op_timings; }
};

int frame_us = 16667;  // consumer period (--frame-us): one 60 Hz frame

// One run; returns its wall and engine-thread CPU time (model load and prompt encoding excluded).
Timing run_once(const Model& model, const std::vector<std::vector<int32_t>>& prompts, const DiffusionParams& p,
                EventSink* engine_sink, QueueSink* sink, uint64_t* drained) {
    std::atomic<bool> done{false};
    std::thread       consumer;
    if (sink)
        consumer = std::thread([&] {
            EventRecord r;
            uint64_t    n = 0;
            for (;;) {
                if (sink->pop(r))
                    ++n;
                else if (done.load(std::memory_order_acquire)) {
                    while (sink->pop(r)) ++n;
                    break;
                } else {
                    // The GUI drains the queue and copies the canvases once per frame (60 Hz).
                    (void)sink->latest_canvases();
                    std::this_thread::sleep_for(std::chrono::microseconds(frame_us));
                }
            }
            *drained += n;
        });
    Session    session(model, engine_sink);
    const auto t0 = std::chrono::steady_clock::now();
    // The engine thread's CPU time: on a loaded shared machine wall time is noisy (other processes take the cores),
    // while the thread's own CPU time measures what the instrumentation adds to it. The reads counted are the op
    // timer's, between these two of the bench's own.
    const int64_t  c0 = thread_cpu_now_ns();
    const uint64_t r0 = thread_cpu_clock_reads();
    session.start(prompts, p);
    session.run();
    Timing t;
    t.cpu_clock_reads = thread_cpu_clock_reads() - r0;
    t.cpu             = 1e-9 * double(thread_cpu_now_ns() - c0);
    t.wall            = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    done.store(true, std::memory_order_release);
    if (consumer.joinable()) consumer.join();
    return t;
}

}  // namespace

int main(int argc, char** argv) {
    std::string model_spec = "tiny-llada", method = "dyllm";
    int         reps = 11, gen = 64, steps = 64, threads = 1;
    bool        breakdown = false;  // also time a discarding sink and a queue without cosines/op timings
    std::string only;               // run just this configuration (for a profiler)
    for (int i = 1; i < argc; ++i) {
        const std::string a    = argv[i];
        auto              next = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "bench_instr_overhead: %s needs a value\n", a.c_str());
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "-m")
            model_spec = next();
        else if (a == "-r")
            reps = std::atoi(next().c_str());
        else if (a == "-n")
            gen = std::atoi(next().c_str());
        else if (a == "--steps")
            steps = std::atoi(next().c_str());
        else if (a == "--method")
            method = next();
        else if (a == "-t")
            threads = std::atoi(next().c_str());
        else if (a == "--breakdown")
            breakdown = true;
        else if (a == "--only")
            only = next();
        else if (a == "--frame-us")
            frame_us = std::atoi(next().c_str());
        else {
            std::fprintf(stderr,
                         "usage: bench_instr_overhead [-m MODEL] [-r REPS] [-n GEN] [--steps N] [--method M] [-t T] "
                         "[--breakdown] [--frame-us US] [--only none|queue|lean|discard|discard-ops|discard-cos]\n");
            return 2;
        }
    }
    if (reps < 1) {
        std::fprintf(stderr, "bench_instr_overhead: -r must be at least 1\n");
        return 2;
    }
    try {
        const auto      model = Model::load(model_spec, BackendKind::Cpu, threads);
        DiffusionParams p;
        p.gen_length   = gen;
        p.steps        = steps;
        p.block_length = std::min(32, gen);
        p.ignore_eos   = true;  // every repetition runs the same number of steps
        const auto m   = parse_method(method);
        if (!m) {
            std::fprintf(stderr, "bench_instr_overhead: unknown method '%s'\n", method.c_str());
            return 2;
        }
        p.method = *m;
        validate_params(p, model->config());
        const std::vector<std::vector<int32_t>> prompts{model->tokenizer()
                                                            ? encode_prompt(*model, "Sort the numbers: 5 3 9 1 7", true)
                                                            : std::vector<int32_t>{1, 2, 3}};

        QueueSink sink;
        sink.set_wants_cosines(true);
        sink.set_wants_op_timings(true);
        QueueSink lean;  // events and canvases only
        lean.set_wants_cosines(false);
        lean.set_wants_op_timings(false);
        DiscardSink discard, discard_ops, discard_cos;  // everything; op timings only; cosines only
        discard_ops.cosines    = false;
        discard_cos.op_timings = false;
        uint64_t drained = 0, lean_drained = 0;
        if (!only.empty()) {
            EventSink* engine_sink  = only == "queue"         ? static_cast<EventSink*>(&sink)
                                      : only == "lean"        ? static_cast<EventSink*>(&lean)
                                      : only == "discard"     ? static_cast<EventSink*>(&discard)
                                      : only == "discard-ops" ? static_cast<EventSink*>(&discard_ops)
                                      : only == "discard-cos" ? static_cast<EventSink*>(&discard_cos)
                                                              : nullptr;
            QueueSink* drained_sink = only == "queue" ? &sink : only == "lean" ? &lean : nullptr;
            if (!engine_sink && only != "none") {
                std::fprintf(
                    stderr,
                    "bench_instr_overhead: --only takes none, queue, lean, discard, discard-ops or discard-cos\n");
                return 2;
            }
            std::vector<double> cpu;
            for (int r = 0; r < reps; ++r)
                cpu.push_back(run_once(*model, prompts, p, engine_sink, drained_sink, &drained).cpu);
            std::printf("bench_instr_overhead --only %s: %d runs, median engine-thread CPU %.3f ms\n", only.c_str(),
                        reps, median(cpu) * 1e3);
            return 0;
        }
        run_once(*model, prompts, p, nullptr, nullptr, &drained);  // warm-up: page in the weights, size the allocator
        run_once(*model, prompts, p, &sink, &sink, &drained);
        drained = 0;
        std::vector<double> reads, none, queued, ratio, cpu_ratio, discard_ratio, lean_ratio, ops_ratio, cos_ratio;
        for (int r = 0; r < reps; ++r) {
            const Timing a = run_once(*model, prompts, p, nullptr, nullptr, &drained);
            const Timing b = run_once(*model, prompts, p, &sink, &sink, &drained);
            none.push_back(a.wall);
            queued.push_back(b.wall);
            reads.push_back(double(b.cpu_clock_reads));
            ratio.push_back(b.wall / a.wall);
            cpu_ratio.push_back(b.cpu / a.cpu);
            if (breakdown) {
                discard_ratio.push_back(run_once(*model, prompts, p, &discard, nullptr, &drained).cpu / a.cpu);
                lean_ratio.push_back(run_once(*model, prompts, p, &lean, &lean, &lean_drained).cpu / a.cpu);
                ops_ratio.push_back(run_once(*model, prompts, p, &discard_ops, nullptr, &drained).cpu / a.cpu);
                cos_ratio.push_back(run_once(*model, prompts, p, &discard_cos, nullptr, &drained).cpu / a.cpu);
            }
        }
        std::printf("bench_instr_overhead: model %s, method %s, gen %d, steps %d, threads %d, %d interleaved reps\n",
                    model->name().c_str(), method.c_str(), gen, steps, threads, reps);
        std::printf("  no sink:    median %.3f ms wall\n", median(none) * 1e3);
        std::printf("  queue sink: median %.3f ms wall (cosines + op timings, %llu events drained, %llu dropped)\n",
                    median(queued) * 1e3, (unsigned long long)drained, (unsigned long long)sink.dropped());
        std::printf("  median ratio queue/none: wall %.4f (%+.2f%%), engine-thread CPU %.4f (%+.2f%%); goal <= +3%%\n",
                    median(ratio), (median(ratio) - 1.0) * 100.0, median(cpu_ratio), (median(cpu_ratio) - 1.0) * 100.0);
        std::printf("  thread CPU clock reads per queued run: median %.0f (one per %.1f us of wall time)\n",
                    median(reads), median(queued) * 1e6 / std::max(1.0, median(reads)));
        if (breakdown) {
            std::printf(
                "  engine-thread CPU ratio, discard sink (engine times ops and builds events, sink keeps nothing): "
                "%.4f\n",
                median(discard_ratio));
            std::printf("  engine-thread CPU ratio, queue without cosines and op timings: %.4f\n", median(lean_ratio));
            std::printf("  engine-thread CPU ratio, discard sink, op timings only: %.4f; cosines only: %.4f\n",
                        median(ops_ratio), median(cos_ratio));
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_instr_overhead: %s\n", e.what());
        return 1;
    }
    return 0;
}
