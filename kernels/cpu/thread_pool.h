// A small reusable thread pool for the CPU kernels: a fixed set of workers and a blocking parallel_for over task
// indices, with the calling thread taking part (so n_threads = 1 runs everything inline, with no thread at all).
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace dyllm::cpu {

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
    // and is unique among concurrently running calls, so it can index per-thread scratch buffers. Tasks are handed out
    // dynamically (an atomic counter). A call from inside a task runs its tasks inline on that thread (with that
    // thread's index); calls from different outside threads are serialised. fn must not throw (kernels never do).
    void parallel_for(int64_t n_tasks, const std::function<void(int64_t task, int thread)>& fn);

private:
    void worker_loop(int thread);
    void stop_and_join();
    void run_tasks(int thread);

    int                      n_threads_;
    std::vector<std::thread> workers_;
    std::mutex               call_mu_;
    std::mutex               mu_;
    std::condition_variable  wake_;
    std::condition_variable  done_cv_;
    uint64_t                 generation_ = 0;
    bool                     stop_       = false;
    int                      busy_       = 0;  // workers still inside the current generation
    // The current job.
    const std::function<void(int64_t, int)>* fn_ = nullptr;
    int64_t                                  n_tasks_ = 0;
    std::atomic<int64_t>                     next_{0};
};

}  // namespace dyllm::cpu
