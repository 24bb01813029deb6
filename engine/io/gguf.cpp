// GGUF reading (bounded cursor over the mapping, every count and length checked against the bytes left before
// anything is allocated from it) and writing (header, tensor infos, aligned data section).
#include "engine/io/gguf.h"

#include <algorithm>
#include <cstring>
#include <ostream>

#include "engine/errors.h"
#include "engine/io/json_file.h"

namespace dyllm {

namespace {

constexpr uint32_t kVersionMin = 2, kVersionMax = 3;

struct GgmlTypeRow {
    uint32_t    id;
    const char* name;
    bool        known;
    DType       dtype;
};
// The ggml type table (ids as in ggml.h); `known` marks the ones this project reads.
constexpr GgmlTypeRow kGgmlTypes[] = {
    {0, "F32", true, DType::F32},      {1, "F16", true, DType::F16},       {2, "Q4_0", true, DType::Q4_0},
    {3, "Q4_1", false, DType::F32},    {6, "Q5_0", false, DType::F32},     {7, "Q5_1", false, DType::F32},
    {8, "Q8_0", true, DType::Q8_0},    {9, "Q8_1", false, DType::F32},     {10, "Q2_K", false, DType::F32},
    {11, "Q3_K", false, DType::F32},   {12, "Q4_K", true, DType::Q4_K},    {13, "Q5_K", true, DType::Q5_K},
    {14, "Q6_K", true, DType::Q6_K},   {15, "Q8_K", false, DType::F32},    {16, "IQ2_XXS", false, DType::F32},
    {17, "IQ2_XS", false, DType::F32}, {18, "IQ3_XXS", false, DType::F32}, {19, "IQ1_S", false, DType::F32},
    {20, "IQ4_NL", false, DType::F32}, {21, "IQ3_S", false, DType::F32},   {22, "IQ2_S", false, DType::F32},
    {23, "IQ4_XS", false, DType::F32}, {24, "I8", false, DType::F32},      {25, "I16", false, DType::F32},
    {26, "I32", false, DType::F32},    {27, "I64", false, DType::F32},     {28, "F64", false, DType::F32},
    {29, "IQ1_M", false, DType::F32},  {30, "BF16", true, DType::BF16},    {34, "TQ1_0", false, DType::F32},
    {35, "TQ2_0", false, DType::F32},  {39, "MXFP4", false, DType::F32},
};

// Little-endian reads through a cursor that never passes the end; every failure names the field being read.
class Cursor {
public:
    Cursor(const uint8_t* p, size_t n, const std::string& label) : p_(p), n_(n), label_(label) {}

    size_t pos() const { return pos_; }
    size_t left() const { return n_ - pos_; }

    [[noreturn]] void fail(const std::string& field, const std::string& what) const {
        throw LoadError(label_ + ": " + field + ": " + what);
    }
    const uint8_t* take(size_t k, const std::string& field) {
        if (k > left())
            fail(field, "needs " + std::to_string(k) + " bytes at offset " + std::to_string(pos_) + ", but only " +
                            std::to_string(left()) + " remain (file truncated?)");
        const uint8_t* q = p_ + pos_;
        pos_ += k;
        return q;
    }
    template <class T>
    T read(const std::string& field) {
        T v;
        std::memcpy(&v, take(sizeof(T), field), sizeof(T));
        return v;
    }
    std::string string(const std::string& field, uint64_t max_bytes) {
        const uint64_t len = read<uint64_t>(field + " (length)");
        if (len > max_bytes)
            fail(field, "string length " + std::to_string(len) + " exceeds the limit of " + std::to_string(max_bytes));
        if (len > left())
            fail(field, "string length " + std::to_string(len) + " runs past the end of the file (" +
                            std::to_string(left()) + " bytes remain)");
        const uint8_t* q = take(size_t(len), field);
        return std::string(reinterpret_cast<const char*>(q), size_t(len));
    }

private:
    const uint8_t*     p_;
    size_t             n_;
    size_t             pos_ = 0;
    const std::string& label_;
};

bool known_value_type(uint32_t t) {
    return t <= uint32_t(GgufType::F64);
}

// The fewest bytes one element of type t occupies in the file (bounds counts before allocation).
uint64_t min_elem_bytes(GgufType t) {
    if (t == GgufType::STRING) return 8;
    if (t == GgufType::ARRAY) return 12;
    return gguf_scalar_size(t);
}

GgufValue read_scalar(Cursor& c, GgufType t, const std::string& field) {
    GgufValue v;
    v.type = t;
    switch (t) {
        case GgufType::U8:
            v.u = c.read<uint8_t>(field);
            break;
        case GgufType::I8:
            v.i = c.read<int8_t>(field);
            break;
        case GgufType::U16:
            v.u = c.read<uint16_t>(field);
            break;
        case GgufType::I16:
            v.i = c.read<int16_t>(field);
            break;
        case GgufType::U32:
            v.u = c.read<uint32_t>(field);
            break;
        case GgufType::I32:
            v.i = c.read<int32_t>(field);
            break;
        case GgufType::U64:
            v.u = c.read<uint64_t>(field);
            break;
        case GgufType::I64:
            v.i = c.read<int64_t>(field);
            break;
        case GgufType::F32:
            v.f = c.read<float>(field);
            break;
        case GgufType::F64:
            v.f = c.read<double>(field);
            break;
        case GgufType::BOOL: {
            const uint8_t b = c.read<uint8_t>(field);
            if (b > 1) c.fail(field, "bool value " + std::to_string(b) + " is neither 0 nor 1");
            v.u = b;
            break;
        }
        default:
            c.fail(field, "not a scalar type");
    }
    return v;
}

GgufValue read_value(Cursor& c, uint32_t type_id, const std::string& field, int depth) {
    if (!known_value_type(type_id)) c.fail(field, "unknown value type " + std::to_string(type_id) + " (known: 0-12)");
    const auto t = GgufType(type_id);
    if (t == GgufType::STRING) {
        GgufValue v;
        v.type = t;
        v.str  = c.string(field, kGgufMaxStringBytes);
        return v;
    }
    if (t != GgufType::ARRAY) return read_scalar(c, t, field);
    if (depth >= kGgufMaxArrayDepth)
        c.fail(field, "arrays nested deeper than " + std::to_string(kGgufMaxArrayDepth) + " levels");
    GgufValue v;
    v.type              = t;
    const uint32_t elem = c.read<uint32_t>(field + " (array element type)");
    if (!known_value_type(elem)) c.fail(field, "unknown array element type " + std::to_string(elem) + " (known: 0-12)");
    v.elem        = GgufType(elem);
    v.count       = c.read<uint64_t>(field + " (array length)");
    const auto mb = min_elem_bytes(v.elem);
    if (v.count > c.left() / mb)
        c.fail(field, "array of " + std::to_string(v.count) + " " + gguf_type_name(v.elem) +
                          " elements needs at least " +
                          (v.count > UINT64_MAX / mb ? std::string("2^64") : std::to_string(v.count * mb)) +
                          " bytes, but only " + std::to_string(c.left()) + " remain");
    if (v.elem == GgufType::STRING) {
        v.strs.reserve(size_t(v.count));
        for (uint64_t k = 0; k < v.count; ++k)
            v.strs.push_back(c.string(field + "[" + std::to_string(k) + "]", kGgufMaxStringBytes));
    } else if (v.elem == GgufType::ARRAY) {
        v.items.reserve(size_t(v.count));
        for (uint64_t k = 0; k < v.count; ++k)
            v.items.push_back(
                read_value(c, uint32_t(GgufType::ARRAY), field + "[" + std::to_string(k) + "]", depth + 1));
    } else {
        const size_t   nb = size_t(v.count * mb);
        const uint8_t* q  = c.take(nb, field);
        v.raw.assign(q, q + nb);
        if (v.elem == GgufType::BOOL)
            for (size_t k = 0; k < nb; ++k)
                if (q[k] > 1)
                    c.fail(field + "[" + std::to_string(k) + "]",
                           "bool value " + std::to_string(q[k]) + " is neither 0 nor 1");
    }
    return v;
}

bool checked_mul(uint64_t a, uint64_t b, uint64_t* out) {
    if (a != 0 && b > UINT64_MAX / a) return false;
    *out = a * b;
    return true;
}

// Writer helpers.
void put_bytes(std::ostream& o, const void* p, size_t n) {
    o.write(static_cast<const char*>(p), std::streamsize(n));
}
template <class T>
void put(std::ostream& o, T v) {
    put_bytes(o, &v, sizeof v);
}
void put_string(std::ostream& o, const std::string& s) {
    put<uint64_t>(o, s.size());
    put_bytes(o, s.data(), s.size());
}

void put_value(std::ostream& o, const GgufValue& v, bool with_type) {
    if (with_type) put<uint32_t>(o, uint32_t(v.type));
    switch (v.type) {
        case GgufType::U8:
        case GgufType::BOOL:
            put<uint8_t>(o, uint8_t(v.u));
            break;
        case GgufType::I8:
            put<int8_t>(o, int8_t(v.i));
            break;
        case GgufType::U16:
            put<uint16_t>(o, uint16_t(v.u));
            break;
        case GgufType::I16:
            put<int16_t>(o, int16_t(v.i));
            break;
        case GgufType::U32:
            put<uint32_t>(o, uint32_t(v.u));
            break;
        case GgufType::I32:
            put<int32_t>(o, int32_t(v.i));
            break;
        case GgufType::U64:
            put<uint64_t>(o, v.u);
            break;
        case GgufType::I64:
            put<int64_t>(o, v.i);
            break;
        case GgufType::F32:
            put<float>(o, float(v.f));
            break;
        case GgufType::F64:
            put<double>(o, v.f);
            break;
        case GgufType::STRING:
            put_string(o, v.str);
            break;
        case GgufType::ARRAY:
            put<uint32_t>(o, uint32_t(v.elem));
            put<uint64_t>(o, v.count);
            if (v.elem == GgufType::STRING) {
                for (const auto& s : v.strs) put_string(o, s);
            } else if (v.elem == GgufType::ARRAY) {
                for (const auto& a : v.items) put_value(o, a, /*with_type=*/false);
            } else {
                put_bytes(o, v.raw.data(), v.raw.size());
            }
            break;
    }
}

void pad_to(std::ostream& o, uint64_t& pos, uint32_t alignment) {
    static const char zeros[256] = {};
    while (pos % alignment) {
        const uint64_t k = std::min<uint64_t>(alignment - pos % alignment, sizeof zeros);
        put_bytes(o, zeros, size_t(k));
        pos += k;
    }
}

}  // namespace

const char* gguf_type_name(GgufType t) {
    static const char* names[] = {"UINT8", "INT8",   "UINT16", "INT16",  "UINT32", "INT32",  "FLOAT32",
                                  "BOOL",  "STRING", "ARRAY",  "UINT64", "INT64",  "FLOAT64"};
    return uint32_t(t) <= 12 ? names[uint32_t(t)] : "unknown";
}

size_t gguf_scalar_size(GgufType t) {
    switch (t) {
        case GgufType::U8:
        case GgufType::I8:
        case GgufType::BOOL:
            return 1;
        case GgufType::U16:
        case GgufType::I16:
            return 2;
        case GgufType::U32:
        case GgufType::I32:
        case GgufType::F32:
            return 4;
        case GgufType::U64:
        case GgufType::I64:
        case GgufType::F64:
            return 8;
        default:
            return 0;
    }
}

bool GgufValue::is_integer() const {
    switch (type) {
        case GgufType::U8:
        case GgufType::I8:
        case GgufType::U16:
        case GgufType::I16:
        case GgufType::U32:
        case GgufType::I32:
        case GgufType::U64:
        case GgufType::I64:
            return true;
        default:
            return false;
    }
}

GgufValue GgufValue::at(uint64_t k) const {
    GgufValue      v;
    const size_t   es = gguf_scalar_size(elem);
    const uint8_t* p  = raw.data() + size_t(k) * es;
    v.type            = elem;
    auto rd           = [&](auto x) {
        std::memcpy(&x, p, sizeof x);
        return x;
    };
    switch (elem) {
        case GgufType::U8:
        case GgufType::BOOL:
            v.u = rd(uint8_t{});
            break;
        case GgufType::I8:
            v.i = rd(int8_t{});
            break;
        case GgufType::U16:
            v.u = rd(uint16_t{});
            break;
        case GgufType::I16:
            v.i = rd(int16_t{});
            break;
        case GgufType::U32:
            v.u = rd(uint32_t{});
            break;
        case GgufType::I32:
            v.i = rd(int32_t{});
            break;
        case GgufType::U64:
            v.u = rd(uint64_t{});
            break;
        case GgufType::I64:
            v.i = rd(int64_t{});
            break;
        case GgufType::F32:
            v.f = rd(float{});
            break;
        case GgufType::F64:
            v.f = rd(double{});
            break;
        default:
            break;
    }
    return v;
}

GgufValue GgufValue::of_u32(uint32_t x) {
    GgufValue v;
    v.type = GgufType::U32, v.u = x;
    return v;
}
GgufValue GgufValue::of_i32(int32_t x) {
    GgufValue v;
    v.type = GgufType::I32, v.i = x;
    return v;
}
GgufValue GgufValue::of_u64(uint64_t x) {
    GgufValue v;
    v.type = GgufType::U64, v.u = x;
    return v;
}
GgufValue GgufValue::of_f32(float x) {
    GgufValue v;
    v.type = GgufType::F32, v.f = x;
    return v;
}
GgufValue GgufValue::of_bool(bool x) {
    GgufValue v;
    v.type = GgufType::BOOL, v.u = x ? 1 : 0;
    return v;
}
GgufValue GgufValue::of_string(std::string x) {
    GgufValue v;
    v.type = GgufType::STRING, v.str = std::move(x);
    return v;
}
GgufValue GgufValue::of_strings(std::vector<std::string> x) {
    GgufValue v;
    v.type = GgufType::ARRAY, v.elem = GgufType::STRING, v.count = x.size(), v.strs = std::move(x);
    return v;
}
GgufValue GgufValue::of_raw(GgufType elem, uint64_t count, std::vector<uint8_t> bytes) {
    GgufValue v;
    v.type = GgufType::ARRAY, v.elem = elem, v.count = count, v.raw = std::move(bytes);
    return v;
}
GgufValue GgufValue::of_i32s(const std::vector<int32_t>& x) {
    std::vector<uint8_t> b(x.size() * 4);
    if (!x.empty()) std::memcpy(b.data(), x.data(), b.size());
    return of_raw(GgufType::I32, x.size(), std::move(b));
}
GgufValue GgufValue::of_f32s(const std::vector<float>& x) {
    std::vector<uint8_t> b(x.size() * 4);
    if (!x.empty()) std::memcpy(b.data(), x.data(), b.size());
    return of_raw(GgufType::F32, x.size(), std::move(b));
}
GgufValue GgufValue::of_arrays(GgufType inner, std::vector<GgufValue> arrays) {
    GgufValue v;
    v.type = GgufType::ARRAY, v.elem = GgufType::ARRAY, v.count = arrays.size(), v.items = std::move(arrays);
    (void)inner;
    return v;
}

bool gguf_ggml_type_to_dtype(uint32_t id, DType* out) {
    for (const auto& r : kGgmlTypes)
        if (r.id == id && r.known) {
            *out = r.dtype;
            return true;
        }
    return false;
}

uint32_t dtype_to_gguf_ggml_type(DType t) {
    for (const auto& r : kGgmlTypes)
        if (r.known && r.dtype == t) return r.id;
    DYLLM_ASSERT(false, std::string("no GGUF type for ") + dtype_name(t));
}

const char* gguf_ggml_type_name(uint32_t id) {
    for (const auto& r : kGgmlTypes)
        if (r.id == id) return r.name;
    return "unknown";
}

TensorView GgufTensorInfo::view() const {
    return TensorView::matrix(const_cast<uint8_t*>(data), dtype, Device::Cpu, ne[1] * ne[2] * ne[3], ne[0]);
}

std::string gguf_dims_string(const std::vector<int64_t>& ne) {
    std::string s = "{";
    for (size_t k = 0; k < ne.size(); ++k) s += (k ? ", " : "") + std::to_string(ne[k]);
    return s + "}";
}

const GgufValue* GgufContents::find(std::string_view key) const {
    auto it = metadata.find(std::string(key));
    return it == metadata.end() ? nullptr : &it->second;
}

const GgufTensorInfo* GgufContents::find_tensor(std::string_view name) const {
    for (const auto& t : tensors)
        if (t.name == name) return &t;
    return nullptr;
}

GgufContents parse_gguf(const uint8_t* bytes, size_t size, const std::string& label) {
    Cursor       c(bytes, size, label);
    GgufContents g;
    if (size < 4 || std::memcmp(bytes, "GGUF", 4) != 0)
        c.fail("magic", "not a GGUF file (the first 4 bytes are not \"GGUF\")");
    c.take(4, "magic");
    g.version = c.read<uint32_t>("version");
    if (g.version < kVersionMin || g.version > kVersionMax) {
        std::string why = g.version == 1 ? " (GGUF v1, with 32-bit counts, is not supported; re-convert the model)"
                          : (g.version & 0xffff) == 0 ? " (a big-endian file? only little-endian GGUF is read)"
                                                      : "";
        c.fail("version", std::to_string(g.version) + " is not supported (2 or 3 expected)" + why);
    }
    const uint64_t n_tensors = c.read<uint64_t>("tensor_count");
    const uint64_t n_kv      = c.read<uint64_t>("metadata_kv_count");
    // A tensor info takes at least 24 bytes (name length, n_dims, type, offset), a key/value at least 13.
    if (n_tensors > kGgufMaxTensors || n_tensors > c.left() / 24)
        c.fail("tensor_count", std::to_string(n_tensors) + " tensors cannot fit in the " + std::to_string(c.left()) +
                                   " bytes left (limit " + std::to_string(kGgufMaxTensors) + ")");
    if (n_kv > kGgufMaxKeys || n_kv > c.left() / 13)
        c.fail("metadata_kv_count", std::to_string(n_kv) + " key/values cannot fit in the " + std::to_string(c.left()) +
                                        " bytes left (limit " + std::to_string(kGgufMaxKeys) + ")");

    for (uint64_t k = 0; k < n_kv; ++k) {
        const std::string kf  = "metadata[" + std::to_string(k) + "]";
        std::string       key = c.string(kf + " key", kGgufMaxKeyBytes);
        if (key.empty()) c.fail(kf + " key", "empty key");
        const std::string field = "metadata '" + text_excerpt(key) + "'";
        if (g.metadata.count(key)) c.fail(field, "duplicate key");
        const uint32_t type = c.read<uint32_t>(field + " (value type)");
        g.metadata.emplace(key, read_value(c, type, field, 0));
        g.key_order.push_back(std::move(key));
    }
    if (const GgufValue* a = g.find("general.alignment")) {
        if (a->type != GgufType::U32)
            c.fail("metadata 'general.alignment'",
                   std::string("type ") + gguf_type_name(a->type) + ", expected UINT32");
        if (a->u == 0 || (a->u & (a->u - 1)) != 0)
            c.fail("metadata 'general.alignment'", std::to_string(a->u) + " is not a power of two");
        g.alignment = uint32_t(a->u);
    }

    g.tensors.reserve(size_t(n_tensors));
    for (uint64_t k = 0; k < n_tensors; ++k) {
        GgufTensorInfo t;
        t.name = c.string("tensor_info[" + std::to_string(k) + "] name", kGgufMaxNameBytes);
        if (t.name.empty()) c.fail("tensor_info[" + std::to_string(k) + "] name", "empty name");
        const std::string field = "tensor '" + text_excerpt(t.name) + "'";
        const uint32_t    nd    = c.read<uint32_t>(field + " n_dims");
        if (nd < 1 || nd > 4) c.fail(field, "n_dims = " + std::to_string(nd) + ", expected 1 to 4");
        t.n_dims       = int(nd);
        uint64_t numel = 1;
        for (uint32_t d = 0; d < nd; ++d) {
            const uint64_t n = c.read<uint64_t>(field + " ne[" + std::to_string(d) + "]");
            if (n > uint64_t(INT64_MAX) || !checked_mul(numel, n, &numel) || numel > uint64_t(INT64_MAX))
                c.fail(field, "dimension ne[" + std::to_string(d) + "] = " + std::to_string(n) +
                                  " makes the element count overflow 64 bits");
            t.ne[d] = int64_t(n);
        }
        const uint32_t type = c.read<uint32_t>(field + " type");
        if (!gguf_ggml_type_to_dtype(type, &t.dtype))
            c.fail(field, std::string("type ") + gguf_ggml_type_name(type) + " (id " + std::to_string(type) +
                              ") is not supported (supported: F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K)");
        const int64_t be = dtype_block_elems(t.dtype);
        if (t.ne[0] % be != 0)
            c.fail(field, std::string("ne[0] = ") + std::to_string(t.ne[0]) + " is not a whole number of " +
                              dtype_name(t.dtype) + " blocks (" + std::to_string(be) + " elements each)");
        uint64_t rows = uint64_t(t.ne[1]) * uint64_t(t.ne[2]) * uint64_t(t.ne[3]);  // <= numel, no overflow
        if (t.ne[0] == 0) rows = 0;
        if (!checked_mul(rows, dtype_row_bytes(t.dtype, t.ne[0]), &t.bytes))
            c.fail(field, "byte size overflows 64 bits");
        t.offset = c.read<uint64_t>(field + " offset");
        if (t.offset % g.alignment)
            c.fail(field, "offset " + std::to_string(t.offset) +
                              " is not a multiple of general.alignment = " + std::to_string(g.alignment));
        for (const auto& o : g.tensors)
            if (o.name == t.name) c.fail(field, "duplicate tensor name");
        g.tensors.push_back(std::move(t));
    }
    // The data section starts at the next multiple of the alignment after the tensor infos.
    const uint64_t end_infos = c.pos();
    g.data_offset            = (end_infos + g.alignment - 1) / g.alignment * g.alignment;
    if (g.data_offset > size && !g.tensors.empty())
        c.fail("data section", "starts at " + std::to_string(g.data_offset) + ", past the end of the file (" +
                                   std::to_string(size) + " bytes)");
    const uint64_t data_bytes = g.data_offset <= size ? size - g.data_offset : 0;
    for (auto& t : g.tensors) {
        if (t.offset > data_bytes || t.bytes > data_bytes - t.offset)
            c.fail("tensor '" + text_excerpt(t.name) + "'",
                   "data [" + std::to_string(t.offset) + ", +" + std::to_string(t.bytes) +
                       ") runs past the end of the data section (" + std::to_string(data_bytes) +
                       " bytes; file truncated?)");
        t.data = bytes + g.data_offset + t.offset;
    }
    std::vector<const GgufTensorInfo*> by_off;
    for (const auto& t : g.tensors)
        if (t.bytes) by_off.push_back(&t);
    std::sort(by_off.begin(), by_off.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
    for (size_t k = 1; k < by_off.size(); ++k)
        if (by_off[k - 1]->offset + by_off[k - 1]->bytes > by_off[k]->offset)
            c.fail("tensor '" + text_excerpt(by_off[k]->name) + "'",
                   "data at offset " + std::to_string(by_off[k]->offset) + " overlaps tensor '" +
                       text_excerpt(by_off[k - 1]->name) + "' [" + std::to_string(by_off[k - 1]->offset) + ", +" +
                       std::to_string(by_off[k - 1]->bytes) + ")");
    return g;
}

std::unique_ptr<GgufFile> GgufFile::open(const std::filesystem::path& path) {
    auto f  = std::make_unique<GgufFile>();
    f->map_ = MappedFile::open(path);
    f->c_   = parse_gguf(f->map_.data(), f->map_.size(), path.string());
    return f;
}

bool is_gguf_path(const std::filesystem::path& path) {
    std::string e = path.extension().string();
    std::transform(e.begin(), e.end(), e.begin(), [](unsigned char ch) { return char(std::tolower(ch)); });
    return e == ".gguf";
}

uint64_t GgufTensorSpec::bytes() const {
    return uint64_t(ne[1] * ne[2] * ne[3]) * dtype_row_bytes(dtype, ne[0]);
}

void write_gguf(std::ostream& out, const std::vector<std::pair<std::string, GgufValue>>& metadata,
                const std::vector<GgufTensorSpec>&                                   tensors,
                const std::function<void(size_t index, uint8_t* dst, size_t bytes)>& fill,
                const std::function<void(size_t index)>& progress, uint32_t alignment) {
    uint64_t pos = 0;
    auto     cnt = [&](uint64_t n) { pos += n; };
    out.write("GGUF", 4), cnt(4);
    put<uint32_t>(out, 3), cnt(4);
    put<uint64_t>(out, tensors.size()), cnt(8);
    put<uint64_t>(out, metadata.size()), cnt(8);
    const auto before = out.tellp();
    for (const auto& [k, v] : metadata) {
        put_string(out, k);
        put_value(out, v, /*with_type=*/true);
    }
    uint64_t off = 0;
    for (const auto& t : tensors) {
        put_string(out, t.name);
        put<uint32_t>(out, uint32_t(t.n_dims));
        for (int d = 0; d < t.n_dims; ++d) put<uint64_t>(out, uint64_t(t.ne[d]));
        put<uint32_t>(out, dtype_to_gguf_ggml_type(t.dtype));
        put<uint64_t>(out, off);
        off = (off + t.bytes() + alignment - 1) / alignment * alignment;
    }
    pos += uint64_t(out.tellp() - before);
    pad_to(out, pos, alignment);
    std::vector<uint8_t> buf;
    for (size_t i = 0; i < tensors.size(); ++i) {
        buf.assign(size_t(tensors[i].bytes()), 0);
        fill(i, buf.data(), buf.size());
        put_bytes(out, buf.data(), buf.size());
        pos += buf.size();
        if (i + 1 < tensors.size()) pad_to(out, pos, alignment);
        if (progress) progress(i);
    }
}

}  // namespace dyllm
