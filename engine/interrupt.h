// Process-wide signal state: SIGINT/SIGTERM set a flag that runs and long writers check (they unwind, removing their
// temporary files); the files being written and the files mapped are registered so that a second interrupt, or a
// SIGBUS from a mapped file that shrank on disk, can clean up and end the process with one line.
#pragma once
#include <csignal>
#include <stdexcept>
#include <string>

namespace dyllm {

// Thrown where a run or a writer notices an interrupt; the program's boundary prints "interrupted" and exits with
// 128 + signal (130 for SIGINT, 143 for SIGTERM).
struct Interrupted : std::runtime_error {
    explicit Interrupted(int sig) : std::runtime_error("interrupted"), signal(sig) {}
    int signal;
    int exit_code() const { return 128 + signal; }
};

// Installs the handlers: SIGINT/SIGTERM set the flag (a second one removes the registered temporary files and exits
// at once), SIGBUS inside a registered mapping prints "error: FILE: truncated while loading (changed on disk?)" and
// exits 2, SIGXFSZ is ignored so that a write past the file-size limit fails with EFBIG like a full disk.
// `throw_in_runs`: Session::run() throws Interrupted once the flag is set (the CLI); without it a run ends as
// cancelled and the caller reads the flag (the studio closes its window).
void install_signal_handlers(bool throw_in_runs);

bool interrupt_requested();   // async-signal-safe read of the flag
int  interrupt_signal();      // the signal that set it, 0 when none
bool interrupts_throw();      // install_signal_handlers(true) was called
void throw_if_interrupted();  // throws Interrupted when the flag is set
// Sets the flag as a signal would (tests; the studio's window close path).
void request_interrupt(int sig);

// Holds SIGINT/SIGTERM (blocked, delivered when the scope ends) around a few renames that must happen together, so an
// interrupt lands before or after them, never between. Nests (restores the previous mask).
class DeferInterrupts {
public:
    DeferInterrupts();
    ~DeferInterrupts();
    DeferInterrupts(const DeferInterrupts&)            = delete;
    DeferInterrupts& operator=(const DeferInterrupts&) = delete;

private:
    sigset_t old_;
};

// Registration of a temporary file by its full name (removed by a second interrupt or a SIGBUS exit) and of a
// read-only mapping [begin, end) of `path`. Each returns a slot id (-1: the table is full, nothing is registered).
int  register_temp_file(const std::string& path);
void unregister_temp_file(int slot);
int  register_mapping(const void* begin, size_t size, const std::string& path);
void unregister_mapping(int slot);

}  // namespace dyllm
