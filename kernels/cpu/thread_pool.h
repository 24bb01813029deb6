// A small reusable thread pool for the CPU kernels: a fixed set of workers and a blocking parallel_for over task
// indices, with the calling thread taking part (so n_threads = 1 runs everything inline, with no thread at all).
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace dyllm::cpu {

// A non-owning reference to a callable void(int64_t task, int thread). std::function would allocate on the heap for
// every capture larger than two pointers, i.e. on every kernel call of the step loop.
class TaskFn {
public:
    template <class F>
    requires(!std::is_same_v<std::decay_t<F>, TaskFn>) TaskFn(const F& f)  // NOLINT: implicit, like std::function
        : obj_(&f), call_([](const void* o, int64_t t, int th) { (*static_cast<const F*>(o))(t, th); }) {}
    void operator()(int64_t task, int thread) const { call_(obj_, task, thread); }

private:
    const void* obj_;
    void (*call_)(const void*, int64_t, int);
};

// Below this much work per thread (in streaming fp32 element-operations) a split costs more than it saves. Measured
// with tests/bench/bench_thread_pool.cpp on a shared 2-core AMD EPYC (AVX-512, under load): a hand-off
// (wake a sleeping worker, run, join) takes about 13 us; an elementwise op over n floats split over 2 threads runs at
// 0.50x (n = 64 Ki), 0.71x (128 Ki) and 1.53x (256 Ki) of one thread, so each thread needs at least 128 Ki.
constexpr int64_t kMinSplitWork = 1 << 17;

// How long a worker that finished a job, and a caller waiting for its workers, poll before they block on a condition
// variable. A step of a small model is a chain of ops a few to a few hundred microseconds long, some split and some
// inline in between; a worker that went to sleep after each one costs a futex wake-up per split op (tens of
// microseconds on the VM, sometimes more than the split saves), so it polls through the gaps instead, at the price of
// up to this long of a core after each job. Only the pool's own threads poll (OpenBLAS and oneDNN run single-threaded
// inside tasks): no second thread team polls beside them.
constexpr int64_t kPoolSpinNs = 200'000;
// A split over workers that are still polling (their last job ended less than half of kPoolSpinNs ago) costs a
// ~0.5 us hand-off instead of a wake-up, and pays from far less work than kMinSplitWork: tests/bench/bench_thread_pool
// on a 2-core AMD EPYC, both threads polling, an elementwise op over n floats split over 2 threads: n = 4 Ki 0.85-
// 0.88x, 16 Ki 1.23-1.34x, 64 Ki 1.39-1.52x of one thread. In a decode the data also moves between the cores, so the
// bound sits above the break-even (at 8 Ki per thread hidden-256's 32-row RMSNorm of fast-dual's cached steps splits
// and runs slower than one thread). The elementwise ops between a dense step's split products (RMSNorm, RoPE, the
// residual adds: 10-30 us each on tiny-llada) use it through parallel_for_warm.
constexpr int64_t kMinSplitWorkWarm = 1 << 14;
// Contention backoff. A handed-off job stalled when, after the caller had run every task it could take, it waited
// for a worker's task longer than both kPoolStallNs and twice its own share: a worker off its core held the job, and
// running it inline would have been faster. A balanced split never waits that long (the caller takes every task not
// yet begun, so it waits for at most one task of a late worker). A stall adds its wait to a debt that wall time pays
// back at kPoolStallShare; past kPoolStallDebtNs the pool runs every job inline for a window: kPoolBackoffMinNs, or
// twice the last window when that ended less than kPoolContentionMemoryNs ago (up to kPoolBackoffMaxNs), so under
// lasting contention it tries the workers again about once a second. tests/bench/contention_check.sh measures it: with
// a busy-loop process pinned to one of 2 cores, the worker sharing that core stalls job after job for a scheduler
// tick, and tiny-llada at 2 threads runs at 0.55-0.64x of 1 thread without the backoff, 0.84-0.93x with it. The debt
// limit sits above what a host's own brief preemptions of a vCPU add up to (stalls of 0.2-3.5 ms, 100s of ms apart),
// so a quiet machine never backs off.
// The studio's UI and GL threads compete with the workers the same way.
constexpr int64_t kPoolStallNs            = 200'000;
constexpr double  kPoolStallShare         = 0.05;
constexpr int64_t kPoolStallDebtNs        = 6'000'000;
constexpr int64_t kPoolBackoffMinNs       = 10'000'000;
constexpr int64_t kPoolBackoffMaxNs       = 1'000'000'000;
constexpr int64_t kPoolContentionMemoryNs = 1'000'000'000;
// Jobs this thread has handed to pool workers so far (parallel_for calls that did not run inline). An op timer
// compares two readings to tell whether an op ran on more than one thread.
uint64_t thread_handoffs();

class ThreadPool {
public:
    // n_threads >= 1 counts the caller: n_threads - 1 workers are started. When the system cannot start them all, the
    // ones started are joined and std::runtime_error "could not start N threads (...): <reason>" is thrown.
    explicit ThreadPool(int n_threads);
    ~ThreadPool();
    ThreadPool(const ThreadPool&)            = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int size() const { return n_threads_; }

    // Runs fn(task, thread) for every task in [0, n_tasks) and returns when all are done. `thread` is in [0, size())
    // and is unique among concurrently running calls, so it can index per-thread scratch buffers. Each thread first
    // runs its own contiguous share of the tasks (thread i: [n i / T, n (i + 1) / T)), then takes what is left of the
    // others' shares: the same task goes to the same core from one call to the next, so the slice of a weight or of
    // the activations it touches stays in that core's cache (a task that moved pulled its data across cores: up to
    // 2.7x slower than one thread on this VM, tests/bench/bench_thread_pool.cpp), while a late or slow thread's share
    // is still finished by the others; a worker that has not begun when every task is taken is not waited for. A call
    // from inside a task runs its tasks inline on that thread (with that thread's index); calls from different outside
    // threads are serialised. After stalls (kPoolStallNs) every job runs inline, on thread 0, for a while. fn must not
    // throw (kernels never do).
    void parallel_for(int64_t n_tasks, TaskFn fn);

    // The same, but run inline (no hand-off) when `work` (kMinSplitWork's unit, all tasks together) is too small to
    // give every thread kMinSplitWork.
    void parallel_for(int64_t n_tasks, int64_t work, TaskFn fn) {
        if (work < kMinSplitWork * n_threads_) return run_inline(n_tasks, fn);
        parallel_for(n_tasks, fn);
    }

    // The same, but split from kMinSplitWorkWarm per thread while the workers are still polling from the previous
    // job; a cold pool keeps parallel_for(n_tasks, work, fn)'s bound.
    void parallel_for_warm(int64_t n_tasks, int64_t work, TaskFn fn) {
        if (work >= kMinSplitWorkWarm * n_threads_ && workers_polling()) return parallel_for(n_tasks, fn);
        parallel_for(n_tasks, work, fn);
    }
    // Rows [0, rows) as one contiguous range per thread (range i on thread i while none is late), fn(r0, r1) each,
    // split as parallel_for_warm decides: the row-wise elementwise ops' split.
    template <class F>
    void parallel_rows_warm(int64_t rows, int64_t work, const F& fn) {
        const int64_t parts = rows < n_threads_ ? rows : n_threads_;
        parallel_for_warm(parts, work, [&](int64_t t, int) { fn(rows * t / parts, rows * (t + 1) / parts); });
    }
    // True while the workers of a pool with more than one thread are still polling (last job joined less than half
    // of kPoolSpinNs ago).
    bool workers_polling() const;
    // Stalled jobs and backoff windows so far (kPoolStallNs), and whether the pool runs its jobs inline now.
    uint64_t stalls() const { return stalls_.load(std::memory_order_relaxed); }
    uint64_t backoffs() const { return backoffs_.load(std::memory_order_relaxed); }
    bool     backing_off() const;
    // Threads an op of `work` is worth splitting over (1 = run it inline).
    int split_threads(int64_t work) const {
        const int64_t t = work / kMinSplitWork;
        return t >= n_threads_ ? n_threads_ : (t < 1 ? 1 : int(t));
    }

private:
    void worker_loop(int thread);
    void stop_and_join();
    void run_tasks(int thread);
    void run_inline(int64_t n_tasks, TaskFn fn);

    int                      n_threads_;
    std::vector<std::thread> workers_;
    std::mutex               call_mu_;
    std::mutex               mu_;
    std::condition_variable  wake_;
    std::condition_variable  done_cv_;
    // Published under mu_ (so a sleeper cannot miss it) and read without it by a spinning worker or caller.
    alignas(64) std::atomic<uint64_t> generation_{0};
    std::atomic<bool> stop_{false};
    std::atomic<bool> open_{false};         // workers may enter the current job (the caller closes it when every
                                            // task is taken)
    std::atomic<int>     active_{0};        // workers inside a job (or checking whether it is open)
    std::atomic<int64_t> last_join_ns_{0};  // steady_clock time the last handed-off job was joined (0: never)
    // Contention backoff (kPoolStallNs): jobs run inline until inline_until_ns_; written by the caller under call_mu_.
    std::atomic<int64_t>  inline_until_ns_{0};
    int64_t               backoff_ns_    = 0;  // the last window
    int64_t               stall_debt_ns_ = 0;  // repaid since last_join_ns_
    std::atomic<uint64_t> stalls_{0}, backoffs_{0};
    // The current job.
    const TaskFn* fn_ = nullptr;
    // One share per thread, each on its own cache line (its owner takes task indices from `next`, a thread that has
    // finished its own share steals from the others'), away from generation_, open_ and active_, which idle threads
    // poll.
    struct alignas(64) Share {
        std::atomic<int64_t> next{0};
        int64_t              end = 0;
    };
    std::unique_ptr<Share[]> shares_;
};

}  // namespace dyllm::cpu
