// Host-side layout of one batch's staging and the device workspaces (no CUDA calls here, so the
// offsets and the bucket choice are unit-tested on machines without a GPU).
//
// Pinned host block:  [ input block | output rows ]
//   input block:      [ count (int32) | field_in[max_batch] (int64) | field_out[max_batch] (int64) | rows ]
//                     rows = BatchInputRow[max_batch]; Engine::inputs() is this span, so the caller
//                     writes rows straight into pinned memory.
//   output rows:      BatchOutputRow[max_batch]; Engine::outputs().
// Device workspace:   [ input block mirror | output rows | errors | exploration | evolve partials ]
//
// One batch of b rows copies the input block's first input_copy_bytes(b) bytes in one
// host-to-device copy (header and rows together) and output_copy_bytes(b) back in one
// device-to-host copy.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "gpu/engine.h"
#include "gpu/cuda/evolve_plan.h"
#include "gpu/model/robot_state.h"

namespace fieldbrain::cuda {

inline constexpr int64_t kStagingAlign = 256;
inline constexpr int64_t AlignStaging(int64_t v) { return (v + kStagingAlign - 1) / kStagingAlign * kStagingAlign; }

struct StagingLayout {
  explicit StagingLayout(int max_batch, int evolve_blocks_per_robot, int partial_floats);

  int max_batch;
  // Input block (same offsets in the pinned block and its device mirror).
  int64_t count_at = 0;
  int64_t field_in_at = 0;   // byte offsets of each row's F_t in the pool
  int64_t field_out_at = 0;  // byte offsets of each row's F_t+1 in the pool
  int64_t rows_at = 0;
  int64_t input_bytes = 0;
  // Pinned block.
  int64_t pinned_outputs_at = 0;
  int64_t pinned_bytes = 0;
  // Device workspace.
  int64_t ws_outputs_at = 0;
  int64_t ws_errors_at = 0;    // float[max_batch][kMaxSensors]
  int64_t ws_partials_at = 0;  // float[max_batch][evolve blocks per robot][partial floats]
  int64_t workspace_bytes = 0;

  int64_t input_copy_bytes(int rows) const { return rows_at + rows * int64_t(sizeof(BatchInputRow)); }
  int64_t output_copy_bytes(int rows) const { return rows * int64_t(sizeof(BatchOutputRow)); }
};

// Device memory a CUDA engine allocates for `config` with evolve tile `tile`: the brain pool
// (FieldPool) and the workspace. The CUDA context and cuFFT/cuBLAS handles come on top.
int64_t DeviceBytesNeeded(const EngineConfig& config, const EvolveTile& tile);

// Batch sizes with a captured graph: powers of two below max_batch, then max_batch.
std::vector<int> BatchBuckets(int max_batch);
// Index into `buckets` of the smallest bucket holding n rows (buckets ascending, n within range).
int BucketIndex(std::span<const int> buckets, int n);

}  // namespace fieldbrain::cuda
