// EngineWorker: the worker thread that owns Model and Session, executes UI commands in order and steps the session
// while playing (rate-limited by the speed knob). Every engine exception is caught here and turned into a status
// error; the app keeps working.
#include "app/studio/engine_worker.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "engine/errors.h"

namespace dyllm::app {

namespace {
int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}
}  // namespace

const char* worker_state_name(WorkerState s) {
    switch (s) {
        case WorkerState::NoModel:
            return "no model";
        case WorkerState::Loading:
            return "loading";
        case WorkerState::Ready:
            return "ready";
        case WorkerState::Paused:
            return "paused";
        case WorkerState::Playing:
            return "playing";
        case WorkerState::Done:
            return "done";
        case WorkerState::Failed:
            return "failed";
    }
    return "?";
}

EngineWorker::EngineWorker(size_t queue_capacity) : sink_(queue_capacity) {
    thread_ = std::thread([this] { thread_main(); });
}

EngineWorker::~EngineWorker() {
    cancel_run();
    {
        std::lock_guard lk(queue_mutex_);
        queue_.clear();
        queue_.push_back(Command{Command::Quit});
    }
    queue_cv_.notify_all();
    if (thread_.joinable()) thread_.join();
}

void EngineWorker::post(Command c) {
    {
        std::lock_guard lk(queue_mutex_);
        queue_.push_back(std::move(c));
    }
    queue_cv_.notify_all();
}

void EngineWorker::load_model(const std::string& spec, BackendKind backend, int n_threads) {
    cancel_run();
    Command c{Command::Load};
    c.spec      = spec;
    c.backend   = backend;
    c.n_threads = n_threads;
    post(std::move(c));
}

void EngineWorker::start(StartRequest req) {
    cancel_run();  // a long step of a big model stops at the next layer instead of finishing first
    Command c{Command::Start};
    c.start = std::move(req);
    post(std::move(c));
}

void EngineWorker::play() {
    post(Command{Command::Play});
}
void EngineWorker::pause() {
    post(Command{Command::Pause});
}
void EngineWorker::step_once() {
    post(Command{Command::Step});
}

void EngineWorker::set_tau(float tau) {
    Command c{Command::Tau};
    c.value = tau;
    post(std::move(c));
}

void EngineWorker::set_speed(float steps_per_s) {
    Command c{Command::Speed};
    c.value = steps_per_s;
    post(std::move(c));
}

void EngineWorker::cancel_run() {
    std::lock_guard lk(session_mutex_);
    if (session_) session_->cancel();  // thread-safe by contract (engine.h)
}

void EngineWorker::run_job(std::function<void(const Model*)> job) {
    Command c{Command::Job};
    c.job = std::move(job);
    post(std::move(c));
}

WorkerStatus EngineWorker::status() const {
    std::lock_guard lk(status_mutex_);
    return status_;
}

std::shared_ptr<const Vocab> EngineWorker::vocab() const {
    std::lock_guard lk(status_mutex_);
    return vocab_;
}

bool EngineWorker::busy() const {
    std::lock_guard lk(queue_mutex_);
    return executing_ || !queue_.empty();
}

void EngineWorker::set_error(const std::string& msg) {
    std::lock_guard lk(status_mutex_);
    status_.error = msg;
    status_.error_serial += 1;
}

void EngineWorker::thread_main() {
    // The UI thread must keep its frame rate while the engine computes on the same cores: the worker (and the CPU
    // backend's pool threads it creates, which inherit the nice value) runs at nice +5, so the scheduler prefers
    // the UI and the software rasteriser. Failure (e.g. a sandbox) only costs responsiveness.
    (void)setpriority(PRIO_PROCESS, pid_t(syscall(SYS_gettid)), 5);
    for (;;) {
        Command c{Command::Play};
        bool    have = false;
        {
            std::unique_lock lk(queue_mutex_);
            executing_          = false;
            const bool can_step = playing_ && session_ && !session_->done();
            if (can_step && speed_ > 0) {
                const int64_t period = int64_t(1e9 / speed_);
                const auto    wake =
                    std::chrono::steady_clock::time_point(std::chrono::nanoseconds(last_step_ns_ + period));
                queue_cv_.wait_until(lk, wake, [&] { return !queue_.empty(); });
            } else if (!can_step) {
                queue_cv_.wait(lk, [&] { return !queue_.empty(); });
            }
            if (!queue_.empty()) {
                c = std::move(queue_.front());
                queue_.pop_front();
                have       = true;
                executing_ = true;
            }
        }
        if (have) {
            if (c.kind == Command::Quit) break;
            execute(c);
            continue;  // drain every queued command before the next step (tau applies from the next step)
        }
        const bool can_step = playing_ && session_ && !session_->done();
        if (can_step && (speed_ <= 0 || now_ns() - last_step_ns_ >= int64_t(1e9 / speed_))) {
            {
                std::lock_guard lk(queue_mutex_);
                executing_ = true;
            }
            do_step();
        }
    }
    {
        std::lock_guard lk(session_mutex_);
        session_.reset();
    }
    gpu_.stop();  // while the model's CUDA context is still there
    gpu_tee_.reset();
    model_.reset();
}

void EngineWorker::execute(Command& c) {
    switch (c.kind) {
        case Command::Load:
            do_load(c);
            break;
        case Command::Start:
            do_start(c.start);
            break;
        case Command::Play:
            if (session_ && !session_->done()) {
                playing_ = true;
                std::lock_guard lk(status_mutex_);
                status_.state = WorkerState::Playing;
            }
            break;
        case Command::Pause:
            playing_ = false;
            if (session_ && !session_->done()) {
                std::lock_guard lk(status_mutex_);
                status_.state = WorkerState::Paused;
            }
            break;
        case Command::Step:
            playing_ = false;
            if (session_ && !session_->done()) {
                {
                    std::lock_guard lk(status_mutex_);
                    status_.state = WorkerState::Paused;
                }
                do_step();
            }
            break;
        case Command::Tau:
            if (session_) {
                try {
                    session_->set_tau(c.value);
                } catch (const std::exception& e) {
                    set_error(std::string("tau: ") + e.what());
                }
            }
            break;
        case Command::Speed:
            speed_ = c.value;
            break;
        case Command::Job:
            try {
                c.job(model_.get());
            } catch (const std::exception& e) {  // jobs report their own errors; this keeps the worker alive
                set_error(std::string("job failed: ") + e.what());
            }
            break;
        case Command::Cancel:
        case Command::Quit:
            break;
    }
}

void EngineWorker::end_session() {
    if (session_ && !session_->done()) {
        // The UI reassembles runs from events alone: a run replaced mid-way still closes with RunEnd{cancelled}.
        session_->cancel();
        try {
            session_->step();  // a cancelled session only emits its RunEnd
        } catch (const std::exception& e) {
            set_error(std::string("cancel failed: ") + e.what());
        }
    }
    std::lock_guard lk(session_mutex_);
    session_.reset();
}

void EngineWorker::do_load(const Command& c) {
    end_session();  // the session refers to the model: drop it first
    playing_ = false;
    gpu_.stop();
    (void)gpu_.take_completed();  // records of the old model's last run are already filed; the rest is load traffic
    gpu_tee_.reset();
    model_.reset();
    {
        std::lock_guard lk(status_mutex_);
        status_.state      = WorkerState::Loading;
        status_.model_name = c.spec.empty() ? "tiny-llada (default)" : c.spec;
        status_.load       = LoadProgress{};
    }
    // Packing a real-size model's weights takes seconds: the UI shows how far it got.
    const LoadProgressFn progress = [this](const LoadProgress& p) {
        std::lock_guard lk(status_mutex_);
        status_.load = p;
    };
    try {
        std::string note;
        load_failed_           = true;  // until the load below succeeds
        model_                 = Model::load(c.spec, c.backend, c.n_threads, &note, progress);
        load_failed_           = false;
        auto               v   = std::make_shared<Vocab>();
        const ModelConfig& cfg = model_->config();
        v->mask_id             = cfg.mask_id;
        v->eos_id              = cfg.eos_id;
        if (const Tokenizer* tok = model_->tokenizer()) {
            v->has_tokenizer = true;
            const int n      = tok->vocab_size();
            v->text.resize(size_t(n));
            v->special.resize(size_t(n), 0);
            for (int id = 0; id < n; ++id) {
                v->text[id]    = tok->token_text(id);
                v->special[id] = tok->is_special(id) ? 1 : 0;
            }
        }
        // On a GPU: CUPTI kernels and NVTX ranges, started as `dyllm trace` starts them.
        gpu_.start(model_->backend().device() == Device::Cuda, true);
        if (auto extra = gpu_.sinks(); !extra.empty()) {
            extra.insert(extra.begin(), &sink_);
            gpu_tee_ = std::make_unique<TeeSink>(std::move(extra));
        }
        std::lock_guard lk(status_mutex_);
        status_.cupti        = gpu_.cupti_status();
        vocab_               = std::move(v);
        status_.state        = WorkerState::Ready;
        status_.model_name   = model_->name();
        status_.backend      = model_->backend().description();
        status_.backend_note = note;
        status_.family       = cfg.family;
        status_.n_layer      = cfg.n_layer;
        status_.n_vocab      = cfg.n_vocab;
        status_.load_seconds = model_->load_seconds();
    } catch (const LoadError& e) {
        model_.reset();
        {
            std::lock_guard lk(status_mutex_);
            status_.state = WorkerState::NoModel;
        }
        std::string msg = std::string("model load failed: ") + e.what();
        if (c.spec.empty())
            msg +=
                " (the built-in tiny-llada is missing: pass -m DIR, e.g. a checkpoint from `dyllm make-model -o DIR`)";
        set_error(msg);
    } catch (const BackendError& e) {
        model_.reset();
        {
            std::lock_guard lk(status_mutex_);
            status_.state = WorkerState::NoModel;
        }
        set_error(std::string("backend: ") + e.what() + " (choose the cpu backend)");
    } catch (const std::exception& e) {
        model_.reset();
        {
            std::lock_guard lk(status_mutex_);
            status_.state = WorkerState::NoModel;
        }
        set_error(std::string("model load failed: ") + e.what());
    }
}

void EngineWorker::do_start(const StartRequest& r) {
    playing_ = false;
    if (!model_) {
        // After a failed load, that error (naming the file and the problem) stays in the message bar.
        if (!load_failed_) set_error("no model loaded: choose a model in the Controls bar (or pass -m DIR)");
        return;
    }
    end_session();
    try {
        std::vector<int32_t> ids;
        if (model_->tokenizer()) {
            ids = encode_prompt(*model_, r.prompt, r.chat);
        } else {
            // Weight-only checkpoint (no tokenizer.json): feed the prompt's bytes as ids so the run still shows the
            // engine's dynamics; the canvas then shows "#id" cells.
            const int n_vocab = model_->config().n_vocab;
            for (unsigned char ch : r.prompt) {
                int32_t id = int32_t(ch) % std::max(n_vocab, 1);
                if (id == model_->config().mask_id) id = (id + 1) % std::max(n_vocab, 1);
                ids.push_back(id);
            }
            if (ids.empty()) ids.push_back(0);
        }
        auto s = std::make_unique<Session>(*model_, gpu_tee_ ? static_cast<EventSink*>(gpu_tee_.get()) : &sink_);
        s->set_label(r.label);  // the UI finds its request by the label in RunBegin
        run_label_ = r.label;
        s->start({ids}, r.params);
        {
            std::lock_guard lk(session_mutex_);
            session_ = std::move(s);
        }
        playing_      = r.autoplay;
        last_step_ns_ = 0;
        std::lock_guard lk(status_mutex_);
        status_.state = playing_ ? WorkerState::Playing : WorkerState::Paused;
        status_.run_serial += 1;
        status_.steps_done  = 0;
        status_.total_steps = r.params.steps;
        status_.run_done    = false;
    } catch (const InputError& e) {
        set_error(std::string("bad parameters: ") + e.what());
        std::lock_guard lk(status_mutex_);
        status_.state = WorkerState::Ready;
    } catch (const std::exception& e) {
        set_error(std::string("start failed: ") + e.what());
        std::lock_guard lk(status_mutex_);
        status_.state = WorkerState::Ready;
    }
}

void EngineWorker::do_step() {
    last_step_ns_ = now_ns();
    try {
        session_->step();
        collect_kernels();
        publish_after_step();
    } catch (const std::exception& e) {
        playing_ = false;
        set_error(std::string("step failed: ") + e.what());
        std::lock_guard lk(status_mutex_);
        status_.state = WorkerState::Failed;
        {
            std::lock_guard sl(session_mutex_);
            session_.reset();
        }
    }
}

void EngineWorker::collect_kernels() {
    if (!gpu_.collecting()) return;
    auto batch = std::make_shared<std::vector<KernelRecord>>(gpu_.take_completed());
    if (batch->empty()) return;
    std::lock_guard lk(kernel_mutex_);
    auto [it, fresh] = kernels_.try_emplace(run_label_);
    if (fresh) {
        kernel_labels_.push_back(run_label_);
        if (kernel_labels_.size() > 12) {  // RunList's default keep: older runs are gone from the UI as well
            kernels_.erase(kernel_labels_.front());
            kernel_labels_.pop_front();
        }
    }
    it->second.push_back(std::move(batch));
}

std::vector<EngineWorker::KernelBatch> EngineWorker::kernels(const std::string& label) const {
    std::lock_guard lk(kernel_mutex_);
    const auto      it = kernels_.find(label);
    return it == kernels_.end() ? std::vector<KernelBatch>{} : it->second;
}

void EngineWorker::publish_after_step() {
    const bool      done = session_->done();
    std::lock_guard lk(status_mutex_);
    status_.steps_done = session_->current_step();
    if (done) {
        playing_         = false;
        status_.state    = WorkerState::Done;
        status_.run_done = true;
    }
}

}  // namespace dyllm::app
