// What the AMX products (kernels/cpu/quant_amx.cpp, quant_amx_int8.cpp) share: the LDTILECFG operand, per-thread
// aligned scratch buffers and the compiler barrier around tile instructions.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace dyllm::cpu::amx_tiles {

// LDTILECFG's 64-byte operand, palette 1 (Intel Architecture Instruction Set Extensions Programming Reference).
struct alignas(64) TileConfig {
    uint8_t  palette   = 1;
    uint8_t  start_row = 0;
    uint8_t  reserved[14]{};
    uint16_t colsb[16]{};
    uint8_t  rows[16]{};
};

// A growable 64-byte-aligned buffer per OS thread and purpose (Tag: each caller its own numbers), kept between calls.
template <int Tag, class T>
T* aligned_scratch(size_t n) {
    thread_local std::vector<T> buf;
    const size_t                pad = 64 / sizeof(T);
    if (buf.size() < n + pad) buf.resize(n + pad);
    const uintptr_t p = reinterpret_cast<uintptr_t>(buf.data());
    return reinterpret_cast<T*>((p + 63) & ~uintptr_t(63));
}

// A compiler barrier: GCC's tile intrinsics are asm statements that do not tell it which memory they read or write.
inline void memory_barrier() {
    asm volatile("" ::: "memory");
}

}  // namespace dyllm::cpu::amx_tiles
