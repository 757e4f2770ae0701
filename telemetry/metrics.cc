#include "telemetry/metrics.h"

#include <sstream>

#include "prometheus/text_serializer.h"

namespace fieldbrain::telemetry {
namespace {

using prometheus::Histogram;

// Latencies from 10 us (loopback floor) to 1 s (a badly overloaded server).
Histogram::BucketBoundaries LatencyBuckets() {
  return {10e-6, 25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3,
          10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 1.0};
}

// Stage times from 1 us (a small-field stage on a GPU) to 100 ms (a default field on one core).
Histogram::BucketBoundaries StageBuckets() {
  return {1e-6, 2.5e-6, 5e-6, 10e-6, 25e-6, 50e-6, 100e-6, 250e-6, 500e-6,
          1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3};
}

Histogram::BucketBoundaries BatchBuckets() { return {1, 2, 4, 8, 16, 32, 64, 128, 256, 512}; }

}  // namespace

const char* RejectReasonName(RejectReason reason) {
  switch (reason) {
    case RejectReason::kWrongSensorCount: return "wrong_sensor_count";
    case RejectReason::kNonFinite: return "non_finite";
    case RejectReason::kOutOfRange: return "out_of_range";
    case RejectReason::kDeadlineExceeded: return "deadline_exceeded";
    case RejectReason::kShuttingDown: return "shutting_down";
    case RejectReason::kEngineError: return "engine_error";
    case RejectReason::kRateLimited: return "rate_limited";
    case RejectReason::kUnspecified: return "unspecified";
    case RejectReason::kCount: break;
  }
  return "unknown";
}

const char* HrrOpName(HrrOp op) {
  switch (op) {
    case HrrOp::kPut: return "put";
    case HrrOp::kGet: return "get";
    case HrrOp::kDelete: return "delete";
    case HrrOp::kBind: return "bind";
    case HrrOp::kUnbind: return "unbind";
    case HrrOp::kSuperpose: return "superpose";
    case HrrOp::kPermute: return "permute";
    case HrrOp::kPower: return "power";
    case HrrOp::kSimilarity: return "similarity";
    case HrrOp::kCleanup: return "cleanup";
    case HrrOp::kCount: break;
  }
  return "unknown";
}

const char* CheckpointFailureName(CheckpointFailure failure) {
  switch (failure) {
    case CheckpointFailure::kWrite: return "write";
    case CheckpointFailure::kCorrupt: return "corrupt";
    case CheckpointFailure::kForeign: return "foreign";
    case CheckpointFailure::kCount: break;
  }
  return "unknown";
}

const char* FinalStateLossName(FinalStateLoss loss) {
  switch (loss) {
    case FinalStateLoss::kEngineFailed: return "engine_failed";
    case FinalStateLoss::kNoBuffer: return "no_buffer";
    case FinalStateLoss::kShutdownDeadline: return "shutdown_deadline";
    case FinalStateLoss::kCount: break;
  }
  return "unknown";
}

Metrics::Metrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      cycle_duration_(prometheus::BuildHistogram()
                          .Name("brain_cycle_duration_seconds")
                          .Help("Time from a sensor frame's arrival to its motor frame being sent")
                          .Register(*registry_)
                          .Add({}, LatencyBuckets())),
      batch_size_(prometheus::BuildHistogram()
                      .Name("brain_batch_size")
                      .Help("Robots per batched engine cycle")
                      .Register(*registry_)
                      .Add({}, BatchBuckets())),
      queue_wait_(prometheus::BuildHistogram()
                      .Name("brain_queue_wait_seconds")
                      .Help("Time from a sensor frame's arrival to the start of its batch")
                      .Register(*registry_)
                      .Add({}, LatencyBuckets())),
      cycles_total_(prometheus::BuildCounter()
                        .Name("brain_cycles_total")
                        .Help("Robot cycles run by the engine")
                        .Register(*registry_)
                        .Add({})),
      superseded_(prometheus::BuildCounter()
                      .Name("brain_frames_superseded_total")
                      .Help("Frames answered SUPERSEDED because a newer frame of the robot arrived")
                      .Register(*registry_)
                      .Add({})),
      checkpoint_duration_(prometheus::BuildHistogram()
                               .Name("brain_checkpoint_duration_seconds")
                               .Help("Time to encode, hash and durably write one robot's checkpoint")
                               .Register(*registry_)
                               .Add({}, prometheus::Histogram::BucketBoundaries{0.001, 0.003, 0.01, 0.03, 0.1, 0.3,
                                                                                1, 3, 10})),
      checkpoint_bytes_(prometheus::BuildCounter()
                            .Name("brain_checkpoint_bytes_total")
                            .Help("Bytes of checkpoints written")
                            .Register(*registry_)
                            .Add({})),
      checkpoints_coalesced_(prometheus::BuildCounter()
                                 .Name("brain_checkpoints_coalesced_total")
                                 .Help("Checkpoints replaced by a newer one of the same robot before being written")
                                 .Register(*registry_)
                                 .Add({})),
      checkpoint_refused_files_(prometheus::BuildGauge()
                                    .Name("brain_checkpoint_refused_files")
                                    .Help("Damaged checkpoints set aside as <file>.refused in the checkpoint directory")
                                    .Register(*registry_)
                                    .Add({})),
      sessions_active_(prometheus::BuildGauge()
                           .Name("brain_sessions_active")
                           .Help("Robots with a live Cycle stream")
                           .Register(*registry_)
                           .Add({})),
      slots_total_(prometheus::BuildGauge()
                       .Name("brain_slots_capacity")
                       .Help("Brain slots allocated at start (--max_robots): robots served at once")
                       .Register(*registry_)
                       .Add({})),
      slots_used_(prometheus::BuildGauge()
                      .Name("brain_slots_used")
                      .Help("Brain slots held by live, kept (awaiting a resume) and being-created brains")
                      .Register(*registry_)
                      .Add({})),
      pool_bytes_(prometheus::BuildGauge()
                      .Name("brain_pool_bytes")
                      .Help("Bytes of the brain pool allocated at start")
                      .Register(*registry_)
                      .Add({})),
      engine_healthy_(prometheus::BuildGauge()
                          .Name("brain_engine_healthy")
                          .Help("1 while the compute engine runs batches; 0 once it has failed "
                                "(the daemon then reports NOT_SERVING and ends every stream)")
                          .Register(*registry_)
                          .Add({})),
      device_memory_used_family_(prometheus::BuildGauge()
                                     .Name("brain_device_memory_used_bytes")
                                     .Help("Memory in use on the engine's GPU, by every process")
                                     .Register(*registry_)),
      device_memory_total_family_(prometheus::BuildGauge()
                                      .Name("brain_device_memory_total_bytes")
                                      .Help("Memory of the engine's GPU")
                                      .Register(*registry_)),
      build_info_(prometheus::BuildGauge()
                      .Name("brain_build_info")
                      .Help("Always 1; labels name the version and the engine in use")
                      .Register(*registry_)),
      engine_info_(prometheus::BuildGauge()
                       .Name("brain_engine_info")
                       .Help("Always 1; labels name the engine that serves and why (the CUDA engine's "
                             "start-up self-check against the CPU engine, or no device)")
                       .Register(*registry_)),
      hrr_vectors_stored_(prometheus::BuildGauge()
                              .Name("brain_hrr_vectors_stored")
                              .Help("Vectors held by the Memory service's spaces")
                              .Register(*registry_)
                              .Add({})),
      hrr_arena_bytes_(prometheus::BuildGauge()
                           .Name("brain_hrr_arena_bytes")
                           .Help("The Memory service's arena: bytes its spaces may take in all")
                           .Register(*registry_)
                           .Add({})),
      hrr_arena_used_bytes_(prometheus::BuildGauge()
                                .Name("brain_hrr_arena_used_bytes")
                                .Help("Bytes of the Memory service's arena its spaces take now")
                                .Register(*registry_)
                                .Add({})) {
  auto& stages = prometheus::BuildHistogram()
                     .Name("brain_stage_duration_seconds")
                     .Help("Engine time per cycle stage for one batch")
                     .Register(*registry_);
  for (int s = 0; s < static_cast<int>(Stage::kCount); ++s) {
    stage_duration_[s] = &stages.Add({{"stage", StageName(static_cast<Stage>(s))}}, StageBuckets());
  }
  auto& rejected = prometheus::BuildCounter()
                       .Name("brain_frames_rejected_total")
                       .Help("Frames answered with an error status and zero motors, by reason")
                       .Register(*registry_);
  for (int r = 0; r < static_cast<int>(RejectReason::kCount); ++r) {
    rejected_[r] = &rejected.Add({{"reason", RejectReasonName(static_cast<RejectReason>(r))}});
  }
  auto& failures = prometheus::BuildCounter()
                       .Name("brain_checkpoint_failures_total")
                       .Help("Checkpoints not written, or refused when read, by reason")
                       .Register(*registry_);
  for (int f = 0; f < static_cast<int>(CheckpointFailure::kCount); ++f) {
    checkpoint_failures_[f] = &failures.Add({{"reason", CheckpointFailureName(static_cast<CheckpointFailure>(f))}});
  }
  auto& lost = prometheus::BuildCounter()
                   .Name("brain_final_states_lost_total")
                   .Help("Brains released or shut down whose final state was not copied for their checkpoint "
                         "(the file keeps the last state written), by reason")
                   .Register(*registry_);
  for (int l = 0; l < static_cast<int>(FinalStateLoss::kCount); ++l) {
    final_states_lost_[l] = &lost.Add({{"reason", FinalStateLossName(static_cast<FinalStateLoss>(l))}});
  }
  auto& hrr = prometheus::BuildCounter()
                  .Name("brain_hrr_operations_total")
                  .Help("Vectors processed by the Memory service, by operation (stored, returned, "
                        "deleted or made; similarity pairs; cleanup queries)")
                  .Register(*registry_);
  for (int op = 0; op < static_cast<int>(HrrOp::kCount); ++op) {
    hrr_operations_[op] = &hrr.Add({{"op", HrrOpName(static_cast<HrrOp>(op))}});
  }
  engine_healthy_.Set(1);
}

void Metrics::SetBuildInfo(std::string_view version, std::string_view engine) {
  build_info_.Add({{"version", std::string(version)}, {"engine", std::string(engine)}}).Set(1);
}

void Metrics::SetEngineInfo(std::string_view engine, std::string_view reason) {
  engine_info_.Add({{"engine", std::string(engine)}, {"reason", std::string(reason)}}).Set(1);
}

void Metrics::SetPoolBytes(int64_t bytes) { pool_bytes_.Set(static_cast<double>(bytes)); }

void Metrics::RecordCycle(double seconds) { cycle_duration_.Observe(seconds); }

void Metrics::RecordBatch(int size) {
  batch_size_.Observe(size);
  cycles_total_.Increment(size);
}

void Metrics::RecordQueueWait(double seconds) { queue_wait_.Observe(seconds); }

void Metrics::RecordRejected(RejectReason reason) {
  const int r = static_cast<int>(reason);
  if (r >= 0 && r < static_cast<int>(RejectReason::kCount)) rejected_[r]->Increment();
}

void Metrics::RecordSuperseded() { superseded_.Increment(); }

void Metrics::RecordCheckpoint(double seconds, int64_t bytes) {
  checkpoint_duration_.Observe(seconds);
  checkpoint_bytes_.Increment(double(bytes));
}

void Metrics::RecordCheckpointFailure(CheckpointFailure failure) {
  checkpoint_failures_[static_cast<int>(failure)]->Increment();
}

void Metrics::RecordCheckpointCoalesced() { checkpoints_coalesced_.Increment(); }

void Metrics::SetCheckpointRefusedFiles(int files) { checkpoint_refused_files_.Set(files); }

void Metrics::AddCheckpointRefusedFile() { checkpoint_refused_files_.Increment(); }

void Metrics::RecordFinalStateLost(FinalStateLoss loss) {
  const int l = static_cast<int>(loss);
  if (l >= 0 && l < static_cast<int>(FinalStateLoss::kCount)) final_states_lost_[l]->Increment();
}

void Metrics::SetSessionsActive(int sessions) { sessions_active_.Set(sessions); }

void Metrics::SetSlotsTotal(int slots) { slots_total_.Set(slots); }

void Metrics::SetSlotsUsed(int slots) { slots_used_.Set(slots); }

void Metrics::SetEngineHealthy(bool healthy) { engine_healthy_.Set(healthy ? 1 : 0); }

void Metrics::SetDeviceMemory(int64_t used_bytes, int64_t total_bytes) {
  if (device_memory_used_ == nullptr) {
    device_memory_used_ = &device_memory_used_family_.Add({});
    device_memory_total_ = &device_memory_total_family_.Add({});
  }
  device_memory_used_->Set(static_cast<double>(used_bytes));
  device_memory_total_->Set(static_cast<double>(total_bytes));
}

void Metrics::RecordHrrOperations(HrrOp op, int64_t vectors) {
  const int o = static_cast<int>(op);
  if (o >= 0 && o < static_cast<int>(HrrOp::kCount)) hrr_operations_[o]->Increment(static_cast<double>(vectors));
}

void Metrics::SetHrrVectorsStored(int64_t vectors) { hrr_vectors_stored_.Set(static_cast<double>(vectors)); }

void Metrics::SetHrrArena(int64_t bytes, int64_t used_bytes) {
  hrr_arena_bytes_.Set(static_cast<double>(bytes));
  hrr_arena_used_bytes_.Set(static_cast<double>(used_bytes));
}

void Metrics::RecordStage(Stage stage, double seconds, int batch_size) {
  const int s = static_cast<int>(stage);
  if (s >= 0 && s < static_cast<int>(Stage::kCount)) stage_duration_[s]->Observe(seconds);
}

std::string Metrics::Scrape() const {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, registry_->Collect());
  return out.str();
}

}  // namespace fieldbrain::telemetry
