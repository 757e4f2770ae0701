#include "gpu/engine.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "gpu/engine_backend.h"
#include "gpu/field_pool.h"
#include "gpu/robot_params.h"

namespace fieldbrain {

Engine::Engine(const EngineConfig& config, std::unique_ptr<FieldPool> pool, std::unique_ptr<EngineBackend> backend)
    : config_(config), pool_(std::move(pool)), backend_(std::move(backend)) {}

Engine::~Engine() = default;

std::string_view Engine::kind() const { return backend_->kind(); }
std::string Engine::device_name() const { return backend_->device_name(); }
std::string Engine::device_description() const { return backend_->device_description(); }
int64_t Engine::pool_bytes() const { return pool_->bytes(); }
int Engine::brains_active() const { return pool_->active(); }
std::span<BatchInputRow> Engine::inputs() { return backend_->inputs(); }
std::span<const BatchOutputRow> Engine::outputs() const { return backend_->outputs(); }
void Engine::set_timing_sink(StageTimingSink* sink) { backend_->set_timing_sink(sink); }
std::optional<DeviceMemory> Engine::device_memory() const { return backend_->device_memory(); }
void Engine::FailAfterBatchesForTesting(int64_t batches) { fail_after_batches_ = batches > 0 ? batches_ + batches : 0; }

absl::Status Engine::RefuseIfFailed() const {
  if (failed_.ok()) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("the ", std::string(kind()), " engine stopped after an earlier failure: ", failed_.message()));
}

absl::Status Engine::Fail(absl::Status error) {
  if (failed_.ok()) failed_ = error;
  return error;
}

absl::StatusOr<int> Engine::CreateBrain(const BrainSpec& spec) {
  absl::StatusOr<RobotParams> params = MakeRobotParams(spec, config_.shape);
  if (!params.ok()) return params.status();
  if (absl::Status s = RefuseIfFailed(); !s.ok()) return s;
  absl::StatusOr<int> slot = pool_->Acquire();
  if (!slot.ok()) return slot.status();
  if (absl::Status s = backend_->InitBrain(*slot, *params, spec.seed); !s.ok()) {
    pool_->Release(*slot);
    return Fail(std::move(s));
  }
  return *slot;
}

absl::StatusOr<int> Engine::CreateBrainFrom(const BrainSnapshot& snapshot) {
  if (absl::Status s = RefuseIfFailed(); !s.ok()) return s;
  if (absl::Status s = CheckSnapshot(snapshot, config_.shape); !s.ok()) return s;
  absl::StatusOr<int> slot = pool_->Acquire();
  if (!slot.ok()) return slot.status();
  if (absl::Status s = backend_->CopyIn(*slot, snapshot); !s.ok()) {
    pool_->Release(*slot);
    return Fail(std::move(s));
  }
  return *slot;
}

bool Engine::ReleaseBrain(int slot) { return pool_->Release(slot); }

absl::Status Engine::RunBatch(int n) {
  if (n < 1 || n > config_.max_batch)
    return absl::InvalidArgumentError(absl::StrCat("batch of ", n, " rows; this engine takes 1 to ", config_.max_batch));
  if (absl::Status s = RefuseIfFailed(); !s.ok()) return s;
  const std::span<const BatchInputRow> rows(backend_->inputs().data(), size_t(n));
  if (absl::Status s = pool_->ValidateBatch(rows); !s.ok()) return s;
  if (fail_after_batches_ > 0 && batches_ >= fail_after_batches_)
    return Fail(absl::InternalError(absl::StrCat("injected engine failure after ", batches_, " batches (test hook)")));
  if (absl::Status s = backend_->RunBatch(rows); !s.ok()) return Fail(std::move(s));
  pool_->CommitBatch(rows);
  ++batches_;
  return absl::OkStatus();
}

absl::StatusOr<BrainSnapshot> Engine::Snapshot(int slot) {
  BrainSnapshot snapshot;
  if (absl::Status s = SnapshotInto(slot, snapshot); !s.ok()) return s;
  return snapshot;
}

absl::Status Engine::SnapshotInto(int slot, BrainSnapshot& out) {
  if (absl::Status s = RefuseIfFailed(); !s.ok()) return s;
  if (!pool_->live(slot)) return absl::NotFoundError(absl::StrCat("slot ", slot, " is not live"));
  out.shape = config_.shape;
  // Resizing to the sizes a checkpoint buffer already has allocates nothing.
  out.field.resize(size_t(config_.shape.floats()));
  out.pattern.resize(size_t(pool_->pattern_floats()));
  out.memory_patterns.resize(size_t(kMemoryEntries * pool_->pattern_floats()));
  if (absl::Status s = backend_->CopyOut(slot, out); !s.ok()) return Fail(std::move(s));
  return absl::OkStatus();
}

absl::Status Engine::Restore(int slot, const BrainSnapshot& snapshot) {
  if (absl::Status s = RefuseIfFailed(); !s.ok()) return s;
  if (!pool_->live(slot)) return absl::NotFoundError(absl::StrCat("slot ", slot, " is not live"));
  if (absl::Status s = CheckSnapshot(snapshot, config_.shape); !s.ok()) return s;
  if (absl::Status s = backend_->CopyIn(slot, snapshot); !s.ok()) return Fail(std::move(s));
  return absl::OkStatus();
}

}  // namespace fieldbrain
