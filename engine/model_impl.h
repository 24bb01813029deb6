// Model::Impl: what a loaded model holds (checkpoint mappings, backend, weights prepared on it, tokenizer).
#pragma once
#include <memory>
#include <string>

#include "engine/engine.h"

namespace dyllm {

struct Model::Impl {
    std::unique_ptr<Checkpoint> ckpt;
    std::unique_ptr<Backend>    backend;
    std::unique_ptr<Tokenizer>  tokenizer;
    ModelConfig                 cfg;
    ModelWeights                weights;  // views usable by `backend`
    std::string                 name;
    std::filesystem::path       dir;
    double                      load_s = 0;
};

}  // namespace dyllm
