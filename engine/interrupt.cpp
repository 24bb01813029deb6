// Signal handlers and their tables. The handlers only touch lock-free fixed-size tables and call async-signal-safe
// functions (write, unlink, _exit): a signal can arrive while any other code holds a lock.
#include "engine/interrupt.h"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>

namespace dyllm {

namespace {

std::atomic<int>  g_signal{0};
std::atomic<bool> g_throw{false};

constexpr size_t kSlots = 64, kPathMax = 1024;

// A slot's state: 0 free, 1 being filled or cleared, 2 live (readable by a handler).
struct TempSlot {
    std::atomic<int> state{0};
    char             path[kPathMax];
};
struct MapSlot {
    std::atomic<int>       state{0};
    std::atomic<uintptr_t> begin{0}, end{0};
    char                   path[kPathMax];
};
TempSlot g_temps[kSlots];
MapSlot  g_maps[kSlots];

template <class Slot>
int claim(Slot* slots, const std::string& path) {
    if (path.size() >= kPathMax) return -1;
    for (size_t i = 0; i < kSlots; ++i) {
        int expected = 0;
        if (slots[i].state.compare_exchange_strong(expected, 1)) {
            std::memcpy(slots[i].path, path.c_str(), path.size() + 1);
            return int(i);
        }
    }
    return -1;
}

void put(const char* s) {
    const size_t n = std::strlen(s);
    ssize_t      r = ::write(2, s, n);
    (void)r;
}

void remove_temps() {
    for (auto& t : g_temps)
        if (t.state.load() == 2) ::unlink(t.path);
}

void on_interrupt(int sig) {
    int expected = 0;
    if (g_signal.compare_exchange_strong(expected, sig)) return;  // the first one: unwind normally
    // A second interrupt while the first unwinds (a long write, a stuck load): end now, leaving no temporary behind.
    remove_temps();
    put("interrupted\n");
    ::_exit(128 + sig);
}

void on_bus(int sig, siginfo_t* info, void*) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(info->si_addr);
    for (auto& m : g_maps) {
        if (m.state.load() != 2 || a < m.begin.load() || a >= m.end.load()) continue;
        remove_temps();
        put("error: ");
        put(m.path);
        put(": truncated while loading (changed on disk?)\n");
        ::_exit(2);
    }
    // Not a mapped checkpoint: the default action (a core dump names the bug).
    ::signal(sig, SIG_DFL);
    ::raise(sig);
}

}  // namespace

void install_signal_handlers(bool throw_in_runs) {
    g_throw.store(throw_in_runs);
    struct sigaction sa {};
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    struct sigaction bus {};
    bus.sa_sigaction = on_bus;
    bus.sa_flags     = SA_SIGINFO;
    sigemptyset(&bus.sa_mask);
    sigaction(SIGBUS, &bus, nullptr);
    ::signal(SIGXFSZ, SIG_IGN);
}

bool interrupt_requested() {
    return g_signal.load(std::memory_order_relaxed) != 0;
}
int interrupt_signal() {
    return g_signal.load();
}
bool interrupts_throw() {
    return g_throw.load();
}
void throw_if_interrupted() {
    if (const int s = g_signal.load()) throw Interrupted(s);
}
void request_interrupt(int sig) {
    int expected = 0;
    g_signal.compare_exchange_strong(expected, sig);
}

DeferInterrupts::DeferInterrupts() {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGINT);
    sigaddset(&s, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &s, &old_);
}
DeferInterrupts::~DeferInterrupts() {
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
}

int register_temp_file(const std::string& path) {
    const int i = claim(g_temps, path);
    if (i >= 0) g_temps[i].state.store(2);
    return i;
}
void unregister_temp_file(int slot) {
    if (slot >= 0) g_temps[slot].state.store(0);
}

int register_mapping(const void* begin, size_t size, const std::string& path) {
    const int i = claim(g_maps, path);
    if (i < 0) return i;
    g_maps[i].begin.store(reinterpret_cast<uintptr_t>(begin));
    g_maps[i].end.store(reinterpret_cast<uintptr_t>(begin) + size);
    g_maps[i].state.store(2);
    return i;
}
void unregister_mapping(int slot) {
    if (slot >= 0) g_maps[slot].state.store(0);
}

}  // namespace dyllm
