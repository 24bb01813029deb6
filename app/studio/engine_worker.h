// The engine worker thread of dyllm-studio: owns the Model and the Session and executes a command queue (load, start,
// play, pause, single step, set tau, speed). The UI thread never blocks on it: it posts commands, reads events from
// the QueueSink and copies a small status struct under a mutex.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "app/model/vocab.h"
#include "engine/engine.h"
#include "instrumentation/gpu_capture.h"
#include "instrumentation/queue_sink.h"

namespace dyllm::app {

enum class WorkerState : uint8_t { NoModel, Loading, Ready, Paused, Playing, Done, Failed };
const char* worker_state_name(WorkerState s);

// What the UI may know about the worker (copied under a mutex once per frame).
struct WorkerStatus {
    WorkerState           state = WorkerState::NoModel;
    std::string           model_name;    // loaded model (built-in name or directory)
    std::string           backend;       // backend description
    std::string           backend_note;  // e.g. why auto fell back to the CPU
    std::optional<Family> family;        // once a model is loaded
    int                   n_layer = 0, n_vocab = 0;
    double                load_seconds = 0;
    LoadProgress          load;              // weight preparation of the model being loaded (state Loading)
    std::string           error;             // last error (load, params, step), shown in the red message bar
    uint64_t              error_serial = 0;  // increments with every new error
    uint64_t              run_serial   = 0;  // increments with every started run
    int                   steps_done   = 0;  // steps of the current run
    int                   total_steps  = 0;
    bool                  run_done     = false;
    std::string cupti = "off (cpu backend)";  // GpuCapture::cupti_status() of the loaded model ("on" on a GPU)
    // What a run produced (texts, cache bytes) reaches the UI in its RunEnd event, not here.
};

struct StartRequest {
    std::string     prompt;  // user message (the chat template is applied when chat is true)
    bool            chat = true;
    DiffusionParams params;
    bool            autoplay = true;
    std::string     label;  // Session::set_label: the run's RunBegin carries it, so the UI finds its request
};

class EngineWorker {
public:
    explicit EngineWorker(size_t queue_capacity = 1 << 16);
    ~EngineWorker();
    EngineWorker(const EngineWorker&)            = delete;
    EngineWorker& operator=(const EngineWorker&) = delete;

    // ---- commands (any thread; applied in order by the worker) ----
    void load_model(const std::string& spec, BackendKind backend, int n_threads = 0);
    void start(StartRequest req);  // cancels a running step, then starts a new run
    void play();
    void pause();
    void step_once();
    void set_tau(float tau);            // Session::set_tau from the next step
    void set_speed(float steps_per_s);  // <= 0: as fast as possible
    void cancel_run();
    // Runs job on the worker thread with the loaded model (nullptr when none), between steps of the live run, which
    // does not step meanwhile. The job must return soon once its own cancel flag is set (the Tune panel's suite sweep).
    void run_job(std::function<void(const Model*)> job);

    // ---- UI side ----
    QueueSink&                   sink() { return sink_; }
    WorkerStatus                 status() const;
    std::shared_ptr<const Vocab> vocab() const;
    bool                         busy() const;  // a command is queued or executing (for headless waits)
    // CUPTI kernel records of the run with this label (RunBegin.label), one batch per step, collected on a CUDA
    // backend as `dyllm trace` collects them (GpuCapture). Empty on the CPU or when CUPTI is unavailable.
    using KernelBatch = std::shared_ptr<const std::vector<KernelRecord>>;
    std::vector<KernelBatch> kernels(const std::string& label) const;

private:
    struct Command {
        enum Kind { Load, Start, Play, Pause, Step, Tau, Speed, Cancel, Job, Quit } kind;
        Command(Kind k) : kind(k) {}  // NOLINT: implicit on purpose, Command{Command::Play}
        std::string                       spec;
        BackendKind                       backend   = BackendKind::Cpu;
        int                               n_threads = 0;
        StartRequest                      start;
        float                             value = 0;
        std::function<void(const Model*)> job;
    };
    void post(Command c);
    void thread_main();
    void execute(Command& c);
    void do_load(const Command& c);
    void do_start(const StartRequest& r);
    void do_step();
    void set_error(const std::string& msg);
    void end_session();  // drops the session; a run still going ends first with its RunEnd (cancelled)
    void publish_after_step();
    void collect_kernels();  // after a step: the step's CUPTI records into kernels_[run_label_]

    QueueSink sink_;

    mutable std::mutex      queue_mutex_;
    std::condition_variable queue_cv_;
    std::deque<Command>     queue_;
    bool                    executing_ = false;

    mutable std::mutex           status_mutex_;
    WorkerStatus                 status_;
    std::shared_ptr<const Vocab> vocab_;

    // Worker-thread state.
    std::unique_ptr<Model>   model_;
    std::unique_ptr<Session> session_;
    GpuCapture               gpu_;            // CUPTI + NVTX while a CUDA model is loaded
    std::unique_ptr<TeeSink> gpu_tee_;        // sink_ plus gpu_'s sinks, the sessions' sink while gpu_ runs
    std::string              run_label_;      // label of the session's run (kernel records are kept under it)
    std::mutex               session_mutex_;  // guards the session_ pointer against cancel_run() from the UI
    bool                     playing_      = false;
    bool                     load_failed_  = false;
    float                    speed_        = 0;
    int64_t                  last_step_ns_ = 0;

    mutable std::mutex                              kernel_mutex_;
    std::map<std::string, std::vector<KernelBatch>> kernels_;        // by run label
    std::deque<std::string>                         kernel_labels_;  // oldest first, bounded like the UI's RunList

    std::thread thread_;
};

}  // namespace dyllm::app
