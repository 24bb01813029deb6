// Weights re-stored in memory at another type (engine/io/restored_checkpoint.h).
#include "engine/io/restored_checkpoint.h"

#include <algorithm>
#include <thread>
#include <vector>

#include "engine/errors.h"
#include "engine/io/mapped_file.h"
#include "engine/quant_type.h"
#include "kernels/cpu/convert.h"
#include "kernels/cpu/ref/quant.h"

namespace dyllm {

namespace {

constexpr const char* kTypes[] = {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_k_m"};

cpu::ElemType float_elem(DType t) {
    return t == DType::F32 ? cpu::ElemType::F32 : t == DType::F16 ? cpu::ElemType::F16 : cpu::ElemType::BF16;
}

// llama.cpp's use_more_bits: the first and last eighth of the layers, and every third layer in between.
bool more_bits(int layer, int n_layer) {
    return layer < n_layer / 8 || layer >= 7 * n_layer / 8 || (layer - n_layer / 8) % 3 == 2;
}

class RestoredCheckpoint final : public Checkpoint {
public:
    RestoredCheckpoint(std::unique_ptr<Checkpoint> base, const std::string& type, int n_threads)
        : base_(std::move(base)), type_(type), threads_(std::max(1, n_threads)) {
        const ModelWeights& b = base_->weights();
        const int           n = int(b.layers.size());
        w_                    = b;
        const bool tied       = b.lm_head.data == b.tok_embd.data;
        w_.tok_embd           = store(b.tok_embd, "tok_embd", 0, n);
        w_.lm_head            = tied ? w_.tok_embd : store(b.lm_head, "lm_head", 0, n);
        for (int l = 0; l < n; ++l) {
            const LayerWeights& s = b.layers[size_t(l)];
            LayerWeights&       d = w_.layers[size_t(l)];
            d.wq = store(s.wq, "wq", l, n), d.wk = store(s.wk, "wk", l, n), d.wv = store(s.wv, "wv", l, n);
            d.wo     = store(s.wo, "wo", l, n);
            d.w_gate = store(s.w_gate, "w_gate", l, n), d.w_up = store(s.w_up, "w_up", l, n);
            d.w_down = store(s.w_down, "w_down", l, n);
        }
        dtype_ = w_.layers.empty() ? base_->weight_dtype() : w_.layers[0].wq.dtype;
    }
    const ModelConfig&           config() const override { return base_->config(); }
    const ModelWeights&          weights() const override { return w_; }
    DType                        weight_dtype() const override { return dtype_; }
    size_t                       file_bytes() const override { return bytes_; }
    const std::filesystem::path& dir() const override { return base_->dir(); }
    const GgufContents*          gguf() const override { return base_->gguf(); }

private:
    TensorView store(const TensorView& v, const char* name, int layer, int n_layer) {
        if (!v.data) return v;
        DYLLM_ASSERT(is_float(v.dtype), std::string("--type: ") + name + " is stored as " + dtype_name(v.dtype) +
                                            ", which cannot be re-stored (only F32/F16/BF16 checkpoints)");
        const int64_t rows = v.rows(), cols = v.cols();
        const DType   dt   = restored_dtype(type_, name, layer, n_layer, cols);
        const size_t  rb   = dtype_row_bytes(dt, cols);
        auto&         out  = blocks_.emplace_back(std::max<size_t>(1, rb * size_t(rows)));
        const int     nt   = int(std::min<int64_t>(threads_, std::max<int64_t>(1, rows / 64)));
        auto          work = [&](int t) {
            std::vector<float> row(static_cast<size_t>(cols));
            for (int64_t r = rows * t / nt; r < rows * (t + 1) / nt; ++r) {
                cpu::widen_row(v.row<const void>(r), float_elem(v.dtype), row.data(), cols);
                uint8_t* dst = out.data() + size_t(r) * rb;
                if (is_quantized(dt))
                    cpu::quantize_row(quant_of(dt), row.data(), dst, cols);
                else
                    cpu::narrow_row(row.data(), dst, float_elem(dt), cols);
            }
        };
        std::vector<std::thread> pool;
        for (int t = 1; t < nt; ++t) pool.emplace_back(work, t);
        work(0);
        for (auto& th : pool) th.join();
        bytes_ += rb * size_t(rows);
        release_pages(v.data, v.bytes());  // only the re-stored copy is read from here on
        return TensorView::matrix(out.data(), dt, Device::Cpu, rows, cols);
    }

    std::unique_ptr<Checkpoint>       base_;
    std::string                       type_;
    int                               threads_;
    ModelWeights                      w_;
    DType                             dtype_ = DType::F32;
    size_t                            bytes_ = 0;
    std::vector<std::vector<uint8_t>> blocks_;
};

}  // namespace

void check_restore_type(const std::string& type) {
    if (std::find(std::begin(kTypes), std::end(kTypes), type) != std::end(kTypes)) return;
    throw InputError("--type: unknown value '" + type + "' (expected f32, f16, bf16, q8_0, q4_0, q4_k_m)");
}

DType restored_dtype(const std::string& type, const std::string& tensor, int layer, int n_layer, int64_t cols) {
    DType t = DType::F32;
    if (type == "f16") t = DType::F16;
    if (type == "bf16") t = DType::BF16;
    if (type == "q8_0") t = DType::Q8_0;
    if (type == "q4_0") t = DType::Q4_0;
    if (type == "q4_k_m") {
        const bool six = tensor == "lm_head" || ((tensor == "wv" || tensor == "w_down") && more_bits(layer, n_layer));
        t              = six ? DType::Q6_K : DType::Q4_K;
    }
    if (is_quantized(t) && cols % dtype_block_elems(t) != 0) t = cols % 32 == 0 ? DType::Q8_0 : DType::F16;
    return t;
}

std::unique_ptr<Checkpoint> restore_checkpoint(std::unique_ptr<Checkpoint> base, const std::string& type,
                                               int n_threads) {
    check_restore_type(type);
    return std::make_unique<RestoredCheckpoint>(std::move(base), type, n_threads);
}

}  // namespace dyllm
