// One batched cycle as a CUDA graph: captured once (at engine start, one per batch-size bucket),
// launched once per batch. The graph's copy nodes are counted at capture by reading the graph
// itself, and added to the engine's counters at every launch, so the per-batch copy count is a
// property of what runs, not of what the code meant to enqueue.
#pragma once

#include <cuda_runtime_api.h>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gpu/cuda/cuda_counters.h"
#include "gpu/cuda/device_buffer.h"

namespace fieldbrain::cuda {

class CycleGraph {
 public:
  // Captures what `enqueue` puts on `stream` (a non-default stream, thread-local capture mode).
  static absl::StatusOr<CycleGraph> Capture(cudaStream_t stream, absl::FunctionRef<absl::Status()> enqueue);

  absl::Status Launch(cudaStream_t stream, CudaCounters& counters) const;

  // What one launch copies (from the graph's memcpy nodes).
  const CudaCounters& per_launch() const { return per_launch_; }

 private:
  Graph graph_;
  GraphExec exec_;
  CudaCounters per_launch_;
};

}  // namespace fieldbrain::cuda
