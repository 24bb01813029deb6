// How long a cache line takes to move between two of the machine's cores: the cost every split op pays for each line
// one thread wrote and another reads. `dyllm bench` prints it beside its multi-thread figures, because on a VM it is a
// property of the host's placement of the vCPUs right now, not of the code: on a 2-core VM two threads passing a line
// can read 26-38 ns one way for minutes, then 155-170 ns when the host moves the vCPUs apart, and the engine's
// 2-thread decodes move with it (docs/performance.md, "GEMM probes and thread placement").
#pragma once

namespace dyllm::app {

// Above this one-way time the cores sit "far" apart (another die, another socket, or a host that moved a vCPU): the
// two placements a 2-core VM shows, 26-38 and 155-170 ns, lie on either side.
constexpr double kFarCoresNs = 80.0;

struct CoreLatency {
    bool   measured   = false;  // false: the two threads never ran at the same time (one core, or a busy host)
    double one_way_ns = 0;      // median over batches of a round trip / 2
    bool   far() const { return measured && one_way_ns >= kFarCoresNs; }
};

// Two threads (the caller and one it starts, placed by the OS as the engine's own threads are) pass a counter back
// and forth `round_trips` times per batch, `batches` times; the median batch's round trip / 2. A batch that has not
// finished within `batch_limit_ms` (the threads are not running at the same time: each hand-off would wait for a
// scheduler tick) ends the measurement as not measured.
CoreLatency measure_core_latency(int round_trips = 20000, int batches = 5, double batch_limit_ms = 100.0);

}  // namespace dyllm::app
