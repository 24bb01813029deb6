// Model loading: resolve the name, open and validate the checkpoint, create the backend, prepare the weights on it,
// load the tokenizer when the directory has one, and find the family's end-of-turn tokens.
#include <algorithm>
#include <chrono>

#include "engine/errors.h"
#include "engine/interrupt.h"
#include "engine/io/gguf.h"
#include "engine/model_impl.h"
#include "engine/tokenizer/tokenizer_gguf.h"

namespace dyllm {

namespace {

// Prepares the weights on the backend in a fixed order, reporting progress after each tensor.
class WeightPreparer {
public:
    WeightPreparer(Backend& be, const ModelWeights& hw, const LoadProgressFn& progress) : be_(be), progress_(progress) {
        if (!progress_) return;
        auto count = [&](const TensorView& v) {
            if (v.data) {
                ++p_.tensors_total;
                p_.bytes_total += v.bytes();
            }
        };
        count(hw.tok_embd);
        count(hw.out_norm);
        count(hw.lm_head);
        for (const LayerWeights& s : hw.layers)
            for (const TensorView* v : {&s.attn_norm, &s.wq, &s.wk, &s.wv, &s.wo, &s.bq, &s.bk, &s.bv, &s.ffn_norm,
                                        &s.w_gate, &s.w_up, &s.w_down})
                count(*v);
    }
    TensorView operator()(const TensorView& v, const std::string& name) {
        if (interrupts_throw()) throw_if_interrupted();  // packing an 8B model takes a minute: stop between tensors
        if (!v.data) return v;
        TensorView out = be_.prepare_weight(v, name);
        if (progress_) {
            ++p_.tensors_done;
            p_.bytes_done += v.bytes();
            p_.tensor = name;
            progress_(p_);
        }
        return out;
    }

private:
    Backend&              be_;
    const LoadProgressFn& progress_;
    LoadProgress          p_;
};

}  // namespace

std::unique_ptr<Model> Model::load(const std::string& spec, BackendKind kind, int n_threads, std::string* backend_note,
                                   const LoadProgressFn& progress) {
    const auto      t0  = std::chrono::steady_clock::now();
    auto            dir = resolve_model_path(spec);
    std::error_code ec;
    // A .gguf file is a whole model (weights, config and tokenizer in one file).
    const bool gguf = is_gguf_path(dir) && !std::filesystem::is_directory(dir, ec);
    if (!gguf && !std::filesystem::is_directory(dir, ec)) {
        const bool builtin = spec.empty() || spec == "tiny-llada" || spec == "tiny-dream";
        throw LoadError(dir.string() + ": model directory not found" +
                        (builtin ? std::string(" (built-in model '") + (spec.empty() ? "tiny-llada" : spec) +
                                       "' is not installed; set DYLLM_MODELS_DIR or pass -m DIR)"
                                 : std::string()));
    }
    auto m = from_checkpoint(Checkpoint::open(dir), spec.empty() ? "tiny-llada" : spec, kind, n_threads, backend_note,
                             progress);
    m->impl_->load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return m;
}

std::unique_ptr<Model> Model::from_checkpoint(std::unique_ptr<Checkpoint> ckpt, const std::string& name,
                                              BackendKind kind, int n_threads, std::string* backend_note,
                                              const LoadProgressFn& progress) {
    const auto             t0 = std::chrono::steady_clock::now();
    std::unique_ptr<Model> m(new Model());
    m->impl_                         = std::make_unique<Impl>();
    Impl& I                          = *m->impl_;
    I.dir                            = ckpt->dir();
    I.name                           = name;
    I.ckpt                           = std::move(ckpt);
    I.cfg                            = I.ckpt->config();
    I.backend                        = make_backend(kind, n_threads, backend_note);
    const std::filesystem::path& dir = I.dir;
    std::error_code              ec;

    const ModelWeights& hw = I.ckpt->weights();
    WeightPreparer      prepare(*I.backend, hw, progress);
    I.weights.tok_embd = prepare(hw.tok_embd, "tok_embd");
    I.weights.out_norm = prepare(hw.out_norm, "out_norm");
    // A tied head is prepared again under its own name: the CPU packs it for the GEMM (not the embedding table), CUDA
    // finds the same host tensor and returns its one device copy.
    I.weights.lm_head = prepare(hw.lm_head, "lm_head");
    for (size_t l = 0; l < hw.layers.size(); ++l) {
        const LayerWeights& s = hw.layers[l];
        const std::string   p = "blk." + std::to_string(l) + ".";
        I.weights.layers.push_back(LayerWeights{
            .attn_norm = prepare(s.attn_norm, p + "attn_norm"),
            .wq        = prepare(s.wq, p + "wq"),
            .wk        = prepare(s.wk, p + "wk"),
            .wv        = prepare(s.wv, p + "wv"),
            .wo        = prepare(s.wo, p + "wo"),
            .bq        = prepare(s.bq, p + "bq"),
            .bk        = prepare(s.bk, p + "bk"),
            .bv        = prepare(s.bv, p + "bv"),
            .ffn_norm  = prepare(s.ffn_norm, p + "ffn_norm"),
            .w_gate    = prepare(s.w_gate, p + "w_gate"),
            .w_up      = prepare(s.w_up, p + "w_up"),
            .w_down    = prepare(s.w_down, p + "w_down"),
        });
    }

    const auto tok_path = dir / "tokenizer.json";
    // A GGUF checkpoint carries its tokenizer in its metadata; a directory has tokenizer.json beside the weights.
    if (const GgufContents* g = I.ckpt->gguf())
        I.tokenizer = tokenizer_from_gguf(*g, dir.string());
    else if (std::filesystem::exists(tok_path, ec))
        I.tokenizer = Tokenizer::load(tok_path);
    if (I.tokenizer) {
        // End-of-turn tokens end the visible text (engine/README.md §c.1: <|eot_id|>; §c.2: <|im_end|>).
        for (const char* name : {"<|eot_id|>", "<|im_end|>", "<|endoftext|>"}) {
            const int32_t id = I.tokenizer->token_id(name);
            if (id >= 0 && id != I.cfg.eos_id) I.cfg.extra_eos_ids.push_back(id);
        }
    }
    I.load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return m;
}

Model::~Model() = default;
const ModelConfig& Model::config() const {
    return impl_->cfg;
}
const ModelWeights& Model::weights() const {
    return impl_->weights;
}
const Tokenizer* Model::tokenizer() const {
    return impl_->tokenizer.get();
}
Backend& Model::backend() const {
    return *impl_->backend;
}
const std::string& Model::name() const {
    return impl_->name;
}
const std::filesystem::path& Model::dir() const {
    return impl_->dir;
}
double Model::load_seconds() const {
    return impl_->load_s;
}

std::string decode_response(const Model& model, const std::vector<int32_t>& response_ids) {
    const ModelConfig&   c = model.config();
    std::vector<int32_t> ids;
    for (int32_t t : response_ids) {
        const bool end = t == c.eos_id || t == c.pad_id ||
                         std::find(c.extra_eos_ids.begin(), c.extra_eos_ids.end(), t) != c.extra_eos_ids.end();
        if (end) break;
        if (t != c.mask_id) ids.push_back(t);
    }
    return model.tokenizer() ? model.tokenizer()->decode(ids, /*skip_special=*/true) : std::string();
}

std::vector<int32_t> encode_prompt(const Model& model, const std::string& text, bool chat) {
    const Tokenizer* tok = model.tokenizer();
    if (!tok)
        throw InputError(model.dir().string() +
                         ": no tokenizer.json in the model directory; pass token ids with --prompt-ids");
    return tok->encode(chat ? apply_chat_template(model.config().family, text) : text);
}

}  // namespace dyllm
