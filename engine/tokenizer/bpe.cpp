// BPE merge loop (same order of merges as huggingface/tokenizers models/bpe/word.rs merge_all: a min-heap on
// (rank, position), stale entries skipped) and the tokenizer.json BPE loader.
#include "engine/tokenizer/bpe.h"

#include <cstdio>
#include <queue>

#include "engine/io/json_file.h"
#include "engine/tokenizer/tokenizer_json.h"
#include "engine/tokenizer/utf8.h"

namespace dyllm {

using tokjson::json;

namespace {
// HF tokenizers caches up to 10,000 words (DEFAULT_CACHE_CAPACITY) and only words shorter than 256 (MAX_LENGTH);
// the same bounds keep memory flat on long or adversarial inputs.
constexpr size_t kCacheCapacity = 10000;
constexpr size_t kCacheMaxWord  = 256;
}  // namespace

BpeModel::BpeModel(Vocab vocab, const std::vector<std::pair<std::string, std::string>>& merges, BpeOptions opt,
                   const std::string& where)
    : vocab_(std::move(vocab)), opt_(std::move(opt)) {
    if (!opt_.unk_token.empty()) {
        unk_id_ = vocab_.find(opt_.unk_token);
        if (unk_id_ < 0)
            throw LoadError(where + ".unk_token: '" + text_excerpt(opt_.unk_token) + "' is not in the vocabulary");
    }
    merges_.reserve(merges.size());
    std::string concat;
    for (size_t r = 0; r < merges.size(); ++r) {
        // Plain references, not a structured binding: clang < 16 cannot capture structured bindings in a lambda.
        const std::string& a = merges[r].first;
        const std::string& b = merges[r].second;
        // The message prefix is built only on failure: this loop runs ~150k-280k times per load.
        auto w = [&] {
            return where + ".merges[" + std::to_string(r) + "] (\"" + text_excerpt(a) + " " + text_excerpt(b) + "\")";
        };
        const int32_t ia = vocab_.find(a), ib = vocab_.find(b);
        if (ia < 0) throw LoadError(w() + ": token '" + text_excerpt(a) + "' is not in the vocabulary");
        if (ib < 0) throw LoadError(w() + ": token '" + text_excerpt(b) + "' is not in the vocabulary");
        concat.assign(a).append(b);
        const int32_t inew = vocab_.find(concat);
        if (inew < 0) throw LoadError(w() + ": merged token '" + text_excerpt(concat) + "' is not in the vocabulary");
        merges_[pair_key(ia, ib)] = Merge{int32_t(r), inew};  // a repeated pair keeps its last rank, as in HF
    }
}

void BpeModel::encode_piece(std::string_view piece, std::vector<int32_t>& out) const {
    if (piece.empty()) return;
    if (opt_.ignore_merges) {
        if (int32_t id = vocab_.find(piece); id >= 0) {
            out.push_back(id);
            return;
        }
    }
    const bool cacheable = piece.size() < kCacheMaxWord;
    if (cacheable) {
        std::lock_guard<std::mutex> lock(cache_mutex_);
        if (auto it = cache_.find(std::string(piece)); it != cache_.end()) {
            out.insert(out.end(), it->second.begin(), it->second.end());
            return;
        }
    }
    const size_t mark = out.size();
    merge_word(piece, out);
    if (cacheable) {
        std::lock_guard<std::mutex> lock(cache_mutex_);
        if (cache_.size() < kCacheCapacity) cache_.emplace(piece, std::vector<int32_t>(out.begin() + mark, out.end()));
    }
}

void BpeModel::merge_word(std::string_view piece, std::vector<int32_t>& out) const {
    // 1. One symbol per character (code point); unknown characters -> byte fallback, unk, or dropped.
    std::vector<int32_t> sym;
    bool                 last_unk = false;
    size_t               i        = 0;
    while (i < piece.size()) {
        const size_t start = i;
        char32_t     cp;
        utf8_next(piece, i, cp);
        const std::string_view ch = piece.substr(start, i - start);
        if (int32_t id = vocab_.find(ch); id >= 0) {
            sym.push_back(id);
            last_unk = false;
            continue;
        }
        if (opt_.byte_fallback) {
            std::vector<int32_t> bytes;
            for (unsigned char c : ch) {
                char name[8];
                std::snprintf(name, sizeof(name), "<0x%02X>", c);
                const int32_t id = vocab_.find(name);
                if (id < 0) break;
                bytes.push_back(id);
            }
            if (bytes.size() == ch.size()) {
                sym.insert(sym.end(), bytes.begin(), bytes.end());
                last_unk = false;
                continue;
            }
        }
        if (unk_id_ >= 0 && !(opt_.fuse_unk && last_unk)) sym.push_back(unk_id_);
        last_unk = unk_id_ >= 0;
    }
    const int n = int(sym.size());
    if (n <= 1) {
        out.insert(out.end(), sym.begin(), sym.end());
        return;
    }

    // 2. Doubly linked symbols; a min-heap of candidate merges ordered by (rank, position).
    std::vector<int>  prev(n), next(n);
    std::vector<char> alive(n, 1);
    for (int k = 0; k < n; ++k) {
        prev[k] = k - 1;
        next[k] = k + 1 < n ? k + 1 : -1;
    }
    struct Cand {
        int32_t rank;
        int     pos;
        int32_t new_id;
        bool    operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
    };
    std::priority_queue<Cand, std::vector<Cand>, std::greater<Cand>> heap;
    auto                                                             push_pair = [&](int pos) {
        if (pos < 0 || next[pos] < 0) return;
        auto it = merges_.find(pair_key(sym[pos], sym[next[pos]]));
        if (it != merges_.end()) heap.push({it->second.rank, pos, it->second.new_id});
    };
    for (int k = 0; k + 1 < n; ++k) push_pair(k);

    while (!heap.empty()) {
        const Cand top = heap.top();
        heap.pop();
        if (!alive[top.pos] || next[top.pos] < 0) continue;
        const int r  = next[top.pos];
        auto      it = merges_.find(pair_key(sym[top.pos], sym[r]));
        if (it == merges_.end() || it->second.new_id != top.new_id) continue;  // stale: a neighbour changed
        sym[top.pos]  = top.new_id;
        alive[r]      = 0;
        next[top.pos] = next[r];
        if (next[r] >= 0) prev[next[r]] = top.pos;
        push_pair(prev[top.pos]);
        push_pair(top.pos);
    }
    for (int k = 0; k >= 0; k = next[k]) out.push_back(sym[k]);
}

std::unique_ptr<BpeModel> make_bpe_model(const json& model, const std::string& where) {
    Vocab      vocab = parse_vocab(tokjson::require(model, "vocab", where), where + ".vocab");
    BpeOptions opt;
    opt.unk_token     = tokjson::get_string(model, "unk_token", where);
    opt.fuse_unk      = tokjson::get_bool(model, "fuse_unk", false, where);
    opt.byte_fallback = tokjson::get_bool(model, "byte_fallback", false, where);
    opt.ignore_merges = tokjson::get_bool(model, "ignore_merges", false, where);
    // Sub-word affixes are a WordPiece-style BPE feature that the byte-level tokenizers of LLaDA/Qwen2 leave empty.
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
        if (!tokjson::get_string(model, key, where).empty())
            throw LoadError(where + "." + key + ": non-empty value is not supported");
    // "dropout" is ignored: it is a training-time regularizer, and inference must be deterministic.

    const json& jm = tokjson::require(model, "merges", where);
    if (!jm.is_array()) throw LoadError(where + ".merges: expected an array, got " + jm.type_name());
    std::vector<std::pair<std::string, std::string>> merges;
    merges.reserve(jm.size());
    for (size_t r = 0; r < jm.size(); ++r) {
        const json& m = jm[r];
        auto        w = [&] { return where + ".merges[" + std::to_string(r) + "]"; };
        if (m.is_string()) {
            // "a b": exactly one space (HF splits on ' ' and requires two parts).
            const std::string& s  = m.get_ref<const std::string&>();
            const size_t       sp = s.find(' ');
            if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
                throw LoadError(w() + ": expected \"left right\" with exactly one space, got \"" + text_excerpt(s) +
                                "\"");
            merges.emplace_back(s.substr(0, sp), s.substr(sp + 1));
        } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
            merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
        } else {
            throw LoadError(w() + ": expected a \"left right\" string or a [\"left\", \"right\"] pair, got " +
                            json_excerpt(m));
        }
    }
    return std::make_unique<BpeModel>(std::move(vocab), merges, std::move(opt), where);
}

}  // namespace dyllm
