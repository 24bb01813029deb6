// GGUF files (llama.cpp's container, versions 2 and 3): a validating reader over a memory mapping and a streaming
// writer. Layout: "GGUF", version, tensor count, metadata count, the metadata key/values, the tensor infos, padding to
// general.alignment, then the data section; every tensor's offset is relative to the data section and aligned.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/io/mapped_file.h"
#include "engine/tensor.h"

namespace dyllm {

// Metadata value types (their ids in the file).
enum class GgufType : uint32_t {
    U8     = 0,
    I8     = 1,
    U16    = 2,
    I16    = 3,
    U32    = 4,
    I32    = 5,
    F32    = 6,
    BOOL   = 7,
    STRING = 8,
    ARRAY  = 9,
    U64    = 10,
    I64    = 11,
    F64    = 12,
};
const char* gguf_type_name(GgufType t);
// Bytes of one scalar of a fixed-size type; 0 for STRING and ARRAY.
size_t gguf_scalar_size(GgufType t);

// One metadata value. Scalars keep their bits (integers sign- or zero-extended, F32 widened to double); arrays of a
// fixed-size type keep their elements' bytes as stored (compact, so a long array costs what it weighs in the file).
struct GgufValue {
    GgufType    type = GgufType::U32;
    uint64_t    u    = 0;  // unsigned integers and BOOL
    int64_t     i    = 0;  // signed integers
    double      f    = 0;  // F32 / F64
    std::string str;       // STRING

    GgufType                 elem  = GgufType::U8;  // ARRAY: element type
    uint64_t                 count = 0;             // ARRAY: element count
    std::vector<uint8_t>     raw;                   // ARRAY of a fixed-size type: count * gguf_scalar_size(elem)
    std::vector<std::string> strs;                  // ARRAY of STRING
    std::vector<GgufValue>   items;                 // ARRAY of ARRAY

    bool is_integer() const;  // any of the eight integer types
    // Element k of a fixed-size array as a scalar value of type elem.
    GgufValue at(uint64_t k) const;

    static GgufValue of_u32(uint32_t v);
    static GgufValue of_i32(int32_t v);
    static GgufValue of_u64(uint64_t v);
    static GgufValue of_f32(float v);
    static GgufValue of_bool(bool v);
    static GgufValue of_string(std::string v);
    static GgufValue of_strings(std::vector<std::string> v);
    static GgufValue of_i32s(const std::vector<int32_t>& v);
    static GgufValue of_f32s(const std::vector<float>& v);
    // A fixed-size array from its elements' bytes (little-endian).
    static GgufValue of_raw(GgufType elem, uint64_t count, std::vector<uint8_t> bytes);
    static GgufValue of_arrays(GgufType inner, std::vector<GgufValue> arrays);
};

// The GGUF ggml type ids this project reads (F32, F16, BF16 and the quantized block types of engine/tensor.h).
bool        gguf_ggml_type_to_dtype(uint32_t ggml_type, DType* out);
uint32_t    dtype_to_gguf_ggml_type(DType t);
const char* gguf_ggml_type_name(uint32_t ggml_type);  // "Q4_1", "IQ2_XXS", ... or "unknown"

// One validated tensor.
struct GgufTensorInfo {
    std::string    name;
    int            n_dims = 0;
    int64_t        ne[4]  = {1, 1, 1, 1};  // ggml order: ne[0] innermost (elements per row)
    DType          dtype  = DType::F32;
    uint64_t       offset = 0;  // relative to the data section
    uint64_t       bytes  = 0;
    const uint8_t* data   = nullptr;

    std::vector<int64_t> dims() const { return std::vector<int64_t>(ne, ne + n_dims); }
    // A view on the bytes: ne[0] elements per row, ne[1] * ne[2] * ne[3] rows (TensorView::matrix's strides).
    TensorView view() const;
};

std::string gguf_dims_string(const std::vector<int64_t>& ne);  // "{4096, 128}" (ggml order)

inline constexpr uint32_t kGgufDefaultAlignment = 32;
// Bounds far above released files (a 70B model has about 800 tensors and 50 metadata keys; vocabularies hold up to
// 256k strings) and low enough that a corrupt count is refused before anything is allocated from it.
inline constexpr uint64_t kGgufMaxTensors     = 1 << 20;
inline constexpr uint64_t kGgufMaxKeys        = 1 << 16;
inline constexpr uint64_t kGgufMaxKeyBytes    = 65535;  // the format's limit on key length
inline constexpr uint64_t kGgufMaxNameBytes   = 64;     // ggml's GGML_MAX_NAME, which llama.cpp's loader enforces
inline constexpr int      kGgufMaxArrayDepth  = 4;      // arrays of arrays nest at most this deep
inline constexpr uint64_t kGgufMaxStringBytes = 1ull << 30;

struct GgufContents {
    uint32_t                         version   = 3;
    uint32_t                         alignment = kGgufDefaultAlignment;
    std::map<std::string, GgufValue> metadata;
    std::vector<std::string>         key_order;        // metadata keys in file order
    std::vector<GgufTensorInfo>      tensors;          // in file order
    uint64_t                         data_offset = 0;  // where the data section starts

    const GgufValue*      find(std::string_view key) const;
    const GgufTensorInfo* find_tensor(std::string_view name) const;
};

// Parses and validates a whole GGUF image held in memory; `label` names the file in messages. Each check is one
// LoadError "<label>: <field>: <what is wrong>": magic, version (2 or 3), counts bounded by the bytes left, key and
// string lengths inside the file, known value types, arrays nested at most kGgufMaxArrayDepth deep, duplicate keys,
// general.alignment a power of two (u32), tensor names (length, duplicates), 1-4 dimensions, sizes in 64 bits
// without overflow, known tensor types with whole blocks per row, offsets aligned and inside the file, no overlaps.
// Tensor data pointers point into `bytes`.
GgufContents parse_gguf(const uint8_t* bytes, size_t size, const std::string& label);

// A mapped, validated GGUF file.
class GgufFile {
public:
    static std::unique_ptr<GgufFile> open(const std::filesystem::path& path);

    const GgufContents&          contents() const { return c_; }
    const GgufValue*             find(std::string_view key) const { return c_.find(key); }
    size_t                       file_bytes() const { return map_.size(); }
    const std::filesystem::path& path() const { return map_.path(); }

private:
    MappedFile   map_;
    GgufContents c_;
};

// True when `path` names a GGUF file by its extension (".gguf", any case).
bool is_gguf_path(const std::filesystem::path& path);

// Writer: metadata in the given order, then the tensor infos and the data section (each tensor aligned to
// `alignment`), written to `out`. fill(i, dst, bytes) produces tensor i's bytes; progress(i) after each tensor.
struct GgufTensorSpec {
    std::string name;
    DType       dtype  = DType::F32;
    int         n_dims = 1;
    int64_t     ne[4]  = {1, 1, 1, 1};  // ggml order
    uint64_t    bytes() const;
};
void write_gguf(std::ostream& out, const std::vector<std::pair<std::string, GgufValue>>& metadata,
                const std::vector<GgufTensorSpec>&                                   tensors,
                const std::function<void(size_t index, uint8_t* dst, size_t bytes)>& fill,
                const std::function<void(size_t index)>& progress = {}, uint32_t alignment = kGgufDefaultAlignment);

}  // namespace dyllm
