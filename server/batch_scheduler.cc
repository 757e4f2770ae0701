#include "server/batch_scheduler.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/memory/memory.h"
#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "server/log.h"

namespace fieldbrain::server {
namespace {

constexpr char kSupersededDetail[] = "a newer frame of this robot arrived first";
constexpr char kDeadlineDetail[] = "the frame's deadline passed before the brain ran it";
constexpr char kShuttingDownDetail[] = "the server is shutting down";
constexpr char kReleasedDetail[] = "the robot's brain was released";
constexpr char kNoBrainDetail[] = "no brain slot for this stream";

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

constexpr Clock::duration kDeviceMemoryPeriod = std::chrono::seconds(1);
// How long a new brain that needs a slot waits for the writer to take a released brain's final
// copy (one checkpoint write is milliseconds; a disk that takes longer loses that copy).
constexpr absl::Duration kFinalCopyWait = absl::Seconds(2);
constexpr absl::Duration kOwedReleasePoll = absl::Milliseconds(5);
// Brains made between two batches while robots' frames wait (a create is a field's initial values
// or a checkpoint's copy: about a millisecond on the small field, several on the default one).
constexpr int kCreatesPerRound = 4;

}  // namespace

absl::StatusOr<std::unique_ptr<BatchScheduler>> BatchScheduler::Start(
    SchedulerOptions options, telemetry::Metrics* metrics) {
  if (options.engine.max_robots < 1 || options.engine.max_batch < 1 ||
      options.engine.max_batch > options.engine.max_robots) {
    return absl::InvalidArgumentError("scheduler needs 1 <= max_batch <= max_robots");
  }
  auto scheduler = absl::WrapUnique(new BatchScheduler(std::move(options), metrics));
  absl::Notification started;
  absl::Status status;
  scheduler->thread_ = std::thread(&BatchScheduler::Run, scheduler.get(), &started, &status);
  started.WaitForNotification();
  if (!status.ok()) return status;  // the thread has ended; the destructor joins it
  return scheduler;
}

BatchScheduler::BatchScheduler(SchedulerOptions options, telemetry::Metrics* metrics)
    : options_(std::move(options)), metrics_(metrics) {
  const int slots = options_.engine.max_robots;
  const int batch = options_.engine.max_batch;
  cycles_ = std::make_unique<std::atomic<uint64_t>[]>(static_cast<size_t>(slots));
  snapshot_owed_.assign(static_cast<size_t>(slots), 0);
  releases_owed_.reserve(static_cast<size_t>(slots));
  pending_.resize(static_cast<size_t>(slots));
  // Commands come one per Hello or stream end; room for a burst of every slot twice.
  commands_.reserve(static_cast<size_t>(2 * slots + 8));
  commands_work_.reserve(static_cast<size_t>(2 * slots + 8));
  early_releases_.reserve(static_cast<size_t>(2 * slots + 8));
  batch_.resize(static_cast<size_t>(batch));
  not_run_.reserve(static_cast<size_t>(slots));
  batch_slots_.resize(static_cast<size_t>(batch));
}

BatchScheduler::~BatchScheduler() { Stop(); }

void BatchScheduler::CreateBrain(const BrainSpec& spec, CreateDone done) {
  {
    absl::MutexLock lock(&mu_);
    if (!drained_ && !stopped_) {
      commands_.push_back(Command{-1, spec, std::move(done), nullptr});
      return;
    }
  }
  std::move(done)(absl::UnavailableError(kShuttingDownDetail));
}

void BatchScheduler::CreateBrainFrom(const BrainSpec& spec, std::shared_ptr<const BrainSnapshot> snapshot,
                                     CreateDone done) {
  {
    absl::MutexLock lock(&mu_);
    if (!drained_ && !stopped_) {
      commands_.push_back(Command{-1, spec, std::move(done), std::move(snapshot)});
      return;
    }
  }
  std::move(done)(absl::UnavailableError(kShuttingDownDetail));
}

BatchScheduler::SnapshotCount BatchScheduler::SnapshotAll(absl::Time deadline) {
  SnapshotCount count;
  if (options_.snapshot_sink == nullptr) return count;
  absl::Notification done;
  RunOnEngineThread([this, &done, &count, deadline](EngineJobState) {
    // Also once drained (the shutdown case): on the engine thread the engine is still there and
    // runs no batch. A job run on the caller's thread after the engine thread ended does nothing.
    if (std::this_thread::get_id() == thread_.get_id()) {
      // Every brain (those whose release waits for a buffer too), waiting for free buffers where
      // the writer is behind (nothing else runs now), within the deadline.
      for (int slot = 0; slot < facts_.max_robots; ++slot) {
        switch (CopyFinalState(slot, deadline)) {
          case FinalCopy::kCopied: ++count.copied; break;
          case FinalCopy::kNotWanted: break;
          case FinalCopy::kEngineFailed: ++count.lost; break;
          case FinalCopy::kNoBuffer:
            ++count.lost;
            if (metrics_ != nullptr) metrics_->RecordFinalStateLost(telemetry::FinalStateLoss::kShutdownDeadline);
            break;
        }
      }
      snapshot_all_done_ = true;
    }
    done.Notify();
  });
  done.WaitForNotification();
  return count;
}

void BatchScheduler::SnapshotSlot(int slot) {
  if (options_.snapshot_sink == nullptr) return;
  RunOnEngineThread([this, slot](EngineJobState state) {
    if (state == EngineJobState::kServing) SnapshotToSink(slot);
  });
}

void BatchScheduler::ReleaseBrain(int slot) {
  absl::MutexLock lock(&mu_);
  if (stopped_ || slot < 0 || slot >= facts_.max_robots) return;  // stopped: all are freed
  commands_.push_back(Command{slot, {}, nullptr, nullptr});
}

void BatchScheduler::Submit(int slot, FrameSink* sink, const QueuedFrame& frame) {
  InFlight superseded;
  bool refused = false;
  bool bad_slot = false;
  {
    absl::MutexLock lock(&mu_);
    if (slot < 0 || slot >= facts_.max_robots) {
      bad_slot = true;
    } else if (drained_ || stopped_) {
      refused = true;
    } else {
      Pending& p = pending_[slot];
      if (p.occupied) {
        superseded = InFlight{p.sink, p.seq, slot, p.arrival};
      } else {
        p.occupied = true;
        ++pending_count_;
      }
      p.sink = sink;
      p.seq = frame.seq;
      p.reward = frame.reward;
      p.deadline_us = frame.deadline_us;
      p.arrival = frame.arrival;
      const size_t n = std::min(frame.values.size(), static_cast<size_t>(kMaxSensors));
      std::copy_n(frame.values.begin(), n, p.values);
      std::fill(p.values + n, p.values + kMaxSensors, 0.0f);
    }
  }
  const InFlight self{sink, frame.seq, slot, frame.arrival};
  if (bad_slot) {
    FrameAnswer a;
    a.seq = frame.seq;
    a.status = brain::v1::INTERNAL_ERROR;
    a.detail = kNoBrainDetail;
    a.arrival = frame.arrival;
    sink->Deliver(a);
  } else if (refused) {
    if (metrics_ != nullptr) metrics_->RecordRejected(telemetry::RejectReason::kShuttingDown);
    AnswerNotRun(self, brain::v1::SHUTTING_DOWN, kShuttingDownDetail);
  } else if (superseded.sink != nullptr) {
    if (metrics_ != nullptr) metrics_->RecordSuperseded();
    AnswerNotRun(superseded, brain::v1::SUPERSEDED, kSupersededDetail);
  }
}

void BatchScheduler::RunOnEngineThread(EngineJob job) {
  {
    absl::MutexLock lock(&mu_);
    if (!jobs_closed_ && !stopped_) {
      jobs_.push_back(std::move(job));
      return;
    }
  }
  std::move(job)(EngineJobState::kShuttingDown);
}

void BatchScheduler::Drain() {
  absl::MutexLock lock(&mu_);
  if (stopped_) return;
  drain_requested_ = true;
  mu_.Await(absl::Condition(this, &BatchScheduler::DrainedLocked));
}

void BatchScheduler::Stop() {
  absl::MutexLock stop_lock(&stop_mu_);
  {
    absl::MutexLock lock(&mu_);
    stop_requested_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

uint64_t BatchScheduler::brain_cycle(int slot) const {
  if (slot < 0 || slot >= options_.engine.max_robots) return 0;
  return cycles_[slot].load(std::memory_order_relaxed);
}

int BatchScheduler::pending() const {
  absl::MutexLock lock(&mu_);
  return pending_count_;
}

bool BatchScheduler::HasWorkLocked() const {
  return pending_count_ > 0 || !commands_.empty() || !jobs_.empty() ||
         (drain_requested_ && !drained_) || stop_requested_;
}

bool BatchScheduler::BatchDueLocked() const {
  return pending_count_ >= facts_.max_batch || pending_count_ >= brains_count_ || !commands_.empty() ||
         drain_requested_ || stop_requested_;
}

bool BatchScheduler::DrainedLocked() const { return drained_ || stopped_; }

void BatchScheduler::Run(absl::Notification* started, absl::Status* start_status) {
  absl::StatusOr<EngineChoice> engine = ChooseEngine(options_.engine_kind, options_.engine);
  if (!engine.ok()) {
    *start_status = engine.status();
    {
      absl::MutexLock lock(&mu_);
      stopped_ = true;
    }
    started->Notify();
    return;
  }
  engine_ = std::move(engine->engine);
  engine_->set_timing_sink(metrics_);
  engine_->FailAfterBatchesForTesting(options_.fail_engine_after_batches);
  SampleDeviceMemory(Clock::now());
  {
    absl::MutexLock lock(&mu_);  // Submit reads max_robots under the lock
    facts_ = EngineFacts{std::string(engine_->kind()), engine->reason, std::move(engine->self_check),
                         engine_->device_name(),
                         engine_->device_description(), engine_->config().shape, engine_->pool_bytes(),
                         engine_->config().max_robots, engine_->config().max_batch};
  }
  started->Notify();

  for (;;) {
    bool stop = false;
    {
      absl::MutexLock lock(&mu_);
      if (releases_owed_.empty()) {
        mu_.Await(absl::Condition(this, &BatchScheduler::HasWorkLocked));
      } else {  // the writer frees buffers on its own thread: look again soon
        mu_.AwaitWithTimeout(absl::Condition(this, &BatchScheduler::HasWorkLocked), kOwedReleasePoll);
      }
      commands_work_.swap(commands_);
    }
    RunCommands();
    {
      absl::MutexLock lock(&mu_);
      if (drain_requested_ || stop_requested_) {
        DrainPendingLocked(&not_run_);
        drained_ = true;
        stop = stop_requested_;
      }
    }
    for (const InFlight& f : not_run_) {
      if (metrics_ != nullptr) metrics_->RecordRejected(telemetry::RejectReason::kShuttingDown);
      AnswerNotRun(f, brain::v1::SHUTTING_DOWN, kShuttingDownDetail);
    }
    not_run_.clear();
    if (stop) break;
    if (const int n = GatherBatch(); n > 0) RunAndDeliver(n);
    RunOneJob();
    if (!releases_owed_.empty() && !window_open_) RetryOwedReleases();
  }

  {
    absl::MutexLock lock(&mu_);
    commands_work_.swap(commands_);
  }
  RunCommands();  // creates are refused now (drained_), releases still run
  // Brains copied at shutdown are on their way to disk; any other owed release gets what buffers
  // are free now.
  if (snapshot_all_done_) {
    for (int slot : releases_owed_) FreeSlot(slot);
    releases_owed_.clear();
  } else {
    FinishOwedReleases(absl::InfinitePast(), telemetry::FinalStateLoss::kShutdownDeadline);
  }
  RunRemainingJobs();  // while the engine they may hold resources of still exists
  engine_.reset();
  absl::MutexLock lock(&mu_);
  stopped_ = true;
}

bool BatchScheduler::SnapshotToSink(int slot) {
  SnapshotSink* sink = options_.snapshot_sink;
  if (sink == nullptr || !engine_->health().ok()) return false;
  BrainSnapshot* buffer = sink->Claim(slot);
  if (buffer == nullptr) return sink->Wants(slot);
  sink->Take(slot, buffer, engine_->SnapshotInto(slot, *buffer).ok());
  return false;
}

BatchScheduler::FinalCopy BatchScheduler::CopyFinalState(int slot, absl::Time deadline) {
  SnapshotSink* sink = options_.snapshot_sink;
  if (sink == nullptr || !sink->Wants(slot)) return FinalCopy::kNotWanted;
  // A failed engine's brains may be half a cycle on: its file keeps the last whole state.
  bool failed = !engine_->health().ok();
  if (!failed && sink->Holds(slot, brain_cycle(slot))) return FinalCopy::kCopied;  // unchanged since
  if (!failed) {
    BrainSnapshot* buffer = deadline == absl::InfinitePast() ? sink->Claim(slot) : sink->ClaimBefore(slot, deadline);
    if (buffer == nullptr) return sink->Wants(slot) ? FinalCopy::kNoBuffer : FinalCopy::kNotWanted;
    const bool copied = engine_->SnapshotInto(slot, *buffer).ok();
    sink->Take(slot, buffer, copied);
    failed = !copied;
  }
  if (!failed) return FinalCopy::kCopied;
  if (metrics_ != nullptr) metrics_->RecordFinalStateLost(telemetry::FinalStateLoss::kEngineFailed);
  return FinalCopy::kEngineFailed;
}

void BatchScheduler::ReleaseSlot(int slot) {
  {
    absl::MutexLock lock(&mu_);
    Pending& p = pending_[slot];
    if (p.brain) {
      p.brain = false;
      --brains_count_;
    }
    if (p.occupied) {  // the old owner's frame must never run on a later owner's brain
      p.occupied = false;
      --pending_count_;
      not_run_.push_back(InFlight{p.sink, p.seq, slot, p.arrival});
    }
  }
  // The brain's last state, before the slot forgets it (a copy; the writer thread does the rest).
  // With every buffer taken the slot stays live, running nothing, until one comes free.
  if (CopyFinalState(slot, absl::InfinitePast()) == FinalCopy::kNoBuffer) {
    releases_owed_.push_back(slot);
    return;
  }
  FreeSlot(slot);
}

void BatchScheduler::FreeSlot(int slot) {
  snapshot_owed_[static_cast<size_t>(slot)] = 0;
  if (options_.snapshot_sink != nullptr) options_.snapshot_sink->Released(slot);
  if (engine_->ReleaseBrain(slot)) {
    releases_.fetch_add(1, std::memory_order_relaxed);
  } else {
    double_releases_.fetch_add(1, std::memory_order_relaxed);
    LogError("brain slot ", slot, " released twice");
  }
  cycles_[slot].store(0, std::memory_order_relaxed);
}

void BatchScheduler::RetryOwedReleases() {
  auto done = [this](int slot) {
    if (CopyFinalState(slot, absl::InfinitePast()) == FinalCopy::kNoBuffer) return false;
    FreeSlot(slot);
    return true;
  };
  releases_owed_.erase(std::remove_if(releases_owed_.begin(), releases_owed_.end(), done), releases_owed_.end());
}

void BatchScheduler::FinishOwedReleases(absl::Time deadline, telemetry::FinalStateLoss loss) {
  for (int slot : releases_owed_) {
    if (CopyFinalState(slot, deadline) == FinalCopy::kNoBuffer && metrics_ != nullptr) {
      metrics_->RecordFinalStateLost(loss);
    }
    FreeSlot(slot);
  }
  releases_owed_.clear();
}

bool BatchScheduler::RunQueuedReleases() {
  std::vector<int>& slots = early_releases_;
  slots.clear();
  {
    absl::MutexLock lock(&mu_);
    auto is_release = [](const Command& c) { return c.release_slot >= 0; };
    for (const Command& c : commands_)
      if (is_release(c)) slots.push_back(c.release_slot);
    commands_.erase(std::remove_if(commands_.begin(), commands_.end(), is_release), commands_.end());
  }
  for (int slot : slots) ReleaseSlot(slot);
  return !slots.empty();
}

void BatchScheduler::RunCommands() {
  int creates = 0;
  for (size_t i = 0; i < commands_work_.size(); ++i) {
    Command& c = commands_work_[i];
    if (c.release_slot >= 0) {
      ReleaseSlot(c.release_slot);
      continue;
    }
    // A wave of Hellos (robots failing over from a daemon that died) would hold up every robot's
    // frames for all its creates: past kCreatesPerRound, the rest wait for the next round (in their
    // order, ahead of newer commands) while frames are waiting.
    if (creates == kCreatesPerRound) {
      absl::MutexLock lock(&mu_);
      if (pending_count_ > 0 && !drained_) {
        commands_.insert(commands_.begin(), std::make_move_iterator(commands_work_.begin() + ptrdiff_t(i)),
                         std::make_move_iterator(commands_work_.end()));
        break;
      }
    }
    ++creates;
    bool refuse = false;
    {
      absl::MutexLock lock(&mu_);
      refuse = drained_;
    }
    // A brain from a checkpoint is copied straight into its slot (no fresh brain made first).
    auto create = [&] { return c.restore != nullptr ? engine_->CreateBrainFrom(*c.restore) : engine_->CreateBrain(c.spec); };
    absl::StatusOr<int> slot = refuse ? absl::StatusOr<int>(absl::UnavailableError(kShuttingDownDetail)) : create();
    if (!refuse && !slot.ok() && !engine_->health().ok()) NoteEngineError("CreateBrain", slot.status());
    // A full pool may be waiting on a release queued during this round (say, the brain directory
    // handing back a brain whose robot reconnected while it was created): releasing early frees
    // nothing anyone still uses, so run those and try once more. Released slots whose final copy
    // waits for a buffer are finished here (waiting a little for the writer): a new brain needs
    // the slot more than an old one's last cycles since its previous checkpoint.
    if (!slot.ok() && absl::IsResourceExhausted(slot.status())) {
      const bool released = RunQueuedReleases();
      if (!releases_owed_.empty()) {
        FinishOwedReleases(absl::Now() + kFinalCopyWait, telemetry::FinalStateLoss::kNoBuffer);
      }
      if (released || engine_->brains_active() < facts_.max_robots) slot = create();
    }
    if (!slot.ok() && c.restore != nullptr && !absl::IsResourceExhausted(slot.status()) && !refuse) {
      slot = absl::Status(slot.status().code(), absl::StrCat("restoring the checkpoint: ", slot.status().message()));
    }
    if (slot.ok()) {
      cycles_[*slot].store(c.restore != nullptr ? c.restore->state.cycle : 0, std::memory_order_relaxed);
      absl::MutexLock lock(&mu_);
      pending_[*slot].brain = true;
      ++brains_count_;
    }
    std::move(c.done)(std::move(slot));
  }
  commands_work_.clear();
  for (const InFlight& f : not_run_) AnswerNotRun(f, brain::v1::SHUTTING_DOWN, kReleasedDetail);
  not_run_.clear();
}

int BatchScheduler::GatherBatch() {
  const int max_batch = facts_.max_batch;
  const int slots = facts_.max_robots;
  int n = 0;
  {
    absl::MutexLock lock(&mu_);
    if (pending_count_ == 0) {
      window_open_ = false;
      return 0;
    }
    if (!window_open_) {  // the window starts with the first pending frame of a round
      window_open_ = true;
      window_end_ = absl::Now() + absl::FromChrono(options_.batch_window);
    }
    if (options_.batch_window.count() > 0 && pending_count_ < max_batch) {
      mu_.AwaitWithDeadline(absl::Condition(this, &BatchScheduler::BatchDueLocked), window_end_);
    }
    // While the window is open, commands go first (a Hello waits at most one window for its
    // brain) and the window keeps its end. Once it has expired the batch runs and the commands
    // wait one batch: otherwise a steady stream of Hellos and disconnects would keep every robot's
    // frames from running. Running first is safe: a release queued behind this batch has not freed
    // its slot yet, so the slot's pending frame is still its old owner's and runs on that brain.
    if (!commands_.empty() && absl::Now() < window_end_) return 0;
    if (drain_requested_ || stop_requested_) return 0;  // the loop answers them SHUTTING_DOWN
    window_open_ = false;
    const Clock::time_point now = Clock::now();
    std::span<BatchInputRow> inputs = engine_->inputs();
    int s = next_slot_;
    for (int scanned = 0; scanned < slots && n < max_batch; ++scanned) {
      Pending& p = pending_[s];
      const int slot = s;
      s = s + 1 == slots ? 0 : s + 1;
      if (!p.occupied) continue;
      p.occupied = false;
      --pending_count_;
      const InFlight f{p.sink, p.seq, slot, p.arrival};
      if (p.deadline_us != 0 && now - p.arrival > std::chrono::microseconds(p.deadline_us)) {
        not_run_.push_back(f);
        continue;
      }
      BatchInputRow& row = inputs[n];
      row.slot = slot;
      row.reward = p.reward;
      std::copy(std::begin(p.values), std::end(p.values), row.sensors);
      batch_[n++] = f;
    }
    next_slot_ = s;  // whoever did not fit goes first next round
  }
  for (const InFlight& f : not_run_) {
    if (metrics_ != nullptr) metrics_->RecordRejected(telemetry::RejectReason::kDeadlineExceeded);
    AnswerNotRun(f, brain::v1::DEADLINE_EXCEEDED, kDeadlineDetail);
  }
  not_run_.clear();
  return n;
}

void BatchScheduler::RunAndDeliver(int n) {
  const Clock::time_point start = Clock::now();
  if (metrics_ != nullptr) {
    for (int i = 0; i < n; ++i) metrics_->RecordQueueWait(Seconds(start - batch_[i].arrival));
  }
  if (absl::Status status = engine_->RunBatch(n); !status.ok()) {
    for (int i = 0; i < n; ++i) {
      if (metrics_ != nullptr) metrics_->RecordRejected(telemetry::RejectReason::kEngineError);
      AnswerNotRun(batch_[i], brain::v1::INTERNAL_ERROR,
                   std::string_view(status.message().data(), status.message().size()));
    }
    NoteEngineError("RunBatch", status);
    return;
  }
  batches_run_.fetch_add(1, std::memory_order_relaxed);
  cycles_total_.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
  if (metrics_ != nullptr) metrics_->RecordBatch(n);
  std::span<const BatchOutputRow> outputs = engine_->outputs();
  for (int i = 0; i < n; ++i) {
    cycles_[batch_[i].slot].store(outputs[i].cycle, std::memory_order_relaxed);
  }
  if (options_.batch_observer) {
    for (int i = 0; i < n; ++i) batch_slots_[i] = batch_[i].slot;
    options_.batch_observer(std::span<const int32_t>(batch_slots_.data(), static_cast<size_t>(n)));
  }
  for (int i = 0; i < n; ++i) {
    const BatchOutputRow& out = outputs[i];
    FrameAnswer a;
    a.seq = batch_[i].seq;
    a.status = brain::v1::OK;
    a.motors = std::span<const float>(out.motors, kMaxMotors);
    a.confidence = out.confidence;
    a.prediction_error = out.error;
    a.cycle = out.cycle;
    a.arrival = batch_[i].arrival;
    batch_[i].sink->Deliver(a);
  }
  // Periodic checkpoint copies after the answers: robots made together reach their checkpoint
  // cycle together, and their copies must not hold up the batch's motor frames.
  if (options_.snapshot_sink != nullptr && options_.snapshot_every_cycles > 0) {
    for (int i = 0; i < n; ++i) {
      uint8_t& owed = snapshot_owed_[static_cast<size_t>(batch_[i].slot)];
      if (owed || outputs[i].cycle % options_.snapshot_every_cycles == 0) owed = SnapshotToSink(batch_[i].slot);
    }
  }
  SampleDeviceMemory(start);
}

void BatchScheduler::RunOneJob() {
  if (window_open_) return;
  EngineJob job;
  EngineJobState state = EngineJobState::kServing;
  {
    absl::MutexLock lock(&mu_);
    if (jobs_.empty()) return;
    job = std::move(jobs_.front());
    jobs_.pop_front();
    if (drained_) state = EngineJobState::kShuttingDown;
  }
  jobs_run_.fetch_add(1, std::memory_order_relaxed);  // before it runs: its answer implies the count
  std::move(job)(state);
}

void BatchScheduler::RunRemainingJobs() {
  std::deque<EngineJob> jobs;
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      if (jobs_.empty()) {
        jobs_closed_ = true;
        return;
      }
      jobs.swap(jobs_);
    }
    for (EngineJob& job : jobs) std::move(job)(EngineJobState::kShuttingDown);
    jobs.clear();
  }
}

void BatchScheduler::NoteEngineError(const char* what, const absl::Status& error) {
  const absl::Status health = engine_->health();
  if (health.ok()) {  // not latched: this call failed, the engine goes on
    LogError("engine ", what, " failed: ", error.ToString());
    return;
  }
  if (!engine_healthy_.exchange(false, std::memory_order_acq_rel)) return;  // reported already
  LogError("engine failed and refuses every batch from now on: ", health.ToString());
  if (metrics_ != nullptr) metrics_->SetEngineHealthy(false);
  if (options_.on_engine_failure) options_.on_engine_failure(health);
}

void BatchScheduler::SampleDeviceMemory(Clock::time_point now) {
  if (metrics_ == nullptr || now < next_memory_sample_) return;
  next_memory_sample_ = now + kDeviceMemoryPeriod;
  if (const std::optional<DeviceMemory> memory = engine_->device_memory(); memory.has_value()) {
    metrics_->SetDeviceMemory(memory->used_bytes, memory->total_bytes);
  }
}

void BatchScheduler::AnswerNotRun(const InFlight& f, brain::v1::FrameStatus status,
                                  std::string_view detail) {
  FrameAnswer a;
  a.seq = f.seq;
  a.status = status;
  a.detail = detail;
  a.cycle = brain_cycle(f.slot);
  a.arrival = f.arrival;
  f.sink->Deliver(a);
}

void BatchScheduler::DrainPendingLocked(std::vector<InFlight>* out) {
  for (int s = 0; s < facts_.max_robots && pending_count_ > 0; ++s) {
    Pending& p = pending_[s];
    if (!p.occupied) continue;
    p.occupied = false;
    --pending_count_;
    out->push_back(InFlight{p.sink, p.seq, s, p.arrival});
  }
}

}  // namespace fieldbrain::server
