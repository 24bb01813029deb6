// The CPU kernels' thread pool: workers poll briefly, then sleep on a condition variable between jobs; a job is a
// generation number, a task count and an atomic counter from which the caller and the workers take task indices.
#include "kernels/cpu/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>

namespace dyllm::cpu {

namespace {
thread_local bool     t_in_pool_task = false;  // set while a thread runs pool tasks: nested calls run inline
thread_local int      t_thread_index = 0;      // the pool thread index of the task this thread is running
thread_local uint64_t t_handoffs     = 0;      // parallel_for jobs this thread handed to the workers

// Polls `done()` for up to kPoolSpinNs; true when it became true. The clock is read every 64 polls.
template <class Done>
bool spin_until(const Done& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(kPoolSpinNs);
    for (int i = 1;; ++i) {
        if (done()) return true;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
        if (i % 64 == 0 && std::chrono::steady_clock::now() >= deadline) return done();
    }
}
}  // namespace

uint64_t thread_handoffs() {
    return t_handoffs;
}

namespace {
int64_t steady_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}
}  // namespace

bool ThreadPool::workers_polling() const {
    const int64_t last = last_join_ns_.load(std::memory_order_relaxed);
    return n_threads_ > 1 && last != 0 && steady_ns() - last < kPoolSpinNs / 2;
}

bool ThreadPool::backing_off() const {
    return n_threads_ > 1 && steady_ns() < inline_until_ns_.load(std::memory_order_relaxed);
}

ThreadPool::ThreadPool(int n_threads)
    : n_threads_(n_threads < 1 ? 1 : n_threads), shares_(std::make_unique<Share[]>(size_t(n_threads_))) {
    // When the system refuses a thread part-way (std::system_error, EAGAIN), the members the started workers wait on
    // must outlive them: stop and join what was started, then report, instead of unwinding under them.
    try {
        workers_.reserve(size_t(n_threads_ - 1));
        for (int t = 1; t < n_threads_; ++t) workers_.emplace_back([this, t] { worker_loop(t); });
    } catch (const std::exception& e) {
        const size_t started = workers_.size();
        stop_and_join();
        throw std::runtime_error("could not start " + std::to_string(n_threads_) + " threads (" +
                                 std::to_string(started + 1) + " running): " + e.what());
    }
}

void ThreadPool::stop_and_join() {
    {
        std::lock_guard<std::mutex> lk(mu_);
        stop_.store(true);
    }
    wake_.notify_all();
    for (auto& w : workers_)
        if (w.joinable()) w.join();
    workers_.clear();
}

ThreadPool::~ThreadPool() {
    stop_and_join();
}

void ThreadPool::run_tasks(int thread) {
    t_in_pool_task = true;
    t_thread_index = thread;
    // Its own share first, then the others' in turn from the next thread on.
    for (int i = 0; i < n_threads_; ++i) {
        Share& sh = shares_[size_t((thread + i) % n_threads_)];
        for (;;) {
            const int64_t t = sh.next.fetch_add(1, std::memory_order_relaxed);
            if (t >= sh.end) break;
            (*fn_)(t, thread);
        }
    }
    t_in_pool_task = false;
}

void ThreadPool::worker_loop(int thread) {
    uint64_t seen = 0;
    for (;;) {
        // A new generation is stored under mu_ after the job's fields, so a worker that sees it (acquire) sees them.
        if (!spin_until([&] {
                return stop_.load(std::memory_order_acquire) || generation_.load(std::memory_order_acquire) != seen;
            })) {
            std::unique_lock<std::mutex> lk(mu_);
            wake_.wait(lk, [&] { return stop_.load() || generation_.load() != seen; });
        }
        if (stop_.load(std::memory_order_acquire)) return;
        seen = generation_.load(std::memory_order_acquire);
        // Enter the job only while the caller has not closed it (seq_cst on both sides: either the caller's wait sees
        // this worker counted, or the worker sees the job closed and touches neither fn_ nor the shares).
        active_.fetch_add(1, std::memory_order_seq_cst);
        if (open_.load(std::memory_order_seq_cst)) run_tasks(thread);
        if (active_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
            std::lock_guard<std::mutex> lk(mu_);  // the caller may be between its check and its wait
            done_cv_.notify_one();
        }
    }
}

void ThreadPool::run_inline(int64_t n_tasks, TaskFn fn) {
    const bool outer  = t_in_pool_task;
    const int  thread = outer ? t_thread_index : 0;
    t_in_pool_task    = true;
    for (int64_t t = 0; t < n_tasks; ++t) fn(t, thread);
    t_in_pool_task = outer;
}

void ThreadPool::parallel_for(int64_t n_tasks, TaskFn fn) {
    if (n_tasks <= 0) return;
    // Inline: a single thread (no hand-off at all), a single task, or a nested call (the pool is busy with the outer
    // job).
    if (n_threads_ == 1 || n_tasks == 1 || t_in_pool_task) return run_inline(n_tasks, fn);
    std::lock_guard<std::mutex> call_lk(call_mu_);  // one outside caller at a time
    const int64_t               start = steady_ns();
    if (start < inline_until_ns_.load(std::memory_order_relaxed)) return run_inline(n_tasks, fn);
    ++t_handoffs;
    {
        std::lock_guard<std::mutex> lk(mu_);
        fn_ = &fn;
        for (int i = 0; i < n_threads_; ++i) {
            shares_[size_t(i)].next.store(n_tasks * i / n_threads_, std::memory_order_relaxed);
            shares_[size_t(i)].end = n_tasks * (i + 1) / n_threads_;
        }
        open_.store(true, std::memory_order_seq_cst);  // after fn_ and the shares: a worker that enters sees them
        generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();  // no system call when every worker is polling
    run_tasks(0);
    const int64_t own = steady_ns();
    // Every task is taken now (run_tasks takes what the others have not begun). Close the job and wait only for the
    // workers inside it: a worker that is not on a core (the studio's UI and GL threads, another process) must not
    // hold the caller for a scheduler time slice when it would find nothing left to do. Waiting for every worker to
    // check in made tiny-llada's DyLLM at 2 threads 4-5x slower than at 1 beside one busy process.
    open_.store(false, std::memory_order_seq_cst);
    const auto idle = [&] { return active_.load(std::memory_order_seq_cst) == 0; };
    if (!spin_until(idle)) {
        std::unique_lock<std::mutex> lk(mu_);
        done_cv_.wait(lk, idle);
    }
    fn_                     = nullptr;
    const int64_t end       = steady_ns();
    const int64_t last_join = last_join_ns_.load(std::memory_order_relaxed);  // the previous handed-off job's end
    last_join_ns_.store(end, std::memory_order_relaxed);                      // the workers poll from about now
    // Stalls (kPoolStallNs) add their wait to a debt that wall time pays back at kPoolStallShare; past
    // kPoolStallDebtNs the pool backs off.
    if (last_join != 0)
        stall_debt_ns_ = std::max<int64_t>(0, stall_debt_ns_ - int64_t(double(end - last_join) * kPoolStallShare));
    if (end - own > std::max(kPoolStallNs, 2 * (own - start))) {
        stalls_.fetch_add(1, std::memory_order_relaxed);
        stall_debt_ns_ += end - own;
        if (stall_debt_ns_ > kPoolStallDebtNs) {
            const int64_t last_end = inline_until_ns_.load(std::memory_order_relaxed);
            backoff_ns_            = last_end != 0 && end - last_end < kPoolContentionMemoryNs
                                         ? std::min(kPoolBackoffMaxNs, 2 * backoff_ns_)
                                         : kPoolBackoffMinNs;
            inline_until_ns_.store(end + backoff_ns_, std::memory_order_relaxed);
            stall_debt_ns_ = 0;
            backoffs_.fetch_add(1, std::memory_order_relaxed);
        }
    }
}

}  // namespace dyllm::cpu
