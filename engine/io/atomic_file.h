// AtomicFile: writes a file under a temporary name in the same directory and rename()s it over the target on commit,
// so a process that has the old file mapped keeps its pages (the old inode lives on) and readers never see half a file.
#pragma once
#include <filesystem>
#include <fstream>

namespace dyllm {

class AtomicFile {
public:
    // Opens "<dir>/.<name>.tmp-<pid>-<n>" for writing. Throws LoadError naming `path` when it cannot.
    explicit AtomicFile(const std::filesystem::path& path);
    ~AtomicFile();  // removes the temporary file unless commit() succeeded
    AtomicFile(const AtomicFile&)            = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;

    std::ofstream&               stream() { return out_; }
    const std::filesystem::path& temp_path() const { return temp_; }
    // Closes the stream (for callers that resize the file by name before committing).
    void close();
    // Flushes, checks the stream and renames the temporary file over the target. Throws LoadError on failure.
    void commit();

private:
    std::filesystem::path path_, temp_;
    std::ofstream         out_;
    bool                  committed_ = false;
};

}  // namespace dyllm
