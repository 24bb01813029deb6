// One test per loader check, each built from a corrupted copy of a valid tiny checkpoint: the LoadError message must
// name the file and the tensor or key, and nothing may crash (run under ASan/UBSan too).
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "engine/io/checkpoint.h"
#include "engine/errors.h"
#include "engine/io/safetensors.h"
#include "tests/support/tiny_models.h"

using namespace dyllm;
using json   = nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
    std::ifstream     in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void spit(const fs::path& p, const std::string& bytes) {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out << bytes;
}

// A safetensors file split into its header JSON and its data section.
struct Raw {
    json        header;
    std::string data;
};

Raw read_raw(const fs::path& p) {
    const std::string b = slurp(p);
    uint64_t          n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | uint8_t(b[size_t(i)]);
    return {json::parse(b.substr(8, n)), b.substr(8 + n)};
}

std::string le64(uint64_t n) {
    std::string s(8, '\0');
    for (int i = 0; i < 8; ++i) s[size_t(i)] = char(uint8_t(n >> (8 * i)));
    return s;
}

// Writes header text (padded with spaces to a multiple of 8, keeping tensors aligned) + data.
void write_raw(const fs::path& p, std::string header_text, const std::string& data) {
    header_text.append((8 - header_text.size() % 8) % 8, ' ');
    spit(p, le64(header_text.size()) + header_text + data);
}

void write_raw(const fs::path& p, const Raw& r) {
    write_raw(p, r.header.dump(), r.data);
}

// Checkpoint::open(dir) must throw a LoadError containing every fragment.
void require_error(const fs::path& dir, std::initializer_list<std::string> fragments) {
    try {
        Checkpoint::open(dir);
        FAIL("no LoadError");
    } catch (const LoadError& e) {
        const std::string msg = e.what();
        INFO("message: " << msg);
        for (const auto& f : fragments) CHECK(msg.find(f) != std::string::npos);
    }
}

const std::string kQ0 = "model.transformer.blocks.0.q_proj.weight";  // [64, 64] F32 in the tiny LLaDA

fs::path llada_dir() {
    return test::make_tiny_checkpoint(Family::LLaDA, DType::F32, 1, 11);
}

}  // namespace

TEST_CASE("the valid tiny checkpoint opens (control for the corruptions below)", "[checkpoint][errors]") {
    CHECK(Checkpoint::open(llada_dir())->weights().layers.size() == 2);
}

TEST_CASE("truncated files", "[checkpoint][errors]") {
    const fs::path    dir  = llada_dir();
    const fs::path    st   = dir / "model.safetensors";
    const std::string full = slurp(st);
    SECTION("cut inside the data section") {
        spit(st, full.substr(0, full.size() / 2));
        require_error(dir, {"model.safetensors", "tensor '", "run past the data section", "truncated"});
    }
    SECTION("cut inside the header") {
        spit(st, full.substr(0, 100));
        require_error(dir, {"model.safetensors", "header length", "runs past the end of the file"});
    }
    SECTION("shorter than the length prefix") {
        spit(st, full.substr(0, 5));
        require_error(dir, {"model.safetensors", "5 bytes", "too short"});
    }
    SECTION("empty file") {
        spit(st, "");
        require_error(dir, {"model.safetensors", "0 bytes"});
    }
}

TEST_CASE("header length past the end or over the format's cap", "[checkpoint][errors]") {
    const fs::path dir = llada_dir();
    const fs::path st  = dir / "model.safetensors";
    std::string    b   = slurp(st);
    SECTION("past the end") {
        b.replace(0, 8, le64(b.size()));
        spit(st, b);
        require_error(dir, {"model.safetensors", "header length " + std::to_string(b.size()), "runs past the end"});
    }
    SECTION("over 100 MB") {
        b.replace(0, 8, le64(uint64_t(1) << 40));
        spit(st, b);
        require_error(dir, {"model.safetensors", "exceeds", "100000000"});
    }
}

TEST_CASE("bad JSON header", "[checkpoint][errors]") {
    const fs::path dir = llada_dir();
    const fs::path st  = dir / "model.safetensors";
    SECTION("syntax error") {
        std::string b = slurp(st);
        b[8]          = 'x';  // the opening brace
        spit(st, b);
        require_error(dir, {"model.safetensors", "not valid JSON"});
    }
    SECTION("not an object") {
        write_raw(st, "[1, 2, 3]", "");
        require_error(dir, {"model.safetensors", "header JSON is not an object (got array)"});
    }
    SECTION("entry not an object / fields missing") {
        Raw r = read_raw(st);
        r.header[kQ0].erase("data_offsets");
        write_raw(st, r);
        require_error(dir, {"model.safetensors", kQ0, "'data_offsets'"});
    }
    SECTION("negative shape") {
        Raw r                  = read_raw(st);
        r.header[kQ0]["shape"] = {-64, 64};
        write_raw(st, r);
        require_error(dir, {kQ0, "non-negative"});
    }
}

TEST_CASE("unknown dtype", "[checkpoint][errors]") {
    const fs::path dir     = llada_dir();
    Raw            r       = read_raw(dir / "model.safetensors");
    r.header[kQ0]["dtype"] = "F8_E4M3";
    write_raw(dir / "model.safetensors", r);
    require_error(dir, {"model.safetensors", kQ0, "unsupported dtype 'F8_E4M3'"});
}

TEST_CASE("wrong shape against the config", "[checkpoint][errors]") {
    const fs::path dir = llada_dir();
    // The file has ff_proj [128, 64]; a config with mlp_hidden_size 96 expects [96, 64].
    json cfg               = json::parse(slurp(dir / "config.json"));
    cfg["mlp_hidden_size"] = 96;
    spit(dir / "config.json", cfg.dump());
    require_error(dir, {"model.safetensors", "tensor 'model.transformer.blocks.0.ff_proj.weight' has shape [128, 64]",
                        "expected [96, 64]", "mlp_hidden_size=96", "d_model=64"});
}

TEST_CASE("wrong shape with consistent byte counts (transposed)", "[checkpoint][errors]") {
    const fs::path    dir = test::make_tiny_checkpoint(Family::Dream, DType::BF16, 1, 2);
    Raw               r   = read_raw(dir / "model.safetensors");
    const std::string k   = "model.layers.1.self_attn.k_proj.weight";  // [32, 64] = kv_dim x hidden
    r.header[k]["shape"]  = {64, 32};
    write_raw(dir / "model.safetensors", r);
    require_error(dir, {k, "has shape [64, 32]", "expected [32, 64]", "num_key_value_heads=2 x head_dim=16"});
}

TEST_CASE("offsets out of range or inconsistent", "[checkpoint][errors]") {
    const fs::path dir = llada_dir();
    const fs::path st  = dir / "model.safetensors";
    Raw            r   = read_raw(st);
    const uint64_t b   = r.header[kQ0]["data_offsets"][0].get<uint64_t>();
    SECTION("end past the data section") {
        r.header[kQ0]["data_offsets"] = {r.data.size() - 8, r.data.size() - 8 + 64 * 64 * 4};
        write_raw(st, r);
        require_error(dir, {"model.safetensors", kQ0, "run past the data section"});
    }
    SECTION("size does not match shape x dtype") {
        r.header[kQ0]["data_offsets"] = {b, b + 100};
        write_raw(st, r);
        require_error(dir, {kQ0, "hold 100 bytes", "[64, 64] x F32 needs 16384 bytes"});
    }
    SECTION("end before begin") {
        r.header[kQ0]["data_offsets"] = {b + 8, b};
        write_raw(st, r);
        require_error(dir, {kQ0, "end before they begin"});
    }
    SECTION("misaligned start") {
        r.header[kQ0]["data_offsets"] = {b + 2, b + 2 + 64 * 64 * 4};
        write_raw(st, r);
        require_error(dir, {kQ0, "not a multiple of the 4-byte F32 element size"});
    }
}

TEST_CASE("overlapping tensors", "[checkpoint][errors]") {
    const fs::path    dir       = llada_dir();
    Raw               r         = read_raw(dir / "model.safetensors");
    const std::string k         = "model.transformer.blocks.0.k_proj.weight";
    r.header[k]["data_offsets"] = r.header[kQ0]["data_offsets"];  // same bytes for q and k
    write_raw(dir / "model.safetensors", r);
    require_error(dir, {"model.safetensors", kQ0, k, "overlap"});
}

TEST_CASE("duplicate tensor names", "[checkpoint][errors]") {
    const fs::path dir  = llada_dir();
    Raw            r    = read_raw(dir / "model.safetensors");
    std::string    text = r.header.dump();
    // Append a second entry with an existing name (nlohmann would otherwise silently keep the last one).
    text.insert(text.size() - 1, ",\"" + kQ0 + "\":" + r.header[kQ0].dump());
    write_raw(dir / "model.safetensors", text, r.data);
    require_error(dir, {"model.safetensors", "duplicate tensor name '" + kQ0 + "'"});
}

TEST_CASE("missing tensor", "[checkpoint][errors]") {
    const fs::path    dir = llada_dir();
    Raw               r   = read_raw(dir / "model.safetensors");
    const std::string k   = "model.transformer.blocks.1.up_proj.weight";
    r.header.erase(k);
    write_raw(dir / "model.safetensors", r);
    require_error(dir, {"model.safetensors", "tensor '" + k + "' missing", "layer 1", "[128, 64]"});
}

TEST_CASE("missing config key or config file", "[checkpoint][errors]") {
    const fs::path dir = llada_dir();
    SECTION("key") {
        json cfg = json::parse(slurp(dir / "config.json"));
        cfg.erase("n_heads");
        spit(dir / "config.json", cfg.dump());
        require_error(dir, {"config.json", "'n_heads' missing"});
    }
    SECTION("file") {
        fs::remove(dir / "config.json");
        require_error(dir, {"config.json", "cannot open"});
    }
}

TEST_CASE("missing directory or weights", "[checkpoint][errors]") {
    const fs::path dir = llada_dir();
    SECTION("directory") {
        require_error(dir / "nope", {"nope", "does not exist"});
    }
    SECTION("not a directory") {
        require_error(dir / "config.json", {"config.json", "not a directory"});
    }
    SECTION("no weights") {
        fs::remove(dir / "model.safetensors");
        require_error(dir, {"no model.safetensors and no model.safetensors.index.json"});
    }
}

TEST_CASE("bad sharded checkpoints", "[checkpoint][errors]") {
    const fs::path dir   = test::make_tiny_checkpoint(Family::Dream, DType::F16, 3, 9);
    const fs::path index = dir / "model.safetensors.index.json";
    json           j     = json::parse(slurp(index));
    SECTION("a shard file is missing") {
        fs::remove(dir / "model-00002-of-00003.safetensors");
        require_error(dir,
                      {"model.safetensors.index.json", "shard 'model-00002-of-00003.safetensors'", "does not exist"});
    }
    SECTION("a tensor mapped to the wrong shard") {
        const std::string k = "model.embed_tokens.weight";  // in shard 1
        j["weight_map"][k]  = "model-00003-of-00003.safetensors";
        spit(index, j.dump());
        require_error(
            dir, {"model-00003-of-00003.safetensors", "tensor '" + k + "' is absent", "model.safetensors.index.json"});
    }
    SECTION("an expected tensor missing from the weight_map") {
        j["weight_map"].erase("model.norm.weight");
        spit(index, j.dump());
        require_error(dir, {"model.safetensors.index.json", "tensor 'model.norm.weight' missing"});
    }
    SECTION("weight_map absent") {
        j.erase("weight_map");
        spit(index, j.dump());
        require_error(dir, {"model.safetensors.index.json", "'weight_map'"});
    }
    SECTION("shard path leaving the directory") {
        j["weight_map"]["model.norm.weight"] = "../model-00001-of-00003.safetensors";
        spit(index, j.dump());
        require_error(dir, {"model.safetensors.index.json", "not a plain file name"});
    }
    SECTION("index not JSON") {
        spit(index, "{\"weight_map\": ");
        require_error(dir, {"model.safetensors.index.json", "not valid JSON"});
    }
    SECTION("a corrupt shard is reported by its own name") {
        spit(dir / "model-00003-of-00003.safetensors", "1234");
        require_error(dir, {"model-00003-of-00003.safetensors", "too short"});
    }
}

TEST_CASE("unsupported dtypes that exist in safetensors are refused", "[checkpoint][errors]") {
    const fs::path dir = llada_dir();
    Raw            r   = read_raw(dir / "model.safetensors");
    for (const char* dt : {"F64", "I64", "BOOL", "U8"}) {
        r.header[kQ0]["dtype"] = dt;
        write_raw(dir / "model.safetensors", r);
        require_error(dir, {kQ0, std::string("unsupported dtype '") + dt + "'"});
    }
}

TEST_CASE("random corruptions of the header never crash", "[checkpoint][errors]") {
    // Flip bytes across the header with a fixed LCG (Numerical Recipes constants); every outcome must be either a
    // successful open (a flip inside padding or a name) or a LoadError, never a crash or another exception type.
    const fs::path    dir  = llada_dir();
    const std::string orig = slurp(dir / "model.safetensors");
    uint64_t          n    = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | uint8_t(orig[size_t(i)]);
    uint32_t state  = 12345;
    int      errors = 0;
    for (int trial = 0; trial < 200; ++trial) {
        std::string b = orig;
        for (int k = 0; k < 3; ++k) {
            state                    = state * 1664525u + 1013904223u;
            b[8 + size_t(state % n)] = char(state >> 24);
        }
        spit(dir / "model.safetensors", b);
        try {
            Checkpoint::open(dir);
        } catch (const LoadError&) {
            ++errors;
        }
    }
    CHECK(errors > 0);
}
