// AtomicFile: temporary file beside the target + fsync + rename(2), which replaces the directory entry in one step.
#include "engine/io/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "engine/errors.h"
#include "engine/interrupt.h"

namespace dyllm {

namespace {
std::atomic<unsigned> g_counter{0};  // distinct names for concurrent writers in one process

std::filesystem::path dir_of(const std::filesystem::path& p) {
    return p.has_parent_path() ? p.parent_path() : std::filesystem::path(".");
}

// fsync by name: the data of a closed ofstream (or of the directory's entries) reaches the disk before the rename is
// relied on. EINVAL/EROFS: a filesystem without fsync (some FUSE and pseudo filesystems) has nothing more to do.
int sync_path(const std::filesystem::path& p, bool dir) {
    const int fd = ::open(p.c_str(), (dir ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
    if (fd < 0) return errno;
    int err = ::fsync(fd) == 0 ? 0 : errno;
    ::close(fd);
    return err == EINVAL || err == EROFS ? 0 : err;
}
}  // namespace

void check_output_path(const std::filesystem::path& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
        if (errno == ELOOP) throw LoadError(path.string() + ": symlink loop (too many levels of symbolic links)");
        std::error_code ec;
        if (!std::filesystem::is_directory(dir_of(path), ec))
            throw LoadError(path.string() + ": cannot open for writing: no directory " + dir_of(path).string());
        return;  // a new file
    }
    if (S_ISREG(st.st_mode)) return;
    if (S_ISDIR(st.st_mode)) throw LoadError(path.string() + ": is a directory, expected a file name to write");
    throw LoadError(path.string() + ": not a regular file (" +
                    (S_ISFIFO(st.st_mode)  ? "a FIFO"
                     : S_ISCHR(st.st_mode) ? "a character device"
                     : S_ISBLK(st.st_mode) ? "a block device"
                                           : "a socket") +
                    "); outputs are written as regular files (use -o - for stdout where a command offers it)");
}

AtomicFile::AtomicFile(const std::filesystem::path& path) : path_(path) {
    check_output_path(path);
    const std::filesystem::path dir  = dir_of(path);
    std::string                 name = ".";  // appended piece by piece: GCC 12 warns (-Wrestrict) on "." + string
    name.append(path.filename().string())
        .append(".tmp-")
        .append(std::to_string(::getpid()))
        .append("-")
        .append(std::to_string(g_counter.fetch_add(1)));
    temp_ = dir / name;
    slot_ = register_temp_file(temp_.string());
    out_.open(temp_, std::ios::binary | std::ios::trunc);
    if (!out_) {
        const int err = errno;
        unregister_temp_file(slot_);
        std::error_code ec;
        const bool      no_dir = !std::filesystem::is_directory(dir, ec);
        throw LoadError(path.string() + ": cannot open for writing: " +
                        (no_dir ? "no directory " + dir.string() : std::string(std::strerror(err))));
    }
}

AtomicFile::~AtomicFile() {
    if (!committed_) discard();
}

void AtomicFile::discard() {
    if (committed_) return;
    out_.close();
    std::error_code ec;
    std::filesystem::remove(temp_, ec);  // best effort; never throws from a destructor
    unregister_temp_file(slot_);
    slot_ = -1;
}

// A failed ofstream keeps no errno of its own (later calls overwrite it): one more byte written to the temporary file
// by hand says why (ENOSPC, EFBIG past RLIMIT_FSIZE, EDQUOT, EIO).
static int probe_write_errno(const std::filesystem::path& temp) {
    const int fd = ::open(temp.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0) return errno;
    const char b   = 0;
    const int  err = ::write(fd, &b, 1) == 1 ? 0 : errno;
    ::close(fd);
    return err;
}

void AtomicFile::fail(const std::string& what, int err) {
    if (what == "write failed")
        if (const int probed = probe_write_errno(temp_)) err = probed;
    discard();
    // A write past RLIMIT_FSIZE fails with EFBIG (SIGXFSZ is ignored); say what a user sees: the space ran out.
    const char* why = err == EFBIG ? "file too large (the file-size limit is reached)" : std::strerror(err ? err : EIO);
    throw LoadError(path_.string() + ": " + what + ": " + why);
}

void AtomicFile::write(std::string_view bytes) {
    if (!out_.is_open()) fail("write after close", EBADF);
    errno = 0;
    out_.write(bytes.data(), std::streamsize(bytes.size()));
    if (!out_) fail("write failed", errno);
}

void AtomicFile::close() {
    if (!out_.is_open()) return;
    errno = 0;
    out_.flush();
    if (!out_) fail("write failed", errno);
    out_.close();
    if (!out_) fail("write failed", errno);
}

void AtomicFile::commit() {
    if (committed_) return;
    close();
    if (const int s = interrupt_signal()) {
        discard();
        throw Interrupted(s);
    }
    if (const int err = sync_path(temp_, false)) fail("cannot sync", err);
    if (std::rename(temp_.c_str(), path_.c_str()) != 0) fail("cannot rename " + temp_.string() + " into place", errno);
    committed_ = true;
    unregister_temp_file(slot_);
    slot_ = -1;
    (void)sync_path(dir_of(path_), true);  // the rename itself; the file is in place whatever this says
}

void write_file_atomic(const std::filesystem::path& path, std::string_view bytes) {
    AtomicFile f(path);
    f.write(bytes);
    f.commit();
}

}  // namespace dyllm
