// Block-candidate selection on CUDA (spec a.9 step 5): per sequence, rank its candidates by (score desc, position asc)
// and keep rank < num_transfer or score >= conf_threshold (never a -inf score).
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

namespace dyllm::cuda {

// scores, positions: packed candidates of all sequences, sequence b owning [cu_cand[b], cu_cand[b + 1]);
// num_transfer: per-sequence n_u (device int32 [n_seq]); keep_out: packed flags (1 kept, 0 not); rank_out (optional):
// each candidate's rank in its sequence. All device pointers.
cudaError_t select_candidates(const float* scores, const int32_t* positions, const int32_t* cu_cand, int n_seq,
                              const int32_t* num_transfer, float conf_threshold, uint8_t* keep_out, int32_t* rank_out,
                              cudaStream_t stream);

}  // namespace dyllm::cuda
