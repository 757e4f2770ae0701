// The daemon's Prometheus metrics (DESIGN.md section 7), owned by one Metrics object.
//
// Every labelled child is created in the constructor, so recording on the hot path (engine thread,
// gRPC threads) is a lookup in a fixed array plus an atomic or a short mutex inside prometheus-cpp:
// no allocation. No metric carries a robot id (cardinality): they are fleet-wide.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "gpu/stage_timing.h"
#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace fieldbrain::telemetry {

// Why a frame was answered without running it (label `reason` of brain_frames_rejected_total).
// Superseded frames are counted apart, in brain_frames_superseded_total.
enum class RejectReason {
  kWrongSensorCount,
  kNonFinite,
  kOutOfRange,
  kDeadlineExceeded,
  kShuttingDown,
  kEngineError,
  kRateLimited,
  kUnspecified,  // a status no server sends; counted rather than mislabelled
  kCount
};

const char* RejectReasonName(RejectReason reason);

// Why a checkpoint failed (label `reason` of brain_checkpoint_failures_total).
enum class CheckpointFailure {
  kWrite,    // the file could not be written (a full disk, a read-only directory)
  kCorrupt,  // a checkpoint read at a Hello was cut short, damaged or another robot's
  kForeign,  // a checkpoint read at a Hello came from another format version or field shape
  kCount
};

const char* CheckpointFailureName(CheckpointFailure failure);

// Why a brain's final state (at its release or at shutdown) was not copied for its checkpoint
// (label `reason` of brain_final_states_lost_total); its file keeps the last state written.
enum class FinalStateLoss {
  kEngineFailed,      // the engine latched a failure: nothing is copied out of it
  kNoBuffer,          // the pool was full and the writer stayed behind for the whole wait
  kShutdownDeadline,  // --shutdown_deadline_s passed before a snapshot buffer came free
  kCount
};

const char* FinalStateLossName(FinalStateLoss loss);

// The Memory service's operations (label `op` of brain_hrr_operations_total).
enum class HrrOp {
  kPut,
  kGet,
  kDelete,
  kBind,
  kUnbind,
  kSuperpose,
  kPermute,
  kPower,
  kSimilarity,
  kCleanup,
  kCount
};

const char* HrrOpName(HrrOp op);

class Metrics final : public StageTimingSink {
 public:
  Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  const std::shared_ptr<prometheus::Registry>& registry() const { return registry_; }

  // Once at startup: brain_build_info{version,engine} = 1, brain_pool_bytes.
  void SetBuildInfo(std::string_view version, std::string_view engine);
  // Once at startup: brain_engine_info{engine,reason} = 1, which engine serves and why (the CUDA
  // engine's start-up self-check passed or failed, no device, the CPU engine asked for).
  void SetEngineInfo(std::string_view engine, std::string_view reason);
  void SetPoolBytes(int64_t bytes);

  // Frame received -> motors handed to gRPC, for frames the brain ran.
  void RecordCycle(double seconds);
  // One batch: its size and the cycles it ran.
  void RecordBatch(int size);
  // Frame received -> its batch started.
  void RecordQueueWait(double seconds);
  void RecordRejected(RejectReason reason);
  void RecordSuperseded();
  // brain_checkpoint_duration_seconds (encode, hash, write, fsync, rename) and
  // brain_checkpoint_bytes_total, per checkpoint written.
  void RecordCheckpoint(double seconds, int64_t bytes);
  void RecordCheckpointFailure(CheckpointFailure failure);
  // brain_checkpoints_coalesced_total: a robot's checkpoint replaced before it was written.
  void RecordCheckpointCoalesced();
  // brain_checkpoint_refused_files: damaged checkpoints set aside as <file>.refused in the
  // directory (at start, and each one set aside since).
  void SetCheckpointRefusedFiles(int files);
  void AddCheckpointRefusedFile();
  // brain_final_states_lost_total: a released brain whose final state was not copied.
  void RecordFinalStateLost(FinalStateLoss loss);
  void SetSessionsActive(int sessions);
  // brain_slots_capacity (brain slots allocated at start) and brain_slots_used (slots held by live,
  // kept and being-created brains): the capacity an autoscaler or an alert watches.
  void SetSlotsTotal(int slots);
  void SetSlotsUsed(int slots);
  // brain_engine_healthy: 1 from the start, 0 once the engine has latched a failure.
  void SetEngineHealthy(bool healthy);
  // brain_device_memory_used_bytes / _total_bytes. The series appear with the first call (only
  // engines with a device of their own make it); one thread calls this.
  void SetDeviceMemory(int64_t used_bytes, int64_t total_bytes);

  // brain_hrr_operations_total{op}: vectors one Memory request processed (stored, returned,
  // deleted or made; similarity pairs; cleanup queries).
  void RecordHrrOperations(HrrOp op, int64_t vectors);
  // brain_hrr_vectors_stored: vectors held by every Memory space.
  void SetHrrVectorsStored(int64_t vectors);
  // brain_hrr_arena_bytes (the --memory_arena_bytes budget) and brain_hrr_arena_used_bytes.
  void SetHrrArena(int64_t bytes, int64_t used_bytes);

  // StageTimingSink: the engine's per-stage time for one batch.
  void RecordStage(Stage stage, double seconds, int batch_size) override;

  // The text exposition format of everything registered (what /metrics serves).
  std::string Scrape() const;

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Histogram& cycle_duration_;
  std::array<prometheus::Histogram*, static_cast<int>(Stage::kCount)> stage_duration_{};
  prometheus::Histogram& batch_size_;
  prometheus::Histogram& queue_wait_;
  prometheus::Counter& cycles_total_;
  std::array<prometheus::Counter*, static_cast<int>(RejectReason::kCount)> rejected_{};
  prometheus::Counter& superseded_;
  prometheus::Histogram& checkpoint_duration_;
  prometheus::Counter& checkpoint_bytes_;
  prometheus::Counter& checkpoints_coalesced_;
  prometheus::Gauge& checkpoint_refused_files_;
  std::array<prometheus::Counter*, static_cast<int>(CheckpointFailure::kCount)> checkpoint_failures_{};
  std::array<prometheus::Counter*, static_cast<int>(FinalStateLoss::kCount)> final_states_lost_{};
  prometheus::Gauge& sessions_active_;
  prometheus::Gauge& slots_total_;
  prometheus::Gauge& slots_used_;
  prometheus::Gauge& pool_bytes_;
  prometheus::Gauge& engine_healthy_;
  prometheus::Family<prometheus::Gauge>& device_memory_used_family_;
  prometheus::Family<prometheus::Gauge>& device_memory_total_family_;
  prometheus::Gauge* device_memory_used_ = nullptr;
  prometheus::Gauge* device_memory_total_ = nullptr;
  prometheus::Family<prometheus::Gauge>& build_info_;
  prometheus::Family<prometheus::Gauge>& engine_info_;
  std::array<prometheus::Counter*, static_cast<int>(HrrOp::kCount)> hrr_operations_{};
  prometheus::Gauge& hrr_vectors_stored_;
  prometheus::Gauge& hrr_arena_bytes_;
  prometheus::Gauge& hrr_arena_used_bytes_;
};

}  // namespace fieldbrain::telemetry
