// safetensors reader (validation of the header and of every tensor's byte range, before any use) and writer.
#include "engine/io/safetensors.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <set>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/errors.h"
#include "engine/interrupt.h"
#include "engine/io/atomic_file.h"
#include "engine/io/json_file.h"

namespace dyllm {

namespace {

using json = nlohmann::json;

bool parse_dtype(const std::string& s, DType* out) {
    if (s == "F32")
        *out = DType::F32;
    else if (s == "F16")
        *out = DType::F16;
    else if (s == "BF16")
        *out = DType::BF16;
    else
        return false;
    return true;
}

uint64_t read_u64_le(const uint8_t* p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
    return v;
}

std::string range_string(uint64_t b, uint64_t e) {
    return "[" + std::to_string(b) + ", " + std::to_string(e) + ")";
}

}  // namespace

std::string shape_string(const std::vector<int64_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

int64_t SafetensorsEntry::numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
}

TensorView SafetensorsEntry::view() const {
    TensorView v;
    v.data          = const_cast<uint8_t*>(data);  // the mapping is read-only; views are only ever read
    v.dtype         = dtype;
    v.device        = Device::Cpu;
    const size_t nd = shape.size();
    for (size_t i = 0; i < nd; ++i) v.ne[i] = shape[nd - 1 - i];
    for (size_t i = nd; i < 4; ++i) v.ne[i] = 1;
    if (nd == 0) v.ne[0] = 1;
    v.nb[0] = int64_t(dtype_size(dtype));
    for (int i = 1; i < 4; ++i) v.nb[i] = v.nb[i - 1] * v.ne[i - 1];
    return v;
}

std::vector<SafetensorsEntry> parse_safetensors(const uint8_t* bytes, size_t size, const std::string& label,
                                                std::map<std::string, std::string>* metadata) {
    if (size < 8) {
        throw LoadError(label + ": file is " + std::to_string(size) +
                        " bytes, too short for the 8-byte safetensors header length (truncated or not safetensors)");
    }
    const uint64_t header_len = read_u64_le(bytes);
    if (header_len > kSafetensorsMaxHeader) {
        throw LoadError(label + ": header length " + std::to_string(header_len) + " (first 8 bytes) exceeds the " +
                        std::to_string(kSafetensorsMaxHeader) +
                        "-byte limit of the safetensors format (not safetensors?)");
    }
    if (header_len > size - 8) {
        throw LoadError(label + ": header length " + std::to_string(header_len) +
                        " (first 8 bytes) runs past the end of the file (8 + " + std::to_string(header_len) + " > " +
                        std::to_string(size) + " bytes; truncated file?)");
    }
    const uint64_t data_size = size - 8 - header_len;
    const uint8_t* data      = bytes + 8 + header_len;

    // Parse with a callback that sees every top-level key, because nlohmann keeps only the last of duplicate keys.
    std::vector<std::string> top_keys;
    const json header = parse_json_text(std::string_view(reinterpret_cast<const char*>(bytes) + 8, size_t(header_len)),
                                        label + ": header (" + std::to_string(header_len) + " bytes after the length)",
                                        [&top_keys](const std::string& k) { top_keys.push_back(k); });
    if (!header.is_object()) {
        throw LoadError(label + ": header JSON is not an object (got " + std::string(header.type_name()) + ")");
    }
    {
        std::set<std::string> seen;
        for (const auto& k : top_keys) {
            if (!seen.insert(k).second)
                throw LoadError(label + ": duplicate tensor name '" + text_excerpt(k) + "' in the header");
        }
    }

    std::vector<SafetensorsEntry> out;
    out.reserve(header.size());
    for (const auto& [name, desc] : header.items()) {
        if (name == "__metadata__") {
            if (!desc.is_object()) throw LoadError(label + ": '__metadata__' is not an object");
            if (metadata) {
                // The format says string -> string; anything else is kept as a short excerpt, never dumped whole.
                for (auto it = desc.begin(); it != desc.end(); ++it)
                    (*metadata)[it.key()] = it->is_string() ? it->get<std::string>() : json_excerpt(*it, 200);
            }
            continue;
        }
        const std::string where = label + ": tensor '" + text_excerpt(name) + "'";
        if (!desc.is_object()) throw LoadError(where + ": header entry is not an object");
        SafetensorsEntry e;
        e.name = name;

        const auto dt_it = desc.find("dtype");
        if (dt_it == desc.end() || !dt_it->is_string()) throw LoadError(where + ": 'dtype' missing or not a string");
        const std::string& dt = dt_it->get_ref<const std::string&>();
        if (!parse_dtype(dt, &e.dtype)) {
            throw LoadError(where + ": unsupported dtype '" + text_excerpt(dt, 40) + "' (supported: F32, F16, BF16)");
        }

        const auto sh_it = desc.find("shape");
        if (sh_it == desc.end() || !sh_it->is_array()) throw LoadError(where + ": 'shape' missing or not an array");
        const json& sh = *sh_it;
        if (sh.size() > 4) {
            throw LoadError(where + ": shape has " + std::to_string(sh.size()) +
                            " dimensions; at most 4 are supported");
        }
        // Only ever printed after every entry was found to be an integer (a flat list of at most 4 numbers).
        auto shape_text = [&sh] {
            std::string t = "[";
            for (size_t k = 0; k < sh.size(); ++k) t += (k ? ", " : "") + json_excerpt(sh[k]);
            return t + "]";
        };
        // numel * element size must fit in the data section; checking each product against that bound avoids overflow.
        uint64_t need = dtype_size(e.dtype);
        bool     zero = false;
        for (const auto& d : sh) {
            if (!d.is_number_unsigned()) {
                throw LoadError(where + ": shape entry " + json_excerpt(d) + " is not a non-negative integer");
            }
            const uint64_t v = d.get<uint64_t>();
            if (v > uint64_t(INT64_MAX))
                throw LoadError(where + ": shape " + shape_text() + " has a dimension too large");
            e.shape.push_back(int64_t(v));
            if (v == 0)
                zero = true;
            else if (need != UINT64_MAX)
                need = need > data_size / v ? UINT64_MAX : need * v;  // saturate: > data
        }
        if (zero) need = 0;

        const auto off = desc.find("data_offsets");
        if (off == desc.end() || !off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() ||
            !(*off)[1].is_number_unsigned()) {
            throw LoadError(where + ": 'data_offsets' missing or not a pair of non-negative integers");
        }
        e.begin = (*off)[0].get<uint64_t>();
        e.end   = (*off)[1].get<uint64_t>();
        if (e.begin > e.end) {
            throw LoadError(where + ": data_offsets " + range_string(e.begin, e.end) + " end before they begin");
        }
        if (e.end > data_size) {
            throw LoadError(where + ": data_offsets " + range_string(e.begin, e.end) + " run past the data section (" +
                            std::to_string(data_size) + " bytes = file size " + std::to_string(size) +
                            " - 8 - header length " + std::to_string(header_len) + "; truncated file?)");
        }
        if (e.end - e.begin != need) {
            throw LoadError(where + ": data_offsets " + range_string(e.begin, e.end) + " hold " +
                            std::to_string(e.end - e.begin) + " bytes, but shape " + shape_string(e.shape) + " x " +
                            dt + " needs " +
                            (need == UINT64_MAX ? std::string("more than the file") : std::to_string(need)) + " bytes");
        }
        // Kernels read elements through typed pointers; the safetensors library pads the header so this always holds.
        const uint64_t file_pos = 8 + header_len + e.begin;
        if (file_pos % dtype_size(e.dtype) != 0) {
            throw LoadError(where + ": data starts at file byte " + std::to_string(file_pos) +
                            ", not a multiple of the " + std::to_string(dtype_size(e.dtype)) + "-byte " + dt +
                            " element size (re-save the file with the safetensors library, which aligns tensors)");
        }
        e.data = data + e.begin;
        out.push_back(std::move(e));
    }

    // Overlaps: sort the non-empty ranges by start; each must begin at or after the previous one's end.
    std::vector<const SafetensorsEntry*> by_offset;
    for (const auto& e : out) {
        if (e.end > e.begin) by_offset.push_back(&e);
    }
    std::sort(by_offset.begin(), by_offset.end(), [](const SafetensorsEntry* a, const SafetensorsEntry* b) {
        return a->begin != b->begin ? a->begin < b->begin : a->name < b->name;
    });
    for (size_t i = 1; i < by_offset.size(); ++i) {
        const auto* a = by_offset[i - 1];
        const auto* b = by_offset[i];
        if (b->begin < a->end) {
            throw LoadError(label + ": tensors '" + text_excerpt(a->name) + "' " + range_string(a->begin, a->end) +
                            " and '" + text_excerpt(b->name) + "' " + range_string(b->begin, b->end) +
                            " overlap in the data section");
        }
    }
    std::sort(out.begin(), out.end(),
              [](const SafetensorsEntry& a, const SafetensorsEntry& b) { return a.name < b.name; });
    return out;
}

std::unique_ptr<SafetensorsFile> SafetensorsFile::open(const std::filesystem::path& path) {
    auto f      = std::make_unique<SafetensorsFile>();
    f->map_     = MappedFile::open(path);
    f->tensors_ = parse_safetensors(f->map_.data(), f->map_.size(), path.string(), &f->metadata_);
    return f;
}

const SafetensorsEntry* SafetensorsFile::find(std::string_view name) const {
    auto it = std::lower_bound(tensors_.begin(), tensors_.end(), name,
                               [](const SafetensorsEntry& e, std::string_view n) { return e.name < n; });
    return it != tensors_.end() && it->name == name ? &*it : nullptr;
}

void write_safetensors(const std::filesystem::path& path, const std::vector<SafetensorsTensorSpec>& tensors,
                       const std::function<void(size_t, uint8_t*, size_t)>& fill,
                       const std::map<std::string, std::string>&            metadata) {
    // Written under a temporary name and renamed into place: a process that has the old file mapped keeps reading the
    // old bytes instead of taking SIGBUS when the file is truncated under it.
    AtomicFile file(path);
    write_safetensors(file, tensors, fill, metadata);
    file.commit();
}

void write_safetensors(AtomicFile& file, const std::vector<SafetensorsTensorSpec>& tensors,
                       const std::function<void(size_t, uint8_t*, size_t)>& fill,
                       const std::map<std::string, std::string>&            metadata) {
    const std::filesystem::path& path   = file.path();
    json                         header = json::object();
    std::vector<size_t>          sizes;
    uint64_t                     offset = 0;
    if (!metadata.empty()) header["__metadata__"] = metadata;
    // Tensors are laid out in the given order. Aligning each start to 8 bytes keeps every dtype aligned whatever the
    // mix (the safetensors library sorts by dtype size instead; any order is valid as long as ranges do not overlap).
    std::vector<uint64_t> starts;
    for (const auto& t : tensors) {
        uint64_t n = dtype_size(t.dtype);
        for (int64_t d : t.shape) {
            if (d < 0) throw LoadError(path.string() + ": tensor '" + t.name + "' has a negative dimension");
            n *= uint64_t(d);
        }
        offset = (offset + 7) / 8 * 8;
        starts.push_back(offset);
        header[t.name] = {{"dtype", dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + n}}};
        sizes.push_back(size_t(n));
        offset += n;
    }
    std::string text = header.dump();
    text.append((8 - (text.size() % 8)) % 8, ' ');  // the 8-byte length + padded header keep the data 8-aligned

    std::ofstream& f = file.stream();
    uint8_t        len[8];
    for (int i = 0; i < 8; ++i) len[i] = uint8_t(uint64_t(text.size()) >> (8 * i));
    f.write(reinterpret_cast<const char*>(len), 8);
    f.write(text.data(), std::streamsize(text.size()));
    if (!fill) {
        file.close();
        std::error_code ec;
        std::filesystem::resize_file(file.temp_path(), 8 + text.size() + offset, ec);  // zeros, sparse where possible
        if (ec)
            throw LoadError(path.string() + ": cannot extend to " + std::to_string(offset) +
                            " data bytes: " + ec.message());
        return;
    }
    std::vector<uint8_t> buf;
    uint64_t             pos = 0;
    for (size_t i = 0; i < tensors.size(); ++i) {
        throw_if_interrupted();  // a long write stops between tensors; the caller's AtomicFile removes the temporary
        if (starts[i] > pos) {
            const char zeros[8] = {};
            f.write(zeros, std::streamsize(starts[i] - pos));
            pos = starts[i];
        }
        buf.assign(sizes[i], 0);
        if (sizes[i] > 0) fill(i, buf.data(), sizes[i]);
        f.write(reinterpret_cast<const char*>(buf.data()), std::streamsize(sizes[i]));
        pos += sizes[i];
    }
    file.close();
}

}  // namespace dyllm
