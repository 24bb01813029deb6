// GGUF container: the writer's output read back (every metadata value type, nested arrays, every tensor type,
// alignment), and one corrupted file per validation of the reader, each refused with one LoadError line naming the
// file and the field (every truncation of a valid file included).
#include <catch2/catch.hpp>

#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "engine/errors.h"
#include "engine/io/gguf.h"

using namespace dyllm;

namespace {

// Little-endian bytes built field by field, for files the writer would never produce.
struct Bytes {
    std::string b;
    template <class T>
    Bytes& put(T v) {
        b.append(reinterpret_cast<const char*>(&v), sizeof v);
        return *this;
    }
    Bytes& u32(uint32_t v) { return put(v); }
    Bytes& u64(uint64_t v) { return put(v); }
    Bytes& str(const std::string& s) {
        u64(s.size());
        b += s;
        return *this;
    }
    Bytes& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
        b += "GGUF";
        return u32(version).u64(n_tensors).u64(n_kv);
    }
    Bytes& pad(size_t a = 32) {
        while (b.size() % a) b += '\0';
        return *this;
    }
};

GgufContents parse(const std::string& s) {
    return parse_gguf(reinterpret_cast<const uint8_t*>(s.data()), s.size(), "t.gguf");
}

// The message of the LoadError parse() throws (one line), or "" when it parses.
std::string error_of(const std::string& s) {
    try {
        (void)parse(s);
    } catch (const LoadError& e) {
        return e.what();
    }
    return "";
}

#define REQUIRE_REFUSED(bytes, needle)                 \
    do {                                               \
        const std::string msg_ = error_of(bytes);      \
        INFO("message: " << msg_);                     \
        REQUIRE(msg_.rfind("t.gguf: ", 0) == 0);       \
        CHECK(msg_.find('\n') == std::string::npos);   \
        CHECK(msg_.find(needle) != std::string::npos); \
    } while (0)

std::string write(const std::vector<std::pair<std::string, GgufValue>>& kv, const std::vector<GgufTensorSpec>& ts,
                  uint32_t alignment = kGgufDefaultAlignment) {
    std::ostringstream o;
    write_gguf(
        o, kv, ts,
        [&](size_t i, uint8_t* dst, size_t n) {
            for (size_t k = 0; k < n; ++k) dst[k] = uint8_t(i * 31 + k * 7);
        },
        {}, alignment);
    return o.str();
}

GgufTensorSpec spec(const std::string& name, DType t, std::vector<int64_t> ne) {
    GgufTensorSpec s;
    s.name   = name;
    s.dtype  = t;
    s.n_dims = int(ne.size());
    for (size_t k = 0; k < ne.size(); ++k) s.ne[k] = ne[k];
    return s;
}

// A valid file with one key and one F32 tensor, for the truncation sweep.
std::string small_valid() {
    return write({{"general.architecture", GgufValue::of_string("llada")}},
                 {spec("a", DType::F32, {4, 2}), spec("b", DType::Q8_0, {32})});
}

}  // namespace

TEST_CASE("gguf: every metadata type and tensor type round-trips through the writer", "[gguf]") {
    std::vector<std::pair<std::string, GgufValue>> kv;
    auto                                           scalar = [&](const char* k, GgufType t, uint64_t u, int64_t i) {
        GgufValue v;
        v.type = t, v.u = u, v.i = i;
        kv.emplace_back(k, v);
    };
    scalar("t.u8", GgufType::U8, 200, 0);
    scalar("t.i8", GgufType::I8, 0, -100);
    scalar("t.u16", GgufType::U16, 60000, 0);
    scalar("t.i16", GgufType::I16, 0, -30000);
    scalar("t.u32", GgufType::U32, 4000000000u, 0);
    scalar("t.i32", GgufType::I32, 0, -2000000000);
    scalar("t.u64", GgufType::U64, 18000000000000000000ull, 0);
    scalar("t.i64", GgufType::I64, 0, -9000000000000000000ll);
    kv.emplace_back("t.f32", GgufValue::of_f32(0.375f));
    GgufValue f64;
    f64.type = GgufType::F64, f64.f = 1e-300;
    kv.emplace_back("t.f64", f64);
    kv.emplace_back("t.bool", GgufValue::of_bool(true));
    kv.emplace_back("t.str", GgufValue::of_string(std::string("caf\xc3\xa9\0x", 7)));
    kv.emplace_back("t.strs", GgufValue::of_strings({"a", "", "bc d"}));
    kv.emplace_back("t.i32s", GgufValue::of_i32s({1, -2, 3}));
    kv.emplace_back("t.f32s", GgufValue::of_f32s({0.5f, -1.25f}));
    kv.emplace_back("t.u16s", GgufValue::of_raw(GgufType::U16, 2, {1, 0, 0xff, 0xff}));
    kv.emplace_back("t.bools", GgufValue::of_raw(GgufType::BOOL, 3, {1, 0, 1}));
    kv.emplace_back("t.empty", GgufValue::of_strings({}));
    kv.emplace_back("t.nested",
                    GgufValue::of_arrays(GgufType::I32, {GgufValue::of_i32s({7}), GgufValue::of_i32s({8, 9})}));
    kv.emplace_back("general.alignment", GgufValue::of_u32(64));
    const std::vector<GgufTensorSpec> ts = {
        spec("f32", DType::F32, {3, 2}),      spec("f16", DType::F16, {5}),
        spec("bf16", DType::BF16, {2, 2, 2}), spec("q8_0", DType::Q8_0, {64, 3}),
        spec("q4_0", DType::Q4_0, {32, 1}),   spec("q4_k", DType::Q4_K, {256, 2}),
        spec("q5_k", DType::Q5_K, {512, 1}),  spec("q6_k", DType::Q6_K, {256, 1, 1, 2}),
        spec("empty", DType::F32, {0, 4}),
    };
    const std::string  file = write(kv, ts, 64);
    const GgufContents g    = parse(file);
    CHECK(g.version == 3);
    CHECK(g.alignment == 64);
    REQUIRE(g.key_order.size() == kv.size());
    for (size_t k = 0; k < kv.size(); ++k) CHECK(g.key_order[k] == kv[k].first);
    CHECK(g.find("t.u8")->u == 200);
    CHECK(g.find("t.i8")->i == -100);
    CHECK(g.find("t.u16")->u == 60000);
    CHECK(g.find("t.i16")->i == -30000);
    CHECK(g.find("t.u32")->u == 4000000000u);
    CHECK(g.find("t.i32")->i == -2000000000);
    CHECK(g.find("t.u64")->u == 18000000000000000000ull);
    CHECK(g.find("t.i64")->i == -9000000000000000000ll);
    CHECK(g.find("t.f32")->f == 0.375);
    CHECK(g.find("t.f64")->f == 1e-300);
    CHECK(g.find("t.bool")->u == 1);
    CHECK(g.find("t.str")->str == std::string("caf\xc3\xa9\0x", 7));
    CHECK(g.find("t.strs")->strs == std::vector<std::string>{"a", "", "bc d"});
    CHECK(g.find("t.i32s")->at(1).i == -2);
    CHECK(g.find("t.f32s")->at(1).f == -1.25);
    CHECK(g.find("t.u16s")->at(1).u == 0xffff);
    CHECK(g.find("t.bools")->at(1).u == 0);
    CHECK(g.find("t.empty")->count == 0);
    const GgufValue* n = g.find("t.nested");
    REQUIRE(n->items.size() == 2);
    CHECK(n->items[1].count == 2);
    CHECK(n->items[1].at(1).i == 9);
    REQUIRE(g.tensors.size() == ts.size());
    for (size_t i = 0; i < ts.size(); ++i) {
        const GgufTensorInfo& t = g.tensors[i];
        CHECK(t.name == ts[i].name);
        CHECK(t.dtype == ts[i].dtype);
        CHECK(t.dims() == std::vector<int64_t>(ts[i].ne, ts[i].ne + ts[i].n_dims));
        CHECK(t.bytes == ts[i].bytes());
        CHECK(t.offset % 64 == 0);
        CHECK((g.data_offset % 64) == 0);
        for (size_t k = 0; k < t.bytes; ++k) REQUIRE(t.data[k] == uint8_t(i * 31 + k * 7));
    }
    // The quantized view: elements per row, rows, block and row bytes (ggml's convention).
    const TensorView v = g.tensors[3].view();
    CHECK(v.ne[0] == 64);
    CHECK(v.ne[1] == 3);
    CHECK(v.nb[0] == 34);
    CHECK(v.nb[1] == 68);
    CHECK(g.tensors[7].view().rows() == 2);
}

TEST_CASE("gguf: version 2 files are read", "[gguf]") {
    Bytes b;
    b.header(0, 1, 2).str("k").u32(uint32_t(GgufType::U32)).u32(5);
    CHECK(parse(b.b).version == 2);
    CHECK(parse(b.b).find("k")->u == 5);
}

TEST_CASE("gguf: every truncation of a valid file is one LoadError", "[gguf]") {
    const std::string f = small_valid();
    REQUIRE(error_of(f).empty());
    for (size_t n = 0; n < f.size(); ++n) {
        INFO("prefix of " << n << " bytes");
        const std::string msg = error_of(f.substr(0, n));
        CHECK(!msg.empty());
        CHECK(msg.find('\n') == std::string::npos);
    }
}

TEST_CASE("gguf: header fields are validated", "[gguf]") {
    REQUIRE_REFUSED(std::string("GGML\x03\0\0\0", 8), "magic");
    {
        Bytes b;
        REQUIRE_REFUSED(b.header(0, 0, 1).b, "GGUF v1");
    }
    {
        Bytes b;
        REQUIRE_REFUSED(b.header(0, 0, 4).b, "version: 4");
    }
    {
        Bytes b;
        REQUIRE_REFUSED(b.header(0, 0, 0x03000000).b, "big-endian");
    }
    {
        Bytes b;
        REQUIRE_REFUSED(b.header(uint64_t(1) << 62, 0).b, "tensor_count");
    }
    {
        Bytes b;
        REQUIRE_REFUSED(b.header(0, uint64_t(1) << 40).b, "metadata_kv_count");
    }
}

TEST_CASE("gguf: metadata values are validated", "[gguf]") {
    auto one = [](auto&& fill) {
        Bytes b;
        b.header(0, 1);
        fill(b);
        b.b += std::string(16, '\0');  // slack, so that only the field under test is wrong
        return b.b;
    };
    REQUIRE_REFUSED(one([](Bytes& b) { b.u64(uint64_t(1) << 20); }), "metadata[0] key");
    REQUIRE_REFUSED(one([](Bytes& b) { b.u64(100); }), "runs past the end");
    REQUIRE_REFUSED(one([](Bytes& b) { b.str(""); }), "empty key");
    REQUIRE_REFUSED(one([](Bytes& b) { b.str("k").u32(13); }), "unknown value type 13");
    REQUIRE_REFUSED(one([](Bytes& b) { b.str("k").u32(uint32_t(GgufType::BOOL)).put(uint8_t(2)); }), "bool value 2");
    REQUIRE_REFUSED(one([](Bytes& b) { b.str("k").u32(uint32_t(GgufType::STRING)).u64(uint64_t(1) << 50); }),
                    "metadata 'k'");
    REQUIRE_REFUSED(one([](Bytes& b) { b.str("k").u32(uint32_t(GgufType::ARRAY)).u32(99).u64(0); }),
                    "unknown array element type 99");
    REQUIRE_REFUSED(
        one([](Bytes& b) { b.str("k").u32(uint32_t(GgufType::ARRAY)).u32(uint32_t(GgufType::U64)).u64(1ull << 61); }),
        "array of");
    REQUIRE_REFUSED(one([](Bytes& b) {
                        b.str("k").u32(uint32_t(GgufType::ARRAY)).u32(uint32_t(GgufType::STRING)).u64(1ull << 62);
                    }),
                    "array of");
    REQUIRE_REFUSED(one([](Bytes& b) {
                        b.str("k").u32(uint32_t(GgufType::ARRAY)).u32(uint32_t(GgufType::BOOL)).u64(2);
                        b.put(uint8_t(1)).put(uint8_t(7));
                    }),
                    "bool value 7");
    {
        // Arrays of arrays nested one level deeper than allowed.
        Bytes b;
        b.header(0, 1).str("k").u32(uint32_t(GgufType::ARRAY));
        for (int d = 0; d < kGgufMaxArrayDepth; ++d) b.u32(uint32_t(GgufType::ARRAY)).u64(1);
        b.u32(uint32_t(GgufType::U8)).u64(0);
        b.b += std::string(64, '\0');
        REQUIRE_REFUSED(b.b, "nested deeper");
    }
    {
        Bytes b;
        b.header(0, 2)
            .str("k")
            .u32(uint32_t(GgufType::U8))
            .put(uint8_t(1))
            .str("k")
            .u32(uint32_t(GgufType::U8))
            .put(uint8_t(2));
        REQUIRE_REFUSED(b.b, "duplicate key");
    }
    {
        Bytes b;
        b.header(0, 1).str("general.alignment").u32(uint32_t(GgufType::U32)).u32(48);
        REQUIRE_REFUSED(b.b, "not a power of two");
    }
    {
        Bytes b;
        b.header(0, 1).str("general.alignment").u32(uint32_t(GgufType::U64)).u64(32);
        REQUIRE_REFUSED(b.b, "expected UINT32");
    }
}

TEST_CASE("gguf: tensor infos are validated", "[gguf]") {
    // One tensor "w" described by the given fields, then the data section.
    auto file = [](const std::string& name, std::vector<uint64_t> ne, uint32_t type, uint64_t offset,
                   size_t data_bytes) {
        Bytes b;
        b.header(1, 0).str(name).u32(uint32_t(ne.size()));
        for (uint64_t n : ne) b.u64(n);
        b.u32(type).u64(offset).pad();
        b.b += std::string(data_bytes, '\0');
        return b.b;
    };
    REQUIRE(error_of(file("w", {4, 2}, 0, 0, 32)).empty());
    REQUIRE_REFUSED(file(std::string(65, 'x'), {4}, 0, 0, 16), "tensor_info[0] name");
    REQUIRE_REFUSED(file("", {4}, 0, 0, 16), "empty name");
    REQUIRE_REFUSED(file("w", {}, 0, 0, 16), "n_dims = 0");
    REQUIRE_REFUSED(file("w", {1, 1, 1, 1, 1}, 0, 0, 16), "n_dims = 5");
    REQUIRE_REFUSED(file("w", {1ull << 40, 1ull << 40}, 0, 0, 16), "overflow");
    REQUIRE_REFUSED(file("w", {1ull << 63}, 0, 0, 16), "overflow");
    // An unsupported type is named with the tensor.
    REQUIRE_REFUSED(file("w", {32}, 3, 0, 64), "tensor 'w': type Q4_1 (id 3) is not supported");
    REQUIRE_REFUSED(file("w", {32}, 77, 0, 64), "type unknown (id 77)");
    REQUIRE_REFUSED(file("w", {48}, 8, 0, 64), "not a whole number of Q8_0 blocks");
    REQUIRE_REFUSED(file("w", {4}, 0, 8, 64), "not a multiple of general.alignment");
    REQUIRE_REFUSED(file("w", {4, 2}, 0, 0, 31), "runs past the end of the data section");
    REQUIRE_REFUSED(file("w", {4}, 0, 1ull << 62, 16), "runs past the end");
    {
        Bytes b;
        b.header(2, 0);
        b.str("a").u32(1).u64(16).u32(0).u64(0);
        b.str("a").u32(1).u64(4).u32(0).u64(64);
        b.pad().b += std::string(128, '\0');
        REQUIRE_REFUSED(b.b, "duplicate tensor name");
    }
    {
        Bytes b;
        b.header(2, 0);
        b.str("a").u32(1).u64(16).u32(0).u64(0);  // [0, 64)
        b.str("b").u32(1).u64(4).u32(0).u64(32);  // [32, 48): inside a
        b.pad().b += std::string(128, '\0');
        REQUIRE_REFUSED(b.b, "overlaps tensor 'a'");
    }
}

TEST_CASE("gguf: the ggml type table", "[gguf]") {
    const std::pair<uint32_t, DType> known[] = {{0, DType::F32},   {1, DType::F16},   {2, DType::Q4_0},
                                                {8, DType::Q8_0},  {12, DType::Q4_K}, {13, DType::Q5_K},
                                                {14, DType::Q6_K}, {30, DType::BF16}};
    for (const auto& [id, dt] : known) {
        DType got{};
        REQUIRE(gguf_ggml_type_to_dtype(id, &got));
        CHECK(got == dt);
        CHECK(dtype_to_gguf_ggml_type(dt) == id);
    }
    for (uint32_t id : {3u, 6u, 7u, 9u, 10u, 11u, 15u, 16u, 20u, 24u, 28u, 31u, 1000u}) {
        DType got{};
        CHECK_FALSE(gguf_ggml_type_to_dtype(id, &got));
    }
    CHECK(std::string(gguf_ggml_type_name(23)) == "IQ4_XS");
}
