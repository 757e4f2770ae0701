#include "gpu/hrr/cuda/hrr_workspace.h"

#include <algorithm>

#include "gpu/hrr/cuda/hrr_launch.h"

namespace fieldbrain::hrr::cuda {

HrrWorkspace::HrrWorkspace(const HrrConfig& config, int64_t fft_work_bytes) {
  const int64_t batch = config.max_batch;
  const int64_t bins = Bins(config.dim);
  // A row of bins (4 D + 8 bytes) is larger than a real vector (4 D), so spectra-sized regions
  // also hold a bucket of real vectors (FFT input or output, padding rows included).
  const int64_t spectra_bytes = AlignRegion(batch * bins * int64_t(sizeof(Cf)));
  list_bytes = AlignRegion((batch + 1) * int64_t(sizeof(uint64_t)));
  args_bytes = kArgLists * list_bytes + spectra_bytes;
  stage_at = AlignRegion(args_bytes);
  out_at = stage_at + spectra_bytes;
  // Cleanup's results: k slots then k cosines per query, k <= kListEntries.
  const int64_t top_k_bytes = AlignRegion(batch * kListEntries * int64_t(sizeof(int32_t) + sizeof(float)));
  out_bytes = std::max(spectra_bytes, top_k_bytes);
  scores_at = out_at + out_bytes;
  const int64_t base_chunk =
      std::min<int64_t>(config.capacity, std::clamp<int64_t>(kScoreFloats / batch, kMinChunkItems, kMaxChunkItems));
  score_floats = batch * base_chunk;
  // A call of n queries uses n x ceil(chunk / kPartItems) lists with chunk <= score_floats / n.
  part_lists = score_floats / kPartItems + batch;
  const int64_t list_floats = part_lists * kListEntries;
  parts_cos_at = scores_at + AlignRegion(score_floats * int64_t(sizeof(float)));
  parts_slot_at = parts_cos_at + AlignRegion(list_floats * int64_t(sizeof(float)));
  running_cos_at = parts_slot_at + AlignRegion(list_floats * int64_t(sizeof(int32_t)));
  running_slot_at = running_cos_at + AlignRegion(batch * kListEntries * int64_t(sizeof(float)));
  fft_at = running_slot_at + AlignRegion(batch * kListEntries * int64_t(sizeof(int32_t)));
  device_bytes = fft_at + AlignRegion(fft_work_bytes);
  pinned_bytes = std::max(args_bytes, out_bytes);
}

int CleanupChunkItems(const HrrWorkspace& ws, int queries, int items) {
  return int(std::min<int64_t>({int64_t(items), int64_t(kMaxChunkItems), ws.score_floats / std::max(queries, 1)}));
}

}  // namespace fieldbrain::hrr::cuda
