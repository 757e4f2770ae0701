// The compute engine: one interface, a CPU implementation (cpu/) and a CUDA one (cuda/).
//
// An engine holds the brains of up to `max_robots` robots in a pool allocated once, and runs one
// cycle for a batch of them at a time. The caller (the server's engine thread; never a gRPC thread)
// fills rows of inputs(), calls RunBatch(n), and reads rows of outputs(). Row i of the outputs
// answers row i of the inputs. Each slot may appear at most once in a batch. A robot's outputs
// never depend on which other robots share its batch.
//
// Engines are not thread-safe: one thread owns an engine and calls everything on it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gpu/model/field_shape.h"
#include "gpu/model/robot_state.h"
#include "gpu/stage_timing.h"

namespace fieldbrain {

struct EngineConfig {
  FieldShape shape = FieldShape::Default();
  int max_robots = 16;  // brain slots in the pool
  int max_batch = 16;   // rows per RunBatch; at most max_robots
  int threads = 0;      // CPU engine worker threads; 0 = all cores
  // Testing only: the CPU engine fails batch number fail_after_batches + 1 as a device error
  // would, and latches that failure (0 = never). Lets the tests drive the daemon's
  // engine-failure path without a GPU.
  int64_t fail_after_batches = 0;
};

// Memory of the engine's device as the device reports it (all users of the device counted).
struct DeviceMemory {
  int64_t used_bytes = 0;
  int64_t total_bytes = 0;
};

// What a new brain is made from. Its fixed structure and its noise come from `seed` alone.
struct BrainSpec {
  uint64_t seed = 1;
  int sensor_count = 0;  // 1..kMaxSensors
  int motor_count = 0;   // 1..kMaxMotors
  bool learn_motors = true;
};

// A whole brain, copied out of (or into) an engine: for tests, checkpoints and parity checks.
struct BrainSnapshot {
  FieldShape shape;
  RobotParams params;
  RobotState state;
  std::vector<float> field;    // shape.floats() values, F[c][x][y][z]
  std::vector<float> pattern;  // shape.memory() * shape.coarse_voxels() values: the recalled P
  MemoryBank memory;           // the pattern memory's keys, valences, strengths
  std::vector<float> memory_patterns;  // kMemoryEntries patterns like `pattern`, entry-major
};

class Engine {
 public:
  virtual ~Engine() = default;

  virtual std::string_view kind() const = 0;  // "cpu" or "cuda"
  virtual std::string device_name() const = 0;
  // One line for the start-up log: the device's name, capability and memory.
  virtual std::string device_description() const = 0;
  virtual const EngineConfig& config() const = 0;
  // Bytes of the brain pool (fields, patterns, per-robot state) allocated at start.
  virtual int64_t pool_bytes() const = 0;

  // A fresh brain (DESIGN.md section 4 start state) in a free slot; RESOURCE_EXHAUSTED when full.
  virtual absl::StatusOr<int> CreateBrain(const BrainSpec& spec) = 0;
  // Frees a slot. Idempotent: returns false (and does nothing) when the slot is already free.
  virtual bool ReleaseBrain(int slot) = 0;
  virtual int brains_active() const = 0;

  // Staging for one batch, config().max_batch rows each.
  virtual std::span<BatchInputRow> inputs() = 0;
  virtual std::span<const BatchOutputRow> outputs() const = 0;
  // One cycle for input rows [0, n). Rejects n out of range, free or repeated slots.
  virtual absl::Status RunBatch(int n) = 0;

  virtual absl::StatusOr<BrainSnapshot> Snapshot(int slot) = 0;
  // The same into `out`, reusing its buffers: with out's vectors already of the shape's sizes
  // (a checkpoint buffer allocated at start), nothing is allocated.
  virtual absl::Status SnapshotInto(int slot, BrainSnapshot& out) = 0;
  // Overwrites a live slot's brain; the snapshot's shape must match and its counts fit.
  virtual absl::Status Restore(int slot, const BrainSnapshot& snapshot) = 0;

  // Where stage timings go (nullptr: nowhere). Not owned.
  virtual void set_timing_sink(StageTimingSink* sink) = 0;

  // OK while the engine can run batches. After a failure that may have left a brain half
  // advanced (a device error), that failure, for good: every later RunBatch returns an error.
  virtual absl::Status health() const = 0;
  // The device's memory now; nullopt for engines without a device of their own (CPU).
  virtual std::optional<DeviceMemory> device_memory() const = 0;
};

// "cpu", "cuda", or "auto" (CUDA when this build has it and a device is present, else CPU).
absl::StatusOr<std::unique_ptr<Engine>> MakeEngine(std::string_view kind, const EngineConfig& config);

// Whether this build has the CUDA engine and a usable device (no error when not).
bool CudaEngineAvailable();

}  // namespace fieldbrain
