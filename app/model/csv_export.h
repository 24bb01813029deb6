// CSV exports of what the plots show (one table per plot): cosine histograms per layer, salient counts over steps,
// op timings per step and class, and the ops of one step. Pure functions over RunHistory, so they are unit-tested.
#pragma once
#include <ostream>

#include "app/model/run_history.h"

namespace dyllm::app {

// step,layer,seq,n_rows,n_salient,tau,bin_0..bin_15 (bins of events.h cosine_bin; header names the bin ranges)
void write_histograms_csv(std::ostream& os, const RunHistory& h, int step = -1 /* -1: every step */);
// step,kind,tau,wall_ms,<one column per op class in ms>,flops,dense_flops,ffn_rows,dense_rows
void write_step_timings_csv(std::ostream& os, const RunHistory& h);
// step,layer,op,device,t_begin_ns,dur_ns,flops,bytes,rows,name,cpu_ns,cpu_gap_ns,split,cpu_state for one step (-1:
// all): op is the engine's class, name the model's (gate, up, down: app/model/op_names.h); cpu_ns and cpu_gap_ns as
// OpTiming (empty where not measured); cpu_state unmeasured, split, on_cpu or preempted (app/model/op_preempt.h).
void write_ops_csv(std::ostream& os, const RunHistory& h, int step = -1);
// step,layer,seq,n_salient,n_rows (the L_sal plot)
void write_salient_counts_csv(std::ostream& os, const RunHistory& h);
// position,token,unmask_step,score for one sequence (the canvas)
void write_canvas_csv(std::ostream& os, const RunHistory& h, int seq = 0);

}  // namespace dyllm::app
