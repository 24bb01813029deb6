// A large read-mostly buffer backed by transparent huge pages where the kernel offers them: packed weights are
// streamed once per step, and with 4 KiB pages an 8B-parameter model spans ~4 million pages, so every step walks the
// page tables for each of them (dTLB misses) and loading takes one page fault per 4 KiB. With 2 MiB pages both fall
// by 512x. THP set to "madvise" (Debian's default) only backs regions that ask; "never" leaves plain pages (still
// correct).
#pragma once
#include <cstddef>

namespace dyllm::cpu {

// Advises transparent huge pages for the 2 MiB-aligned pages inside [p, p + bytes), before they are first touched. For
// large activations and caches: on a VM a first touch can cost ~7 us per 4 KiB page (writing 8 GiB of fresh memory
// 12 s), so a first step that touches ~200 MB of new activations pays ~0.3 s in page faults alone;
// a 2 MiB page is one fault. A hint: nothing changes where the kernel declines.
void advise_huge_pages(void* p, size_t bytes);

class HugePageBuffer {
public:
    HugePageBuffer() = default;
    // Zero-filled `bytes`, aligned to 2 MiB; throws std::bad_alloc when the memory cannot be mapped.
    explicit HugePageBuffer(size_t bytes);
    ~HugePageBuffer();
    HugePageBuffer(HugePageBuffer&& o) noexcept;
    HugePageBuffer& operator=(HugePageBuffer&& o) noexcept;
    HugePageBuffer(const HugePageBuffer&)            = delete;
    HugePageBuffer& operator=(const HugePageBuffer&) = delete;

    char* data() const { return data_; }
    // Reads every cache line of [offset, offset + bytes) once. Called right after a range is written: on the dev
    // machine's VM the first read of freshly written memory runs at about half speed (8 GiB: 1.07 s vs 0.30 s with
    // huge pages), unless each range is read back while just written (then 0.30 s from the first full pass on). Warming
    // at load keeps that one-time cost out of the first denoising step.
    void   warm(size_t offset, size_t bytes) const;
    size_t size() const { return size_; }

    static constexpr size_t kHugePage = size_t(2) << 20;

private:
    char*  data_   = nullptr;
    size_t size_   = 0;  // requested bytes
    size_t mapped_ = 0;  // bytes mapped at data_ (size_ rounded up to the page size used)
};

}  // namespace dyllm::cpu
