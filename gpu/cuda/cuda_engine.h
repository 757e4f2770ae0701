// The CUDA engine (DESIGN.md sections 4, 6 and 8): the CUDA backend of the Engine front on one
// GPU, with the brain pool in one device allocation, pinned staging for the batch rows, and one
// batched cycle as one CUDA graph launch (one host-to-device copy, four kernels, one
// device-to-host copy).
// gpu/cuda/README.md has the kernel plan and the bytes model.
#pragma once

#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gpu/cuda/cuda_counters.h"
#include "gpu/engine.h"

namespace fieldbrain::cuda {

// OK when device 0 exists and this binary carries code it can run (SASS for its architecture,
// or PTX its driver compiles); otherwise UNAVAILABLE with the reason (the CUDA error from
// cudaGetDeviceCount, no device, or a device the build has no code for, with the list it has).
absl::Status ProbeCudaDevice();
bool CudaDevicePresent();

struct CudaEngineOptions {
  // One CUDA graph launch per batch (graphs captured at start, one per batch-size bucket, timed
  // and untimed). false: the same copies and kernels launched one by one (the reference the
  // tests compare the graph path against).
  bool use_graphs = true;
};

absl::StatusOr<std::unique_ptr<Engine>> MakeCudaEngine(const EngineConfig& config);
absl::StatusOr<std::unique_ptr<Engine>> MakeCudaEngine(const EngineConfig& config, const CudaEngineOptions& options);

// The engine's own counts of allocations and copies since it was made; nullopt when `engine`
// is not a CUDA engine.
std::optional<CudaCounters> CountersOf(const Engine& engine);

}  // namespace fieldbrain::cuda
