// RunHistory: folds the engine's event stream into per-step, per-token and summary views for the studio panels.
#include "app/model/run_history.h"

#include <algorithm>
#include <type_traits>

namespace dyllm::app {

namespace {
const std::vector<TokenInfo> kNoTokens;
const std::vector<int32_t>   kNoIds;
}  // namespace

const LayerSaliencyRecord* StepData::layer(int seq, int l) const {
    if (seq < 0 || size_t(seq) >= saliency.size()) return nullptr;
    if (l < 0 || size_t(l) >= saliency[seq].size() || !has_saliency[seq][l]) return nullptr;
    return &saliency[seq][l];
}

int32_t StepData::salient_count(int seq, int l) const {
    const auto* r = layer(seq, l);
    return r ? r->n_salient : -1;
}

int32_t RunHistory::prompt_len(int seq) const {
    if (seq < 0 || size_t(seq) >= info_.prompt_lengths.size()) return 0;
    return info_.prompt_lengths[seq];
}

std::string RunHistory::env(const std::string& key) const {
    for (const auto& [k, v] : info_.env)
        if (k == key) return v;
    return {};
}

int32_t RunHistory::steps_ended() const {
    int32_t n = 0;
    for (const auto& s : steps_) n += s.ended ? 1 : 0;
    return n;
}

const StepData* RunHistory::step(int k) const {
    if (k < 1 || k > int(steps_.size())) return nullptr;
    return &steps_[size_t(k - 1)];
}

StepData& RunHistory::step_mut(int k) {
    if (k < 1) k = 1;  // a malformed step number must not index out of range
    while (int(steps_.size()) < k) {
        StepData s;
        s.step = int32_t(steps_.size()) + 1;
        steps_.push_back(std::move(s));
    }
    return steps_[size_t(k - 1)];
}

void RunHistory::ensure_seq(int seq) {
    if (seq < 0) return;
    if (int(tokens_.size()) <= seq) {
        tokens_.resize(size_t(seq) + 1, std::vector<TokenInfo>(size_t(std::max(info_.gen_length, 0))));
        prompts_.resize(size_t(seq) + 1);
    }
}

const std::vector<TokenInfo>& RunHistory::tokens(int seq) const {
    if (seq < 0 || size_t(seq) >= tokens_.size()) return kNoTokens;
    return tokens_[seq];
}

const std::vector<int32_t>& RunHistory::prompt_tokens(int seq) const {
    if (seq < 0 || size_t(seq) >= prompts_.size()) return kNoIds;
    return prompts_[seq];
}

void RunHistory::apply_canvas(const CanvasRecord& c) {
    if (c.seq < 0) return;
    ensure_seq(c.seq);
    if (c.prompt_len >= 0 && size_t(c.prompt_len) <= c.tokens.size())
        prompts_[c.seq].assign(c.tokens.begin(), c.tokens.begin() + c.prompt_len);
    // The snapshot is authoritative for positions whose Unmask event was dropped by a full queue.
    auto& toks = tokens_[c.seq];
    for (size_t r = 0; r < c.unmask_step.size() && r < toks.size(); ++r) {
        if (c.unmask_step[r] <= 0 || toks[r].unmask_step > 0) continue;
        toks[r].unmask_step = c.unmask_step[r];
        const size_t pos    = size_t(c.prompt_len) + r;
        if (pos < c.tokens.size()) toks[r].token = c.tokens[pos];
        if (r < c.scores.size()) toks[r].score = c.scores[r];
    }
}

void RunHistory::apply(const EventRecord& ev) {
    events_.push_back(ev);
    std::visit(
        [this](const auto& e) {
            using T = std::decay_t<decltype(e)>;
            if constexpr (std::is_same_v<T, RunBegin>) {
                info_     = e;
                has_run_  = true;
                finished_ = false;
                steps_.clear();
                tokens_.clear();
                prompts_.clear();
                for (int s = 0; s < e.n_seq; ++s) ensure_seq(s);
            } else if constexpr (std::is_same_v<T, StepBegin>) {
                auto& s        = step_mut(e.step);
                s.begun        = true;
                s.kind         = e.kind;
                s.tau          = e.tau;
                s.n_query_rows = e.n_query_rows;
                s.t_begin_ns   = e.t_ns;
            } else if constexpr (std::is_same_v<T, OpTiming>) {
                auto& s = step_mut(e.step);
                s.ops.push_back(e);
                if (size_t(e.op) < kOpClasses) s.op_seconds[size_t(e.op)] += double(e.dur_ns) * 1e-9;
            } else if constexpr (std::is_same_v<T, LayerSaliencyRecord>) {
                if (e.seq < 0 || e.layer < 0) return;
                auto& s = step_mut(e.step);
                if (int(s.saliency.size()) <= e.seq) {
                    s.saliency.resize(size_t(e.seq) + 1);
                    s.has_saliency.resize(size_t(e.seq) + 1);
                }
                const size_t nl = size_t(std::max(info_.n_layer, e.layer + 1));
                if (s.saliency[e.seq].size() < nl) {
                    s.saliency[e.seq].resize(nl);
                    s.has_saliency[e.seq].resize(nl, 0);
                }
                s.saliency[e.seq][e.layer]     = e;
                s.has_saliency[e.seq][e.layer] = 1;
            } else if constexpr (std::is_same_v<T, UnmaskRecord>) {
                if (e.seq < 0) return;
                auto& s = step_mut(e.step);
                s.unmasks.push_back(e);
                ensure_seq(e.seq);
                auto& toks = tokens_[e.seq];
                for (size_t i = 0; i < e.positions.size(); ++i) {
                    const int32_t p = e.positions[i];
                    if (p < 0) continue;
                    if (size_t(p) >= toks.size()) toks.resize(size_t(p) + 1);
                    toks[p].unmask_step = e.step;
                    if (i < e.tokens.size()) toks[p].token = e.tokens[i];
                    if (i < e.scores.size()) toks[p].score = e.scores[i];
                }
            } else if constexpr (std::is_same_v<T, CanvasRecord>) {
                apply_canvas(e);
            } else if constexpr (std::is_same_v<T, StepEnd>) {
                auto& s = step_mut(e.step);
                s.ended = true;
                s.end   = e;
            } else if constexpr (std::is_same_v<T, RunEnd>) {
                finished_ = true;
                run_end_  = e;
            } else if constexpr (std::is_same_v<T, ErrorRecord>) {
                errors_.push_back(e);
            }
        },
        ev);
}

std::vector<CanvasCell> RunHistory::canvas_at(int seq, int k) const {
    const auto&             toks = tokens(seq);
    std::vector<CanvasCell> out(toks.size());
    for (size_t r = 0; r < toks.size(); ++r) {
        if (toks[r].unmask_step > 0 && toks[r].unmask_step <= k) {
            out[r].token       = toks[r].token;
            out[r].unmask_step = toks[r].unmask_step;
            out[r].score       = toks[r].score;
        }
    }
    return out;
}

std::vector<int32_t> RunHistory::salient_layers(int seq, int k) const {
    std::vector<int32_t> out(tokens(seq).size(), 0);
    const StepData*      sd = step(k);
    if (!sd) return out;
    const int32_t P = prompt_len(seq);
    for (int l = 0; l < n_layer(); ++l)
        if (const LayerSaliencyRecord* rec = sd->layer(seq, l))
            for (int32_t p : rec->salient_positions)
                if (p >= P && size_t(p - P) < out.size()) ++out[size_t(p - P)];
    return out;
}

int32_t RunHistory::masked_at(int seq, int k) const {
    int32_t n = 0;
    for (const auto& t : tokens(seq)) n += (t.unmask_step == 0 || t.unmask_step > k) ? 1 : 0;
    return n;
}

TokenSaliencyGrid RunHistory::token_saliency(int seq, int response_pos) const {
    TokenSaliencyGrid g;
    g.steps  = step_count();
    g.layers = std::max(info_.n_layer, 0);
    g.state.assign(size_t(g.steps) * g.layers, TokenSal::NotTested);
    g.cosine.assign(size_t(g.steps) * g.layers, NAN);
    const int32_t pos = prompt_len(seq) + response_pos;  // LayerSaliency uses sequence positions
    for (int k = 1; k <= g.steps; ++k) {
        const StepData& s = steps_[size_t(k - 1)];
        for (int l = 0; l < g.layers; ++l) {
            const auto* r = s.layer(seq, l);
            if (!r) continue;
            const size_t idx     = size_t(k - 1) * g.layers + l;
            const auto   it      = std::find(r->row_positions.begin(), r->row_positions.end(), pos);
            const bool   in_rows = it != r->row_positions.end();
            const bool   salient = std::binary_search(r->salient_positions.begin(), r->salient_positions.end(), pos);
            if (in_rows) {
                const size_t i = size_t(it - r->row_positions.begin());
                if (i < r->cosines.size()) g.cosine[idx] = r->cosines[i];
            }
            if (salient)
                g.state[idx] = TokenSal::Salient;
            else if (in_rows)
                g.state[idx] = TokenSal::Stable;
        }
    }
    return g;
}

double StepData::ops_seconds() const {
    double t = 0;
    for (double c : op_seconds) t += c;
    return t;
}

double StepData::outside_ops_seconds() const {
    return ended ? std::max(0.0, wall_seconds() - ops_seconds()) : 0.0;
}

RunSummary RunHistory::summary(int upto_step) const {
    RunSummary          out;
    const int           last = upto_step < 0 ? step_count() : std::min(upto_step, step_count());
    const int           nl   = std::max(info_.n_layer, 0);
    std::vector<double> layer_ffn(size_t(nl), 0.0), layer_dense(size_t(nl), 0.0);
    for (int k = 1; k <= last; ++k) {
        const StepData& s = steps_[size_t(k - 1)];
        for (size_t c = 0; c < kOpClasses; ++c) out.op_seconds[c] += s.op_seconds[c];
        if (!s.ended) continue;
        out.steps += 1;
        out.forward_passes += 1;
        if (size_t(s.kind) < out.steps_by_kind.size()) out.steps_by_kind[size_t(s.kind)] += 1;
        out.tokens_committed += s.end.tokens_committed;
        out.denoise_seconds += s.wall_seconds();
        out.outside_ops_seconds += s.outside_ops_seconds();
        out.flops += s.end.flops;
        out.dense_flops += s.end.dense_flops;
        out.ffn_rows += s.end.ffn_rows;
        out.dense_rows += s.end.dense_rows;
        // Per layer: the layer's FFN rows when the engine reported the layer; otherwise the step was dense there.
        const double dense_per_layer = nl > 0 ? double(s.end.dense_rows) / nl : 0.0;
        for (int l = 0; l < nl; ++l) {
            double ffn = 0;
            bool   any = false;
            for (int q = 0; q < int(s.saliency.size()); ++q) {
                if (const auto* r = s.layer(q, l)) {
                    ffn += r->ffn_rows;
                    any = true;
                }
            }
            layer_ffn[l] += any ? ffn : dense_per_layer;
            layer_dense[l] += dense_per_layer;
        }
    }
    out.response_tokens = int64_t(std::max(info_.gen_length, 0)) * std::max(info_.n_seq, 0);
    // Finished: the engine's definition (gen_length x sequences over denoising time); running: what is decoded so far.
    const bool   complete  = finished_ && last == step_count();
    const double tokens    = complete ? double(out.response_tokens) : double(out.tokens_committed);
    out.tokens_per_s       = out.denoise_seconds > 0 ? tokens / out.denoise_seconds : 0.0;
    out.flops_fraction     = out.dense_flops > 0 ? out.flops / out.dense_flops : 1.0;
    out.recompute_fraction = out.dense_rows > 0 ? double(out.ffn_rows) / double(out.dense_rows) : 1.0;
    out.layer_recompute_fraction.resize(size_t(nl), 1.0);
    for (int l = 0; l < nl; ++l)
        out.layer_recompute_fraction[l] = layer_dense[l] > 0 ? layer_ffn[l] / layer_dense[l] : 1.0;
    return out;
}

}  // namespace dyllm::app
