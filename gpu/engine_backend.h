// EngineBackend: what a CPU or a CUDA engine implements under the Engine front (engine.h).
//
// The front has checked every argument before a call gets here (live slots, batch rows, snapshot
// shapes and counts) and sized every snapshot's vectors; a backend computes and copies, nothing
// else. It reads the slot layout from the FieldPool the front owns (the pool outlives it) and
// never changes it: the front acquires and releases slots and commits a batch's field buffers
// after RunBatch succeeds. Any error a backend returns latches the engine's failure.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "gpu/engine.h"

namespace fieldbrain {

class EngineBackend {
 public:
  virtual ~EngineBackend() = default;

  virtual std::string_view kind() const = 0;  // "cpu" or "cuda"
  virtual std::string device_name() const = 0;
  virtual std::string device_description() const = 0;
  virtual std::optional<DeviceMemory> device_memory() const = 0;
  virtual void set_timing_sink(StageTimingSink* sink) = 0;

  // Staging for one batch, max_batch rows each.
  virtual std::span<BatchInputRow> inputs() = 0;
  virtual std::span<const BatchOutputRow> outputs() const = 0;

  // A fresh brain from `params` and `seed` in `slot`, just acquired.
  virtual absl::Status InitBrain(int slot, const RobotParams& params, uint64_t seed) = 0;
  // One cycle for `rows` (inputs()[0, n), validated): every row's new field goes to the pool's
  // spare buffer of its row, which the front then commits.
  virtual absl::Status RunBatch(std::span<const BatchInputRow> rows) = 0;
  // A live slot's brain into `out`, whose vectors already have the shape's sizes.
  virtual absl::Status CopyOut(int slot, BrainSnapshot& out) = 0;
  // `in` (checked against the shape) over a live slot's brain, or into a slot just acquired for it.
  virtual absl::Status CopyIn(int slot, const BrainSnapshot& in) = 0;
};

}  // namespace fieldbrain
