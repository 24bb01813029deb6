// Checkpoint::open: config.json + model.safetensors (or the shards of model.safetensors.index.json), memory-mapped and
// validated against the family's tensor layout before any view is handed out. Nothing is copied: views point into
// the mappings, so a 16 GB bf16 LLaDA-8B opens on a 24 GiB machine.
#include "engine/io/checkpoint.h"

#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "engine/io/checkpoint_layout.h"
#include "engine/errors.h"
#include "engine/io/gguf_model.h"
#include "engine/io/json_file.h"
#include "engine/io/safetensors.h"

namespace dyllm {

namespace {

namespace fs = std::filesystem;
using json   = nlohmann::json;

class MappedCheckpoint final : public Checkpoint {
public:
    const ModelConfig&  config() const override { return cfg_; }
    const ModelWeights& weights() const override { return weights_; }
    DType               weight_dtype() const override { return weight_dtype_; }
    size_t              file_bytes() const override { return file_bytes_; }
    const fs::path&     dir() const override { return dir_; }

    ModelConfig                                   cfg_;
    ModelWeights                                  weights_;
    DType                                         weight_dtype_ = DType::F32;
    size_t                                        file_bytes_   = 0;
    fs::path                                      dir_;
    std::vector<std::unique_ptr<SafetensorsFile>> files_;  // own the mappings the views point into
};

// Where each tensor name lives: file index + entry.
struct Located {
    const SafetensorsFile*  file  = nullptr;
    const SafetensorsEntry* entry = nullptr;
};

// Reads model.safetensors.index.json: validates weight_map and the shard file names, opens every shard, and checks each
// listed tensor is in the shard the index names.
void open_sharded(const fs::path& index_path, MappedCheckpoint& ck, std::map<std::string, Located>& where,
                  std::string* source) {
    const std::string index = index_path.string();
    const json        j     = read_json_file(index_path, kMaxIndexJsonBytes, "model.safetensors.index.json");
    auto              wm    = j.is_object() ? j.find("weight_map") : j.end();
    if (!j.is_object() || wm == j.end() || !wm->is_object()) {
        throw LoadError(index + ": key 'weight_map' missing or not an object (expected {tensor name: shard file})");
    }
    std::map<std::string, size_t>                    shard_index;  // file name -> files_ index
    std::vector<std::pair<std::string, std::string>> listed;
    for (auto it = wm->begin(); it != wm->end(); ++it) {
        const std::string& name    = it.key();
        const json&        shard_v = *it;
        if (!shard_v.is_string()) {
            throw LoadError(index + ": weight_map['" + text_excerpt(name) + "'] = " + json_excerpt(shard_v) +
                            " is not a file name");
        }
        const std::string& shard = shard_v.get_ref<const std::string&>();
        // Shards live beside the index; a path that leaves the directory is refused rather than followed.
        const fs::path sp(shard);
        if (shard.empty() || sp.is_absolute() || sp.filename() != sp || shard == "." || shard == "..") {
            throw LoadError(index + ": weight_map['" + text_excerpt(name) + "'] = '" + text_excerpt(shard) +
                            "' is not a plain file name in the checkpoint directory");
        }
        if (!shard_index.count(shard)) {
            const fs::path  p = index_path.parent_path() / shard;
            std::error_code ec;
            if (!fs::exists(fs::symlink_status(p, ec))) {
                throw LoadError(index + ": shard '" + text_excerpt(shard) + "' (listed for tensor '" +
                                text_excerpt(name) + "') does not exist in " + index_path.parent_path().string());
            }
            shard_index[shard] = ck.files_.size();
            ck.files_.push_back(SafetensorsFile::open(p));
        }
        listed.emplace_back(name, shard);
    }
    if (listed.empty()) throw LoadError(index + ": weight_map is empty");
    for (const auto& [name, shard] : listed) {
        const SafetensorsFile*  f = ck.files_[shard_index[shard]].get();
        const SafetensorsEntry* e = f->find(name);
        if (!e) {
            throw LoadError(f->path().string() + ": tensor '" + text_excerpt(name) + "' is absent, but " +
                            index_path.filename().string() + " maps it to this shard");
        }
        where[name] = {f, e};
    }
    *source = index_path.filename().string() + " (weight_map)";
}

// Before anything is allocated per layer: the files must hold about as many tensors as n_layers implies. A config
// asking for more than one layer beyond what the tensor count can hold is wrong about the layers (a missing tensor
// or two is left to the per-tensor checks, whose message names the tensor).
void check_layers_against_files(const ModelConfig& c, const std::string& source, size_t n_tensors) {
    const char*   k_lay     = c.family == Family::LLaDA ? "n_layers" : "num_hidden_layers";
    const int64_t per_layer = 9 + (c.qkv_bias ? 3 : 0);
    const int64_t global    = 2 + (c.tie_embeddings ? 0 : 1);
    const int64_t can_hold  = (int64_t(n_tensors) > global ? int64_t(n_tensors) - global : 0) / per_layer;
    if (int64_t(c.n_layer) > can_hold + 1) {
        throw LoadError("config.json: " + std::string(k_lay) + " = " + std::to_string(c.n_layer) + " needs " +
                        std::to_string(global + int64_t(c.n_layer) * per_layer) + " tensors (" +
                        std::to_string(per_layer) + " per layer + " + std::to_string(global) + "), but " + source +
                        " holds " + std::to_string(n_tensors) + " (at most " + std::to_string(can_hold) + " layers)");
    }
}

}  // namespace

std::unique_ptr<Checkpoint> Checkpoint::open(const fs::path& dir) {
    // error_code overloads throughout: a symlink loop or an unreadable path is a LoadError, never a filesystem_error.
    std::error_code ec;
    const auto      st = fs::status(dir, ec);
    if (is_gguf_path(dir) && !fs::is_directory(st)) return open_gguf_checkpoint(dir);
    auto ck  = std::make_unique<MappedCheckpoint>();
    ck->dir_ = dir;
    if (ec && ec.value() == ELOOP) throw LoadError(dir.string() + ": symlink loop (too many levels of symbolic links)");
    if (!fs::exists(st)) throw LoadError(dir.string() + ": model directory does not exist");
    if (!fs::is_directory(st)) throw LoadError(dir.string() + ": not a directory (expected a checkpoint directory)");
    ck->cfg_               = parse_config(dir / "config.json");
    const ModelConfig& cfg = ck->cfg_;

    // Like transformers: a single model.safetensors wins over an index.
    std::map<std::string, Located> where;
    std::string                    source;
    const fs::path                 single = dir / "model.safetensors";
    const fs::path                 index  = dir / "model.safetensors.index.json";
    // symlink_status: a dangling link or a link loop named model.safetensors is picked (and refused by the open) rather
    // than silently skipped.
    if (fs::exists(fs::symlink_status(single, ec))) {
        ck->files_.push_back(SafetensorsFile::open(single));
        for (const auto& e : ck->files_[0]->tensors()) where[e.name] = {ck->files_[0].get(), &e};
        source = single.string();
    } else if (fs::exists(fs::symlink_status(index, ec))) {
        open_sharded(index, *ck, where, &source);
    } else {
        throw LoadError(dir.string() + ": no model.safetensors and no model.safetensors.index.json (weights missing)");
    }
    size_t n_file_tensors = 0;
    for (const auto& f : ck->files_) {
        ck->file_bytes_ += f->file_bytes();
        n_file_tensors += f->tensors().size();
    }
    check_layers_against_files(cfg, source, n_file_tensors);

    // Every expected tensor present with the shape the config implies. Extra tensors (e.g. rotary inv_freq buffers)
    // are ignored.
    const auto specs = expected_tensor_specs(cfg);
    ck->weights_.layers.resize(size_t(cfg.n_layer));
    for (const auto& s : specs) {
        auto it = where.find(s.name);
        if (it == where.end()) {
            std::string what = s.layer >= 0
                                   ? " (layer " + std::to_string(s.layer) + " of " + std::to_string(cfg.n_layer) + ")"
                                   : std::string();
            throw LoadError(source + ": tensor '" + s.name + "' missing" + what + ", expected for a " +
                            family_name(cfg.family) + " checkpoint with shape " + shape_string(s.shape) + " " +
                            s.origin);
        }
        const SafetensorsEntry& e = *it->second.entry;
        if (e.shape != s.shape) {
            throw LoadError(it->second.file->path().string() + ": tensor '" + s.name + "' has shape " +
                            shape_string(e.shape) + ", expected " + shape_string(s.shape) + " " + s.origin +
                            " from config.json");
        }
        const TensorView v                         = e.view();
        weight_slot(ck->weights_, s.role, s.layer) = v;
    }
    if (cfg.tie_embeddings) ck->weights_.lm_head = ck->weights_.tok_embd;
    ck->weight_dtype_ = ck->weights_.layers.empty() ? ck->weights_.tok_embd.dtype : ck->weights_.layers[0].wq.dtype;
    return ck;
}

}  // namespace dyllm
