// MappedFile: POSIX open + fstat + mmap(PROT_READ, MAP_PRIVATE); errors carry the errno text.
#include "engine/io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "engine/errors.h"
#include "engine/interrupt.h"

namespace dyllm {

MappedFile MappedFile::open(const std::filesystem::path& path) {
    // stat() first so a FIFO or device is refused without being opened; O_NONBLOCK + fstat() after open() in case the
    // path was replaced in between (open() of a FIFO without O_NONBLOCK waits for a writer forever).
    struct stat st {};
    auto        refuse_type = [&](mode_t m) {
        if (S_ISDIR(m)) throw LoadError(path.string() + ": is a directory, expected a safetensors file");
        throw LoadError(path.string() + ": not a regular file (" +
                               (S_ISFIFO(m)  ? "a FIFO"
                                : S_ISCHR(m) ? "a character device"
                                : S_ISBLK(m) ? "a block device"
                                             : "a socket") +
                               "), expected a safetensors file");
    };
    auto refuse_errno = [&](const char* verb, int err) {
        if (err == ELOOP) throw LoadError(path.string() + ": symlink loop (too many levels of symbolic links)");
        throw LoadError(path.string() + ": cannot " + verb + ": " + std::strerror(err));
    };
    if (::stat(path.c_str(), &st) != 0) refuse_errno("open", errno);
    if (!S_ISREG(st.st_mode)) refuse_type(st.st_mode);
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) refuse_errno("open", errno);
    if (::fstat(fd, &st) != 0) {
        const int err = errno;
        ::close(fd);
        throw LoadError(path.string() + ": cannot stat: " + std::strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        refuse_type(st.st_mode);
    }
    MappedFile m;
    m.path_ = path;
    m.size_ = size_t(st.st_size);
    if (m.size_ > 0) {
        void* p = ::mmap(nullptr, m.size_, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            const int err = errno;
            ::close(fd);
            throw LoadError(path.string() + ": cannot mmap " + std::to_string(m.size_) +
                            " bytes: " + std::strerror(err));
        }
        m.data_ = static_cast<const uint8_t*>(p);
        m.slot_ = register_mapping(p, m.size_, path.string());
    }
    ::close(fd);  // the mapping keeps the file referenced
    return m;
}

MappedFile::MappedFile(MappedFile&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)),
      size_(std::exchange(o.size_, 0)),
      path_(std::move(o.path_)),
      slot_(std::exchange(o.slot_, -1)) {}

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
    if (this != &o) {
        unregister_mapping(slot_);
        if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
        slot_ = std::exchange(o.slot_, -1);
        data_ = std::exchange(o.data_, nullptr);
        size_ = std::exchange(o.size_, 0);
        path_ = std::move(o.path_);
    }
    return *this;
}

MappedFile::~MappedFile() {
    unregister_mapping(slot_);
    if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

void release_pages(const void* data, size_t bytes) {
#ifdef MADV_PAGEOUT
    const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE)), a = reinterpret_cast<uintptr_t>(data), b = a + bytes;
    const uintptr_t lo = (a + page - 1) / page * page, hi = b / page * page;
    if (hi > lo + 64 * page) ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_PAGEOUT);
#else
    (void)data, (void)bytes;
#endif
}

}  // namespace dyllm
