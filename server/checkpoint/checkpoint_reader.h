// CheckpointReader: what a daemon reads back from --checkpoint_dir: a robot's file, checked and
// decoded, and whether a Hello may resume the brain in it. Reads block on the disk: they run on
// Hello admission's threads (server/hello_admission.h), never on the engine's or gRPC's.
// Thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "brain/v1/brain.pb.h"
#include "server/checkpoint/checkpoint_format.h"
#include "telemetry/metrics.h"

namespace fieldbrain::server {

// A brain found on disk for a Hello, ready to be restored into a new slot.
struct RestorableBrain {
  uint64_t seed = 0;
  uint64_t generation = 0;  // the file's: a resumed brain keeps its generation
  std::shared_ptr<const BrainSnapshot> snapshot;
};

class CheckpointReader {
 public:
  // `metrics` nullable, not owned.
  CheckpointReader(std::string dir, telemetry::Metrics* metrics);
  // The daemon's field shape, known once the engine is made; before the first Load.
  void set_shape(FieldShape shape);

  // The robot's last checkpoint: NotFound when it has none; DATA_LOSS for a damaged file (cut
  // short, corrupt, another robot's), which is set aside as <file>.refused, logged once and
  // counted; FAILED_PRECONDITION naming both sides for a whole brain this daemon cannot run
  // (another field shape, format version or build), which stays where it is (logged, counted).
  absl::StatusOr<DecodedCheckpoint> Load(const std::string& robot_id);

  // What a Hello for a robot the daemon does not hold in memory finds on disk: nothing (a new
  // brain; also when the file was damaged, or when the Hello asks `fresh`, whose file the caller
  // discards once the new session is granted), or a brain to restore when the Hello carries the
  // token the file was written for and the same counts; otherwise FAILED_PRECONDITION saying how
  // to resume or start fresh, as for a brain kept in memory, or naming the file's field shape (or
  // version) and this daemon's when the brain cannot run here.
  absl::StatusOr<std::optional<RestorableBrain>> ForHello(const brain::v1::Hello& hello);

  // The head of the robot's file (unchecked: Load checks), if it has one: its cycle, generation
  // and token, to compare with a brain in memory.
  std::optional<CheckpointHead> HeadOnDisk(const std::string& robot_id) const;
  std::optional<uint64_t> CycleOnDisk(const std::string& robot_id) const;

  // SHA-256 of a resume token, as checkpoints store it; and whether `token` is the one `header`
  // was written for (constant time).
  static std::array<uint8_t, 32> TokenHash(const std::string& token);
  static bool TokenMatches(const CheckpointHeader& header, const std::string& token);

  // Testing only: while set, Load waits before it reads the file (a slow disk under a Hello);
  // ReadsHeldForTesting counts those waiting.
  void HoldReadsForTesting(bool hold);
  int ReadsHeldForTesting() const;

 private:
  const std::string dir_;
  telemetry::Metrics* const metrics_;
  mutable absl::Mutex mu_;
  FieldShape shape_ ABSL_GUARDED_BY(mu_);
  bool hold_reads_ ABSL_GUARDED_BY(mu_) = false;
  int held_reads_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace fieldbrain::server
