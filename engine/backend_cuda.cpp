// CudaBackend: the Backend interface on one CUDA device (built only with DYLLM_CUDA=ON). One stream, one cuBLAS
// handle, device memory owned through unique_ptr/shared_ptr with cudaFree deleters; host index spans are uploaded
// into reusable device buffers. Weights keep their stored BF16/F16 (F32 is converted to BF16); caches are BF16;
// activations F32 with fp32 norms, RoPE, softmax and cosine statistics (engine/README.md decision 9). Op arguments are
// checked once by the public Backend ops (engine/backend_checks.cpp); CUDA/cuBLAS failures throw BackendError.
#define DYLLM_CUDA_ERROR ::dyllm::BackendError
#include "kernels/cuda/cuda_check.cuh"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <memory>
#include <span>
#include <type_traits>
#include <vector>

#include "engine/backend.h"
#include "engine/backend_cuda.h"
#include "engine/errors.h"
#include "engine/quant_type.h"
#include "kernels/common/attention_approx_math.h"
#include "kernels/common/dtype_convert.h"
#include "kernels/common/scalar_math.h"
#include "kernels/cpu/ref/quant.h"
#include "kernels/cuda/add_rows.cuh"
#include "kernels/cuda/attention.cuh"
#include "kernels/cuda/attention_approx.cuh"
#include "kernels/cuda/attention_cols.cuh"
#include "kernels/cuda/cosine_rows.cuh"
#include "kernels/cuda/cublas_gemm.cuh"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/embed.cuh"
#include "kernels/cuda/mat.cuh"
#include "kernels/cuda/rms_norm.cuh"
#include "kernels/cuda/rope.cuh"
#include "kernels/cuda/rows.cuh"
#include "kernels/cuda/score_logits.cuh"

namespace dyllm {

static_assert(uint8_t(cuda::ElemType::F32) == uint8_t(DType::F32) &&
                  uint8_t(cuda::ElemType::F16) == uint8_t(DType::F16) &&
                  uint8_t(cuda::ElemType::BF16) == uint8_t(DType::BF16),
              "cuda::ElemType mirrors the float members of dyllm::DType");

int cuda_device_count(std::string* why_none) {
    int               n   = 0;
    const cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess) {
        // cudaErrorNoDevice / cudaErrorInsufficientDriver (this machine) mean "no GPU", not a failure; any other
        // error is reported the same way, since the caller can only fall back to the CPU.
        if (why_none) *why_none = cudaGetErrorName(err);
        (void)cudaGetLastError();  // reset the runtime's last-error state so later calls start clean
        return 0;
    }
    if (n == 0 && why_none) *why_none = "cudaErrorNoDevice";
    return n;
}

namespace {

struct CudaFree {
    void operator()(void* p) const noexcept {
        if (p) (void)cudaFree(p);  // never throws from a deleter; a failure here has nowhere to go
    }
};
using DevicePtr = std::unique_ptr<void, CudaFree>;

struct StreamDeleter {
    void operator()(cudaStream_t s) const noexcept {
        if (s) (void)cudaStreamDestroy(s);
    }
};
struct CublasDeleter {
    void operator()(cublasHandle_t h) const noexcept {
        if (h) (void)cublasDestroy(h);
    }
};

std::string shp(const TensorView& v) {
    // Appends instead of operator+ chains: g++ 12 reports a false -Wrestrict on "[" + std::string (GCC bug 105329).
    std::string s("[");
    s.append(std::to_string(v.rows())).append(", ").append(std::to_string(v.cols())).append("] ");
    return s.append(dtype_name(v.dtype));
}

// A 2-D device matrix descriptor of a view the public Backend op has already checked (engine/backend_checks.cpp:
// device memory, float storage, contiguous columns, rows at a fixed stride).
cuda::Mat dmat(const TensorView& v) {
    return cuda::Mat{v.data, cuda::ElemType(uint8_t(v.dtype)), v.rows(), v.cols(),
                     v.nb[1] / int64_t(dtype_size(v.dtype))};
}

// The CUDA attention kernels keep one query head in registers/shared memory: head_dim is capped (a limit of this
// backend, not an argument check, so it stays here).
constexpr int kMaxHeadDim = 256;
void          check_head_dim(AttentionShape s, const char* op) {
             DYLLM_ASSERT(s.head_dim <= kMaxHeadDim, std::string(op) + ": head_dim " + std::to_string(s.head_dim) +
                                                         " exceeds the CUDA kernels' limit of " + std::to_string(kMaxHeadDim));
}

// A growable device buffer reused across calls (index uploads, matmul scratch, small outputs).
class DeviceBuffer {
public:
    // At least `bytes` of device memory. Growing waits for `stream` first, so no queued kernel still reads the old
    // allocation when it is freed.
    void* reserve(size_t bytes, cudaStream_t stream) {
        if (bytes <= cap_ && ptr_) return ptr_.get();
        CUDA_CHECK(cudaStreamSynchronize(stream));
        ptr_.reset();
        const size_t cap = std::max<size_t>(256, bytes + bytes / 2);
        void*        p   = nullptr;
        CUDA_CHECK(cudaMalloc(&p, cap));
        ptr_.reset(p);
        cap_ = cap;
        return p;
    }

private:
    DevicePtr ptr_;
    size_t    cap_ = 0;
};

class CudaBackend final : public Backend {
public:
    explicit CudaBackend(int device) : device_(device) {
        CUDA_CHECK(cudaSetDevice(device));
        cudaDeviceProp prop{};
        CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
        description_ =
            std::string("cuda (") + prop.name + ", sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ")";
        cudaStream_t s = nullptr;
        CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        stream_.reset(s, StreamDeleter{});
        int pools = 0;
        CUDA_CHECK(cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, device));
        mem_pool_ = pools != 0;
        if (mem_pool_) {
            // Keep freed memory in the pool across synchronisations instead of returning it to the driver.
            cudaMemPool_t pool = nullptr;
            CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
            uint64_t keep = UINT64_MAX;
            CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
        }
        cublasHandle_t h = nullptr;
        CUBLAS_CHECK(cublasCreate(&h));
        cublas_.reset(h);
        CUBLAS_CHECK(cublasSetStream(h, s));
    }

    ~CudaBackend() override {
        if (stream_) (void)cudaStreamSynchronize(stream_.get());  // queued work may still read the buffers below
    }

    const char* name() const override { return "cuda"; }
    Device      device() const override { return Device::Cuda; }
    std::string description() const override { return description_; }
    DType       cache_dtype() const override { return DType::BF16; }

    bool supports(OpKind op, DType dtype) const override { return op_supports_dtype(op, dtype); }

    // ---- memory -----------------------------------------------------------------------------------------------
    Tensor alloc(DType dtype, int64_t rows, int64_t cols) override {
        DYLLM_ASSERT(rows >= 0 && cols >= 0,
                     "alloc: negative shape [" + std::to_string(rows) + ", " + std::to_string(cols) + "]");
        const size_t bytes = size_t(rows) * size_t(cols) * dtype_size(dtype);
        const size_t size  = std::max<size_t>(bytes, 256);  // never a null pointer
        void*        p     = nullptr;
        // The forward pass allocates and frees temporaries per op. With stream-ordered allocation (cudaMallocAsync
        // from a pool that keeps its memory) a freed block is reused by later work on the same stream without the
        // device-wide synchronisation of cudaFree. The deleter holds the stream so it outlives every tensor.
        const cudaError_t err = mem_pool_ ? cudaMallocAsync(&p, size, stream()) : cudaMalloc(&p, size);
        if (err != cudaSuccess) {
            (void)cudaGetLastError();
            throw BackendError("cuda backend: cannot allocate " + std::to_string(bytes) + " bytes for a [" +
                               std::to_string(rows) + ", " + std::to_string(cols) + "] " + dtype_name(dtype) +
                               " tensor: " + cudaGetErrorName(err));
        }
        std::shared_ptr<void> owner;
        if (mem_pool_) {
            owner = std::shared_ptr<void>(p, [s = stream_](void* q) noexcept { (void)cudaFreeAsync(q, s.get()); });
        } else {
            owner = std::shared_ptr<void>(p, CudaFree{});
        }
        if (bytes) CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, stream()));
        return Tensor(TensorView::matrix(p, dtype, Device::Cuda, rows, cols), std::move(owner));
    }

    void upload(const TensorView& dst, const void* host_src) override {
        const cuda::Mat d = dmat_any_layout(dst, "upload", "destination");
        if (dst.numel() == 0) return;
        const size_t row_bytes = size_t(d.cols) * size_t(cuda::elem_size(d.type));
        CUDA_CHECK(cudaMemcpy2DAsync(d.data, size_t(dst.nb[1]), host_src, row_bytes, row_bytes, size_t(d.rows),
                                     cudaMemcpyHostToDevice, stream_.get()));
        CUDA_CHECK(cudaStreamSynchronize(stream_.get()));  // the caller may free host_src on return
    }

    void download(const TensorView& src, void* host_dst) override {
        const cuda::Mat s = dmat_any_layout(src, "download", "source");
        if (src.numel() == 0) return;
        const size_t row_bytes = size_t(s.cols) * size_t(cuda::elem_size(s.type));
        CUDA_CHECK(cudaMemcpy2DAsync(host_dst, row_bytes, s.data, size_t(src.nb[1]), row_bytes, size_t(s.rows),
                                     cudaMemcpyDeviceToHost, stream_.get()));
        CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
    }

    void synchronize() override { CUDA_CHECK(cudaStreamSynchronize(stream_.get())); }

    TensorView prepare_weight(const TensorView& host_weight, const std::string& name) override {
        DYLLM_ASSERT(
            is_float(host_weight.dtype) || (is_quantized(host_weight.dtype) && host_weight.device == Device::Cpu),
            "prepare_weight: " + name + " has dtype " + dtype_name(host_weight.dtype) +
                ", expected F32/F16/BF16 (or a quantized type in host memory)");
        if (host_weight.device == Device::Cuda) return host_weight;
        DYLLM_ASSERT(host_weight.contiguous(),
                     "prepare_weight: " + name + " " + shp(host_weight) + " is not contiguous");
        const int64_t rows = host_weight.rows(), cols = host_weight.cols();
        // The same host tensor prepared twice (a tied LM head is the embedding table) is uploaded once.
        for (const PreparedWeight& pw : prepared_)
            if (pw.host == host_weight.data && pw.host_dtype == host_weight.dtype && pw.rows == rows && pw.cols == cols)
                return pw.device;
        if (is_quantized(host_weight.dtype)) {
            // Quantized weights are dequantized to BF16 at load (the host's tested block decoders, then one rounding
            // to bf16 each), so every device op sees a BF16 weight: 2 bytes per weight on the device, not the blocks.
            const cpu::QuantType  qt = quant_of(host_weight.dtype);
            std::vector<uint16_t> bf(size_t(rows * cols));
            std::vector<float>    row(static_cast<size_t>(cols));
            for (int64_t r = 0; r < rows; ++r) {
                cpu::dequantize_row(qt, host_weight.row<const void>(r), row.data(), cols);
                for (int64_t c = 0; c < cols; ++c) bf[size_t(r * cols + c)] = f32_to_bf16(row[size_t(c)]);
            }
            Tensor t = alloc(DType::BF16, rows, cols);
            upload(t.view(), bf.data());
            return keep_weight(host_weight, std::move(t));
        }
        if (host_weight.dtype == DType::F32) {
            // F32 checkpoints are stored as BF16 on the device, like the reference's bf16 weights (kernels/README.md
            // §f.10).
            std::vector<uint16_t> bf(size_t(rows * cols));
            const float*          src = host_weight.ptr<const float>();
            for (size_t i = 0; i < bf.size(); ++i) bf[i] = f32_to_bf16(src[i]);
            Tensor t = alloc(DType::BF16, rows, cols);
            upload(t.view(), bf.data());
            return keep_weight(host_weight, std::move(t));
        }
        Tensor t = alloc(host_weight.dtype, rows, cols);
        upload(t.view(), host_weight.data);
        return keep_weight(host_weight, std::move(t));
    }

    void release_weight(const TensorView& host_weight) override {
        for (size_t i = 0; i < prepared_.size(); ++i) {
            if (prepared_[i].host != host_weight.data || prepared_[i].host_dtype != host_weight.dtype) continue;
            const void* dev = prepared_[i].device.data;
            prepared_.erase(prepared_.begin() + long(i));
            std::erase_if(weights_, [dev](const Tensor& t) { return t.view().data == dev; });
            return;
        }
    }

protected:
    // ---- ops (arguments already checked by the public Backend ops) ---------------------------------------------
    void do_embed(const TensorView& table, std::span<const int32_t> ids, const TensorView& out) override {
        if (ids.empty()) return;
        CUDA_CHECK(cuda::embed(dmat(table), upload_i32(idx_a_, ids), dmat(out), stream()));
    }

    void do_matmul(const TensorView& x, const TensorView& w, const TensorView& bias, const TensorView& y) override {
        const cuda::Mat xm = dmat(x), wm = dmat(w);
        cuda::Mat       bm{};
        if (!bias.empty()) {
            bm      = dmat(bias);
            bm.rows = 1;
            bm.cols = wm.rows;
        }
        void* scratch = nullptr;
        if (const size_t bytes = cuda::matmul_scratch_bytes(xm.rows, xm.cols, wm.type))
            scratch = scratch_.reserve(bytes, stream());
        CUBLAS_CHECK(cuda::matmul(cublas_.get(), xm, wm, bm, dmat(y), scratch, stream()));
        CUDA_CHECK(cudaGetLastError());  // the activation conversion and bias kernels
    }

    void do_rms_norm(const TensorView& x, const TensorView& w, float eps, const TensorView& y) override {
        cuda::Mat wm = dmat(w);
        wm.rows      = 1;
        wm.cols      = x.cols();
        CUDA_CHECK(cuda::rms_norm(dmat(x), wm, eps, dmat(y), stream()));
    }

    void do_rope(const TensorView& x, std::span<const int32_t> positions, int n_head, int head_dim,
                 float theta) override {
        if (positions.empty()) return;
        // Inverse frequencies from the shared rope_inv_freq on the host: the same fp32 angles as the CPU backend.
        if (head_dim != rope_dim_ || theta != rope_theta_) {
            std::vector<float> inv(size_t(head_dim / 2));
            for (int i = 0; i < head_dim / 2; ++i) inv[size_t(i)] = rope_inv_freq(i, head_dim, theta);
            void* d = rope_freq_.reserve(inv.size() * sizeof(float), stream());
            CUDA_CHECK(cudaMemcpyAsync(d, inv.data(), inv.size() * sizeof(float), cudaMemcpyHostToDevice, stream()));
            rope_dim_   = head_dim;
            rope_theta_ = theta;
        }
        const float* inv_freq =
            static_cast<const float*>(rope_freq_.reserve(size_t(head_dim / 2) * sizeof(float), stream()));
        CUDA_CHECK(cuda::rope(dmat(x), upload_i32(idx_a_, positions), n_head, head_dim, inv_freq, stream()));
    }

    void do_add(const TensorView& a, const TensorView& b, const TensorView& y) override {
        CUDA_CHECK(cuda::add(dmat(a), dmat(b), dmat(y), stream()));
    }
    void do_sub(const TensorView& a, const TensorView& b, const TensorView& y) override {
        CUDA_CHECK(cuda::sub(dmat(a), dmat(b), dmat(y), stream()));
    }

    void do_silu_mul(const TensorView& gate, const TensorView& up, const TensorView& y) override {
        CUDA_CHECK(cuda::silu_mul(dmat(gate), dmat(up), dmat(y), stream()));
    }

    void do_copy(const TensorView& src, const TensorView& dst) override {
        CUDA_CHECK(cuda::copy(dmat(src), dmat(dst), stream()));
    }

    void do_attention(const TensorView& q, std::span<const int32_t> q_seq, const TensorView& k, const TensorView& v,
                      std::span<const int32_t> cu_k, AttentionShape shape, const TensorView& out,
                      const TensorView& lse) override {
        check_head_dim(shape, "attention");
        const cuda::AttnDims         dims{shape.n_head, shape.n_kv_head, shape.head_dim};
        const std::vector<QueryTile> tiles = plan_tiles(q_seq, int(cu_k.size()) - 1, dims);
        if (tiles.empty()) return;
        const auto*    d_tiles = upload_bytes<QueryTile>(tiles_, tiles);
        const int32_t* d_cu_k  = upload_i32(cu_a_, cu_k);
        CUDA_CHECK(cuda::attention(dmat(q), dmat(k), dmat(v), d_cu_k, d_tiles, int(tiles.size()), dims, dmat(out),
                                   lse.data ? dmat(lse) : cuda::Mat{}, stream()));
    }

    void do_attention_approx(const TensorView& q, std::span<const int32_t> q_seq, const TensorView& k,
                             const TensorView& dv, std::span<const int32_t> sal_k, std::span<const int32_t> cu_sal,
                             std::span<const int32_t> cu_k, const TensorView& c_old, AttentionShape shape,
                             const TensorView& c_new) override {
        check_head_dim(shape, "attention_approx");
        const int n_seq = int(cu_k.size()) - 1;
        // The shared checks guarantee what build_key_tile_masks and plan_query_tiles would otherwise throw for
        // (salient keys inside their sequence and ascending, q_seq in range).
        const KeyTileMasks           masks = build_key_tile_masks(sal_k.data(), cu_sal.data(), cu_k.data(), n_seq);
        const cuda::AttnDims         dims{shape.n_head, shape.n_kv_head, shape.head_dim};
        const std::vector<QueryTile> tiles = plan_tiles(q_seq, n_seq, dims);
        if (tiles.empty()) return;
        const auto*    d_tiles = upload_bytes<QueryTile>(tiles_, tiles);
        const int32_t* d_cu_k  = upload_i32(cu_a_, cu_k);
        const auto*    d_mask  = upload_bytes<uint64_t>(mask_, masks.mask);
        const int32_t* d_base  = upload_i32(idx_a_, masks.base);
        const int32_t* d_toff  = upload_i32(cu_b_, masks.tile_off);
        CUDA_CHECK(cuda::attention_approx(dmat(q), dmat(k), dmat(dv), d_cu_k, d_tiles, int(tiles.size()), d_mask,
                                          d_base, d_toff, dmat(c_old), dims, dmat(c_new), nullptr, stream()));
    }

    void do_attention_cols(const TensorView& q, std::span<const int32_t> q_seq, const TensorView& k,
                           const TensorView& dv, std::span<const int32_t> sal_k, std::span<const int32_t> cu_sal,
                           const TensorView& lse, const TensorView& c_old, AttentionShape shape,
                           const TensorView& c_new, const TensorView& k_old, const TensorView& v_old,
                           const TensorView& lse_out) override {
        check_head_dim(shape, "attention_cols");
        if (q.rows() == 0) return;
        const int32_t* d_q_seq = upload_i32(idx_a_, q_seq);
        const int32_t* d_sal_k = sal_k.empty() ? nullptr : upload_i32(idx_b_, sal_k);
        const int32_t* d_cu    = upload_i32(cu_a_, cu_sal);
        const auto     opt     = [](const TensorView& v) { return v.data ? dmat(v) : cuda::Mat{}; };
        CUDA_CHECK(cuda::attention_cols(dmat(q), d_q_seq, dmat(k), dmat(dv), d_sal_k, d_cu, dmat(lse), dmat(c_old),
                                        cuda::AttnDims{shape.n_head, shape.n_kv_head, shape.head_dim}, dmat(c_new),
                                        opt(k_old), opt(v_old), opt(lse_out), stream()));
    }

    void do_gather_rows(const TensorView& src, std::span<const int32_t> idx, const TensorView& dst) override {
        if (idx.empty()) return;
        CUDA_CHECK(cuda::gather_rows(dmat(src), upload_i32(idx_a_, idx), dmat(dst), stream()));
    }

    void do_scatter_rows(const TensorView& src, std::span<const int32_t> idx, const TensorView& dst) override {
        if (idx.empty()) return;
        CUDA_CHECK(cuda::scatter_rows(dmat(src), upload_i32(idx_a_, idx), dmat(dst), stream()));
    }

    void do_add_rows(const TensorView& src, std::span<const int32_t> idx, const TensorView& y) override {
        if (idx.empty()) return;
        CUDA_CHECK(cuda::add_rows(dmat(src), upload_i32(idx_a_, idx), dmat(y), stream()));
    }

    void do_cosine_rows(const TensorView& a, const TensorView& b, std::span<float> cos_out) override {
        if (cos_out.empty()) return;
        float* d_cos = static_cast<float*>(out_.reserve(cos_out.size() * sizeof(float), stream()));
        CUDA_CHECK(cuda::cosine_rows(dmat(a), dmat(b), d_cos, nullptr, stream()));
        CUDA_CHECK(
            cudaMemcpyAsync(cos_out.data(), d_cos, cos_out.size() * sizeof(float), cudaMemcpyDeviceToHost, stream()));
        CUDA_CHECK(cudaStreamSynchronize(stream()));
    }

    void do_score_logits(const TensorView& logits, ScoreKind kind, std::span<const int32_t> banned,
                         std::span<int32_t> tokens_out, std::span<float> scores_out) override {
        const cuda::Mat l = dmat(logits);
        if (l.rows == 0) return;
        // The kernel binary-searches the banned list: sorted, duplicates removed.
        std::vector<int32_t> ban(banned.begin(), banned.end());
        std::sort(ban.begin(), ban.end());
        ban.erase(std::unique(ban.begin(), ban.end()), ban.end());
        const int32_t* d_ban = ban.empty() ? nullptr : upload_i32(idx_a_, ban);
        const size_t   n     = size_t(l.rows);
        char*          d_out = static_cast<char*>(out_.reserve(n * (sizeof(int32_t) + sizeof(float)), stream()));
        int32_t*       d_tok = reinterpret_cast<int32_t*>(d_out);
        float*         d_sc  = reinterpret_cast<float*>(d_out + n * sizeof(int32_t));
        CUDA_CHECK(cuda::score_logits(
            l, kind == ScoreKind::Confidence ? cuda::ScoreRule::Confidence : cuda::ScoreRule::NegEntropy, d_ban,
            int(ban.size()), d_tok, d_sc, stream()));
        CUDA_CHECK(cudaMemcpyAsync(tokens_out.data(), d_tok, n * sizeof(int32_t), cudaMemcpyDeviceToHost, stream()));
        CUDA_CHECK(cudaMemcpyAsync(scores_out.data(), d_sc, n * sizeof(float), cudaMemcpyDeviceToHost, stream()));
        CUDA_CHECK(cudaStreamSynchronize(stream()));
    }

private:
    struct PreparedWeight {
        const void* host       = nullptr;
        DType       host_dtype = DType::F32;
        int64_t     rows = 0, cols = 0;
        TensorView  device;
    };

    // The stream of every op. The current device is per host thread and the engine may run on a worker thread, so
    // each op selects this backend's device first (a cheap call when it is already current).
    cudaStream_t stream() const {
        if (device_ != 0) CUDA_CHECK(cudaSetDevice(device_));
        return stream_.get();
    }

    TensorView keep_weight(const TensorView& host, Tensor t) {
        prepared_.push_back(PreparedWeight{host.data, host.dtype, host.rows(), host.cols(), t.view()});
        weights_.push_back(std::move(t));
        return weights_.back().view();
    }

    // Like dmat, but for upload/download, which also accept I32 tensors.
    static cuda::Mat dmat_any_layout(const TensorView& v, const char* op, const char* what) {
        const int64_t es = int64_t(dtype_size(v.dtype));
        DYLLM_ASSERT(v.numel() == 0 || v.device == Device::Cuda,
                     std::string(op) + ": " + what + " " + shp(v) + " is not a CUDA tensor");
        DYLLM_ASSERT(v.nb[0] == es && v.nb[1] >= es * v.ne[0] && (v.ne[2] == 1 || v.nb[2] == v.nb[1] * v.ne[1]) &&
                         (v.ne[3] == 1 || v.nb[3] == v.nb[2] * v.ne[2]),
                     std::string(op) + ": " + what + " " + shp(v) + " is not a row-strided 2-D tensor");
        // Element size is all the copies use; I32 and F32 share 4 bytes.
        return cuda::Mat{v.data, es == 4 ? cuda::ElemType::F32 : cuda::ElemType::BF16, v.rows(), v.cols(),
                         v.nb[1] / es};
    }

    // Uploads a host array into a reusable device buffer (pageable memcpy: the host data may go once this returns).
    template <class T>
    const T* upload_bytes(DeviceBuffer& buf, std::span<const T> host) {
        void* d = buf.reserve(host.size_bytes(), stream());
        if (!host.empty())
            CUDA_CHECK(cudaMemcpyAsync(d, host.data(), host.size_bytes(), cudaMemcpyHostToDevice, stream()));
        return static_cast<const T*>(d);
    }
    template <class T>
    const T* upload_bytes(DeviceBuffer& buf, const std::vector<T>& host) {
        return upload_bytes(buf, std::span<const T>(host));
    }
    const int32_t* upload_i32(DeviceBuffer& buf, std::span<const int32_t> host) { return upload_bytes(buf, host); }

    static std::vector<QueryTile> plan_tiles(std::span<const int32_t> q_seq, int n_seq, const cuda::AttnDims& dims) {
        return plan_query_tiles(q_seq.data(), int64_t(q_seq.size()), n_seq, cuda::attention_tile_rows(dims));
    }

    int                                                                   device_;
    std::string                                                           description_;
    std::shared_ptr<std::remove_pointer_t<cudaStream_t>>                  stream_;  // shared with tensor deleters
    bool                                                                  mem_pool_ = false;
    std::unique_ptr<std::remove_pointer_t<cublasHandle_t>, CublasDeleter> cublas_;
    std::vector<Tensor>                                                   weights_;
    std::vector<PreparedWeight>                                           prepared_;
    // Reusable device buffers, one per role so the uploads of one op never overwrite each other.
    DeviceBuffer idx_a_, idx_b_, cu_a_, cu_b_, tiles_, mask_, scratch_, out_, rope_freq_;
    int          rope_dim_   = 0;
    float        rope_theta_ = 0.0f;
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(int device) {
    std::string why;
    const int   n = cuda_device_count(&why);
    if (n == 0) throw BackendError("no CUDA device: " + why);
    if (device < 0 || device >= n)
        throw BackendError("CUDA device " + std::to_string(device) + " does not exist (" + std::to_string(n) +
                           " device" + (n == 1 ? "" : "s") + ")");
    return std::make_unique<CudaBackend>(device);
}

}  // namespace dyllm
