#include "server/checkpoint/checkpointer.h"

#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/checkpoint/checkpoint_files.h"
#include "server/log.h"

namespace fieldbrain::server {

Checkpointer::Checkpointer(std::string dir, BrainDirectory* directory, telemetry::Metrics* metrics)
    : dir_(std::move(dir)), metrics_(metrics), reader_(dir_, metrics), directory_(directory) {
  // Temporary files of killed daemons would otherwise pile up in the shared directory.
  if (const int removed = RemoveStaleTemporaryFiles(dir_); removed > 0) {
    LogInfo("checkpoints: removed ", removed, " temporary files of daemons that are gone");
  }
  if (metrics_ != nullptr) metrics_->SetCheckpointRefusedFiles(CountRefusedFiles(dir_));
  writer_ = std::thread([this] { WriterLoop(); });
}

void Checkpointer::set_shape(FieldShape shape) {
  reader_.set_shape(shape);
  absl::MutexLock lock(&mu_);
  const size_t pattern = size_t(shape.memory()) * size_t(shape.coarse_voxels());
  for (int i = 0; i < kBuffers; ++i) {
    auto buffer = std::make_unique<BrainSnapshot>();
    buffer->shape = shape;
    buffer->field.resize(size_t(shape.floats()));
    buffer->pattern.resize(pattern);
    buffer->memory_patterns.resize(pattern * kMemoryEntries);
    free_.push_back(buffer.get());
    buffers_.push_back(std::move(buffer));
  }
}

void Checkpointer::FreeLocked(BrainSnapshot* buffer) {
  if (buffer != nullptr) free_.push_back(buffer);
}

Checkpointer::~Checkpointer() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  writer_.join();
}

void Checkpointer::DropPendingLocked(const std::string& robot_id) {
  if (auto it = pending_.find(robot_id); it != pending_.end()) {
    FreeLocked(it->second.snapshot);
    pending_.erase(it);
  }
}

void Checkpointer::Forget(const std::string& robot_id) {
  absl::MutexLock lock(&mu_);
  DropPendingLocked(robot_id);
}

void Checkpointer::Discard(const std::string& robot_id) {
  // Under the directory lock and ours, as a write's last check and rename are: a copy of the old
  // brain renamed before this is deleted here, and one checked after finds the generation moved on.
  DirectoryLock dir_lock(dir_);
  absl::MutexLock lock(&mu_);
  DropPendingLocked(robot_id);
  std::remove(CheckpointPath(dir_, robot_id).c_str());
}

bool Checkpointer::Wants(int slot) const {
  return directory_->CopiesWanted(slot);
}

BrainSnapshot* Checkpointer::Claim(int slot) {
  absl::MutexLock lock(&mu_);
  return ClaimLocked(slot);
}

BrainSnapshot* Checkpointer::ClaimBefore(int slot, absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  auto claimable = [this, slot]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    // Unbinding paths that end this wait (Forget, Discard) take mu_, so it is looked at again.
    return !free_.empty() || stopping_ || !directory_->CopiesWanted(slot);
  };
  mu_.AwaitWithDeadline(absl::Condition(&claimable), deadline);
  return ClaimLocked(slot);
}

bool Checkpointer::Holds(int slot, uint64_t cycle) const {
  absl::MutexLock lock(&mu_);
  const std::optional<BrainDirectory::SlotBrain> brain = directory_->BrainIn(slot);
  if (!brain.has_value()) return false;
  if (auto it = pending_.find(brain->robot_id); it != pending_.end()) return it->second.header.cycle == cycle;
  if (writing_robot_ == brain->robot_id) return writing_cycle_ == cycle;
  return brain->written_cycle == cycle;
}

BrainSnapshot* Checkpointer::ClaimLocked(int slot) {
  if (!directory_->CopiesWanted(slot)) return nullptr;
  if (free_.empty()) return nullptr;  // the scheduler asks again after the slot's next cycle
  BrainSnapshot* buffer = free_.back();
  free_.pop_back();
  return buffer;
}

void Checkpointer::Take(int slot, BrainSnapshot* buffer, bool copied) {
  absl::MutexLock lock(&mu_);
  const std::optional<BrainDirectory::SlotBrain> brain = directory_->BrainIn(slot);
  if (!copied || !brain.has_value()) {
    FreeLocked(buffer);
    return;
  }
  const std::string& robot_id = brain->robot_id;
  if (brain->written_cycle == buffer->state.cycle && !pending_.contains(robot_id)) {
    FreeLocked(buffer);  // the file already holds this very brain
    return;
  }
  Job job;
  job.header.shape = buffer->shape;
  job.header.sensor_count = buffer->params.sensor_count;
  job.header.motor_count = buffer->params.motor_count;
  job.header.seed = buffer->params.seed;
  job.header.cycle = buffer->state.cycle;
  job.header.robot_id = robot_id;
  job.header.resume_token_sha256 = brain->token_sha256;
  job.header.generation = brain->generation;
  job.snapshot = buffer;
  if (auto it = pending_.find(robot_id); it != pending_.end()) {
    FreeLocked(it->second.snapshot);  // replaced before it was written
    it->second = std::move(job);
    ++coalesced_;
    if (metrics_ != nullptr) metrics_->RecordCheckpointCoalesced();
  } else {
    pending_.emplace(robot_id, std::move(job));
  }
}

void Checkpointer::Released(int slot) {
  absl::MutexLock lock(&mu_);
  const std::optional<BrainDirectory::SlotBrain> brain = directory_->BrainIn(slot);
  const bool on_its_way =
      brain.has_value() && (pending_.contains(brain->robot_id) || writing_robot_ == brain->robot_id);
  directory_->SlotFreed(slot, on_its_way);
}

void Checkpointer::PauseWriterForTesting(bool paused) {
  absl::MutexLock lock(&mu_);
  paused_ = paused;
}

void Checkpointer::HoldWritesBeforeRenameForTesting(bool hold) {
  absl::MutexLock lock(&mu_);
  hold_before_rename_ = hold;
}

int Checkpointer::WritesHeldForTesting() const {
  absl::MutexLock lock(&mu_);
  return held_before_rename_;
}

bool Checkpointer::Flush(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  // Writes that failed and wait for their retry count as done (failed): a dead disk must not hold
  // a flush for its whole timeout.
  auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (writing_ != 0) return false;
    for (const auto& [robot_id, job] : pending_)
      if (job.not_before == absl::InfinitePast()) return false;
    return true;
  };
  return mu_.AwaitWithTimeout(absl::Condition(&idle), timeout);
}

int64_t Checkpointer::written() const {
  absl::MutexLock lock(&mu_);
  return written_;
}

int64_t Checkpointer::coalesced() const {
  absl::MutexLock lock(&mu_);
  return coalesced_;
}

int64_t Checkpointer::failures() const {
  absl::MutexLock lock(&mu_);
  return failures_;
}

void Checkpointer::WriterLoop() {
  for (;;) {
    Job job;
    {
      absl::MutexLock lock(&mu_);
      // A job whose write failed waits for its retry time; the others go first meanwhile.
      auto due = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        auto first = pending_.end();
        for (auto it = pending_.begin(); it != pending_.end(); ++it)
          if (first == pending_.end() || it->second.not_before < first->second.not_before) first = it;
        return first;
      };
      for (;;) {
        auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
          return stopping_ || (!paused_ && !pending_.empty());
        };
        mu_.Await(absl::Condition(&ready));
        if (pending_.empty()) return;  // stopping, and everything is written
        const absl::Time at = due()->second.not_before;
        if (stopping_ || at <= absl::Now()) break;
        auto changed = [this, &due, at]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
          return stopping_ || paused_ || pending_.empty() || due()->second.not_before < at;
        };
        mu_.AwaitWithDeadline(absl::Condition(&changed), at);
      }
      auto it = due();
      job = std::move(it->second);
      pending_.erase(it);
      ++writing_;
      writing_robot_ = job.header.robot_id;
      writing_cycle_ = job.header.cycle;
    }
    WriteOne(std::move(job));
    absl::MutexLock lock(&mu_);
    writing_robot_.clear();
  }
}

bool Checkpointer::StillCurrentLocked(const Job& job) const {
  const CheckpointHeader& h = job.header;
  // A new brain here since the copy was made (a `fresh`, an expiry): the old brain's copy is not
  // written.
  if (directory_->Generation(h.robot_id) > h.generation) return false;
  // Another daemon's newer brain of the robot, or the same brain run further there (the robot
  // moved on), stays.
  if (std::optional<CheckpointHead> on_disk = reader_.HeadOnDisk(h.robot_id); on_disk.has_value()) {
    if (on_disk->generation > h.generation) return false;
    if (on_disk->generation == h.generation && on_disk->cycle > h.cycle) return false;
  }
  return true;
}

void Checkpointer::WriteOne(Job job) {
  const absl::Time start = absl::Now();
  const std::string robot_id = job.header.robot_id;
  const std::string path = CheckpointPath(dir_, job.header.robot_id);
  const std::string bytes = EncodeCheckpoint(job.header, *job.snapshot);
  absl::StatusOr<std::string> tmp = WriteTemporaryFile(path, bytes);
  absl::Status status = tmp.status();
  bool dropped = false;
  if (tmp.ok()) {
    {
      absl::MutexLock lock(&mu_);
      ++held_before_rename_;
      auto go = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !hold_before_rename_ || stopping_; };
      mu_.Await(absl::Condition(&go));
      --held_before_rename_;
    }
    // The last check and the rename as one step against Discard and other daemons' writes.
    DirectoryLock dir_lock(dir_);
    absl::MutexLock lock(&mu_);
    dropped = !StillCurrentLocked(job);
    status = dropped ? absl::OkStatus() : RenameOver(*tmp, path);
  }
  if (dropped) std::remove(tmp->c_str());
  if (status.ok() && !dropped) status = SyncDirectoryOf(path);
  const absl::Duration took = absl::Now() - start;
  bool retry = false;
  {
    absl::MutexLock lock(&mu_);
    --writing_;
    if (status.ok()) {
      if (!dropped) {
        ++written_;
        directory_->Written(robot_id, job.header.generation, job.header.cycle);
      }
      FreeLocked(job.snapshot);
      job.snapshot = nullptr;
    } else {
      ++failures_;
      // Retried with the next write of this robot, or after a second if none is coming (a full
      // disk may clear), while the other robots' writes go on; never ahead of a newer snapshot.
      retry = !stopping_ && !pending_.contains(job.header.robot_id);
      if (retry) {
        job.not_before = absl::Now() + kRetryAfter;
        pending_.emplace(job.header.robot_id, std::move(job));
      } else {
        FreeLocked(job.snapshot);
        job.snapshot = nullptr;
      }
    }
    if (!pending_.contains(robot_id)) directory_->Settled(robot_id);
  }
  if (dropped) return;
  if (status.ok()) {
    if (metrics_ != nullptr) metrics_->RecordCheckpoint(absl::ToDoubleSeconds(took), int64_t(bytes.size()));
    return;
  }
  if (metrics_ != nullptr) metrics_->RecordCheckpointFailure(telemetry::CheckpointFailure::kWrite);
  LogError("checkpoint of robot_id \"", robot_id, "\" not written: ", status.message(),
           retry ? "; retrying in 1 s" : "");
}

}  // namespace fieldbrain::server
