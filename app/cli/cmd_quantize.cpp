// dyllm quantize: an HF checkpoint directory (or a built-in model) written as one GGUF file in llama.cpp's layout,
// with its tokenizer and chat template, at f32, f16, bf16, q8_0, q4_0 or q4_k_m.
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "app/cli/command.h"
#include "app/cli/progress.h"
#include "engine/engine.h"
#include "engine/errors.h"
#include "engine/io/checkpoint.h"
#include "engine/io/gguf_export.h"

namespace dyllm::cli {
namespace {

namespace fs = std::filesystem;

struct QuantizeOptions {
    std::string model;
    std::string out;
    std::string type = "q8_0";
};

int run_quantize(const QuantizeOptions& o) {
    GgufFileType type{};
    if (!parse_gguf_file_type(o.type, &type))
        throw InputError("--type '" + o.type + "' is not one of " + gguf_file_type_choices());
    const fs::path  dir = resolve_model_path(o.model);
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
        throw InputError("-m " + dir.string() +
                         ": not a checkpoint directory (quantize reads an HF directory or a "
                         "built-in model name)");
    const fs::path out(o.out);
    if (fs::is_directory(out, ec)) throw InputError("-o " + out.string() + ": is a directory (expected a .gguf file)");
    const auto        ck      = Checkpoint::open(dir);
    const fs::path    tok     = dir / "tokenizer.json";
    const bool        has_tok = fs::exists(tok, ec);
    const std::string name    = o.model.empty() ? dir.filename().string() : fs::path(o.model).filename().string();

    ProgressLine line(stderr, ::isatty(fileno(stderr)) != 0);
    export_gguf(*ck, has_tok ? tok : fs::path(), out, type, name, [&](const GgufExportProgress& p) {
        line.draw(format_progress(int(p.done), int(p.total), 30, "quantize") + " " + p.tensor + " " +
                  dtype_name(p.dtype));
    });
    line.finish();
    std::error_code sec;
    const auto      bytes = fs::file_size(out, sec);
    std::printf("wrote %s: %s, %s, %d layers, %llu bytes (%s %llu bytes)%s\n", out.string().c_str(),
                family_name(ck->config().family), gguf_file_type_name(type), ck->config().n_layer,
                static_cast<unsigned long long>(bytes), dtype_name(ck->weight_dtype()),
                static_cast<unsigned long long>(ck->file_bytes()), has_tok ? ", tokenizer included" : ", no tokenizer");
    return 0;
}

const CommandRegistrar kRegistrar{Command{
    "quantize", [](CLI::App& app) -> std::function<int()> {
        auto o = std::make_shared<QuantizeOptions>();
        app.description("write a model as a GGUF file (llama.cpp's layout, tokenizer included) at a storage type");
        app.add_option("-m,--model", o->model, "HF checkpoint directory or built-in model name")->required();
        app.add_option("-o,--output", o->out, "the .gguf file to write (replaced atomically)")->required();
        app.add_option("--type", o->type, std::string("storage type: ") + gguf_file_type_choices() + " (default q8_0)");
        return [o] { return run_quantize(*o); };
    }}};

}  // namespace
}  // namespace dyllm::cli
