// Optimised y = x W^T + b for block-quantized weights (Q8_0, Q4_0, Q4_K, Q5_K, Q6_K), W kept in its stored blocks:
// on CPUs with AMX-INT8, for a few rows of x (quant_amx_int8_min_rows .. max_rows), x quantized per block to int8 and
// multiplied with W's levels by AMX-INT8 tiles (kernels/cpu/quant_amx_int8.h); on CPUs with AMX, from
// quant_amx_min_rows(type) rows of x, panels of W decoded to bf16 and multiplied by AMX tiles
// (kernels/cpu/quant_amx.h); else up to quant_dot_max_rows(type) rows, x is quantized per block to int8 and
// multiplied in integer block dot products (kernels/cpu/quant_dot.h); otherwise fixed panels of W rows are decoded to
// fp32 in a per-thread buffer and multiplied with sgemm (kernels/README.md "Quantized weights").
#pragma once
#include <cstdint>

#include "kernels/cpu/mat.h"
#include "kernels/cpu/quant_type.h"
#include "kernels/cpu/thread_pool.h"

namespace dyllm::cpu {

// Decoded W rows per sgemm panel: about this many fp32 elements (a panel then stays in a core's L2 while sgemm reads it
// for every row of x), in whole multiples of 16 rows, 16 to 256. A function of k alone, so a product's panels, and
// hence its bits, are the same at any thread count.
constexpr int64_t kQuantPanelElems = int64_t(1) << 17;
int64_t           quant_panel_rows(int64_t k);

// The instruction set of the block decoders and integer dot products, chosen once from the CPU (Auto) or forced
// (tests: the AVX-VNNI, AVX2 and baseline versions run on an AVX-512 machine too). Avx512: AVX-512 decoders and
// AVX512-VNNI dot products (AVX2 ones without VNNI); AvxVnni: AVX2 decoders, AVX-VNNI dot products; Avx2: AVX2 both;
// Baseline: decoders only (no integer path). Forcing one the CPU lacks is the caller's error.
enum class QuantIsa : uint8_t { Auto, Avx512, AvxVnni, Avx2, Baseline };
bool        quant_isa_available(QuantIsa isa);  // whether this CPU runs it
void        quant_force_isa(QuantIsa isa);
QuantIsa    quant_isa();  // the one in use (never Auto)
const char* quant_isa_name(QuantIsa isa);

// Which product runs: Auto picks by row count (quant_amx_min_rows, quant_amx_int8_max_rows, quant_dot_max_rows); Dot,
// Decode, Amx and AmxInt8 force one (tests, benchmarks; Dot falls back to Decode for a type or instruction set without
// an integer path, Amx where quant_amx_available() is false, AmxInt8 to Decode where quant_amx_int8_available() is
// false, the type has no kernel or x has more than kQuantAmxInt8MaxRows rows).
enum class QuantPath : uint8_t { Auto, Dot, Decode, Amx, AmxInt8 };
void quant_force_path(QuantPath path);
// Whether Auto may take the AMX paths where the CPU has them (default true; false: what an AVX-512 CPU without AMX
// runs). A forced Amx or AmxInt8 path ignores it.
void quant_allow_amx(bool allow);
bool quant_amx_allowed();
// Whether Auto may take the AMX paths at all: the instruction set in use is Avx512 and AMX is allowed (the paths then
// run where quant_amx_available() / quant_amx_int8_available()).
bool quant_auto_may_use_amx();

// The most rows of x for which Auto takes the integer path, per weight type (0: never); on CPUs with the AMX path only
// below quant_amx_min_rows. Measured, see the definition.
int64_t quant_dot_max_rows(QuantType t);
// The rows of x for which Auto takes the AMX-INT8 path (kernels/cpu/quant_amx_int8.h), from min to max (0: never),
// where quant_amx_int8_available() and the instruction set in use is Avx512; before the AMX path. Measured, see the
// definition.
int64_t quant_amx_int8_min_rows(QuantType t);
int64_t quant_amx_int8_max_rows(QuantType t);
// The fewest rows of x for which Auto takes the AMX path where quant_amx_available() (and the instruction set in use
// is Avx512); measured, see the definition.
int64_t quant_amx_min_rows(QuantType t);

// x: [n, k] fp32; w: [m, k] quantized; bias: [1, m] (any type) or bias.data == nullptr; y: [n, m] fp32, not aliasing
// x. Either path's results are the same at any thread count: the integer path sums each output in a fixed order of its
// own, the decode path's panels (quant_panel_rows) and sgemm calls do not depend on the thread count, the AMX path
// sums each output over k in a fixed order. f32_x (--compute f32): x is never rounded, the decode path runs whatever
// the row count or forced path.
void quant_matmul(CMatF x, QuantMat w, ConstMat bias, MatF y, ThreadPool& pool, bool f32_x = false);

// Rows of a quantized table widened to fp32 (the embedding lookup): out[i, :] = table[ids[i], :].
void quant_gather_rows(QuantMat table, const int32_t* ids, MatF out);

}  // namespace dyllm::cpu
