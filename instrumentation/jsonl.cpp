// JSONL writer and reader (nlohmann::ordered_json keeps field order, so the text round-trips exactly).
#include "instrumentation/jsonl.h"

#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "instrumentation/json_number.h"
#include "instrumentation/step_end_json.h"

namespace dyllm {
namespace {

using Json = nlohmann::ordered_json;

// JSON has no NaN/inf: written as null, read back as NaN.
Json jnum(double v) {
    return json_number(v);
}
Json jfloat(float v) {
    return json_float(v);
}

Json jfloats(const std::vector<float>& v) {
    Json a = Json::array();
    for (float x : v) a.push_back(jfloat(x));
    return a;
}

// ---- record -> json (fields common to step arrays and stand-alone lines) ----------------------------------------
Json op_json(const OpTiming& o) {
    Json j = Json{{"layer", o.layer},
                  {"op", op_class_name(o.op)},
                  {"device", o.device == EventDevice::Cuda ? "cuda" : "cpu"},
                  {"t_begin_ns", o.t_begin_ns},
                  {"dur_ns", o.dur_ns},
                  {"flops", jnum(o.flops)},
                  {"bytes", jnum(o.bytes)},
                  {"rows", o.rows}};
    // Thread CPU time only where it was measured, so ops without it write what they always wrote.
    if (o.cpu_ns >= 0) {
        j["cpu_ns"]     = o.cpu_ns;
        j["cpu_gap_ns"] = o.cpu_gap_ns;
        j["split"]      = o.split;
    }
    return j;
}

Json layer_json(const LayerSaliencyRecord& l) {
    Json j = Json{{"layer", l.layer},
                  {"seq", l.seq},
                  {"n_rows", l.n_rows},
                  {"n_salient", l.n_salient},
                  {"tau", jfloat(l.tau)},
                  {"hist", l.hist},
                  {"row_positions", l.row_positions},
                  {"cosines", jfloats(l.cosines)},
                  {"salient_positions", l.salient_positions},
                  {"ffn_rows", l.ffn_rows},
                  {"kv_rows", l.kv_rows},
                  {"attn_exact_rows", l.attn_exact_rows},
                  {"attn_approx_rows", l.attn_approx_rows}};
    // Drift only where it was measured (opt-in), so runs without it write what they always wrote.
    if (l.drift_count > 0 || !l.drift.empty()) {
        j["drift_hist"]  = l.drift_hist;
        j["drift_count"] = l.drift_count;
        j["drift_min"]   = jfloat(l.drift_min);
        j["drift_mean"]  = jfloat(l.drift_mean);
        j["drift"]       = jfloats(l.drift);
    }
    return j;
}

Json unmask_json(const UnmaskRecord& u) {
    return Json{{"seq", u.seq}, {"positions", u.positions}, {"tokens", u.tokens}, {"scores", jfloats(u.scores)}};
}

Json canvas_json(const CanvasRecord& c) {
    return Json{{"seq", c.seq},
                {"prompt_len", c.prompt_len},
                {"tokens", c.tokens},
                {"unmask_step", c.unmask_step},
                {"scores", jfloats(c.scores)},
                {"finished", c.finished}};
}

void add_step_begin(Json& j, const StepBegin& b) {
    j["step"]         = b.step;
    j["kind"]         = step_kind_name(b.kind);
    j["tau"]          = jfloat(b.tau);
    j["n_query_rows"] = b.n_query_rows;
    j["t_begin_ns"]   = b.t_ns;
}

void add_step_end(Json& j, const StepEnd& e) {
    add_step_end_counters(j, e);
    j["t_end_ns"] = e.t_ns;
}

Json run_begin_json(const RunBegin& r) {
    Json env = Json::object();
    for (const auto& [k, v] : r.env) env[k] = v;
    return Json{{"type", "run_begin"},
                {"label", r.label},
                {"method", r.method},
                {"model", r.model},
                {"family", r.family},
                {"backend", r.backend},
                {"n_layer", r.n_layer},
                {"n_seq", r.n_seq},
                {"gen_length", r.gen_length},
                {"steps", r.steps},
                {"prompt_lengths", r.prompt_lengths},
                {"env", std::move(env)}};
}

// One step's line under construction.
struct OpenStep {
    StepBegin begin;
    Json      ops = Json::array(), layers = Json::array(), unmask = Json::array(), canvas = Json::array();
};

void write_step(std::ostream& os, const OpenStep& s, const StepEnd* end) {
    Json j = Json{{"type", "step"}};
    add_step_begin(j, s.begin);
    j["canvas"]   = s.canvas;
    j["unmask"]   = s.unmask;
    j["layers"]   = s.layers;
    j["ops"]      = s.ops;
    j["complete"] = end != nullptr;
    if (end) add_step_end(j, *end);
    os << j.dump() << '\n';
}

// ---- json -> record ------------------------------------------------------------------------------------------
class LineReader {
public:
    explicit LineReader(size_t line) : line_(line) {}

    [[noreturn]] void fail(const std::string& what) const {
        throw std::runtime_error("jsonl line " + std::to_string(line_) + ": " + what);
    }
    const Json& field(const Json& j, const char* key) const {
        if (!j.is_object()) fail("expected an object holding '" + std::string(key) + "'");
        auto it = j.find(key);
        if (it == j.end()) fail("missing field '" + std::string(key) + "'");
        return *it;
    }
    template <class I>
    I integer(const Json& j, const char* key) const {
        const Json& v = field(j, key);
        if (!v.is_number_integer()) fail("field '" + std::string(key) + "' must be an integer, got " + v.dump());
        const auto x = v.get<int64_t>();
        if (x < int64_t(std::numeric_limits<I>::min()) ||
            (x > 0 && uint64_t(x) > uint64_t(std::numeric_limits<I>::max())))
            fail("field '" + std::string(key) + "' = " + std::to_string(x) + " is out of range");
        return I(x);
    }
    double number_value(const Json& v, const std::string& key) const {
        if (v.is_null()) return std::numeric_limits<double>::quiet_NaN();
        if (!v.is_number()) fail("field '" + key + "' must be a number or null, got " + v.dump());
        return v.get<double>();
    }
    double number(const Json& j, const char* key) const { return number_value(field(j, key), key); }
    bool   boolean(const Json& j, const char* key) const {
          const Json& v = field(j, key);
          if (!v.is_boolean()) fail("field '" + std::string(key) + "' must be true or false, got " + v.dump());
        return v.get<bool>();
    }
    std::string string(const Json& j, const char* key) const {
        const Json& v = field(j, key);
        if (!v.is_string()) fail("field '" + std::string(key) + "' must be a string, got " + v.dump());
        return v.get<std::string>();
    }
    const Json& array(const Json& j, const char* key) const {
        const Json& v = field(j, key);
        if (!v.is_array()) fail("field '" + std::string(key) + "' must be an array");
        return v;
    }
    std::vector<int32_t> ints(const Json& j, const char* key) const {
        std::vector<int32_t> out;
        for (const auto& v : array(j, key)) {
            if (!v.is_number_integer()) fail("field '" + std::string(key) + "' must hold integers, got " + v.dump());
            out.push_back(v.get<int32_t>());
        }
        return out;
    }
    std::vector<std::string> strings(const Json& j, const char* key) const {
        std::vector<std::string> out;
        for (const auto& v : array(j, key)) {
            if (!v.is_string()) fail("field '" + std::string(key) + "' must hold strings, got " + v.dump());
            out.push_back(v.get<std::string>());
        }
        return out;
    }
    std::vector<float> floats(const Json& j, const char* key) const {
        std::vector<float> out;
        for (const auto& v : array(j, key)) out.push_back(float(number_value(v, key)));
        return out;
    }
    StepKind step_kind(const Json& j) const {
        const std::string s = string(j, "kind");
        const StepKind    k = parse_step_kind(s);
        if (k == StepKind::Count) fail("unknown step kind '" + s + "'");
        return k;
    }
    OpClass op_class(const Json& j) const {
        const std::string s = string(j, "op");
        for (int k = 0; k < int(OpClass::Count); ++k)
            if (s == op_class_name(OpClass(k))) return OpClass(k);
        fail("unknown op class '" + s + "'");
    }

    OpTiming op(const Json& j, int32_t step) const {
        OpTiming o;
        o.step                = step;
        o.layer               = integer<int32_t>(j, "layer");
        o.op                  = op_class(j);
        const std::string dev = string(j, "device");
        if (dev != "cpu" && dev != "cuda") fail("field 'device' must be \"cpu\" or \"cuda\", got \"" + dev + "\"");
        o.device     = dev == "cuda" ? EventDevice::Cuda : EventDevice::Cpu;
        o.t_begin_ns = integer<int64_t>(j, "t_begin_ns");
        o.dur_ns     = integer<int64_t>(j, "dur_ns");
        o.flops      = number(j, "flops");
        o.bytes      = number(j, "bytes");
        o.rows       = integer<int32_t>(j, "rows");
        if (j.contains("cpu_ns")) {  // absent in files older than the CPU-time measurement
            o.cpu_ns = integer<int64_t>(j, "cpu_ns");
            if (o.cpu_ns < 0) fail("field 'cpu_ns' must be >= 0, got " + std::to_string(o.cpu_ns));
            o.split = boolean(j, "split");
            if (j.contains("cpu_gap_ns")) {  // absent in files older than the start reading's age
                o.cpu_gap_ns = integer<int32_t>(j, "cpu_gap_ns");
                if (o.cpu_gap_ns < 0) fail("field 'cpu_gap_ns' must be >= 0, got " + std::to_string(o.cpu_gap_ns));
            }
        }
        return o;
    }
    LayerSaliencyRecord layer(const Json& j, int32_t step) const {
        LayerSaliencyRecord l;
        l.step              = step;
        l.layer             = integer<int32_t>(j, "layer");
        l.seq               = integer<int32_t>(j, "seq");
        l.n_rows            = integer<int32_t>(j, "n_rows");
        l.n_salient         = integer<int32_t>(j, "n_salient");
        l.tau               = float(number(j, "tau"));
        l.hist              = histogram(j, "hist");
        l.row_positions     = ints(j, "row_positions");
        l.cosines           = floats(j, "cosines");
        l.salient_positions = ints(j, "salient_positions");
        l.ffn_rows          = integer<int32_t>(j, "ffn_rows");
        l.kv_rows           = integer<int32_t>(j, "kv_rows");
        l.attn_exact_rows   = integer<int32_t>(j, "attn_exact_rows");
        l.attn_approx_rows  = integer<int32_t>(j, "attn_approx_rows");
        if (j.contains("drift_count")) {  // absent in files older than the drift measurement, and when not measured
            l.drift_hist  = histogram(j, "drift_hist");
            l.drift_count = integer<int32_t>(j, "drift_count");
            l.drift_min   = float(number(j, "drift_min"));
            l.drift_mean  = float(number(j, "drift_mean"));
            l.drift       = floats(j, "drift");
        }
        return l;
    }
    CosineHistogram histogram(const Json& j, const char* key) const {
        const Json&     h = array(j, key);
        CosineHistogram out{};
        if (h.size() != out.size())
            fail("field '" + std::string(key) + "' has " + std::to_string(h.size()) + " bins, expected " +
                 std::to_string(kCosineBins) + " (kCosineBins)");
        for (size_t b = 0; b < h.size(); ++b) {
            if (!h[b].is_number_unsigned())
                fail("field '" + std::string(key) + "' must hold non-negative integers, got " + h[b].dump());
            out[b] = h[b].get<uint32_t>();
        }
        return out;
    }
    UnmaskRecord unmask(const Json& j, int32_t step) const {
        UnmaskRecord u;
        u.step      = step;
        u.seq       = integer<int32_t>(j, "seq");
        u.positions = ints(j, "positions");
        u.tokens    = ints(j, "tokens");
        u.scores    = floats(j, "scores");
        return u;
    }
    CanvasRecord canvas(const Json& j, int32_t step) const {
        CanvasRecord c;
        c.step        = step;
        c.seq         = integer<int32_t>(j, "seq");
        c.prompt_len  = integer<int32_t>(j, "prompt_len");
        c.tokens      = ints(j, "tokens");
        c.unmask_step = ints(j, "unmask_step");
        c.scores      = floats(j, "scores");
        c.finished    = boolean(j, "finished");
        return c;
    }
    StepBegin step_begin(const Json& j) const {
        StepBegin b;
        b.step         = integer<int32_t>(j, "step");
        b.kind         = step_kind(j);
        b.tau          = float(number(j, "tau"));
        b.n_query_rows = integer<int32_t>(j, "n_query_rows");
        b.t_ns         = integer<int64_t>(j, "t_begin_ns");
        return b;
    }
    StepEnd step_end(const Json& j) const {
        StepEnd e;
        e.step             = integer<int32_t>(j, "step");
        e.wall_ns          = integer<int64_t>(j, "wall_ns");
        e.tokens_committed = integer<int32_t>(j, "tokens_committed");
        e.masked_left      = integer<int32_t>(j, "masked_left");
        e.flops            = number(j, "flops");
        e.dense_flops      = number(j, "dense_flops");
        e.ffn_rows         = integer<int32_t>(j, "ffn_rows");
        e.kv_rows          = integer<int32_t>(j, "kv_rows");
        e.attn_exact_rows  = integer<int32_t>(j, "attn_exact_rows");
        e.attn_approx_rows = integer<int32_t>(j, "attn_approx_rows");
        e.query_rows       = integer<int32_t>(j, "query_rows");
        e.dense_rows       = integer<int32_t>(j, "dense_rows");
        e.t_ns             = integer<int64_t>(j, "t_end_ns");
        return e;
    }
    RunBegin run_begin(const Json& j) const {
        RunBegin r;
        r.label          = j.contains("label") ? string(j, "label") : "";  // absent in files older than labels
        r.method         = string(j, "method");
        r.model          = string(j, "model");
        r.family         = string(j, "family");
        r.backend        = string(j, "backend");
        r.n_layer        = integer<int32_t>(j, "n_layer");
        r.n_seq          = integer<int32_t>(j, "n_seq");
        r.gen_length     = integer<int32_t>(j, "gen_length");
        r.steps          = integer<int32_t>(j, "steps");
        r.prompt_lengths = ints(j, "prompt_lengths");
        const Json& env  = field(j, "env");
        if (!env.is_object()) fail("field 'env' must be an object of strings");
        for (const auto& [k, v] : env.items()) {
            if (!v.is_string()) fail("env value '" + k + "' must be a string, got " + v.dump());
            r.env.emplace_back(k, v.get<std::string>());
        }
        return r;
    }

private:
    size_t line_;
};

}  // namespace

void write_jsonl(std::ostream& os, const std::vector<EventRecord>& events) {
    write_jsonl(os, events, ExportOptions{});
}

void write_jsonl(std::ostream& os, const std::vector<EventRecord>& events, const ExportOptions& opt) {
    size_t n_ops = 0;
    for (const auto& r : events) n_ops += std::holds_alternative<OpTiming>(r);
    const bool annotate = !opt.ops.empty() && opt.ops.size() == n_ops;  // a list of another run is ignored
    size_t     op_i     = 0;
    // The op's record, with the caller's name for it and its preempted flag (where it carries a CPU time).
    auto op_record = [&](const OpTiming& o) {
        Json j = op_json(o);
        if (annotate) {
            const OpAnnotation& a = opt.ops[op_i];
            if (!a.name.empty()) j["name"] = a.name;
            if (o.cpu_ns >= 0) j["preempted"] = a.preempted;
        }
        ++op_i;
        return j;
    };
    std::optional<OpenStep> open;
    auto                    flush = [&](const StepEnd* end) {
        if (open) write_step(os, *open, end);
        open.reset();
    };
    // An event of the open step goes into its line; anything else closes the step and gets a line of its own.
    auto in_open = [&](int32_t step) { return open && open->begin.step == step; };
    auto alone   = [&](const char* type, int32_t step, Json body) {
        flush(nullptr);
        Json j = Json{{"type", type}, {"step", step}};
        for (auto& [k, v] : body.items()) j[k] = v;
        os << j.dump() << '\n';
    };
    for (const auto& r : events) {
        std::visit(
            [&](const auto& e) {
                using T = std::decay_t<decltype(e)>;
                if constexpr (std::is_same_v<T, RunBegin>) {
                    flush(nullptr);
                    os << run_begin_json(e).dump() << '\n';
                } else if constexpr (std::is_same_v<T, StepBegin>) {
                    flush(nullptr);
                    open.emplace();
                    open->begin = e;
                } else if constexpr (std::is_same_v<T, OpTiming>) {
                    if (in_open(e.step))
                        open->ops.push_back(op_record(e));
                    else
                        alone("op", e.step, op_record(e));
                } else if constexpr (std::is_same_v<T, LayerSaliencyRecord>) {
                    if (in_open(e.step))
                        open->layers.push_back(layer_json(e));
                    else
                        alone("layer_saliency", e.step, layer_json(e));
                } else if constexpr (std::is_same_v<T, UnmaskRecord>) {
                    if (in_open(e.step))
                        open->unmask.push_back(unmask_json(e));
                    else
                        alone("unmask", e.step, unmask_json(e));
                } else if constexpr (std::is_same_v<T, CanvasRecord>) {
                    if (in_open(e.step))
                        open->canvas.push_back(canvas_json(e));
                    else
                        alone("canvas", e.step, canvas_json(e));
                } else if constexpr (std::is_same_v<T, StepEnd>) {
                    if (in_open(e.step)) {
                        flush(&e);
                    } else {
                        Json body = Json::object();
                        add_step_end(body, e);
                        alone("step_end", e.step, std::move(body));
                    }
                } else if constexpr (std::is_same_v<T, RunEnd>) {
                    flush(nullptr);
                    os << Json{{"type", "run_end"},  {"steps", e.steps},         {"wall_ns", e.wall_ns},
                               {"tokens", e.tokens}, {"cancelled", e.cancelled}, {"cache_bytes", jnum(e.cache_bytes)},
                               {"texts", e.texts}}
                              .dump()
                       << '\n';
                } else if constexpr (std::is_same_v<T, ErrorRecord>) {
                    flush(nullptr);
                    os << Json{{"type", "error"}, {"where", e.where}, {"message", e.message}}.dump() << '\n';
                }
            },
            r);
    }
    flush(nullptr);
}

std::vector<EventRecord> read_jsonl(std::istream& is) {
    std::vector<EventRecord> out;
    std::string              text;
    size_t                   line_no = 0;
    while (std::getline(is, text)) {
        ++line_no;
        if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
        const LineReader rd(line_no);
        Json             j;
        try {
            j = Json::parse(text);
        } catch (const nlohmann::json::parse_error& e) {
            rd.fail(std::string("invalid JSON: ") + e.what());
        }
        const std::string type = rd.string(j, "type");
        if (type == "run_begin") {
            out.emplace_back(rd.run_begin(j));
        } else if (type == "step") {
            const StepBegin b = rd.step_begin(j);
            out.emplace_back(b);
            for (const auto& o : rd.array(j, "ops")) out.emplace_back(rd.op(o, b.step));
            for (const auto& l : rd.array(j, "layers")) out.emplace_back(rd.layer(l, b.step));
            for (const auto& u : rd.array(j, "unmask")) out.emplace_back(rd.unmask(u, b.step));
            for (const auto& c : rd.array(j, "canvas")) out.emplace_back(rd.canvas(c, b.step));
            if (rd.boolean(j, "complete")) out.emplace_back(rd.step_end(j));
        } else if (type == "op") {
            out.emplace_back(rd.op(j, rd.integer<int32_t>(j, "step")));
        } else if (type == "layer_saliency") {
            out.emplace_back(rd.layer(j, rd.integer<int32_t>(j, "step")));
        } else if (type == "unmask") {
            out.emplace_back(rd.unmask(j, rd.integer<int32_t>(j, "step")));
        } else if (type == "canvas") {
            out.emplace_back(rd.canvas(j, rd.integer<int32_t>(j, "step")));
        } else if (type == "step_end") {
            out.emplace_back(rd.step_end(j));
        } else if (type == "run_end") {
            RunEnd e;
            e.steps     = rd.integer<int32_t>(j, "steps");
            e.wall_ns   = rd.integer<int64_t>(j, "wall_ns");
            e.tokens    = rd.integer<int32_t>(j, "tokens");
            e.cancelled = rd.boolean(j, "cancelled");
            // Absent in files written before RunEnd carried them: still readable.
            if (j.contains("cache_bytes")) e.cache_bytes = rd.number(j, "cache_bytes");
            if (j.contains("texts")) e.texts = rd.strings(j, "texts");
            out.emplace_back(e);
        } else if (type == "error") {
            out.emplace_back(ErrorRecord{rd.string(j, "where"), rd.string(j, "message")});
        } else {
            rd.fail("unknown record type '" + type + "'");
        }
    }
    return out;
}

}  // namespace dyllm
