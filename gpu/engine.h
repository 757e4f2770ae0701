// The compute engine: one front (Engine, this file) over two backends side by side, the CPU
// one (cpu/) and the CUDA one (cuda/), which implement EngineBackend (engine_backend.h).
//
// An engine holds the brains of up to `max_robots` robots in a pool allocated once, and runs one
// cycle for a batch of them at a time. The caller (the server's engine thread; never a gRPC thread)
// fills rows of inputs(), calls RunBatch(n), and reads rows of outputs(). Row i of the outputs
// answers row i of the inputs. Each slot may appear at most once in a batch. A robot's outputs
// never depend on which other robots share its batch.
//
// The front alone checks arguments (slots, batch rows, snapshot shapes), sizes snapshots and keeps
// the engine's health, so both backends refuse the same things with the same words. Any error a
// backend returns may have left a brain half a cycle on (a device error between two kernels), so
// it latches: from then on the engine runs no batch, creates no brain, and copies no brain in or
// out, and no checkpoint is ever written from a brain that no cycle wrote whole.
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

class EngineBackend;
class FieldPool;

class Engine {
 public:
  // The pool's slot bookkeeping and layout, and the backend that computes on it (which may keep a
  // reference to *pool). Made by MakeEngine and the backends' factories.
  Engine(const EngineConfig& config, std::unique_ptr<FieldPool> pool, std::unique_ptr<EngineBackend> backend);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  std::string_view kind() const;  // "cpu" or "cuda"
  std::string device_name() const;
  // One line for the start-up log: the device's name, capability and memory.
  std::string device_description() const;
  const EngineConfig& config() const { return config_; }
  // Bytes of the brain pool (fields, patterns, per-robot state) allocated at start.
  int64_t pool_bytes() const;

  // A fresh brain (DESIGN.md section 4 start state) in a free slot; RESOURCE_EXHAUSTED when full.
  absl::StatusOr<int> CreateBrain(const BrainSpec& spec);
  // A brain from a snapshot (a checkpoint) in a free slot, without first making a fresh one: its
  // cycle count and everything it learnt continue. The snapshot's shape must match and its counts
  // fit; RESOURCE_EXHAUSTED when full.
  absl::StatusOr<int> CreateBrainFrom(const BrainSnapshot& snapshot);
  // Frees a slot. Idempotent: returns false (and does nothing) when the slot is already free.
  // Also on a failed engine (bookkeeping only).
  bool ReleaseBrain(int slot);
  int brains_active() const;

  // Staging for one batch, config().max_batch rows each.
  std::span<BatchInputRow> inputs();
  std::span<const BatchOutputRow> outputs() const;
  // One cycle for input rows [0, n). Rejects n out of range, free or repeated slots.
  absl::Status RunBatch(int n);

  absl::StatusOr<BrainSnapshot> Snapshot(int slot);
  // The same into `out`, reusing its buffers: with out's vectors already of the shape's sizes
  // (a checkpoint buffer allocated at start), nothing is allocated.
  absl::Status SnapshotInto(int slot, BrainSnapshot& out);
  // Overwrites a live slot's brain; the snapshot's shape must match and its counts fit.
  absl::Status Restore(int slot, const BrainSnapshot& snapshot);

  // Where stage timings go (nullptr: nowhere). Not owned.
  void set_timing_sink(StageTimingSink* sink);
  // OK while the engine can run batches; after a backend error, that error, for good.
  absl::Status health() const { return failed_; }
  // The device's memory now; nullopt for engines without a device of their own (CPU).
  std::optional<DeviceMemory> device_memory() const;

  // Testing only: batch number `batches` + 1 from now fails as a device error would (before the
  // backend runs it) and latches; 0 = never. Drives the daemon's engine-failure paths without a
  // GPU.
  void FailAfterBatchesForTesting(int64_t batches);

  const EngineBackend& backend() const { return *backend_; }

 private:
  // FAILED_PRECONDITION once the engine has latched a failure.
  absl::Status RefuseIfFailed() const;
  // Latches `error` (a backend's) and returns it.
  absl::Status Fail(absl::Status error);

  const EngineConfig config_;
  std::unique_ptr<FieldPool> pool_;
  std::unique_ptr<EngineBackend> backend_;  // after pool_: destroyed first, it may refer to it
  absl::Status failed_;
  int64_t batches_ = 0;
  int64_t fail_after_batches_ = 0;
};

// "cpu", "cuda", or "auto" (CUDA when this build has it and a device is present, else CPU).
absl::StatusOr<std::unique_ptr<Engine>> MakeEngine(std::string_view kind, const EngineConfig& config);

// Whether this build has the CUDA engine and a usable device (no error when not).
bool CudaEngineAvailable();

}  // namespace fieldbrain
