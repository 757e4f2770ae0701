// Checkpointer: keeps every robot's brain on disk (--checkpoint_dir) so a daemon restart loses
// nothing a robot cannot get back with its resume token.
//
// The engine thread only copies a brain into one of kBuffers snapshot buffers allocated once the
// field shape is known (set_shape, at start): no allocation on the engine thread. Encoding,
// hashing and writing run on the Checkpointer's own writer thread, so a slow disk never delays a
// cycle. The writer keeps at most one pending checkpoint per robot: a newer one replaces an older
// one not yet written (counted, brain_checkpoints_coalesced_total). A periodic copy that finds no
// free buffer is not made; the scheduler asks again after that robot's next cycle. A released
// brain's final copy is never skipped: its slot stays live until a buffer comes free
// (BatchScheduler). A brain that has not run since this daemon last wrote it is not written
// again, and none is written over a file that holds the same session's brain of a later cycle:
// daemons behind one proxy share the directory, and the robot may have moved on. A write that
// fails (a full disk) is counted, logged and retried, unless a newer one arrived meanwhile.
//
// Whose brain a slot holds, of which generation, and where each robot's brain is, the
// BrainDirectory (server/brain_directory.h) decides; the Checkpointer asks it and tells it what
// reached the disk. Generations (checkpoint_format.h) decide which copy of a robot's brain is the
// real one: a copy of a slot whose generation is no longer the robot's is not taken, and a write is
// dropped, just before its rename, when the robot's generation has moved on here (a `fresh`
// meanwhile) or the file holds a newer generation, or the same generation at a later cycle (the
// robot moved to another daemon). The check and the rename run under this daemon's lock and an
// flock(2) on the directory, so neither a Discard here nor another daemon's write on the same host
// can slip between them.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "brain/v1/brain.pb.h"
#include "server/brain_directory.h"
#include "server/checkpoint/checkpoint_format.h"
#include "server/checkpoint/checkpoint_reader.h"
#include "server/checkpoint/snapshot_sink.h"
#include "telemetry/metrics.h"

namespace fieldbrain::server {

class Checkpointer final : public SnapshotSink {
 public:
  // `dir` must exist and be writable (CheckCheckpointDir). `directory` (not owned) outlives this
  // and was made with saves_brains. `metrics` nullable, not owned.
  Checkpointer(std::string dir, BrainDirectory* directory, telemetry::Metrics* metrics);
  // The daemon's field shape, known once the engine is made: allocates the snapshot buffers. Set
  // once, before the first read or Claim.
  void set_shape(FieldShape shape);
  // What is read back from the directory (a Hello's checkpoint, a file's head).
  CheckpointReader& reader() { return reader_; }

  static constexpr int kBuffers = 4;
  ~Checkpointer() override;  // writes what is pending, then stops the writer

  // Any thread. Drops the robot's copy not yet written: a newer copy on disk replaces its kept
  // brain (BrainDirectory::DropKept). The file stays.
  void Forget(const std::string& robot_id);
  // Any thread. Deletes the robot's checkpoint (and its copy not yet written): a `fresh` Hello was
  // granted a new brain, whose generation already leaves every copy of the old one unwritten,
  // even one the writer holds.
  void Discard(const std::string& robot_id);

  // SnapshotSink, engine thread.
  bool Wants(int slot) const override;
  BrainSnapshot* Claim(int slot) override;
  BrainSnapshot* ClaimBefore(int slot, absl::Time deadline) override;
  bool Holds(int slot, uint64_t cycle) const override;
  void Take(int slot, BrainSnapshot* buffer, bool copied) override;
  void Released(int slot) override;

  // Waits until every pending checkpoint is written or has failed (a failed one waiting for its
  // retry counts), or `timeout` passes; false then.
  bool Flush(absl::Duration timeout);


  int64_t written() const;
  int64_t failures() const;
  int64_t coalesced() const;  // copies replaced by a newer one of their robot before being written

  // Testing only: while paused, the writer takes no job (pending copies hold their buffers), so a
  // test can fix the order of events. The destructor writes what is pending regardless.
  void PauseWriterForTesting(bool paused);
  // Testing only: while set, a write waits after its temporary file is written and before its last
  // check and rename (a copy held at the writer); WritesHeldForTesting counts those waiting.
  void HoldWritesBeforeRenameForTesting(bool hold);
  int WritesHeldForTesting() const;

 private:
  struct Job {
    CheckpointHeader header;
    BrainSnapshot* snapshot = nullptr;  // one of buffers_, back to free_ once written
    absl::Time not_before = absl::InfinitePast();  // a failed write's retry time
  };
  static constexpr absl::Duration kRetryAfter = absl::Seconds(1);
  void WriterLoop();
  void WriteOne(Job job);
  BrainSnapshot* ClaimLocked(int slot) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FreeLocked(BrainSnapshot* buffer) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops the robot's queued copy, if any (its buffer back to free_).
  void DropPendingLocked(const std::string& robot_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether `job` may replace the robot's file now (called under mu_ and the directory lock).
  bool StillCurrentLocked(const Job& job) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string dir_;
  telemetry::Metrics* const metrics_;
  CheckpointReader reader_;

  BrainDirectory* const directory_;  // whose brain each slot holds, and where each robot's is

  mutable absl::Mutex mu_;
  std::map<std::string, Job> pending_ ABSL_GUARDED_BY(mu_);  // robot_id -> newest unwritten
  std::vector<std::unique_ptr<BrainSnapshot>> buffers_;       // allocated by set_shape
  std::vector<BrainSnapshot*> free_ ABSL_GUARDED_BY(mu_);
  int writing_ ABSL_GUARDED_BY(mu_) = 0;
  std::string writing_robot_ ABSL_GUARDED_BY(mu_);  // the robot whose file the writer is writing
  uint64_t writing_cycle_ ABSL_GUARDED_BY(mu_) = 0;  // and the cycle of the brain it writes
  bool paused_ ABSL_GUARDED_BY(mu_) = false;
  bool hold_before_rename_ ABSL_GUARDED_BY(mu_) = false;
  int held_before_rename_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int64_t written_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t failures_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t coalesced_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread writer_;
};

}  // namespace fieldbrain::server
