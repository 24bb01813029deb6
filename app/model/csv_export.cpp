// CSV writers for the studio's Export menu ("CSV of the plot"): plain comma-separated tables with a header row.
#include "app/model/csv_export.h"

#include <cmath>

#include "app/model/op_names.h"
#include "app/model/op_preempt.h"
#include "app/model/op_stats.h"
#include "instrumentation/number_text.h"

namespace dyllm::app {

namespace {
// NaN/inf written as empty cells, so spreadsheets do not choke on "nan". Floats (tau, scores) in their shortest form;
// doubles (ms, FLOPs) with 9 significant digits, which hides the last-bit noise of the unit conversions.
void put_num(std::ostream& os, float v) {
    if (std::isfinite(v)) os << number_text(v);
}
void put_num(std::ostream& os, double v) {
    if (std::isfinite(v)) os << number_text(v, 9);
}
// One word per CPU state for the CSV cell (op_cpu_state_text is a phrase for tooltips).
const char* cpu_state_key(OpCpuState s) {
    switch (s) {
        case OpCpuState::Split:
            return "split";
        case OpCpuState::OnCpu:
            return "on_cpu";
        case OpCpuState::Preempted:
            return "preempted";
        default:
            return "unmeasured";
    }
}
}  // namespace

void write_histograms_csv(std::ostream& os, const RunHistory& h, int step) {
    os << "step,layer,seq,n_rows,n_salient,tau";
    // Bin edges at float precision: 7 significant digits are enough to name a bin.
    for (int b = 0; b < kCosineBins; ++b)
        os << ",cos_" << number_text(float(cosine_bin_lower_cos(b))) << "_to_"
           << number_text(float(cosine_bin_upper_cos(b)));
    os << "\n";
    for (int k = 1; k <= h.step_count(); ++k) {
        if (step >= 0 && k != step) continue;
        const StepData* s = h.step(k);
        for (int q = 0; q < int(s->saliency.size()); ++q) {
            for (int l = 0; l < int(s->saliency[q].size()); ++l) {
                const auto* r = s->layer(q, l);
                if (!r) continue;
                os << k << ',' << l << ',' << q << ',' << r->n_rows << ',' << r->n_salient << ',';
                put_num(os, r->tau);
                for (auto c : r->hist) os << ',' << c;
                os << "\n";
            }
        }
    }
}

void write_step_timings_csv(std::ostream& os, const RunHistory& h) {
    os << "step,kind,tau,wall_ms";
    for (size_t c = 0; c < kOpClasses; ++c) os << ',' << op_class_name(OpClass(c)) << "_ms";
    os << ",flops,dense_flops,ffn_rows,dense_rows\n";
    for (int k = 1; k <= h.step_count(); ++k) {
        const StepData* s = h.step(k);
        os << k << ',' << step_kind_name(s->kind) << ',';
        put_num(os, s->tau);
        os << ',';
        put_num(os, s->wall_seconds() * 1e3);
        for (size_t c = 0; c < kOpClasses; ++c) {
            os << ',';
            put_num(os, s->op_seconds[c] * 1e3);
        }
        os << ',';
        put_num(os, s->end.flops);
        os << ',';
        put_num(os, s->end.dense_flops);
        os << ',' << s->end.ffn_rows << ',' << s->end.dense_rows << "\n";
    }
}

void write_ops_csv(std::ostream& os, const RunHistory& h, int step) {
    os << "step,layer,op,device,t_begin_ns,dur_ns,flops,bytes,rows,name,cpu_ns,cpu_gap_ns,split,cpu_state\n";
    const int n_embd = run_n_embd(h);
    for (int k = 1; k <= h.step_count(); ++k) {
        if (step >= 0 && k != step) continue;
        const auto& ops   = h.step(k)->ops;
        const auto  names = name_ops(ops, n_embd);  // gate, up, down... from the op order (app/model/op_names.h)
        for (size_t i = 0; i < ops.size(); ++i) {
            const OpTiming& o = ops[i];
            os << o.step << ',' << o.layer << ',' << op_class_name(o.op) << ','
               << (o.device == EventDevice::Cpu ? "cpu" : "cuda") << ',' << o.t_begin_ns << ',' << o.dur_ns << ',';
            put_num(os, o.flops);
            os << ',';
            put_num(os, o.bytes);
            os << ',' << o.rows << ',' << op_name_text(names[i].name) << ',';
            // The thread CPU time only where it was measured (ops of 0.2 ms or more): empty cells otherwise.
            if (o.cpu_ns >= 0)
                os << o.cpu_ns << ',' << o.cpu_gap_ns << ',' << (o.split ? 1 : 0);
            else
                os << ",,";
            os << ',' << cpu_state_key(op_cpu_state(o)) << "\n";
        }
    }
}

void write_salient_counts_csv(std::ostream& os, const RunHistory& h) {
    os << "step,layer,seq,n_salient,n_rows\n";
    for (int k = 1; k <= h.step_count(); ++k) {
        const StepData* s = h.step(k);
        for (int q = 0; q < int(s->saliency.size()); ++q)
            for (int l = 0; l < int(s->saliency[q].size()); ++l)
                if (const auto* r = s->layer(q, l))
                    os << k << ',' << l << ',' << q << ',' << r->n_salient << ',' << r->n_rows << "\n";
    }
}

void write_canvas_csv(std::ostream& os, const RunHistory& h, int seq) {
    os << "position,token,unmask_step,score\n";
    const auto& toks = h.tokens(seq);
    for (size_t r = 0; r < toks.size(); ++r) {
        os << r << ',' << toks[r].token << ',' << toks[r].unmask_step << ',';
        put_num(os, toks[r].score);
        os << "\n";
    }
}

}  // namespace dyllm::app
