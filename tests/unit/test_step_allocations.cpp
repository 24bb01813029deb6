// A steady run allocates nothing: every C++ allocation function is replaced here by a counting one, and a run of
// every method (DyLLM in each of its attention updates) on a generated checkpoint is stepped; from step 3 on (the
// workspace is sized by step 1 and coalesced before step 2, the host-side lists are kept and reserved from step 1)
// neither the CPU backend nor the engine's host code may allocate, and the heap must not grow.
#include <catch2/catch.hpp>

#include <link.h>
#include <malloc.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <span>

#include "engine/engine.h"
#include "kernels/cpu/packed_gemm.h"
#include "support/tiny_models.h"

namespace {

// Counters of every allocation made through operator new while `counting` is set (any thread).
std::atomic<bool>    counting{false};
std::atomic<int64_t> n_allocs{0}, n_bytes{0}, n_tensor_allocs{0}, max_alloc{0}, n_provider_allocs{0};

// The code of the GEMM provider's library (oneDNN): oneDNN 2.6 builds each primitive execution's argument map on the
// heap inside dnnl_primitive_execute, which no caller can avoid (packed_gemm_dnnl.cpp reuses its memory objects and
// passes the arguments from the stack). Those allocations are counted apart, by the address operator new returns to;
// the engine, the backend and the kernels must make none.
struct CodeRange {
    uintptr_t lo = 0, hi = 0;
};
CodeRange provider_code[8];
int       n_provider_code = 0;

int find_provider(dl_phdr_info* info, size_t, void*) {
    if (!info->dlpi_name || !std::strstr(info->dlpi_name, "libdnnl")) return 0;
    for (int i = 0; i < info->dlpi_phnum && n_provider_code < 8; ++i) {
        const ElfW(Phdr)& ph = info->dlpi_phdr[i];
        if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
        const uintptr_t lo               = info->dlpi_addr + ph.p_vaddr;
        provider_code[n_provider_code++] = {lo, lo + ph.p_memsz};
    }
    return 0;
}

bool from_provider(const void* caller) {
    const auto a = reinterpret_cast<uintptr_t>(caller);
    for (int i = 0; i < n_provider_code; ++i)
        if (a >= provider_code[i].lo && a < provider_code[i].hi) return true;
    return false;
}

void* counted(std::size_t n, std::size_t align, const void* caller) {
    if (counting.load(std::memory_order_relaxed)) {
        if (from_provider(caller)) {
            n_provider_allocs.fetch_add(1, std::memory_order_relaxed);
        } else {
            n_allocs.fetch_add(1, std::memory_order_relaxed);
            n_bytes.fetch_add(int64_t(n), std::memory_order_relaxed);
            // The CPU backend allocates tensor memory, and only that, with 64-byte aligned new
            // (engine/backend_cpu.cpp).
            if (align >= 64) n_tensor_allocs.fetch_add(1, std::memory_order_relaxed);
            int64_t m = max_alloc.load(std::memory_order_relaxed);
            while (int64_t(n) > m && !max_alloc.compare_exchange_weak(m, int64_t(n))) {
            }
        }
    }
    void* p = align > alignof(std::max_align_t) ? std::aligned_alloc(align, (n + align - 1) / align * align)
                                                : std::malloc(n ? n : 1);
    return p;
}

}  // namespace

#define DYLLM_CALLER __builtin_return_address(0)
__attribute__((noinline)) void* operator new(std::size_t n) {
    if (void* p = counted(n, 0, DYLLM_CALLER)) return p;
    throw std::bad_alloc();
}
__attribute__((noinline)) void* operator new[](std::size_t n) {
    if (void* p = counted(n, 0, DYLLM_CALLER)) return p;
    throw std::bad_alloc();
}
__attribute__((noinline)) void* operator new(std::size_t n, std::align_val_t a) {
    if (void* p = counted(n, std::size_t(a), DYLLM_CALLER)) return p;
    throw std::bad_alloc();
}
__attribute__((noinline)) void* operator new[](std::size_t n, std::align_val_t a) {
    if (void* p = counted(n, std::size_t(a), DYLLM_CALLER)) return p;
    throw std::bad_alloc();
}
__attribute__((noinline)) void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
    return counted(n, 0, DYLLM_CALLER);
}
__attribute__((noinline)) void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
    return counted(n, 0, DYLLM_CALLER);
}
__attribute__((noinline)) void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
    return counted(n, std::size_t(a), DYLLM_CALLER);
}
__attribute__((noinline)) void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
    return counted(n, std::size_t(a), DYLLM_CALLER);
}
#undef DYLLM_CALLER
void operator delete(void* p) noexcept {
    std::free(p);
}
void operator delete[](void* p) noexcept {
    std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
    std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
    std::free(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
    std::free(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
    std::free(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
    std::free(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
    std::free(p);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
    std::free(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
    std::free(p);
}
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept {
    std::free(p);
}
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept {
    std::free(p);
}

using namespace dyllm;

namespace {

struct Counts {
    int64_t allocs = 0, bytes = 0, tensor_allocs = 0, max_alloc = 0, steps = 0;
    int64_t provider_allocs = 0;  // made inside oneDNN's own calls (see provider_code)
    size_t  heap_growth     = 0;  // bytes the malloc heap (main arena + mmapped chunks) grew by
};

// Steps the run to the end; counts the allocations of steps 3..N.
Counts steady_allocations(const Model& m, const std::vector<int32_t>& prompt, const DiffusionParams& p,
                          const char* variant) {
    Session s(m);
    s.start({prompt}, p);
    // The hook sees the backend's tensor memory: the first step sizes the workspace, from the backend.
    n_tensor_allocs = 0;
    counting        = true;
    REQUIRE(s.step());
    counting = false;
    CHECK(n_tensor_allocs > 0);
    REQUIRE(s.step());
    const struct mallinfo2 before = mallinfo2();
    n_allocs                      = 0;
    n_bytes                       = 0;
    n_tensor_allocs               = 0;
    max_alloc                     = 0;
    n_provider_allocs             = 0;
    counting                      = true;
    Counts c;
    while (s.step()) ++c.steps;
    ++c.steps;  // the last step() ran a step and returned false
    counting                     = false;
    const struct mallinfo2 after = mallinfo2();
    c.allocs                     = n_allocs;
    c.bytes                      = n_bytes;
    c.tensor_allocs              = n_tensor_allocs;
    c.max_alloc                  = max_alloc;
    c.provider_allocs            = n_provider_allocs;
    const size_t heap_before = before.arena + before.hblkhd, heap_after = after.arena + after.hblkhd;
    c.heap_growth = heap_after > heap_before ? heap_after - heap_before : 0;
    std::printf(
        "%s%s: steps 3..%d: %lld allocations, %lld bytes (largest %lld), %lld tensor allocations, heap +%zu; "
        "inside oneDNN %lld\n",
        method_name(p.method), variant, int(c.steps + 2), (long long)c.allocs, (long long)c.bytes,
        (long long)c.max_alloc, (long long)c.tensor_allocs, c.heap_growth, (long long)c.provider_allocs);
    return c;
}

struct Variant {
    Method      method;
    const char* name;
    bool        approx = true, columns = false, incremental = false;
    float       temperature = 0.f;
};

// Each variant, after a warm-up run, stepped from step 3 to the end with the counters on.
void check_steady(Family family, std::span<const Variant> variants) {
    if (n_provider_code == 0) dl_iterate_phdr(find_provider, nullptr);
    const ModelConfig cfg    = test::tiny_config(family);
    auto              m      = Model::load(test::make_tiny_checkpoint(family).string(), BackendKind::Cpu, 2);
    const auto        prompt = test::random_prompt(cfg, 24, 5);
    for (const Variant& v : variants) {
        DiffusionParams p;
        p.method             = v.method;
        p.approx             = v.approx;
        p.approx_columns     = v.columns;
        p.approx_incremental = v.incremental;
        p.temperature        = v.temperature;  // seeded sampling on the host instead of the backend's argmax
        p.gen_length         = 32;
        p.steps              = 32;
        p.block_length       = 8;
        p.ignore_eos         = true;
        p.tau                = 0.9f;  // a few salient rows per layer: sparse steps of every kind
        // A first run warms the GEMM provider's per-shape caches (oneDNN builds one matmul primitive per row bucket
        // the first time it sees it, kernels/cpu/packed_gemm_dnnl.cpp): one-off, bounded, and not the step loop's.
        {
            Session warm(*m);
            warm.start({prompt}, p);
            warm.run();
        }
        const Counts c = steady_allocations(*m, prompt, p, v.name);
        CHECK(c.steps == 30);
        CHECK(c.tensor_allocs == 0);
        CHECK(c.allocs == 0);
        CHECK(c.heap_growth == 0);
        // Where small_gemm runs every product of these small weights (AVX2: kernels/cpu/packed_gemm.h), oneDNN is not
        // called in the step loop at all; with AVX-512 its brgemm runs the products of more than kSmallGemmMaxRows
        // rows, and what it allocates inside is freed within the call (the heap check above).
        if (cpu::PackedGemm::small_gemm_for_all_rows()) CHECK(c.provider_allocs == 0);
    }
}

}  // namespace

TEST_CASE("a steady run of every method allocates nothing", "[engine][alloc]") {
    const Variant variants[] = {{Method::Original, ""},
                                {Method::DyLLM, ""},
                                {Method::DyLLM, " --approx-columns", true, true},
                                {Method::DyLLM, " --approx-incremental", true, false, true},
                                {Method::DyLLM, " --no-approx", false},
                                {Method::DyLLM, " --temperature 0.7", true, false, false, 0.7f},
                                {Method::FastPrefix, ""},
                                {Method::FastDual, ""},
                                {Method::DllmCache, ""}};
    check_steady(Family::LLaDA, variants);
}

TEST_CASE("a steady Dream run allocates nothing", "[engine][alloc]") {
    // Dream's shifted logits (the response-only steps also query row P - 1) and its entropy scores.
    const Variant variants[] = {
        {Method::DyLLM, ""}, {Method::DyLLM, " --temperature 0.7", true, false, false, 0.7f}, {Method::FastDual, ""}};
    check_steady(Family::Dream, variants);
}
