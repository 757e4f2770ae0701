// The CPU engine: the reference backend under the Engine front, and the default where no GPU
// exists.
// Fields live in one host block laid out by FieldPool; a batch's (robot, x-slab) pairs are spread
// over OpenMP threads, the per-robot steps run per robot.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "gpu/engine.h"

namespace fieldbrain::cpu {

absl::StatusOr<std::unique_ptr<Engine>> MakeCpuEngine(const EngineConfig& config);

}  // namespace fieldbrain::cpu
