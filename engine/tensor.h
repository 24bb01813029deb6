// Tensor views (ggml's ne/nb convention) and backend-owned tensors.
//
// Layout: ne[0] is the innermost, contiguous dimension; nb[i] is the stride of dimension i in bytes. Activations are
// 2-D row-major matrices [rows, cols] with ne[0] = cols and ne[1] = rows. Weights keep the HF [out, in] layout, so a
// weight view has ne[0] = in and ne[1] = out. Multi-head activations are [n_tokens, n_head * head_dim] with the heads
// concatenated (the same bytes as [n_tokens, n_head, head_dim]).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

namespace dyllm {

// Element types. F32/F16/BF16/I32 hold one value per element; the quantized types hold blocks of elements in ggml's
// block layouts (the GGUF format's type ids 8, 2, 12, 13, 14): a row of n elements is n / block_elems blocks, and a
// quantized tensor's row length must be a whole number of blocks.
//   Q8_0: 32 elements, fp16 scale + 32 int8                                              34 bytes (8.5 bits/weight)
//   Q4_0: 32 elements, fp16 scale + 16 bytes of 4-bit values (offset 8)                  18 bytes (4.5 bits/weight)
//   Q4_K: 256 elements, fp16 d, dmin + 12 bytes of 6-bit sub-block scales/mins + 128     144 bytes (4.5 bits/weight)
//   Q5_K: 256 elements, fp16 d, dmin + 12 bytes of scales/mins + 32 high bits + 128      176 bytes (5.5 bits/weight)
//   Q6_K: 256 elements, 128 low 4 bits + 64 high 2 bits + 16 int8 scales + fp16 d        210 bytes (6.5625 bits/weight)
enum class DType : uint8_t { F32, F16, BF16, I32, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K };
enum class Device : uint8_t { Cpu, Cuda };

inline bool is_quantized(DType t) {
    return t == DType::Q8_0 || t == DType::Q4_0 || t == DType::Q4_K || t == DType::Q5_K || t == DType::Q6_K;
}

// Elements per block (1 for the plain types).
inline int64_t dtype_block_elems(DType t) {
    switch (t) {
        case DType::Q8_0:
        case DType::Q4_0:
            return 32;
        case DType::Q4_K:
        case DType::Q5_K:
        case DType::Q6_K:
            return 256;
        default:
            return 1;
    }
}

// Bytes per block: the element size for the plain types, the block's size for the quantized ones.
inline size_t dtype_block_bytes(DType t) {
    switch (t) {
        case DType::F32:
        case DType::I32:
            return 4;
        case DType::F16:
        case DType::BF16:
            return 2;
        case DType::Q8_0:
            return 34;
        case DType::Q4_0:
            return 18;
        case DType::Q4_K:
            return 144;
        case DType::Q5_K:
            return 176;
        case DType::Q6_K:
            return 210;
    }
    return 0;
}

// Bytes per element of a plain type; 0 for a quantized type (use dtype_row_bytes).
inline size_t dtype_size(DType t) {
    return is_quantized(t) ? 0 : dtype_block_bytes(t);
}

// Bytes of a row of n elements (n a whole number of blocks for a quantized type).
inline size_t dtype_row_bytes(DType t, int64_t n) {
    return size_t(n / dtype_block_elems(t)) * dtype_block_bytes(t);
}

inline bool is_float(DType t) {
    return t == DType::F32 || t == DType::F16 || t == DType::BF16;
}

inline const char* dtype_name(DType t) {
    switch (t) {
        case DType::F32:
            return "F32";
        case DType::F16:
            return "F16";
        case DType::BF16:
            return "BF16";
        case DType::I32:
            return "I32";
        case DType::Q8_0:
            return "Q8_0";
        case DType::Q4_0:
            return "Q4_0";
        case DType::Q4_K:
            return "Q4_K";
        case DType::Q5_K:
            return "Q5_K";
        case DType::Q6_K:
            return "Q6_K";
    }
    return "?";
}

// A non-owning view of (up to) 4-D tensor memory on some device.
struct TensorView {
    void*   data   = nullptr;
    DType   dtype  = DType::F32;
    Device  device = Device::Cpu;
    int64_t ne[4]  = {0, 1, 1, 1};
    int64_t nb[4]  = {0, 0, 0, 0};

    // A contiguous 2-D view [rows, cols].
    static TensorView matrix(void* data, DType dtype, Device device, int64_t rows, int64_t cols) {
        TensorView v;
        v.data   = data;
        v.dtype  = dtype;
        v.device = device;
        v.ne[0]  = cols;
        v.ne[1]  = rows;
        v.nb[0]  = int64_t(dtype_block_bytes(dtype));  // a quantized type's nb[0] is one block (ggml's convention)
        v.nb[1]  = int64_t(dtype_row_bytes(dtype, cols));
        v.nb[2]  = v.nb[1] * rows;
        v.nb[3]  = v.nb[2];
        return v;
    }
    // A contiguous 1-D view [n] (one row of n columns).
    static TensorView vector(void* data, DType dtype, Device device, int64_t n) {
        return matrix(data, dtype, device, 1, n);
    }

    int64_t cols() const { return ne[0]; }
    int64_t rows() const { return ne[1] * ne[2] * ne[3]; }
    int64_t numel() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
    size_t  bytes() const { return size_t(rows()) * dtype_row_bytes(dtype, ne[0]); }
    bool    empty() const { return data == nullptr || numel() == 0; }
    bool    contiguous() const {
           const int64_t es = int64_t(dtype_block_bytes(dtype));
           return nb[0] == es && nb[1] == int64_t(dtype_row_bytes(dtype, ne[0])) &&
                  (ne[2] == 1 || nb[2] == nb[1] * ne[1]) && (ne[3] == 1 || nb[3] == nb[2] * ne[2]);
    }

    template <class T>
    T* ptr() const {
        return static_cast<T*>(data);
    }
    template <class T>
    T* row(int64_t r) const {
        return reinterpret_cast<T*>(static_cast<char*>(data) + r * nb[1]);
    }
};

std::string shape_string(const TensorView& v);  // "[rows, cols]"

struct WorkspaceBlock;
// Called when the last Tensor referring to a workspace block goes (engine/workspace.cpp).
void workspace_block_release(WorkspaceBlock* b) noexcept;
// The reference count of a workspace block (engine/workspace.h): Tensors are copied on the engine's one thread.
int32_t& workspace_block_refs(WorkspaceBlock* b) noexcept;

// A tensor whose memory is owned by a backend (freed when the last copy goes) or lent by a Workspace (handed back to
// it when the last copy goes; engine/workspace.h). Views into it stay valid while it lives.
class Tensor {
public:
    Tensor() = default;
    Tensor(TensorView view, std::shared_ptr<void> owner) : view_(view), owner_(std::move(owner)) {}
    // A tensor that only refers to memory someone else owns (a row range of a cache).
    static Tensor borrowed(const TensorView& view) { return Tensor(view, std::shared_ptr<void>{}); }
    Tensor(TensorView view, WorkspaceBlock* block) : view_(view), block_(block) { retain(); }
    Tensor(const Tensor& o) : view_(o.view_), owner_(o.owner_), block_(o.block_) { retain(); }
    Tensor(Tensor&& o) noexcept : view_(o.view_), owner_(std::move(o.owner_)), block_(o.block_) {
        o.block_ = nullptr;
        o.view_  = TensorView{};
    }
    Tensor& operator=(const Tensor& o) {
        if (this != &o) {
            Tensor t(o);
            swap(t);
        }
        return *this;
    }
    Tensor& operator=(Tensor&& o) noexcept {
        if (this != &o) {
            Tensor t(std::move(o));
            swap(t);
        }
        return *this;
    }
    ~Tensor() { release(); }

    const TensorView& view() const { return view_; }
    TensorView&       view() { return view_; }
                      operator const TensorView&() const { return view_; }
    bool              valid() const { return view_.data != nullptr || view_.numel() == 0; }
    int64_t           rows() const { return view_.rows(); }
    int64_t           cols() const { return view_.cols(); }
    template <class T>
    T* ptr() const {
        return view_.ptr<T>();
    }

private:
    void swap(Tensor& o) noexcept {
        std::swap(view_, o.view_);
        owner_.swap(o.owner_);
        std::swap(block_, o.block_);
    }
    void retain() {
        if (block_) ++workspace_block_refs(block_);
    }
    void release() noexcept {
        if (block_ && --workspace_block_refs(block_) == 0) workspace_block_release(block_);
        block_ = nullptr;
    }

    TensorView            view_;
    std::shared_ptr<void> owner_;
    WorkspaceBlock*       block_ = nullptr;  // set for memory lent by a Workspace
};

}  // namespace dyllm
