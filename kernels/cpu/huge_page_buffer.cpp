#include "kernels/cpu/huge_page_buffer.h"

#include <sys/mman.h>

#include <atomic>
#include <cstdint>
#include <new>
#include <utility>

namespace dyllm::cpu {

namespace {
size_t round_up(size_t n, size_t to) {
    return (n + to - 1) / to * to;
}
std::atomic<uint64_t> warm_sink{0};  // atomic: several pool threads warm slices at once
}  // namespace

void advise_huge_pages(void* p, size_t bytes) {
#ifdef MADV_HUGEPAGE  // advisory: a refusal leaves 4 KiB pages
    const uintptr_t a = reinterpret_cast<uintptr_t>(p), lo = round_up(a, HugePageBuffer::kHugePage);
    const uintptr_t hi = (a + bytes) / HugePageBuffer::kHugePage * HugePageBuffer::kHugePage;
    if (hi > lo) madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_HUGEPAGE);
#else
    (void)p;
    (void)bytes;
#endif
}

HugePageBuffer::HugePageBuffer(size_t bytes) : size_(bytes) {
    if (bytes == 0) return;
    // Below one huge page a plain mapping is all there is to have.
    const size_t align = bytes >= kHugePage ? kHugePage : 4096;
    mapped_            = round_up(bytes, align);
    // Over-map by one alignment unit and trim both ends: mmap only promises 4 KiB alignment.
    const size_t span = mapped_ + align;
    void*        p    = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    const uintptr_t base    = reinterpret_cast<uintptr_t>(p);
    const uintptr_t aligned = round_up(base, align);
    if (aligned > base) munmap(p, aligned - base);
    if (base + span > aligned + mapped_)
        munmap(reinterpret_cast<void*>(aligned + mapped_), base + span - aligned - mapped_);
    data_ = reinterpret_cast<char*>(aligned);
    advise_huge_pages(data_, mapped_);  // a no-op below one huge page
}

void HugePageBuffer::warm(size_t offset, size_t bytes) const {
    const char* p   = data_ + offset;
    uint64_t    acc = 0;
    for (size_t i = 0; i < bytes; i += 64) acc += static_cast<unsigned char>(p[i]);
    warm_sink.store(acc, std::memory_order_relaxed);  // the loads must happen; the value is meaningless
}

HugePageBuffer::~HugePageBuffer() {
    if (data_) munmap(data_, mapped_);
}

HugePageBuffer::HugePageBuffer(HugePageBuffer&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)), mapped_(std::exchange(o.mapped_, 0)) {}

HugePageBuffer& HugePageBuffer::operator=(HugePageBuffer&& o) noexcept {
    if (this != &o) {
        if (data_) munmap(data_, mapped_);
        data_   = std::exchange(o.data_, nullptr);
        size_   = std::exchange(o.size_, 0);
        mapped_ = std::exchange(o.mapped_, 0);
    }
    return *this;
}

}  // namespace dyllm::cpu
