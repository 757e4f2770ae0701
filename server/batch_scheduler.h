// BatchScheduler: the one engine thread. Nothing else touches the Engine: it is made, driven and
// destroyed on this thread (gRPC threads never compute and never touch the GPU).
//
// Other threads talk to it through a mutex-protected inbox: brain create/release commands (run in
// the order they were sent) and frames (one pending frame per slot: latest frame wins, the older
// one is answered SUPERSEDED at once on the submitting thread). Each round the engine thread takes
// the newest pending frame of every robot that has one, waits up to batch_window for more (or until
// max_batch are pending, or every robot with a brain has one pending: no more can come, so a lone
// robot or a fleet in lockstep never waits out the window), answers frames whose relative deadline
// passed with DEADLINE_EXCEEDED (not run), copies the rest straight into the engine's input rows,
// runs RunBatch(n) and delivers each output row to its stream. Commands that arrive while the
// window is open end it early and run before the batch; once it has expired the batch runs first,
// so a steady stream of commands cannot starve the frames. While frames wait, at most four brains
// are made between two batches (a wave of Hellos then delays the robots' frames by four creates,
// not by all of them); releases all run.
//
// Checkpoint copies (the snapshot sink): periodic ones after a batch's answers are delivered, so a
// copy never delays the answers of the batch that made it. A released brain's final state is
// never skipped: when every snapshot buffer is taken, its slot stays live (running nothing) and
// is freed once a buffer comes free; only a full pool that a new brain needs, or a failed engine,
// frees it without its copy (counted in brain_final_states_lost_total).
//
// Jobs (RunOnEngineThread) run work of the scheduler's own on the engine thread (checkpoint
// copies): one job per round, run after the round's batch and never while a batch window is open,
// so a job delays robots' frames by at most its own run time, however many jobs are queued. The
// Memory service does not use them: it has its own thread (server/memory/memory_thread.h), so
// creating and deleting spaces never holds up a batch.
//
// An engine that latches a failure (Engine::health(), e.g. a device error) is reported once: a log
// line, brain_engine_healthy = 0, and the on_engine_failure callback; its batches keep being
// answered INTERNAL_ERROR. The device's memory figures are refreshed about once a second.
//
// Steady state allocates nothing on the engine thread: the pending table and batch scratch are
// sized at start. (The streams' Deliver hands each answer to gRPC, which serializes it.)
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "gpu/engine.h"
#include "server/checkpoint/snapshot_sink.h"
#include "server/engine_choice.h"
#include "server/frame_sink.h"
#include "telemetry/metrics.h"

namespace fieldbrain::server {

struct SchedulerOptions {
  std::string engine_kind = "auto";  // for MakeEngine
  EngineConfig engine;
  std::chrono::microseconds batch_window{200};
  // Test hook, run on the engine thread with the slots of each batch just run (nullable).
  std::function<void(std::span<const int32_t> slots)> batch_observer;
  // Run once, on the engine thread, when the engine latches a failure (nullable). The batch that
  // found it has been answered; the callback must not call back into the scheduler.
  std::function<void(const absl::Status& failure)> on_engine_failure;
  // Checkpoints (nullable, not owned): the engine thread hands it a copy of a robot's brain every
  // snapshot_every_cycles of its cycles (0 = never periodically) and before its slot is released.
  SnapshotSink* snapshot_sink = nullptr;
  uint64_t snapshot_every_cycles = 0;
  // Testing only: the engine fails batch number N + 1 as a device error would (0 = never).
  int64_t fail_engine_after_batches = 0;
};

// Facts about the engine, fixed once it is made.
struct EngineFacts {
  std::string kind;
  EngineReason reason = EngineReason::kCpuRequested;  // why this engine serves
  std::string self_check;                             // what the start-up self-check measured
  std::string device;
  std::string device_description;  // name, capability and memory, for the start-up log
  FieldShape shape;
  int64_t pool_bytes = 0;
  int max_robots = 0;
  int max_batch = 0;
};

// How a job given to RunOnEngineThread runs. kServing: between batches, the engine is up.
// kShuttingDown: the scheduler has drained (or stopped); the job should only answer its caller
// and release what it holds. A job that runs after the engine thread has ended runs on the caller's
// thread, and must then touch no engine or GPU resource.
enum class EngineJobState { kServing, kShuttingDown };
using EngineJob = absl::AnyInvocable<void(EngineJobState state) &&>;

// A frame as handed to Submit; values are copied before Submit returns.
struct QueuedFrame {
  uint64_t seq = 0;
  std::span<const float> values;
  float reward = 0.0f;
  Clock::time_point arrival;
  uint32_t deadline_us = 0;  // 0 = none
};

class BatchScheduler {
 public:
  using CreateDone = absl::AnyInvocable<void(absl::StatusOr<int> slot) &&>;

  // Starts the engine thread, which makes the engine; returns once it is made (or failed).
  // `metrics` (nullable, not owned) gets batch, queue, cycle, rejection and stage figures.
  static absl::StatusOr<std::unique_ptr<BatchScheduler>> Start(SchedulerOptions options,
                                                               telemetry::Metrics* metrics);
  ~BatchScheduler();  // Stop()
  BatchScheduler(const BatchScheduler&) = delete;
  BatchScheduler& operator=(const BatchScheduler&) = delete;

  const EngineFacts& facts() const { return facts_; }

  // A new brain; `done` runs on the engine thread (or at once, with UNAVAILABLE, once draining).
  void CreateBrain(const BrainSpec& spec, CreateDone done);
  // The same, then the brain is overwritten with `snapshot` (a checkpoint): its cycle count and
  // everything it learnt continue. A snapshot the engine refuses frees the slot and fails `done`.
  void CreateBrainFrom(const BrainSpec& spec, std::shared_ptr<const BrainSnapshot> snapshot, CreateDone done);
  // Hands the snapshot sink a copy of every brain it wants (on the engine thread), waiting for the
  // writer to free buffers until `deadline`, and returns when that is done; nothing when the
  // engine thread has ended. For a checkpoint at shutdown, after Drain (so the copies include
  // every frame that was answered). Brains not copied are counted as lost (shutdown deadline,
  // failed engine).
  struct SnapshotCount {
    int copied = 0;
    int lost = 0;
  };
  SnapshotCount SnapshotAll(absl::Time deadline);
  // Queues a copy of `slot`'s brain for the snapshot sink (a robot disconnected); returns at once.
  void SnapshotSlot(int slot);
  // Frees a slot; any frame still pending for it is dropped (answered SHUTTING_DOWN).
  void ReleaseBrain(int slot);
  // Queues the slot's next frame. `sink` gets exactly one Deliver for it. Must not be called
  // while holding a lock that the sink's Deliver takes (the superseded answer comes inline).
  void Submit(int slot, FrameSink* sink, const QueuedFrame& frame);

  // Queues `job` to run exactly once on the engine thread (see the class comment), in the order
  // jobs were given. Jobs given after the engine thread has ended run at once, here, with
  // kShuttingDown.
  void RunOnEngineThread(EngineJob job);

  // Finishes the batch in flight, answers every pending frame SHUTTING_DOWN and from then on
  // answers new frames SHUTTING_DOWN at once; returns when that is done. Idempotent.
  void Drain();
  // Drain, then end the engine thread (which releases every brain). Idempotent.
  void Stop();

  uint64_t brain_cycle(int slot) const;
  int pending() const;  // frames waiting for a batch now
  // False once the engine has latched a failure.
  bool engine_healthy() const { return engine_healthy_.load(std::memory_order_acquire); }
  uint64_t cycles_total() const { return cycles_total_.load(std::memory_order_relaxed); }
  int64_t batches_run() const { return batches_run_.load(std::memory_order_relaxed); }
  int64_t releases() const { return releases_.load(std::memory_order_relaxed); }
  int64_t jobs_run() const { return jobs_run_.load(std::memory_order_relaxed); }  // on the engine thread
  // ReleaseBrain calls the engine found already free (must stay 0: the brain directory releases
  // each slot once).
  int64_t double_releases() const { return double_releases_.load(std::memory_order_relaxed); }

 private:
  struct Pending {
    bool brain = false;  // the slot holds a robot's brain (made, not yet released)
    bool occupied = false;
    FrameSink* sink = nullptr;
    uint64_t seq = 0;
    float reward = 0.0f;
    uint32_t deadline_us = 0;
    Clock::time_point arrival;
    float values[kMaxSensors] = {};
  };
  struct InFlight {  // one row of the batch being run
    FrameSink* sink = nullptr;
    uint64_t seq = 0;
    int32_t slot = -1;
    Clock::time_point arrival;
  };
  struct Command {
    int release_slot = -1;  // >= 0: a release; else a create
    BrainSpec spec;
    CreateDone done;
    std::shared_ptr<const BrainSnapshot> restore;  // a create from a checkpoint
  };

  BatchScheduler(SchedulerOptions options, telemetry::Metrics* metrics);
  void Run(absl::Notification* started, absl::Status* start_status);
  void RunCommands();
  void ReleaseSlot(int slot);
  // Engine thread: a periodic copy of `slot`'s brain into a buffer of the snapshot sink, if it
  // wants one. True when the sink wanted a copy and got none (every buffer taken).
  bool SnapshotToSink(int slot);
  // Engine thread: a brain's final copy (release, shutdown), waiting for a buffer until
  // `deadline` (absl::InfinitePast(): not at all). A failed engine's loss is counted here.
  enum class FinalCopy { kCopied, kNotWanted, kEngineFailed, kNoBuffer };
  FinalCopy CopyFinalState(int slot, absl::Time deadline);
  // Engine thread: frees a slot whose final state is copied (or lost).
  void FreeSlot(int slot);
  // Engine thread: releases whose final copy waited for a buffer, tried again (no waiting).
  void RetryOwedReleases();
  // Engine thread: every owed release done now, waiting for buffers until `deadline`; those still
  // without one are freed without their copy and counted as `loss`.
  void FinishOwedReleases(absl::Time deadline, telemetry::FinalStateLoss loss);
  // Takes the releases queued since this round began out of the inbox and runs them now; false
  // when there were none.
  bool RunQueuedReleases();
  // Waits out the batch window, then moves due frames into the engine's input rows; returns n.
  int GatherBatch();
  void RunAndDeliver(int n);
  // Runs the oldest queued job, unless a batch window is open (its frames go first).
  void RunOneJob();
  // At the end of the engine thread: runs every queued job, then refuses to queue more.
  void RunRemainingJobs();
  // After an engine call failed with `error`: reports a latched failure once; logs the others.
  void NoteEngineError(const char* what, const absl::Status& error);
  void SampleDeviceMemory(Clock::time_point now);
  void AnswerNotRun(const InFlight& f, brain::v1::FrameStatus status, std::string_view detail);
  void DrainPendingLocked(std::vector<InFlight>* out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // absl::Condition predicates (called with mu_ held).
  bool HasWorkLocked() const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  bool BatchDueLocked() const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  bool DrainedLocked() const ABSL_SHARED_LOCKS_REQUIRED(mu_);

  const SchedulerOptions options_;
  telemetry::Metrics* const metrics_;
  EngineFacts facts_;
  std::unique_ptr<Engine> engine_;  // engine thread only
  std::thread thread_;
  std::unique_ptr<std::atomic<uint64_t>[]> cycles_;  // per slot, written by the engine thread
  // Engine thread: a periodic checkpoint found every buffer taken (robots in lockstep reach it
  // together); it is taken after the slot's next cycle instead of a whole period later.
  std::vector<uint8_t> snapshot_owed_;
  // Engine thread: released slots whose final copy waits for a snapshot buffer (reserved once).
  std::vector<int> releases_owed_;
  bool snapshot_all_done_ = false;  // engine thread: every brain was copied at shutdown

  mutable absl::Mutex mu_;
  std::vector<Pending> pending_ ABSL_GUARDED_BY(mu_);
  int pending_count_ ABSL_GUARDED_BY(mu_) = 0;
  int brains_count_ ABSL_GUARDED_BY(mu_) = 0;  // slots whose Pending::brain is set
  int next_slot_ ABSL_GUARDED_BY(mu_) = 0;  // round-robin start when more are pending than fit
  std::vector<Command> commands_ ABSL_GUARDED_BY(mu_);
  std::deque<EngineJob> jobs_ ABSL_GUARDED_BY(mu_);
  bool jobs_closed_ ABSL_GUARDED_BY(mu_) = false;  // the engine thread takes no more jobs
  bool drain_requested_ ABSL_GUARDED_BY(mu_) = false;
  bool drained_ ABSL_GUARDED_BY(mu_) = false;  // new frames and creates are refused
  bool stop_requested_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;  // the engine thread has ended
  absl::Mutex stop_mu_;                         // serializes Stop() callers around join

  // Engine thread only: the end of the current batch window, while one is open.
  bool window_open_ = false;
  absl::Time window_end_;
  // Engine-thread scratch, sized at start.
  std::vector<Command> commands_work_;
  std::vector<int> early_releases_;  // RunQueuedReleases' scratch, reserved once
  std::vector<InFlight> batch_;
  std::vector<InFlight> not_run_;
  std::vector<int32_t> batch_slots_;
  Clock::time_point next_memory_sample_{};

  std::atomic<uint64_t> cycles_total_{0};
  std::atomic<int64_t> batches_run_{0};
  std::atomic<int64_t> releases_{0};
  std::atomic<int64_t> jobs_run_{0};
  std::atomic<int64_t> double_releases_{0};
  std::atomic<bool> engine_healthy_{true};
};

}  // namespace fieldbrain::server
