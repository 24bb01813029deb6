// Exporters: the Chrome trace is valid JSON with the required tracks, args, counters and metadata (dur >= 0,
// monotone ts per track, no NaN/inf); JSONL writes the env line then one line per step and round-trips exactly.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <tuple>

#include <nlohmann/json.hpp>

#include "instrumentation/chrome_trace.h"
#include "instrumentation/jsonl.h"
#include "instrumentation/recorder.h"
#include "tests/support/synthetic_run.h"

using namespace dyllm;
using nlohmann::json;

namespace {

std::vector<EventRecord> synthetic_events(const SyntheticRunSpec& sp = {}) {
    RecordingSink rec;
    emit_synthetic_run(rec, sp);
    return rec.events();
}

json chrome_json(const std::vector<EventRecord>& ev, const std::vector<KernelRecord>& kernels = {}) {
    std::ostringstream os;
    write_chrome_trace(os, ev, kernels);
    return json::parse(os.str());  // throws (fails the test) on invalid JSON
}

// Recursively: no number in the document is NaN or infinite (nlohmann would have refused to parse them anyway,
// since the literals are not JSON; this guards against a writer that emitted strings like "nan" for numbers).
bool all_finite(const json& j) {
    if (j.is_number_float()) return std::isfinite(j.get<double>());
    if (j.is_structured())
        for (const auto& x : j)
            if (!all_finite(x)) return false;
    return true;
}

// Reads JSONL text back and checks that writing what was read gives the same text (write -> read -> write is the
// identity); returns what was read.
std::vector<EventRecord> read_back_identical(const std::string& text) {
    std::istringstream in(text);
    auto               back = read_jsonl(in);
    std::ostringstream again;
    write_jsonl(again, back);
    CHECK(again.str() == text);
    return back;
}

}  // namespace

TEST_CASE("chrome trace: valid JSON object form with metadata and env as the first event", "[trace][chrome]") {
    const auto ev = synthetic_events();
    const json j  = chrome_json(ev);
    REQUIRE(j.is_object());
    REQUIRE(j.contains("traceEvents"));
    REQUIRE(j["traceEvents"].is_array());
    CHECK(j["displayTimeUnit"] == "ns");
    const json& meta = j["metadata"];
    CHECK(meta["method"] == "dyllm");
    CHECK(meta["model"] == "synthetic");
    CHECK(meta["backend"] == "synthetic");
    CHECK(meta["n_layer"] == 4);
    CHECK(meta["seed"] == "1");  // every env pair is carried
    CHECK(meta["label"] == "synthetic run");
    CHECK(meta.contains("tau"));
    const json& first = j["traceEvents"][0];
    CHECK(first["args"] == meta);
    CHECK(all_finite(j));
    // The run track's event carries the label and what RunEnd reported.
    const json* run = nullptr;
    for (const auto& e : j["traceEvents"])
        if (e.value("cat", "") == "run" && e["ph"] == "X") run = &e;
    REQUIRE(run);
    CHECK((*run)["args"]["label"] == "synthetic run");
    CHECK((*run)["args"]["cache_bytes"] == 4096.0 * 4);
    CHECK((*run)["args"]["texts"].size() == 2);
    CHECK((*run)["args"]["cancelled"] == false);
}

TEST_CASE("chrome trace: ops, steps, counters and track metadata", "[trace][chrome]") {
    SyntheticRunSpec sp;
    const auto       ev = synthetic_events(sp);
    const json       j  = chrome_json(ev);

    size_t                                n_ops = 0, n_steps = 0, n_thread_names = 0, n_process_names = 0;
    std::map<std::string, size_t>         counters;
    std::map<std::pair<int, int>, double> last_ts;  // per (pid, tid) track
    std::map<std::string, double>         last_counter_ts;
    bool                                  monotone = true;
    for (const auto& e : j["traceEvents"]) {
        const std::string ph = e.at("ph");
        if (ph == "M") {
            if (e["name"] == "thread_name") ++n_thread_names;
            if (e["name"] == "process_name") ++n_process_names;
            continue;
        }
        REQUIRE(e.contains("ts"));
        REQUIRE(e["ts"].is_number());
        CHECK(e["ts"].get<double>() >= 0.0);
        if (ph == "C") {
            ++counters[e["name"]];
            CHECK(e["args"]["value"].is_number());
            double& last = last_counter_ts.try_emplace(e["name"], -1.0).first->second;
            monotone     = monotone && e["ts"].get<double>() >= last;
            last         = e["ts"];
            continue;
        }
        auto   key   = std::make_pair(e["pid"].get<int>(), e["tid"].get<int>());
        double last  = last_ts.count(key) ? last_ts[key] : -1.0;
        monotone     = monotone && e["ts"].get<double>() >= last;
        last_ts[key] = e["ts"];
        if (ph != "X") continue;
        REQUIRE(e.contains("dur"));
        CHECK(e["dur"].get<double>() >= 0.0);
        if (e["cat"] == "op") {
            ++n_ops;
            const json& a = e["args"];
            for (const char* k : {"step", "layer", "op", "method", "rows", "flops", "bytes"}) {
                INFO("op arg " << k);
                CHECK(a.contains(k));
            }
            CHECK(e["name"] == a["op"]);  // name = op class
            CHECK(a["method"] == "dyllm");
        }
        if (e["cat"] == "step") {
            ++n_steps;
            CHECK(e["args"].contains("kind"));
            CHECK(e["args"].contains("n_salient"));
        }
    }
    CHECK(monotone);
    CHECK(n_ops == size_t(sp.steps * (3 + 5 * sp.n_layer)));
    CHECK(n_steps == size_t(sp.steps));
    CHECK(counters["tau"] == size_t(sp.steps));
    CHECK(counters["salient_fraction"] == size_t(sp.steps));
    CHECK(counters["tokens_per_s"] == size_t(sp.steps));
    CHECK(n_process_names >= 1);
    CHECK(n_thread_names >= 3);
}

TEST_CASE("chrome trace: op timestamps keep ns precision in microseconds", "[trace][chrome]") {
    std::vector<EventRecord> ev;
    StepBegin                sb;
    sb.step = 1;
    sb.t_ns = 5'000'000'123;
    ev.emplace_back(sb);
    OpTiming o;
    o.step       = 1;
    o.layer      = 0;
    o.op         = OpClass::Ffn;
    o.t_begin_ns = 5'000'001'357;
    o.dur_ns     = 2'469;
    ev.emplace_back(o);
    StepEnd se;
    se.step    = 1;
    se.t_ns    = 5'000'010'000;
    se.wall_ns = 9'877;
    ev.emplace_back(se);
    const json j     = chrome_json(ev);
    bool       found = false;
    for (const auto& e : j["traceEvents"])
        if (e.value("cat", "") == "op") {
            found = true;
            CHECK(e["ts"].get<double>() == Approx(1.234).margin(1e-9));  // (1357 - 123) ns from the step's begin
            CHECK(e["dur"].get<double>() == Approx(2.469).margin(1e-9));
        }
    CHECK(found);
}

TEST_CASE("chrome trace: hostile values are sanitised (negative durations, NaN, missing step end)", "[trace][chrome]") {
    std::vector<EventRecord> ev;
    RunBegin                 rb;
    rb.method = "dyllm";
    rb.env    = {{"note", "quote \" and newline \n inside"}};
    ev.emplace_back(rb);
    StepBegin sb;
    sb.step = 1;
    sb.t_ns = 100;
    sb.tau  = NAN;
    ev.emplace_back(sb);
    OpTiming o;
    o.step       = 1;
    o.t_begin_ns = 200;
    o.dur_ns     = -50;
    o.flops      = INFINITY;
    o.bytes      = NAN;
    ev.emplace_back(o);
    ev.emplace_back(ErrorRecord{"step", "boom"});  // the step never ended
    std::ostringstream os;
    write_chrome_trace(os, ev);
    const std::string text = os.str();
    CHECK(text.find("NaN") == std::string::npos);
    CHECK(text.find("nan") == std::string::npos);
    CHECK(text.find("inf") == std::string::npos);
    const json j = json::parse(text);
    CHECK(all_finite(j));
    bool saw_error = false;
    for (const auto& e : j["traceEvents"]) {
        if (e.value("ph", "") == "X") CHECK(e["dur"].get<double>() >= 0.0);
        if (e.value("cat", "") == "error") {
            saw_error = true;
            CHECK(e["args"]["message"] == "boom");
        }
        if (e.value("cat", "") == "op") CHECK(e["args"]["flops"].is_null());
    }
    CHECK(saw_error);
    CHECK(j["metadata"]["note"] == "quote \" and newline \n inside");
}

TEST_CASE("chrome trace: GPU kernel records get their own process and args", "[trace][chrome]") {
    auto                      ev = synthetic_events();
    std::vector<KernelRecord> k(2);
    k[0].name        = "gemm_kernel";
    k[0].start_ns    = 1'000'000'500;
    k[0].end_ns      = 1'000'002'500;
    k[0].kind        = 0;
    k[0].external_id = encode_external_id(1, 3, uint8_t(OpClass::Ffn));
    decode_external_id(k[0].external_id, k[0].step, k[0].layer, k[0].op);
    k[1].name = "memcpy HtoD", k[1].start_ns = 1'000'000'100, k[1].end_ns = 1'000'000'050,
    k[1].kind          = 1;  // end < start
    const json j       = chrome_json(ev, k);
    size_t     kernels = 0, memcpys = 0;
    for (const auto& e : j["traceEvents"]) {
        if (e.value("cat", "") == "kernel") {
            ++kernels;
            CHECK(e["pid"] == 2);
            CHECK(e["args"]["step"] == 1);
            CHECK(e["args"]["layer"] == 3);
            CHECK(e["args"]["op"] == "ffn");
        }
        if (e.value("cat", "") == "memcpy") {
            ++memcpys;
            CHECK(e["dur"].get<double>() == 0.0);
        }
    }
    CHECK(kernels == 1);
    CHECK(memcpys == 1);
}

TEST_CASE("external correlation id encodes step, layer and op reversibly", "[trace][cupti]") {
    for (int32_t step : {1, 7, 255, 100000})
        for (int32_t layer : {-1, 0, 31, 79})
            for (uint8_t op : {uint8_t(0), uint8_t(OpClass::Ffn), uint8_t(OpClass::Other)}) {
                const uint64_t id = encode_external_id(step, layer, op);
                CHECK(id != 0);
                int32_t s, l;
                uint8_t o;
                decode_external_id(id, s, l, o);
                CHECK(s == step);
                CHECK(l == layer);
                CHECK(o == op);
            }
}

TEST_CASE("jsonl: env line first, then one line per step with the documented fields", "[trace][jsonl]") {
    SyntheticRunSpec   sp;
    const auto         ev = synthetic_events(sp);
    std::ostringstream os;
    write_jsonl(os, ev);
    std::istringstream lines(os.str());
    std::string        line;
    std::vector<json>  recs;
    while (std::getline(lines, line)) recs.push_back(json::parse(line));
    REQUIRE(recs.size() == size_t(sp.steps + 2));  // run_begin, steps, run_end
    CHECK(recs[0]["type"] == "run_begin");
    CHECK(recs[0]["env"]["seed"] == "1");
    CHECK(recs[0]["label"] == "synthetic run");
    CHECK(recs.back()["type"] == "run_end");
    CHECK(recs.back()["cache_bytes"] == 4096.0 * sp.n_layer);
    CHECK(recs.back()["texts"] == json::array({"text of sequence 0", "text of sequence 1"}));
    for (int s = 1; s <= sp.steps; ++s) {
        const json& r = recs[size_t(s)];
        CHECK(r["type"] == "step");
        CHECK(r["step"] == s);
        for (const char* k : {"kind", "tau", "canvas", "unmask", "layers", "ops", "wall_ns", "tokens_committed"}) {
            INFO("step field " << k);
            CHECK(r.contains(k));
        }
        CHECK(r["canvas"].size() == size_t(sp.n_seq));
        CHECK(r["unmask"].size() == size_t(sp.n_seq));
        REQUIRE(r["layers"].size() == size_t(sp.n_layer * sp.n_seq));
        for (const auto& l : r["layers"]) {
            uint64_t sum = 0;
            for (const auto& h : l["hist"]) sum += h.get<uint64_t>();
            CHECK(sum == l["n_rows"].get<uint64_t>());
            CHECK(l["salient_positions"].size() == l["n_salient"].get<size_t>());
        }
        CHECK(r["ops"].size() == size_t(3 + 5 * sp.n_layer));
    }
}

TEST_CASE("jsonl: write -> read -> write is the identity, and the events come back", "[trace][jsonl]") {
    SyntheticRunSpec sp;
    sp.n_seq      = 3;
    sp.steps      = 4;
    sp.gen_length = 12;
    auto ev       = synthetic_events(sp);
    // Edge values: an error record, a NaN score (written as null), an orphan op outside any step.
    ev.emplace_back(ErrorRecord{"step", "tab\tand \"quotes\""});
    for (auto it = ev.rbegin(); it != ev.rend(); ++it)
        if (auto* c = std::get_if<CanvasRecord>(&*it)) {
            c->scores[0] = NAN;
            break;
        }
    OpTiming orphan;
    orphan.step   = 99;
    orphan.op     = OpClass::Sampling;
    orphan.device = EventDevice::Cuda;
    orphan.dur_ns = 5;
    ev.emplace_back(orphan);

    std::ostringstream a;
    write_jsonl(a, ev);
    const auto back = read_back_identical(a.str());

    // Same multiset of kinds, same run header, same saliency content.
    std::map<RecordKind, size_t> ka, kb;
    for (const auto& e : ev) ++ka[record_kind(e)];
    for (const auto& e : back) ++kb[record_kind(e)];
    CHECK(ka == kb);
    const auto& rb0 = std::get<RunBegin>(ev.front());
    const auto& rb1 = std::get<RunBegin>(back.front());
    CHECK(rb0.env == rb1.env);
    CHECK(rb0.prompt_lengths == rb1.prompt_lengths);
    CHECK(rb1.label == "synthetic run");
    const RunEnd* re0 = nullptr;
    const RunEnd* re1 = nullptr;
    for (const auto& e : ev)
        if (auto* r = std::get_if<RunEnd>(&e)) re0 = r;
    for (const auto& e : back)
        if (auto* r = std::get_if<RunEnd>(&e)) re1 = r;
    REQUIRE(re0);
    REQUIRE(re1);
    CHECK(re1->texts == re0->texts);
    CHECK(re1->texts.size() == 3);
    CHECK(re1->cache_bytes == re0->cache_bytes);
    std::vector<const LayerSaliencyRecord*> la, lb;
    for (const auto& e : ev)
        if (auto* l = std::get_if<LayerSaliencyRecord>(&e)) la.push_back(l);
    for (const auto& e : back)
        if (auto* l = std::get_if<LayerSaliencyRecord>(&e)) lb.push_back(l);
    REQUIRE(la.size() == lb.size());
    for (size_t i = 0; i < la.size(); ++i) {
        CHECK(la[i]->hist == lb[i]->hist);
        CHECK(la[i]->salient_positions == lb[i]->salient_positions);
        CHECK(la[i]->cosines == lb[i]->cosines);  // float -> JSON double -> float is exact
        CHECK(la[i]->step == lb[i]->step);
    }
}

TEST_CASE("jsonl and chrome trace carry the drift measurement; runs without it write no drift fields",
          "[trace][drift]") {
    SyntheticRunSpec sp;
    sp.n_seq      = 2;
    sp.steps      = 4;
    sp.gen_length = 12;
    auto ev       = synthetic_events(sp);
    // Drift on every layer from step 2 on: the non-salient rows approximated, cosines a little below 1.
    std::map<std::pair<int, int>, float> lowest;  // (step, layer) -> min over sequences
    for (auto& e : ev) {
        auto* l = std::get_if<LayerSaliencyRecord>(&e);
        if (!l || l->step < 2) continue;
        l->drift.assign(l->row_positions.size(), NAN);
        double sum = 0;
        for (size_t i = 0; i < l->drift.size(); ++i) {
            if (std::find(l->salient_positions.begin(), l->salient_positions.end(), l->row_positions[i]) !=
                l->salient_positions.end())
                continue;
            const float v = 1.f - 0.001f * float(i % 7) - 0.01f * float(l->layer) - 0.02f * float(l->seq);
            l->drift[i]   = v;
            ++l->drift_hist[size_t(cosine_bin(v))];
            l->drift_min = l->drift_count == 0 ? v : std::min(l->drift_min, v);
            sum += v;
            ++l->drift_count;
        }
        if (l->drift_count == 0) continue;
        l->drift_mean    = float(sum / l->drift_count);
        auto [it, fresh] = lowest.try_emplace({l->step, l->layer}, l->drift_min);
        if (!fresh) it->second = std::min(it->second, l->drift_min);
    }
    REQUIRE(!lowest.empty());

    // JSONL: drift fields only on measured layers, and write -> read -> write is the identity.
    std::ostringstream a;
    write_jsonl(a, ev);
    std::istringstream lines(a.str());
    size_t             with = 0, without = 0;
    for (std::string line; std::getline(lines, line);) {
        const json j = json::parse(line);
        if (j["type"] != "step") continue;
        for (const auto& l : j["layers"]) (l.contains("drift_hist") ? with : without)++;
    }
    CHECK(with > 0);
    CHECK(without == size_t(sp.n_layer * sp.n_seq));  // step 1 measured nothing
    const auto                              back = read_back_identical(a.str());
    std::vector<const LayerSaliencyRecord*> la, lb;
    for (const auto& e : ev)
        if (auto* l = std::get_if<LayerSaliencyRecord>(&e)) la.push_back(l);
    for (const auto& e : back)
        if (auto* l = std::get_if<LayerSaliencyRecord>(&e)) lb.push_back(l);
    REQUIRE(la.size() == lb.size());
    for (size_t i = 0; i < la.size(); ++i) {
        CHECK(la[i]->drift_hist == lb[i]->drift_hist);
        CHECK(la[i]->drift_count == lb[i]->drift_count);
        CHECK((la[i]->drift_count == 0 || la[i]->drift_min == lb[i]->drift_min));
        CHECK((la[i]->drift_count == 0 || la[i]->drift_mean == lb[i]->drift_mean));
        REQUIRE(la[i]->drift.size() == lb[i]->drift.size());
        for (size_t k = 0; k < la[i]->drift.size(); ++k)  // NaN (exact rows) travels as null
            CHECK((la[i]->drift[k] == lb[i]->drift[k] || (std::isnan(la[i]->drift[k]) && std::isnan(lb[i]->drift[k]))));
    }

    // Chrome trace: one min and one mean counter per layer at every step (1 where nothing was approximated).
    const json                                 j = chrome_json(ev);
    std::map<std::string, std::vector<double>> counters;
    int64_t                                    drift_rows = 0;
    for (const auto& e : j["traceEvents"]) {
        if (e["ph"] == "C") counters[e["name"]].push_back(e["args"]["value"]);
        if (e["ph"] == "X" && e["cat"] == "step" && e["args"].contains("drift_rows"))
            drift_rows += e["args"]["drift_rows"].get<int64_t>();
    }
    int64_t expect_rows = 0;
    for (const auto* l : la) expect_rows += l->drift_count;
    CHECK(drift_rows == expect_rows);
    for (int l = 0; l < sp.n_layer; ++l) {
        char name[32];
        std::snprintf(name, sizeof name, "drift_min_cos L%02d", l);
        const auto& v = counters[name];
        REQUIRE(v.size() == size_t(sp.steps));
        CHECK(v[0] == 1.0);  // step 1: nothing approximated
        for (int st = 2; st <= sp.steps; ++st) {
            auto it = lowest.find({st, l});
            CHECK(v[size_t(st - 1)] == Approx(it == lowest.end() ? 1.0 : double(it->second)).epsilon(1e-6));
        }
        std::snprintf(name, sizeof name, "drift_mean_cos L%02d", l);
        CHECK(counters[name].size() == size_t(sp.steps));
    }
    // Without drift the trace has no drift counters.
    const json plain = chrome_json(synthetic_events(sp));
    for (const auto& e : plain["traceEvents"])
        if (e["ph"] == "C") CHECK(e["name"].get<std::string>().rfind("drift", 0) != 0);
}

TEST_CASE("jsonl: bad input gives one error naming the line and the field", "[trace][jsonl]") {
    auto fails_with = [](const std::string& text, const std::string& needle) {
        std::istringstream in(text);
        try {
            read_jsonl(in);
        } catch (const std::runtime_error& e) {
            INFO(e.what());
            CHECK(std::string(e.what()).find(needle) != std::string::npos);
            return;
        }
        FAIL("no error for: " << text);
    };
    fails_with(
        "{\"type\":\"run_end\",\"steps\":1,\"wall_ns\":2,\"tokens\":3,\"cancelled\":false,\"cache_bytes\":0,"
        "\"texts\":[]}\n{oops\n",
        "line 2: invalid JSON");
    fails_with(
        "{\"type\":\"run_end\",\"steps\":1,\"wall_ns\":2,\"tokens\":3,\"cancelled\":false,\"cache_bytes\":0,"
        "\"texts\":[7]}\n",
        "field 'texts' must hold strings");
    fails_with("{\"type\":\"run_end\",\"steps\":1,\"wall_ns\":2,\"tokens\":3}\n", "line 1: missing field 'cancelled'");
    fails_with("{\"type\":\"run_end\",\"steps\":\"x\",\"wall_ns\":2,\"tokens\":3,\"cancelled\":false}\n",
               "'steps' must be an integer");
    fails_with("{\"type\":\"bogus\"}\n", "unknown record type 'bogus'");
    fails_with("[1,2]\n", "line 1");
    fails_with("{\"type\":\"step_end\",\"step\":1,\"wall_ns\":99999999999999999999}\n", "line 1");
}

TEST_CASE("jsonl and chrome trace carry thread CPU time; files without it still load", "[trace][cpu_time]") {
    SyntheticRunSpec sp;
    sp.steps = 2;
    auto ev  = synthetic_events(sp);
    // Without CPU time (the synthetic run measures none) nothing new is written: older readers see what they saw.
    {
        std::ostringstream a;
        write_jsonl(a, ev);
        CHECK(a.str().find("cpu_ns") == std::string::npos);
        const json trace = chrome_json(ev);  // kept alive: the loop walks into it
        for (const auto& e : trace["traceEvents"])
            if (e.value("cat", "") == "op") CHECK_FALSE(e["args"].contains("cpu_ns"));
    }
    // With it: measured on every other op, some split; the values come back and the text round-trips.
    int n = 0;
    for (auto& e : ev)
        if (auto* o = std::get_if<OpTiming>(&e); o && n++ % 2 == 0) {
            o->cpu_ns     = 1000 + n;
            o->split      = n % 4 == 1;
            o->cpu_gap_ns = n % 3 == 0 ? 0 : 250 * n;
        }
    std::ostringstream a;
    write_jsonl(a, ev);
    const auto                                      back = read_back_identical(a.str());
    std::vector<std::tuple<int64_t, int32_t, bool>> before, after;
    for (const auto& e : ev)
        if (auto* o = std::get_if<OpTiming>(&e)) before.emplace_back(o->cpu_ns, o->cpu_gap_ns, o->split);
    for (const auto& e : back)
        if (auto* o = std::get_if<OpTiming>(&e)) after.emplace_back(o->cpu_ns, o->cpu_gap_ns, o->split);
    CHECK(before == after);
    size_t     with  = 0;
    const json trace = chrome_json(ev);
    for (const auto& e : trace["traceEvents"])
        if (e.value("cat", "") == "op" && e["args"].contains("cpu_ns")) {
            ++with;
            CHECK(e["args"]["cpu_ns"].get<int64_t>() > 1000);
            CHECK(e["args"]["split"].is_boolean());
            CHECK(e["args"]["cpu_gap_ns"].get<int64_t>() >= 0);
        }
    CHECK(with == size_t((n + 1) / 2));
    // An op line written before the field existed reads as "not measured"; a negative one is refused by name.
    std::istringstream old(
        "{\"type\":\"op\",\"step\":3,\"layer\":0,\"op\":\"ffn\",\"device\":\"cpu\",\"t_begin_ns\":5,"
        "\"dur_ns\":7,\"flops\":0,\"bytes\":0,\"rows\":2}\n");
    const auto o = read_jsonl(old);
    REQUIRE(o.size() == 1);
    CHECK(std::get<OpTiming>(o[0]).cpu_ns == -1);
    CHECK_FALSE(std::get<OpTiming>(o[0]).split);
    std::istringstream bad(
        "{\"type\":\"op\",\"step\":3,\"layer\":0,\"op\":\"ffn\",\"device\":\"cpu\",\"t_begin_ns\":5,"
        "\"dur_ns\":7,\"flops\":0,\"bytes\":0,\"rows\":2,\"cpu_ns\":-4,\"split\":false}\n");
    CHECK_THROWS_WITH(read_jsonl(bad), Catch::Contains("line 1") && Catch::Contains("'cpu_ns' must be >= 0"));
    // A line with CPU time but no start reading's age (written before cpu_gap_ns): a gap of 0; a negative one refused.
    std::istringstream no_gap(
        "{\"type\":\"op\",\"step\":3,\"layer\":0,\"op\":\"ffn\",\"device\":\"cpu\","
        "\"t_begin_ns\":5,\"dur_ns\":7,\"flops\":0,\"bytes\":0,\"rows\":2,\"cpu_ns\":4,"
        "\"split\":false}\n");
    const auto g = read_jsonl(no_gap);
    REQUIRE(g.size() == 1);
    CHECK(std::get<OpTiming>(g[0]).cpu_ns == 4);
    CHECK(std::get<OpTiming>(g[0]).cpu_gap_ns == 0);
    std::istringstream bad_gap(
        "{\"type\":\"op\",\"step\":3,\"layer\":0,\"op\":\"ffn\",\"device\":\"cpu\","
        "\"t_begin_ns\":5,\"dur_ns\":7,\"flops\":0,\"bytes\":0,\"rows\":2,\"cpu_ns\":4,"
        "\"cpu_gap_ns\":-1,\"split\":false}\n");
    CHECK_THROWS_WITH(read_jsonl(bad_gap), Catch::Contains("line 1") && Catch::Contains("'cpu_gap_ns' must be >= 0"));
}
