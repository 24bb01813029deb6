// PackedGemm on oneDNN (libdnnl-dev 2.6, OpenMP build): weights reordered once into the layout its brgemm matmul picks,
// one slice per pool task; every oneDNN call runs with one OpenMP thread, so the engine's pool is the only thread team
// (no OpenMP workers spinning beside it).
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/cpu/convert.h"
#include "kernels/cpu/huge_page_buffer.h"
#include "kernels/cpu/packed_gemm.h"
#include "kernels/cpu/small_gemm.h"

// libgomp's own entry points (declared here so the build needs no omp.h or -fopenmp; libdnnl already loads libgomp).
extern "C" int  omp_get_max_threads(void);
extern "C" void omp_set_num_threads(int);

namespace dyllm::cpu {

namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt  = memory::data_type;

// The OpenMP thread count is a per-thread setting (an ICV) in libgomp: every thread that calls into oneDNN sets it.
void one_omp_thread() {
    if (omp_get_max_threads() != 1) omp_set_num_threads(1);
}

dt dnnl_type(ElemType t) {
    return t == ElemType::BF16 ? dt::bf16 : dt::f32;
}

// oneDNN reports errors by exception; a failure while multiplying is a bug (the shapes were checked by the caller).
[[noreturn]] void die(const char* what, const dnnl::error& e) {
    std::fprintf(stderr, "packed_gemm: oneDNN %s failed: %s (status %d)\n", what, e.what(), int(e.status));
    std::abort();
}

// Grows a per-call buffer to at least n elements (never shrinks). A large one is reserved untouched first and advised
// huge pages before the resize touches it (huge_page_buffer.h: page faults dominate a fresh buffer's cost).
template <class T>
void grow(std::vector<T>& v, size_t n) {
    if (v.size() >= n) return;
    if (n * sizeof(T) >= 2 * HugePageBuffer::kHugePage) {
        std::vector<T> fresh;
        fresh.reserve(n);
        advise_huge_pages(fresh.data(), n * sizeof(T));
        v.swap(fresh);
    }
    v.resize(n);
}

// dnnl::primitive::execute takes its arguments as a std::unordered_map and copies them into a std::vector: heap
// allocations in every product. The C entry point reads them from this call's stack.
void execute(const dnnl::primitive& p, const dnnl::stream& s, std::initializer_list<dnnl_exec_arg_t> args) {
    dnnl::error::wrap_c_api(dnnl_primitive_execute(p.get(), s.get(), int(args.size()), args.begin()),
                            "could not execute a primitive");
}

// A memory object without a buffer yet (DNNL_MEMORY_NONE is an integer constant).
void* const kNoBuffer = nullptr;

dnnl::primitive_attr user_scratchpad() {
    dnnl::primitive_attr a;
    a.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // per-thread scratch below, never a shared global one
    return a;
}

}  // namespace

struct PackedWeight::Impl {
    struct Slice {
        int64_t      m0 = 0, mb = 0;  // W rows [m0, m0 + mb)
        memory::desc desc;            // the provider's layout for weights {k, mb}
        memory       mem;             // the slice's bytes in `buffer`
    };
    ElemType           type = ElemType::F32;
    int64_t            m = 0, k = 0;
    HugePageBuffer     buffer;  // every slice, one mapping (huge pages: the weights are what each step streams)
    std::vector<Slice> slices;
    KMajorWeight       small;  // small weights only: products of <= kSmallGemmMaxRows rows run on it (small_gemm.h)
    size_t             bytes = 0;
};

PackedWeight::PackedWeight(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PackedWeight::~PackedWeight() = default;
int64_t PackedWeight::rows() const {
    return impl_->m;
}
int64_t PackedWeight::cols() const {
    return impl_->k;
}
ElemType PackedWeight::type() const {
    return impl_->type;
}
int PackedWeight::slices() const {
    return int(impl_->slices.size());
}
size_t PackedWeight::bytes() const {
    return impl_->bytes;
}

namespace {

// Outputs per panel of oneDNN's f32 brgemm weights layout on AVX-512 (BA16a64b).
constexpr int64_t kOneDnnPanel = 64;

// Floats between the k-major panels of a packed f32 weight {k, n} when oneDNN laid it out as BA16a64b: blocks of 16 k
// x 64 outputs, outputs innermost, the k blocks of one 64-output panel consecutive, so that within a panel W(o, c)
// sits at c * 64 + o % 64 (small_gemm.h's panels). 0 for any other layout (another ISA's, a bf16 one).
int64_t kmajor_panel_stride(const memory::desc& d) {
    const dnnl_memory_desc_t& md = d.data;
    if (md.ndims != 2 || md.format_kind != dnnl_blocked || md.offset0 != 0 || md.data_type != dnnl_f32) return 0;
    const auto& b = md.format_desc.blocking;
    if (b.inner_nblks != 2 || b.inner_blks[0] != 16 || b.inner_idxs[0] != 0 || b.inner_blks[1] != kOneDnnPanel ||
        b.inner_idxs[1] != 1)
        return 0;
    const int64_t panel_stride = int64_t(md.padded_dims[0]) * kOneDnnPanel;
    return b.strides[0] == 16 * kOneDnnPanel && b.strides[1] == panel_stride ? panel_stride : 0;
}

}  // namespace

struct PackedGemm::Impl {
    // A matmul and, per pool thread, the memory objects it runs on: made once and pointed at each call's buffers
    // (set_data_handle), because every dnnl::memory holds a shared_ptr whose control block is a heap allocation.
    struct Prim {
        dnnl::matmul        prim;
        memory::desc        scratch;
        std::vector<memory> x, y, sp;  // per thread: src, dst, scratchpad
    };
    // The f32 -> bf16 reorder of x, with its source and destination memory objects (as Prim's).
    struct ToBf16 {
        dnnl::reorder reorder;
        memory        src, dst;
    };
    int                       n_threads = 1;
    dnnl::engine              eng{dnnl::engine::kind::cpu, 0};
    std::vector<dnnl::stream> streams;  // one per pool thread index

    // Everything below is per product; one product at a time.
    std::mutex                                                 mu;
    std::map<std::tuple<int, int64_t, int64_t, int64_t>, Prim> prims;    // (type, rows, cols, k) -> matmul
    std::map<std::tuple<int64_t, int64_t, int64_t>, ToBf16>    to_bf16;  // (rows, k, ld of x) -> its reorder
    std::vector<uint16_t>                                      xb;       // x in bf16, padded rows
    std::vector<float>                                         xf;       // x in f32 when it must be padded/compacted
    std::vector<float>                                         check;    // small_gemm's rows beside oneDNN's
    // Few-row splits (matmul): per weight shape (m, k, type, slices), one bit per row count n (n - kSmallGemmMaxRows
    // - 1) saying whether small_gemm's rows were checked against oneDNN's, and one whether they had the same bits.
    std::map<std::tuple<int64_t, int64_t, int, size_t>, std::pair<uint32_t, uint32_t>> few_rows_bits;
    std::vector<float>                                                                 bias;  // the bias row widened
    std::vector<std::vector<float>> ybuf;     // per thread: a slice's output
    std::vector<std::vector<char>>  scratch;  // per thread: the primitive's scratchpad
    struct Block {
        int64_t r0, r, rows;  // x rows [r0, r0 + r), run as `rows` (>= r: padding rows computed and dropped)
        size_t  s;            // slice of W
        Prim*   prim;
    };
    std::vector<Block> blocks;  // the current product's pool tasks

    // PackedGemm::matmul's paths (the caller holds mu). x: [n, k], y: [n, m], b: the bias row widened or null.
    void        matmul_small(CMatF x, const PackedWeight::Impl& W, const float* b, MatF y, ThreadPool& pool);
    void        matmul_few_rows(CMatF x, const PackedWeight::Impl& W, const float* b, MatF y, ThreadPool& pool);
    void        matmul_onednn(CMatF x, const PackedWeight::Impl& W, const float* b, MatF y, ThreadPool& pool);
    void        check_few_rows(CMatF x, const PackedWeight::Impl& W, const float* b, MatF y,
                               std::pair<uint32_t, uint32_t>& bits, uint32_t bit);
    const void* activations(CMatF x, int64_t k, ElemType type, int64_t src_rows);
    void run_block(const Block& bl, const PackedWeight::Impl& W, const void* src, int64_t k, const float* b, MatF y,
                   int thr);

    // The weights layout oneDNN's matmul picks for {k, cols} (the same for every row count: checked in the tests by
    // the results, and by hand with impl_info_str() = "brg:avx512_core_bf16" for 1..512 rows).
    memory::desc weights_layout(ElemType t, int64_t cols, int64_t k) const {
        const memory::desc xd({64, k}, dnnl_type(t), tag::ab), wd({k, cols}, dnnl_type(t), tag::any),
            yd({64, cols}, dt::f32, tag::ab);
        return dnnl::matmul::primitive_desc(dnnl::matmul::desc(xd, wd, yd), user_scratchpad(), eng).weights_desc();
    }

    // Padding rows are computed and dropped, and they are not free: brgemm's time grows with the rows it computes (bf16
    // [6144, 4096] slice: 33 rows 8.7 ms, 48 rows 11.9 ms; f32 [344, 128]: 3 rows 2.9 us, 16 rows 12.9 us, paid again
    // at every step). Neither is a primitive: building one takes 0.3-0.7 ms on the 2-core Zen 5 VM (f32, 9-336 rows of
    // tiny-llada's weights), once per row count and shape, and a run meets a new row count at almost every step (the
    // masked rows left, the salient sets): on tiny-llada that is more than the GEMM itself. So a product runs with its
    // row count padded to a multiple of 16, whose primitive a run builds once per shape (at most 16 per shape), unless
    // its padding alone would cost more than a build (kPadWasteFlops: the wide weights of real models). Exact counts
    // from a count's fourth product, which a layer stack meets within one step (8 layers, one salient count), would
    // build 30 primitives in a tiny-llada DyLLM `generate` (11 ms of 93); padded it builds 12. A lazily bought exact
    // primitive (rent-or-buy over the padding wasted so far) is no faster, and would allocate at an arbitrary later
    // step of a steady run (tests/unit/test_step_allocations.cpp). Above 256 rows always padded (at
    // most 6%).
    static int64_t primitive_rows(int64_t n, int64_t m, int64_t k) {
        const int64_t padded = (n + 15) / 16 * 16;
        if (n > 256 || padded == n) return padded;
        return 2.0 * double(padded - n) * double(m) * double(k) > kPadWasteFlops ? n : padded;
    }

    Prim& prim(ElemType t, int64_t rows, int64_t cols, int64_t k, const memory::desc& wdesc) {
        const auto key = std::make_tuple(int(t), rows, cols, k);
        auto       it  = prims.find(key);
        if (it != prims.end()) return it->second;
        const memory::desc           xd({rows, k}, dnnl_type(t), tag::ab), yd({rows, cols}, dt::f32, tag::ab);
        dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(xd, wdesc, yd), user_scratchpad(), eng);
        Prim                         p{dnnl::matmul(pd), pd.scratchpad_desc(), {}, {}, {}};
        for (int t = 0; t < n_threads; ++t) {
            p.x.emplace_back(xd, eng, kNoBuffer);
            p.y.emplace_back(yd, eng, kNoBuffer);
            p.sp.emplace_back(p.scratch, eng, kNoBuffer);
        }
        return prims.emplace(key, std::move(p)).first->second;
    }
};

PackedGemm::PackedGemm(int n_threads) : impl_(std::make_unique<Impl>()) {
    one_omp_thread();
    impl_->n_threads = std::max(1, n_threads);
    for (int t = 0; t < impl_->n_threads; ++t) impl_->streams.emplace_back(impl_->eng);
    impl_->ybuf.resize(size_t(impl_->n_threads));
    impl_->scratch.resize(size_t(impl_->n_threads));
}
PackedGemm::~PackedGemm() = default;

size_t PackedGemm::primitives() const {
    std::lock_guard<std::mutex> lk(impl_->mu);
    return impl_->prims.size();
}

std::string PackedGemm::provider() {
    const dnnl_version_t* v = dnnl_version();
    return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}

namespace {

// The implementation oneDNN picks on this CPU for a [64, 128] x [128, 128] matmul of type t ("gemm:jit",
// "brg:avx512_core", ...), or "" when it has none.
std::string matmul_impl(dt t) {
    try {
        one_omp_thread();
        const dnnl::engine eng(dnnl::engine::kind::cpu, 0);
        const memory::desc xd({64, 128}, t, tag::ab), wd({128, 128}, t, tag::any), yd({64, 128}, dt::f32, tag::ab);
        return dnnl::matmul::primitive_desc(dnnl::matmul::desc(xd, wd, yd), user_scratchpad(), eng).impl_info_str();
    } catch (const dnnl::error&) {
        return "";
    }
}

}  // namespace

bool PackedGemm::supports(ElemType t) {
    if (t == ElemType::F32) return true;
    if (t != ElemType::BF16) return false;
    // oneDNN 2.6 builds bf16 matmuls on AVX-512 CPUs only (emulated on avx512_core, native with avx512_bf16); an AVX2
    // CPU (AMD Zen 2/3, most laptops) has none. Asked once: the answer is the CPU's.
    static const bool bf16 = !matmul_impl(dt::bf16).empty();
    return bf16;
}

bool PackedGemm::small_gemm_for_all_rows() {
    static const bool generic = [] {  // "gemm:jit" on AVX2, "brg:avx512_core" above
        const std::string impl = matmul_impl(dt::f32);
        return !impl.empty() && impl.rfind("brg", 0) != 0;
    }();
    return generic;
}

std::shared_ptr<const PackedWeight> PackedGemm::pack(ConstMat w, ThreadPool& pool, std::string* error) const {
    auto fail = [&](const std::string& why) -> std::shared_ptr<const PackedWeight> {
        if (error) *error = why;
        return nullptr;
    };
    if (!supports(w.type))
        return fail(std::string("oneDNN ") + (w.type == ElemType::BF16 ? "has no bf16" : "2.6 has no f16") +
                    " matmul on this CPU");
    if (w.rows <= 0 || w.cols <= 0) return fail("empty weight");
    std::lock_guard<std::mutex> lk(impl_->mu);
    one_omp_thread();
    auto p  = std::make_unique<PackedWeight::Impl>();
    p->type = w.type;
    p->m    = w.rows;
    p->k    = w.cols;
    // Slices: two per thread when wide enough (dynamic hand-out evens out a thread the OS delays), 64-column aligned.
    // A narrow weight stays whole: matmul splits x's rows instead (every thread reads the whole weight, which fits in
    // cache), and a product of a few rows runs as one primitive writing y directly instead of one per slice.
    const int64_t n_slices = impl_->n_threads == 1 || w.rows < kPackedWholeBelowRows
                                 ? 1
                                 : std::clamp<int64_t>(w.rows / kPackedSliceMinCols, 1, 2 * impl_->n_threads);
    const int64_t width    = std::min(w.rows, ((w.rows + n_slices - 1) / n_slices + 63) / 64 * 64);
    try {
        std::map<int64_t, dnnl::reorder> reorders;  // per slice width
        std::vector<size_t>              offsets;
        size_t                           total = 0;
        for (int64_t m0 = 0; m0 < w.rows; m0 += width) {
            PackedWeight::Impl::Slice s;
            s.m0   = m0;
            s.mb   = std::min(width, w.rows - m0);
            s.desc = impl_->weights_layout(w.type, s.mb, w.cols);
            offsets.push_back(total);
            total += (s.desc.get_size() + 4095) / 4096 * 4096;  // page-aligned slices: no two tasks write one page
            p->slices.push_back(std::move(s));
        }
        try {
            p->buffer = HugePageBuffer(total);
        } catch (const std::bad_alloc&) {
            return fail("out of memory for the packed copy (" + std::to_string(total >> 20) + " MiB)");
        }
        for (size_t i = 0; i < p->slices.size(); ++i) {
            PackedWeight::Impl::Slice& s = p->slices[i];
            s.mem                        = memory(s.desc, impl_->eng, p->buffer.data() + offsets[i]);
            p->bytes += s.desc.get_size();
            if (!reorders.count(s.mb)) {
                // W rows [m0, m0 + mb) are the matmul's weights {k, mb} read with strides {1, ld}.
                const memory::desc src({w.cols, s.mb}, dnnl_type(w.type), memory::dims{1, w.ld});
                reorders.emplace(s.mb,
                                 dnnl::reorder(dnnl::reorder::primitive_desc(impl_->eng, src, impl_->eng, s.desc)));
            }
        }
        bool       ok  = true;
        const auto run = [&](int64_t i, int thr) {
            one_omp_thread();
            PackedWeight::Impl::Slice& s = p->slices[size_t(i)];
            const memory::desc         src({w.cols, s.mb}, dnnl_type(w.type), memory::dims{1, w.ld});
            memory                     src_mem(src, impl_->eng, const_cast<void*>(w.row_ptr(s.m0)));
            try {
                reorders.at(s.mb).execute(impl_->streams[size_t(thr)], src_mem, s.mem);
                p->buffer.warm(offsets[size_t(i)], s.desc.get_size());
            } catch (const dnnl::error&) {
                ok = false;  // tasks must not throw; reported below
            }
        };
        if (pool.size() <= impl_->n_threads)
            pool.parallel_for(int64_t(p->slices.size()), run);
        else
            for (size_t i = 0; i < p->slices.size(); ++i) run(int64_t(i), 0);
        if (!ok) return fail("oneDNN reorder into the packed layout failed");
        // A small weight (a small model's: kilobytes to a megabyte) also serves few-row products (small_gemm.h):
        // straight from the packed copy when that is fp32 in k-major panels, else from a k-major copy of its own.
        if (size_t(w.rows) * size_t(w.cols) * sizeof(float) <= kSmallGemmMaxWeightBytes) {
            const int64_t panel_stride = p->slices.size() == 1 ? kmajor_panel_stride(p->slices[0].desc) : 0;
            if (w.type == ElemType::F32 && panel_stride > 0) {
                p->small = kmajor_view(reinterpret_cast<const float*>(p->buffer.data() + offsets[0]), w.rows, w.cols,
                                       kOneDnnPanel, panel_stride);
            } else {
                p->small = make_kmajor(w);
                p->bytes += p->small.bytes();
            }
        }
    } catch (const dnnl::error& e) {
        return fail(std::string("oneDNN could not pack it: ") + e.what());
    }
    return std::make_shared<const PackedWeight>(std::move(p));
}

// Few rows (or any row count where oneDNN's f32 kernel is the generic sgemm): small_gemm on the k-major copy.
void PackedGemm::Impl::matmul_small(CMatF x, const PackedWeight::Impl& W, const float* b, MatF y, ThreadPool& pool) {
    const int64_t n = x.rows, m = W.m, k = W.k;
    const double  flops = 2.0 * double(n) * double(m) * double(k);
    // Split by output columns (whole vectors or panels, so every output is computed as on one thread) when the
    // product pays for a hand-out: its flops (kPackedParallelFlops), or, with a few rows, the weight it streams
    // (kSmallSplitWeightBytes).
    const int64_t align  = kmajor_slice_align(W.small);
    const int64_t groups = (m + align - 1) / align;
    const bool    worth  = flops >= kPackedParallelFlops || double(m) * double(k) * 4.0 >= kSmallSplitWeightBytes;
    const int64_t parts  = pool.size() > 1 && worth ? std::min<int64_t>(pool.size(), groups) : 1;
    if (parts <= 1) {
        small_gemm(x, W.small, b, y);
        return;
    }
    const int64_t per = (groups + parts - 1) / parts * align;
    pool.parallel_for(parts, [&](int64_t i, int) {
        const int64_t o0 = i * per, o1 = std::min(m, o0 + per);
        if (o0 >= o1) return;
        small_gemm(x, kmajor_slice(W.small, o0, o1), b ? b + o0 : nullptr, MatF{y.data + o0, n, o1 - o0, y.ld});
    });
}

// A few-row count whose small_gemm rows were found to carry oneDNN's bits: its rows split over the pool in
// parts of at most kSmallGemmMaxRows rows on small_gemm.
void PackedGemm::Impl::matmul_few_rows(CMatF x, const PackedWeight::Impl& W, const float* b, MatF y, ThreadPool& pool) {
    const int64_t n = x.rows, m = W.m, k = W.k;
    const int64_t parts = std::min<int64_t>(pool.size(), (n + kSmallGemmMaxRows - 1) / kSmallGemmMaxRows);
    const int64_t per   = (n + parts - 1) / parts;
    pool.parallel_for(parts, [&](int64_t i, int) {
        const int64_t r0 = i * per, r1 = std::min(n, r0 + per);
        if (r0 < r1) small_gemm(CMatF{x.row(r0), r1 - r0, k, x.ld}, W.small, b, MatF{y.row(r0), r1 - r0, m, y.ld});
    });
}

// After a few-row product ran on oneDNN: small_gemm recomputes its first and last rows and records whether
// they carry the same bits (`bits`: checked, same; `bit`: this row count).
void PackedGemm::Impl::check_few_rows(CMatF x, const PackedWeight::Impl& W, const float* b, MatF y,
                                      std::pair<uint32_t, uint32_t>& bits, uint32_t bit) {
    const int64_t n = x.rows, m = W.m, k = W.k;
    grow(check, size_t(m));
    bool same = true;
    for (const int64_t i : {int64_t(0), n - 1}) {
        small_gemm(CMatF{x.row(i), 1, k, x.ld}, W.small, b, MatF{check.data(), 1, m, m});
        same = same && std::memcmp(y.row(i), check.data(), size_t(m) * 4) == 0;
    }
    bits.first |= bit;
    if (same) bits.second |= bit;
}

// oneDNN: the product as blocks of (rows of x, slice of W), one pool task each.
void PackedGemm::Impl::matmul_onednn(CMatF x, const PackedWeight::Impl& W, const float* b, MatF y, ThreadPool& pool) {
    const int64_t n = x.rows, m = W.m, k = W.k;
    const double  flops = 2.0 * double(n) * double(m) * double(k);
    one_omp_thread();

    // The work as blocks of (rows of x, slice of W), one pool task each. A weight cut into column slices gives one
    // block per slice over all rows; a weight packed whole (narrow: pack() keeps it in one slice) gives row chunks of
    // x when the product is worth splitting, so every thread reads the whole (small, cache-resident) weight.
    // Per-thread buffers are indexed by the pool's thread index: a bigger pool than the one sized for runs inline.
    // Not while the pool backs off (thread_pool.h): its tasks would run one after the other on this thread, as row
    // chunks padded to whole primitives and copied out, where one block over every row (what -t 1 runs) is one
    // primitive written in place.
    const bool may_split =
        pool.size() > 1 && pool.size() <= n_threads && flops >= kPackedParallelFlops && !pool.backing_off();
    blocks.clear();
    if (W.slices.size() > 1) {
        const int64_t rows = primitive_rows(n, m, k);
        for (size_t s = 0; s < W.slices.size(); ++s) blocks.push_back({0, n, rows, s, nullptr});
    } else {
        // Chunks of a multiple of kPackedRowChunkMin rows, the last one taking the rest: every chunk but the last runs
        // a primitive of its exact row count writing y in place, and when n is a multiple of 16 so does the last, with
        // no padded copy of x. The longest chunk is the same as with equal chunks padded to 16 rows each, which is
        // what ran before: two halves of tiny-llada's 336 rows (168, padded to 176) read a padded copy of x made on the
        // caller and wrote through per-thread buffers; where the two vCPUs sat far apart that made a split product no
        // faster than one thread.
        const int64_t parts =
            may_split ? std::max<int64_t>(1, std::min<int64_t>(pool.size(), n / kPackedRowChunkMin)) : 1;
        const int64_t chunk =
            parts == 1 ? n
                       : ((n + parts - 1) / parts + kPackedRowChunkMin - 1) / kPackedRowChunkMin * kPackedRowChunkMin;
        for (int64_t r0 = 0; r0 < n; r0 += chunk) {
            const int64_t r = std::min(chunk, n - r0);
            blocks.push_back({r0, r, primitive_rows(r, m, k), 0, nullptr});
        }
    }
    int64_t src_rows = 0;  // rows the primitives read from x's buffer (padding included)
    for (const Block& bl : blocks) src_rows = std::max(src_rows, bl.r0 + bl.rows);
    const void* src = activations(x, k, W.type, src_rows);

    // The primitives, built on this thread; buffers sized before the tasks run.
    size_t ybytes = 0, sbytes = 0;
    try {
        for (Block& bl : blocks) {
            const PackedWeight::Impl::Slice& sl = W.slices[bl.s];
            bl.prim                             = &prim(W.type, bl.rows, sl.mb, k, sl.desc);
            ybytes                              = std::max(ybytes, size_t(bl.rows * sl.mb));
            sbytes                              = std::max(sbytes, bl.prim->scratch.get_size());
        }
    } catch (const dnnl::error& e) {
        die("matmul primitive creation", e);
    }
    for (int t = 0; t < n_threads; ++t) {
        grow(ybuf[size_t(t)], ybytes);
        grow(scratch[size_t(t)], sbytes);
    }
    if (may_split && blocks.size() > 1) {
        pool.parallel_for(int64_t(blocks.size()),
                          [&](int64_t i, int thr) { run_block(blocks[size_t(i)], W, src, k, b, y, thr); });
    } else {
        for (const Block& bl : blocks) run_block(bl, W, src, k, b, y, 0);  // inline (the lock makes slot 0 ours)
    }
}

// x as the primitives read it: [src_rows, k] contiguous, in the weight's type (x itself when it already is).
const void* PackedGemm::Impl::activations(CMatF x, int64_t k, ElemType type, int64_t src_rows) {
    const int64_t n = x.rows;
    try {
        if (type == ElemType::BF16) {
            grow(xb, size_t(src_rows * k));
            const auto key = std::make_tuple(n, k, x.ld);
            auto       it  = to_bf16.find(key);
            if (it == to_bf16.end()) {
                const memory::desc s({n, k}, dt::f32, memory::dims{x.ld, 1}), d({n, k}, dt::bf16, tag::ab);
                ToBf16 r{dnnl::reorder(dnnl::reorder::primitive_desc(eng, s, eng, d)), memory(s, eng, kNoBuffer),
                         memory(d, eng, kNoBuffer)};
                it = to_bf16.emplace(key, std::move(r)).first;
            }
            ToBf16& r = it->second;
            r.src.set_data_handle(const_cast<float*>(x.data));
            r.dst.set_data_handle(xb.data());
            execute(r.reorder, streams[0], {{DNNL_ARG_FROM, r.src.get()}, {DNNL_ARG_TO, r.dst.get()}});
            return xb.data();
        }
        if (src_rows != n || x.ld != k) {
            grow(xf, size_t(src_rows * k));
            for (int64_t i = 0; i < n; ++i) std::memcpy(xf.data() + i * k, x.row(i), size_t(k) * 4);
            return xf.data();
        }
    } catch (const dnnl::error& e) {
        die("f32 -> bf16 reorder of the activations", e);
    }
    return x.data;
}

// One block on pool thread `thr`: its primitive, then (unless it wrote y in place) its rows copied into y with the
// bias.
void PackedGemm::Impl::run_block(const Block& bl, const PackedWeight::Impl& W, const void* src, int64_t k,
                                 const float* b, MatF y, int thr) {
    one_omp_thread();
    const PackedWeight::Impl::Slice& sl    = W.slices[bl.s];
    const size_t                     esize = W.type == ElemType::BF16 ? 2 : 4;
    // The primitive writes y itself when it covers whole rows of y exactly and there is no bias to add.
    const bool direct = sl.mb == W.m && bl.rows == bl.r && y.ld == W.m && !b;
    float*     dst    = direct ? y.row(bl.r0) : ybuf[size_t(thr)].data();
    try {
        const size_t t = size_t(thr);
        Prim&        P = *bl.prim;
        P.x[t].set_data_handle(const_cast<char*>(static_cast<const char*>(src) + size_t(bl.r0 * k) * esize));
        P.y[t].set_data_handle(dst);
        P.sp[t].set_data_handle(scratch[t].data());
        execute(P.prim, streams[t],
                {{DNNL_ARG_SRC, P.x[t].get()},
                 {DNNL_ARG_WEIGHTS, sl.mem.get()},
                 {DNNL_ARG_DST, P.y[t].get()},
                 {DNNL_ARG_SCRATCHPAD, P.sp[t].get()}});
    } catch (const dnnl::error& e) {
        die("matmul", e);
    }
    if (direct) return;
    for (int64_t i = 0; i < bl.r; ++i) {
        const float* r = dst + i * sl.mb;
        float*       o = y.row(bl.r0 + i) + sl.m0;
        if (b)
            for (int64_t c = 0; c < sl.mb; ++c) o[c] = r[c] + b[sl.m0 + c];
        else
            std::memcpy(o, r, size_t(sl.mb) * 4);
    }
}

void PackedGemm::matmul(CMatF x, const PackedWeight& w, ConstMat bias, MatF y, ThreadPool& pool) const {
    const PackedWeight::Impl& W = w.impl();
    const int64_t             n = x.rows, m = W.m, k = W.k;
    if (n == 0 || m == 0) return;
    Impl&                       I = *impl_;
    std::lock_guard<std::mutex> lk(I.mu);
    const double                flops = 2.0 * double(n) * double(m) * double(k);
    const float*                b     = nullptr;  // the bias row widened, added to the outputs by every path
    if (bias.data) {
        if (I.bias.size() < size_t(m)) I.bias.resize(size_t(m));
        widen_row(bias.data, bias.type, I.bias.data(), m);
        b = I.bias.data();
    }
    if ((n <= kSmallGemmMaxRows || small_gemm_for_all_rows()) && !W.small.empty()) {
        I.matmul_small(x, W, b, y, pool);
        return;
    }
    // A product of kSmallGemmMaxRows + 1 to 2 kPackedRowChunkMin - 1 rows has no two row chunks for oneDNN (below)
    // and would run on one thread at any pool size: a dLLM-Cache step's 16 transferred rows, DyLLM's salient rows.
    // Where small_gemm gives this weight's products oneDNN's bits (fp32, oneDNN's brgemm not blocking k: on a Zen 4
    // every fp32 weight of k <= 512 tried, none above, no bf16), its rows split over the pool in parts of at
    // most kSmallGemmMaxRows rows run on small_gemm: the same outputs, on every thread. The first such product of each
    // weight shape and row count (oneDNN's kernel, and so its summation order, is a function of those, not of the
    // values) runs on oneDNN, and small_gemm recomputes its first and last rows (oneDNN's main and tail row blocks):
    // their bits decide (a different summation order shows in nearly every output).
    const bool few_rows = n > kSmallGemmMaxRows && n < 2 * kPackedRowChunkMin && !W.small.empty() && pool.size() > 1 &&
                          pool.size() <= I.n_threads && flops >= kPackedParallelFlops && !pool.backing_off();
    static_assert(2 * kPackedRowChunkMin - kSmallGemmMaxRows - 1 <= 32, "one bit per few-row count");
    if (!few_rows) {
        I.matmul_onednn(x, W, b, y, pool);
        return;
    }
    const uint32_t                 few_bit  = uint32_t(1) << (n - kSmallGemmMaxRows - 1);
    std::pair<uint32_t, uint32_t>& few_bits = I.few_rows_bits[{m, k, int(W.type), W.slices.size()}];  // (checked, same)
    if (few_bits.second & few_bit) {
        I.matmul_few_rows(x, W, b, y, pool);
        return;
    }
    I.matmul_onednn(x, W, b, y, pool);
    if (!(few_bits.first & few_bit)) I.check_few_rows(x, W, b, y, few_bits, few_bit);
}

}  // namespace dyllm::cpu
