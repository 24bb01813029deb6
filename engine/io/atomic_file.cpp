// AtomicFile: temporary file beside the target + rename(2), which replaces the directory entry in one step.
#include "engine/io/atomic_file.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "engine/errors.h"

namespace dyllm {

namespace {
std::atomic<unsigned> g_counter{0};  // distinct names for concurrent writers in one process
}

AtomicFile::AtomicFile(const std::filesystem::path& path) : path_(path) {
    const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
    temp_ = dir / ("." + path.filename().string() + ".tmp-" + std::to_string(::getpid()) + "-" +
                   std::to_string(g_counter.fetch_add(1)));
    out_.open(temp_, std::ios::binary | std::ios::trunc);
    if (!out_)
        throw LoadError(path.string() + ": cannot open " + temp_.string() + " for writing: " + std::strerror(errno));
}

AtomicFile::~AtomicFile() {
    if (committed_) return;
    out_.close();
    std::error_code ec;
    std::filesystem::remove(temp_, ec);  // best effort; never throws from a destructor
}

void AtomicFile::close() {
    if (!out_.is_open()) return;
    out_.flush();
    if (!out_) throw LoadError(path_.string() + ": write failed: " + std::strerror(errno));
    out_.close();
}

void AtomicFile::commit() {
    close();
    if (std::rename(temp_.c_str(), path_.c_str()) != 0) {
        throw LoadError(path_.string() + ": cannot rename " + temp_.string() + " into place: " + std::strerror(errno));
    }
    committed_ = true;
}

}  // namespace dyllm
