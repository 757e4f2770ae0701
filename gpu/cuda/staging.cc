#include "gpu/cuda/staging.h"

#include <algorithm>

#include "gpu/field_pool.h"

namespace fieldbrain::cuda {

StagingLayout::StagingLayout(int max_batch, int evolve_blocks_per_robot, int partial_floats) : max_batch(max_batch) {
  count_at = 0;
  field_in_at = 16;
  field_out_at = field_in_at + max_batch * int64_t(sizeof(int64_t));
  rows_at = AlignStaging(field_out_at + max_batch * int64_t(sizeof(int64_t)));
  input_bytes = AlignStaging(rows_at + max_batch * int64_t(sizeof(BatchInputRow)));
  pinned_outputs_at = input_bytes;
  pinned_bytes = AlignStaging(pinned_outputs_at + max_batch * int64_t(sizeof(BatchOutputRow)));
  ws_outputs_at = input_bytes;
  ws_errors_at = AlignStaging(ws_outputs_at + max_batch * int64_t(sizeof(BatchOutputRow)));
  ws_partials_at = AlignStaging(ws_errors_at + int64_t(max_batch) * kMaxSensors * int64_t(sizeof(float)));
  workspace_bytes = AlignStaging(ws_partials_at + int64_t(max_batch) * evolve_blocks_per_robot * partial_floats *
                                                      int64_t(sizeof(float)));
}

int64_t DeviceBytesNeeded(const EngineConfig& config, const EvolveTile& tile) {
  const FieldPool pool(config.shape, config.max_robots, config.max_batch);
  const StagingLayout layout(config.max_batch, tile.blocks_per_robot, kPartialFloats);
  return pool.bytes() + layout.workspace_bytes;
}

std::vector<int> BatchBuckets(int max_batch) {
  std::vector<int> buckets;
  for (int b = 1; b < max_batch; b *= 2) buckets.push_back(b);
  buckets.push_back(max_batch);
  return buckets;
}

int BucketIndex(std::span<const int> buckets, int n) {
  return int(std::lower_bound(buckets.begin(), buckets.end(), n) - buckets.begin());
}

}  // namespace fieldbrain::cuda
