// dyllm tokenize: text -> token ids (JSON array), or --decode ids -> text, with a model directory's tokenizer.json
// (weights not needed) or a built-in model's.
#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "app/cli/cli_common.h"
#include "app/cli/command.h"
#include "engine/io/config.h"
#include "engine/engine.h"
#include "engine/errors.h"
#include "engine/tokenizer/tokenizer.h"

namespace dyllm::cli {
namespace {

struct TokenizeOptions {
    std::string model;
    std::string prompt;
    bool        decode       = false;
    bool        chat         = false;
    bool        no_chat      = false;
    bool        skip_special = false;
    bool        show_tokens  = false;
    std::string family;  // "" = from config.json
};

// "1,2,3", "1 2 3" or a JSON array "[1, 2, 3]" -> ids. InputError names the bad item and its position.
std::vector<int32_t> parse_ids(const std::string& text) {
    std::vector<int32_t> ids;
    const auto           first = text.find_first_not_of(" \t\r\n");
    if (first != std::string::npos && text[first] == '[') {
        nlohmann::json j;
        try {
            j = nlohmann::json::parse(text);
        } catch (const nlohmann::json::parse_error& e) {
            throw InputError("-p: invalid JSON array of ids at byte " + std::to_string(e.byte));
        }
        if (!j.is_array()) throw InputError("-p: expected a JSON array of token ids");
        for (size_t k = 0; k < j.size(); ++k) {
            if (!j[k].is_number_integer() || j[k].get<int64_t>() < 0 || j[k].get<int64_t>() > INT32_MAX)
                throw InputError("-p: item " + std::to_string(k) + " (" + j[k].dump() + ") is not a token id");
            ids.push_back(int32_t(j[k].get<int64_t>()));
        }
        return ids;
    }
    // Comma-separated through the one list parser (an empty item, a trailing comma or nothing at all is refused), else
    // whitespace-separated.
    std::vector<std::string> items;
    if (text.find(',') != std::string::npos) {
        items = split_list("-p", text);
    } else {
        std::istringstream is(text);
        for (std::string w; is >> w;) items.push_back(w);
        if (items.empty()) throw InputError("-p: empty id list");
    }
    for (size_t index = 0; index < items.size(); ++index) {
        const std::string& item = items[index];
        char*              end  = nullptr;
        errno                   = 0;
        const long long v       = std::strtoll(item.c_str(), &end, 10);
        if (end != item.c_str() + item.size() || errno == ERANGE || v < 0 || v > INT32_MAX)
            throw InputError("-p: item " + std::to_string(index) + " ('" + item + "') is not a token id");
        ids.push_back(int32_t(v));
    }
    return ids;
}

Family chat_family(const TokenizeOptions& o, const std::filesystem::path& dir) {
    if (o.family == "llada") return Family::LLaDA;
    if (o.family == "dream") return Family::Dream;
    if (!o.family.empty()) throw InputError("--family: '" + o.family + "' is not llada or dream");
    const auto cfg = dir / "config.json";
    if (!std::filesystem::exists(cfg))
        throw InputError("--chat: " + dir.string() + " has no config.json to tell the model family; pass --family");
    return parse_config(cfg).family;
}

int run_tokenize(const TokenizeOptions& o) {
    if (o.chat && o.no_chat) throw InputError("--chat and --no-chat contradict each other");
    const std::filesystem::path dir = resolve_model_path(o.model);
    if (!std::filesystem::exists(dir))
        throw LoadError(dir.string() + ": no such model directory or tokenizer.json file" +
                        (o.model.empty() ? std::string(" (the default built-in model)") : std::string()));
    const std::filesystem::path tj = std::filesystem::is_directory(dir) ? dir / "tokenizer.json" : dir;
    if (!std::filesystem::exists(tj))
        throw LoadError(tj.string() + ": not found (the model directory has no tokenizer.json)");
    const auto tok = Tokenizer::load(tj);

    if (o.decode) {
        const auto ids = parse_ids(o.prompt);
        for (size_t k = 0; k < ids.size(); ++k)
            if (ids[k] >= tok->vocab_size())
                throw InputError("-p: id " + std::to_string(ids[k]) + " (item " + std::to_string(k) +
                                 ") is outside the vocabulary [0, " + std::to_string(tok->vocab_size()) + ")");
        std::printf("%s\n", tok->decode(ids, o.skip_special).c_str());
        return 0;
    }
    const std::string text = o.chat ? apply_chat_template(chat_family(o, tj.parent_path()), o.prompt) : o.prompt;
    const auto        ids  = tok->encode(text);
    if (o.show_tokens) {
        // One line per token: id, then its display text as a JSON string (shows spaces/newlines unambiguously).
        for (int32_t id : ids)
            std::printf("%d\t%s\n", id,
                        nlohmann::json(tok->token_text(id))
                            .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                            .c_str());
        return 0;
    }
    std::printf("%s\n", nlohmann::json(ids).dump().c_str());
    return 0;
}

const CommandRegistrar kRegistrar{Command{
    "tokenize", [](CLI::App& app) -> std::function<int()> {
        app.description("text -> token ids as a JSON array, or --decode ids -> text (needs only tokenizer.json)");
        auto o = std::make_shared<TokenizeOptions>();
        app.add_option("-m,--model", o->model,
                       "model directory holding tokenizer.json (weights not needed), a tokenizer.json file, or a "
                       "built-in name (default: tiny-llada)");
        app.add_option("-p,--prompt", o->prompt, "text to encode, or with --decode the ids: \"1,2,3\" or [1,2,3]")
            ->required();
        app.add_flag("--decode", o->decode, "decode the ids given with -p and print the text");
        app.add_flag("--chat", o->chat, "apply the model family's chat template before encoding");
        app.add_flag("--no-chat", o->no_chat, "encode the text as given (the default)");
        app.add_option("--family", o->family, "chat template family for --chat: llada or dream (default: config.json)");
        app.add_flag("--skip-special", o->skip_special, "with --decode: drop special tokens");
        app.add_flag("--show-tokens", o->show_tokens, "print one 'id<TAB>\"text\"' line per token instead of JSON");
        return [o] { return run_tokenize(*o); };
    }}};

}  // namespace
}  // namespace dyllm::cli
