// Workspace: one run's memory for the step loop's temporaries, a stack of blocks lent from a few backend chunks and
// handed back automatically when their last Tensor goes, so that a steady run allocates nothing (engine/README.md §w).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/backend.h"
#include "engine/tensor.h"

namespace dyllm {

// One lent block (bookkeeping only: the memory is in a chunk). Blocks form a stack in allocation order.
struct WorkspaceBlock {
    class Workspace* ws     = nullptr;
    int32_t          refs   = 0;
    bool             freed  = false;
    int32_t          chunk  = 0;  // chunk index and offset where the block starts
    size_t           offset = 0;
    size_t           bytes  = 0;  // rounded up to kAlign
};

class Workspace {
public:
    static constexpr size_t kAlign = 64;  // a cache line (and AVX-512 vector) per block start

    explicit Workspace(Backend& be) : be_(be) {}
    ~Workspace();
    Workspace(const Workspace&)            = delete;
    Workspace& operator=(const Workspace&) = delete;

    // A [rows, cols] tensor whose contents are undefined (every caller writes it whole before reading it). Blocks are
    // handed back when their last Tensor goes; memory is reclaimed from the top of the stack (locals die in reverse
    // order, so a layer's temporaries are reclaimed when the layer returns).
    Tensor alloc(DType dtype, int64_t rows, int64_t cols);

    // Between steps: when more than one chunk was needed since the last call and nothing is lent, replaces the chunks
    // by one of twice the peak (so a later step that needs somewhat more still fits without a new allocation).
    void reset();

    size_t  in_use() const { return used_; }  // bytes of the stack (blocks not yet reclaimed)
    size_t  peak() const { return peak_; }    // largest in_use() since the start
    size_t  capacity() const;                 // bytes held in chunks
    int64_t chunk_allocations() const { return n_chunk_allocs_; }

private:
    friend void     workspace_block_release(WorkspaceBlock* b) noexcept;
    void            pop_freed() noexcept;
    WorkspaceBlock& block_at(size_t i) { return slabs_[i / kSlab][i % kSlab]; }

    static constexpr size_t kSlab = 256;  // blocks per bookkeeping slab (slabs never move, so pointers stay valid)

    struct Chunk {
        Tensor mem;
        size_t cap = 0;
    };

    Backend&                                       be_;
    std::vector<Chunk>                             chunks_;
    std::vector<std::unique_ptr<WorkspaceBlock[]>> slabs_;
    size_t                                         top_            = 0;  // blocks on the stack
    int32_t                                        cur_            = 0;  // chunk the next block goes into ...
    size_t                                         off_            = 0;  // ... at this offset
    size_t                                         used_           = 0;
    size_t                                         peak_           = 0;
    bool                                           spilled_        = false;  // a block went past chunk 0 since reset()
    int64_t                                        n_chunk_allocs_ = 0;
};

}  // namespace dyllm
