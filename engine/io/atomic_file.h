// AtomicFile: the one writer of every output file. It writes under a temporary name in the same directory and
// rename()s it over the target on commit, so an existing file is never touched by a failed or interrupted run, a
// process that has the old file mapped keeps its pages (the old inode lives on) and readers never see half a file.
#pragma once
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace dyllm {

class AtomicFile {
public:
    // Checks the target (check_output_path) and opens "<dir>/.<name>.tmp-<pid>-<n>" for writing, so a bad directory
    // fails before any work. Throws LoadError naming `path` when it cannot.
    explicit AtomicFile(const std::filesystem::path& path);
    ~AtomicFile();  // removes the temporary file unless commit() succeeded
    AtomicFile(const AtomicFile&)            = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;

    std::ofstream&               stream() { return out_; }
    const std::filesystem::path& temp_path() const { return temp_; }
    const std::filesystem::path& path() const { return path_; }
    // Appends bytes; throws LoadError naming the target when the stream has failed (a full disk, a file-size limit).
    void write(std::string_view bytes);
    // Flushes and closes the stream, checking both (for callers that resize the file by name before committing).
    void close();
    // Closes (checked), fsyncs the file, renames it over the target and fsyncs the directory. Throws LoadError on
    // failure and Interrupted (engine/interrupt.h) when an interrupt came first: an interrupted run replaces nothing.
    void commit();
    // Removes the temporary file now (the destructor does the same).
    void discard();

private:
    [[noreturn]] void fail(const std::string& what, int err);

    std::filesystem::path path_, temp_;
    std::ofstream         out_;
    bool                  committed_ = false;
    int                   slot_      = -1;  // the temporary's registration with engine/interrupt.h
};

// Refuses an output target that exists and is not a regular file: a directory, FIFO (which would block), socket or
// device, also behind a symlink, and a new file in a directory that does not exist. Throws LoadError "<path>: is a
// directory, ..." on one line. For outputs written at the end of a run, checked at its start.
void check_output_path(const std::filesystem::path& path);

// Writes `bytes` to `path` through an AtomicFile (opened, written, committed).
void write_file_atomic(const std::filesystem::path& path, std::string_view bytes);

}  // namespace dyllm
