// Workspace (workspace.h): a stack of blocks lent from backend chunks; reclaimed from the top as blocks are freed,
// coalesced into one chunk between steps after a step needed more than one.
#include "engine/workspace.h"

#include <algorithm>

#include "engine/errors.h"

namespace dyllm {

int32_t& workspace_block_refs(WorkspaceBlock* b) noexcept {
    return b->refs;
}

void workspace_block_release(WorkspaceBlock* b) noexcept {
    b->freed = true;
    b->ws->pop_freed();
}

Workspace::~Workspace() {
    // Tensors outliving their workspace would dangle: a bug in the caller, never bad input.
    DYLLM_ASSERT(
        top_ == 0 ||
            [&] {
                for (size_t i = 0; i < top_; ++i)
                    if (!block_at(i).freed) return false;
                return true;
            }(),
        "workspace destroyed while one of its tensors is alive");
}

size_t Workspace::capacity() const {
    size_t c = 0;
    for (const Chunk& ch : chunks_) c += ch.cap;
    return c;
}

Tensor Workspace::alloc(DType dtype, int64_t rows, int64_t cols) {
    DYLLM_ASSERT(rows >= 0 && cols >= 0,
                 "workspace alloc: negative shape [" + std::to_string(rows) + ", " + std::to_string(cols) + "]");
    const size_t bytes =
        std::max<size_t>(kAlign, (size_t(rows) * size_t(cols) * dtype_size(dtype) + kAlign - 1) / kAlign * kAlign);
    if (size_t(cur_) < chunks_.size() && off_ + bytes > chunks_[size_t(cur_)].cap) {
        ++cur_;
        off_     = 0;
        spilled_ = true;
    }
    // Skip chunks too small for this block (kept for later, smaller blocks).
    while (size_t(cur_) < chunks_.size() && bytes > chunks_[size_t(cur_)].cap) {
        ++cur_;
        spilled_ = true;
    }
    if (size_t(cur_) == chunks_.size()) {
        // A new chunk: at least 4 MiB (the CPU backend backs that with 2 MiB pages, so touching it costs two page
        // faults instead of a thousand) and at least the largest so far, so a first step needs few of them.
        const size_t prev = chunks_.empty() ? 0 : chunks_.back().cap;
        const size_t cap  = std::max({bytes, prev, size_t(4) << 20});
        Chunk        ch;
        ch.mem = be_.alloc(DType::F32, 1, int64_t(cap / sizeof(float)));
        ch.cap = cap;
        chunks_.push_back(std::move(ch));
        ++n_chunk_allocs_;
        if (chunks_.size() > 1) spilled_ = true;
        off_ = 0;
    }
    if (top_ == slabs_.size() * kSlab) slabs_.push_back(std::make_unique<WorkspaceBlock[]>(kSlab));
    WorkspaceBlock& b = block_at(top_++);
    b                 = WorkspaceBlock{this, 0, false, cur_, off_, bytes};
    off_ += bytes;
    used_ += bytes;
    peak_               = std::max(peak_, used_);
    const TensorView& m = chunks_[size_t(cur_)].mem.view();
    TensorView        v = TensorView::matrix(static_cast<char*>(m.data) + b.offset, dtype, m.device, rows, cols);
    return Tensor(v, &b);
}

void Workspace::pop_freed() noexcept {
    while (top_ > 0 && block_at(top_ - 1).freed) {
        const WorkspaceBlock& b = block_at(--top_);
        cur_                    = b.chunk;
        off_                    = b.offset;
        used_ -= b.bytes;
    }
    if (top_ == 0) {
        cur_ = 0;
        off_ = 0;
    }
}

void Workspace::reset() {
    if (top_ != 0 || !spilled_) return;
    // One chunk of twice the peak: later steps that need a little more (a sparse step with many salient rows can
    // hold more temporaries than a dense one) fit without allocating. Untouched pages of it cost no memory.
    const size_t cap = (2 * peak_ + (size_t(1) << 16) - 1) >> 16 << 16;
    chunks_.clear();
    Chunk ch;
    ch.mem = be_.alloc(DType::F32, 1, int64_t(cap / sizeof(float)));
    ch.cap = cap;
    chunks_.push_back(std::move(ch));
    ++n_chunk_allocs_;
    cur_     = 0;
    off_     = 0;
    spilled_ = false;
}

}  // namespace dyllm
