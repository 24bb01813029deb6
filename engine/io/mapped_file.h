// MappedFile: a read-only, private memory mapping of a whole file (RAII), so multi-GB checkpoints are paged in by the
// kernel on demand instead of being copied into process memory. Each mapping is registered with engine/interrupt.h, so
// a read past the end of a file truncated on disk ends in one line naming the file instead of a bare SIGBUS.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>

namespace dyllm {

class MappedFile {
public:
    // Maps `path` read-only (PROT_READ, MAP_PRIVATE). Only regular files: a directory, FIFO, device or socket (also
    // behind a symlink, e.g. to /dev/zero) is refused without blocking. Throws LoadError "<path>: cannot open:
    // <strerror>" (or mmap/fstat, "symlink loop", "is a directory", "not a regular file") on
    // failure. An empty file maps to data() == nullptr, size() == 0.
    static MappedFile open(const std::filesystem::path& path);

    MappedFile() = default;
    MappedFile(MappedFile&& o) noexcept;
    MappedFile& operator=(MappedFile&& o) noexcept;
    MappedFile(const MappedFile&)            = delete;
    MappedFile& operator=(const MappedFile&) = delete;
    ~MappedFile();

    const uint8_t*               data() const { return data_; }
    size_t                       size() const { return size_; }
    const std::filesystem::path& path() const { return path_; }

private:
    const uint8_t*        data_ = nullptr;
    size_t                size_ = 0;
    std::filesystem::path path_;
    int                   slot_ = -1;  // engine/interrupt.h: a SIGBUS inside the mapping names path_
};

// Hands the whole pages inside [data, data + bytes) back to the kernel (MADV_PAGEOUT) once a weight has been copied
// elsewhere (packed, re-stored, rows reordered) and the original is no longer read, so the resident set holds the copy
// alone. It only reclaims: file-backed pages are re-read and anonymous ones kept (no swap) on a later touch, so the
// contents never change, whatever memory the range is in. A hint: ranges under 64 pages and errors are ignored.
void release_pages(const void* data, size_t bytes);

}  // namespace dyllm
