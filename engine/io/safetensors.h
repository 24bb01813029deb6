// safetensors files: header parsing + validation over a memory mapping (read), and a streaming writer.
// Format: 8-byte little-endian header length N, N bytes of JSON {name: {dtype, shape, data_offsets}, "__metadata__"},
// then the data section; data_offsets are [begin, end) byte offsets relative to the start of the data section.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/io/mapped_file.h"
#include "engine/tensor.h"

namespace dyllm {

class AtomicFile;

// One validated tensor of a safetensors file.
struct SafetensorsEntry {
    std::string          name;
    DType                dtype = DType::F32;
    std::vector<int64_t> shape;               // outermost first (torch order), at most 4 dims
    uint64_t             begin = 0, end = 0;  // byte range in the data section
    const uint8_t*       data = nullptr;      // start of the tensor's bytes (inside the mapping)

    int64_t numel() const;
    // A CPU view on the bytes: shape [a, b] gives ne = {b, a, 1, 1}; [n] gives a 1-row vector; [] a 1-element vector.
    TensorView view() const;
};

std::string shape_string(const std::vector<int64_t>& shape);  // "[4096, 128]"

// The safetensors format caps the header at 100 MB (safetensors crate, MAX_HEADER_SIZE = 100_000_000).
inline constexpr uint64_t kSafetensorsMaxHeader = 100'000'000;

// Parses and validates a whole safetensors image held in memory. `label` names the file in error messages. Checks, each
// with its own LoadError: length prefix present, header inside the file and under the format's cap, JSON valid and an
// object, no duplicate names, known dtype (F32/F16/BF16), shape an array of non-negative integers (<= 4 dims),
// data_offsets inside the data section and equal to numel * element size, element-aligned, no two tensors overlap.
// The returned entries point into `bytes` and are sorted by name.
std::vector<SafetensorsEntry> parse_safetensors(const uint8_t* bytes, size_t size, const std::string& label,
                                                std::map<std::string, std::string>* metadata = nullptr);

// A mapped, validated safetensors file.
class SafetensorsFile {
public:
    static std::unique_ptr<SafetensorsFile> open(const std::filesystem::path& path);

    const std::vector<SafetensorsEntry>&      tensors() const { return tensors_; }
    const SafetensorsEntry*                   find(std::string_view name) const;  // nullptr when absent
    const std::map<std::string, std::string>& metadata() const { return metadata_; }
    size_t                                    file_bytes() const { return map_.size(); }
    const std::filesystem::path&              path() const { return map_.path(); }

private:
    MappedFile                         map_;
    std::vector<SafetensorsEntry>      tensors_;  // sorted by name
    std::map<std::string, std::string> metadata_;
};

// Writer: the header (padded with spaces to a multiple of 8 bytes, as the safetensors library does, so every tensor is
// aligned), then each tensor's bytes in the given order, produced by fill(i, out) into a buffer of exactly its size.
// An empty fill leaves the data section as a hole of zeros (a sparse file): full-size layouts for tests of the
// loader's memory use without writing gigabytes.
struct SafetensorsTensorSpec {
    std::string          name;
    DType                dtype = DType::F32;
    std::vector<int64_t> shape;
};
void write_safetensors(const std::filesystem::path& path, const std::vector<SafetensorsTensorSpec>& tensors,
                       const std::function<void(size_t index, uint8_t* out, size_t bytes)>& fill,
                       const std::map<std::string, std::string>&                            metadata = {});
// The same into an open AtomicFile, closed (checked) but not committed: a writer of several files renames them
// together once all are complete. Checks for an interrupt between tensors.
void write_safetensors(AtomicFile& file, const std::vector<SafetensorsTensorSpec>& tensors,
                       const std::function<void(size_t index, uint8_t* out, size_t bytes)>& fill,
                       const std::map<std::string, std::string>&                            metadata = {});

}  // namespace dyllm
