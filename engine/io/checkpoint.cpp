// Checkpoint::open: config.json + model.safetensors (or the shards of model.safetensors.index.json), memory-mapped and
// validated against the family's tensor layout before any view is handed out. Nothing is copied: views point into
// the mappings, so a 16 GB bf16 LLaDA-8B opens on a 24 GiB machine.
#include "engine/io/checkpoint.h"

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "engine/io/checkpoint_layout.h"
#include "engine/errors.h"
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
    std::ifstream     in(index_path, std::ios::binary);
    if (!in) throw LoadError(index + ": cannot open");
    std::stringstream ss;
    ss << in.rdbuf();
    json j;
    try {
        j = json::parse(ss.str());
    } catch (const json::exception& e) {
        throw LoadError(index + ": not valid JSON: " + e.what());
    }
    if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object()) {
        throw LoadError(index + ": key 'weight_map' missing or not an object (expected {tensor name: shard file})");
    }
    std::map<std::string, size_t> shard_index;  // file name -> files_ index
    std::vector<std::pair<std::string, std::string>> listed;
    for (const auto& [name, shard_v] : j["weight_map"].items()) {
        if (!shard_v.is_string()) {
            throw LoadError(index + ": weight_map['" + name + "'] = " + shard_v.dump() + " is not a file name");
        }
        const std::string shard = shard_v.get<std::string>();
        // Shards live beside the index; a path that leaves the directory is refused rather than followed.
        const fs::path sp(shard);
        if (shard.empty() || sp.is_absolute() || sp.filename() != sp || shard == "." || shard == "..") {
            throw LoadError(index + ": weight_map['" + name + "'] = '" + shard +
                            "' is not a plain file name in the checkpoint directory");
        }
        if (!shard_index.count(shard)) {
            const fs::path p = index_path.parent_path() / shard;
            if (!fs::exists(p)) {
                throw LoadError(index + ": shard '" + shard + "' (listed for tensor '" + name + "') does not exist in " +
                                index_path.parent_path().string());
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
            throw LoadError(f->path().string() + ": tensor '" + name + "' is absent, but " + index_path.filename().string() +
                            " maps it to this shard");
        }
        where[name] = {f, e};
    }
    *source = index_path.filename().string() + " (weight_map)";
}

}  // namespace

std::unique_ptr<Checkpoint> Checkpoint::open(const fs::path& dir) {
    auto ck  = std::make_unique<MappedCheckpoint>();
    ck->dir_ = dir;
    if (!fs::exists(dir)) throw LoadError(dir.string() + ": model directory does not exist");
    if (!fs::is_directory(dir)) throw LoadError(dir.string() + ": not a directory (expected a checkpoint directory)");
    ck->cfg_ = parse_config(dir / "config.json");
    const ModelConfig& cfg = ck->cfg_;

    // Like transformers: a single model.safetensors wins over an index.
    std::map<std::string, Located> where;
    std::string                    source;
    const fs::path                 single = dir / "model.safetensors";
    const fs::path                 index  = dir / "model.safetensors.index.json";
    if (fs::exists(single)) {
        ck->files_.push_back(SafetensorsFile::open(single));
        for (const auto& e : ck->files_[0]->tensors()) where[e.name] = {ck->files_[0].get(), &e};
        source = single.string();
    } else if (fs::exists(index)) {
        open_sharded(index, *ck, where, &source);
    } else {
        throw LoadError(dir.string() + ": no model.safetensors and no model.safetensors.index.json (weights missing)");
    }
    for (const auto& f : ck->files_) ck->file_bytes_ += f->file_bytes();

    // Every expected tensor present with the shape the config implies. Extra tensors (e.g. rotary inv_freq buffers)
    // are ignored.
    const auto specs = expected_tensor_specs(cfg);
    ck->weights_.layers.resize(size_t(cfg.n_layer));
    for (const auto& s : specs) {
        auto it = where.find(s.name);
        if (it == where.end()) {
            std::string what = s.layer >= 0 ? " (layer " + std::to_string(s.layer) + " of " + std::to_string(cfg.n_layer) + ")"
                                            : std::string();
            throw LoadError(source + ": tensor '" + s.name + "' missing" + what + ", expected for a " +
                            family_name(cfg.family) + " checkpoint with shape " + shape_string(s.shape) + " " + s.origin);
        }
        const SafetensorsEntry& e = *it->second.entry;
        if (e.shape != s.shape) {
            throw LoadError(it->second.file->path().string() + ": tensor '" + s.name + "' has shape " +
                            shape_string(e.shape) + ", expected " + shape_string(s.shape) + " " + s.origin +
                            " from config.json");
        }
        const TensorView v = e.view();
        using R            = TensorRole;
        auto& w            = ck->weights_;
        LayerWeights* L    = s.layer >= 0 ? &w.layers[size_t(s.layer)] : nullptr;
        switch (s.role) {
            case R::TokEmbd: w.tok_embd = v; break;
            case R::AttnNorm: L->attn_norm = v; break;
            case R::Wq: L->wq = v; break;
            case R::Wk: L->wk = v; break;
            case R::Wv: L->wv = v; break;
            case R::Wo: L->wo = v; break;
            case R::Bq: L->bq = v; break;
            case R::Bk: L->bk = v; break;
            case R::Bv: L->bv = v; break;
            case R::FfnNorm: L->ffn_norm = v; break;
            case R::WGate: L->w_gate = v; break;
            case R::WUp: L->w_up = v; break;
            case R::WDown: L->w_down = v; break;
            case R::OutNorm: w.out_norm = v; break;
            case R::LmHead: w.lm_head = v; break;
        }
    }
    if (cfg.tie_embeddings) ck->weights_.lm_head = ck->weights_.tok_embd;
    ck->weight_dtype_ = ck->weights_.layers.empty() ? ck->weights_.tok_embd.dtype : ck->weights_.layers[0].wq.dtype;
    return ck;
}

}  // namespace dyllm
