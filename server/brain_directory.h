// BrainDirectory: the one record of where each robot's brain is and which of its brains is the
// real one. Sessions, slots, checkpoints and Hello admission all ask it; nothing else decides.
//
// A robot's brain is being created (a Hello reserved a slot for it), live (in a slot, its stream
// attached), kept (in a slot, its stream gone for less than idle_keep: the Welcome's resume token
// brings it back), releasing (its slot given back; the engine has not copied its final state
// yet), saving (that copy is on its way to disk) or on disk (nothing of it is in memory; its
// checkpoint, when checkpoints are on, is the newest copy). Every change of place is one event
// through NextPlace, whose switches name every place and every event.
//
// Brains are keyed by (robot_id, generation) (checkpoint_format.h). Every new brain of a robot
// gets a generation above any seen here and the one in its file; a resumed or restored one keeps
// its own. A slot is bound to the (robot, generation) whose brain it holds from the brain's
// creation until the engine frees it; a copy of a slot whose generation is no longer the robot's
// (a `fresh` Hello, an expired brain replaced, a kept copy that gave way to a newer file) is never
// written. That is how a released brain's late final copy can not bring an old brain back.
//
// Sessions outlive connections (DESIGN.md section 6). One live stream per robot_id. A kept brain
// is only taken back with its token, or discarded on purpose (`fresh`); resume tokens and session
// ids come from OpenSSL's CSPRNG and tokens are compared in constant time.
//
// Thread-safe. Every slot the directory gives up goes to the SlotReleaser exactly once, under the
// directory's lock, so the release is queued (the scheduler's inbox) before any reservation that
// counts on the freed slot; the releaser must never call back. Lock order: Checkpointer ->
// BrainDirectory -> scheduler inbox.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/random/random.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "brain/v1/brain.pb.h"
#include "telemetry/metrics.h"

namespace fieldbrain::server {

using StreamId = uint64_t;

enum class BrainPlace { kCreating, kLive, kKept, kReleasing, kSaving, kOnDisk };
enum class BrainEvent {
  kReserved,      // a Hello reserved a slot for a new or restored brain (a new generation or its own)
  kCreated,       // the brain is in its slot and its stream still attached
  kCreatedAlone,  // the brain is in its slot, but its stream ended while it was made
  kCreateFailed,  // making it failed; the reservation is gone
  kResumed,       // a Hello took the kept brain back with its token
  kDetached,      // its stream ended
  kReleased,      // its slot was given back (expiry, eviction, no idle_keep, replaced)
  kFreed,         // the engine freed the slot, its final copy taken (or not wanted)
  kSettled,       // nothing of it is on its way to disk any more
  kGaveWay,       // a newer file replaces the kept copy (the robot ran on at another daemon)
};

// The place after `event`. `copy`: for kReleased, whether a final copy is wanted (checkpoints
// on); for kFreed, whether that copy is on its way to disk. An event that does not apply to a
// place leaves it (a periodic copy settling while the brain stays live, a stale report).
BrainPlace NextPlace(BrainPlace place, BrainEvent event, bool copy);
const char* BrainPlaceName(BrainPlace place);

// What a Hello was granted. slot < 0: no brain yet; the caller creates one and reports with
// CompleteCreate (or AbortCreate when that failed).
struct SessionGrant {
  std::string session_id;
  std::string resume_token;
  uint64_t seed = 0;
  uint64_t generation = 0;
  int slot = -1;
  bool resumed = false;
  bool needs_brain() const { return slot < 0; }
};

class BrainDirectory {
 public:
  using SlotReleaser = absl::AnyInvocable<void(int slot)>;

  // `capacity`: brain slots in the engine. `saves_brains`: a checkpointer copies released brains
  // to disk (their slots pass through releasing and saving). `metrics` (nullable, not owned) gets
  // brain_sessions_active, brain_slots_capacity and brain_slots_used.
  BrainDirectory(int capacity, absl::Duration idle_keep, bool saves_brains, SlotReleaser releaser,
                 telemetry::Metrics* metrics = nullptr);
  BrainDirectory(const BrainDirectory&) = delete;
  BrainDirectory& operator=(const BrainDirectory&) = delete;

  // ---- Sessions (Hello admission, streams, the reaper) ----

  // Claims hello.profile().robot_id() for `stream`.
  //  - ALREADY_EXISTS when another stream is live (or being created) for this robot_id.
  //  - A kept brain (detached less than idle_keep ago) comes back (resumed) when the Hello carries
  //    its resume token and a profile with the same sensor and motor counts. Without its token, or
  //    with other counts, FAILED_PRECONDITION, saying how to resume or start fresh: a kept brain
  //    is never replaced by accident. Hello.fresh discards it and reserves a new one, as does any
  //    Hello once the brain has expired.
  //  - A new brain gets a generation above every one seen and `on_disk_generation` (its file's).
  //  - Reserving when every slot is held evicts the brain detached the longest; with none
  //    detached: RESOURCE_EXHAUSTED. UNAVAILABLE if the random number generator fails.
  absl::StatusOr<SessionGrant> Attach(const brain::v1::Hello& hello, StreamId stream, absl::Time now,
                                      uint64_t on_disk_generation = 0);
  // A brain that comes back from its checkpoint (the Hello's token matched the file's): a new
  // session with that token, seed and generation, granted as resumed (the caller restores it
  // into the reserved slot). ALREADY_EXISTS / RESOURCE_EXHAUSTED as Attach.
  absl::StatusOr<SessionGrant> AttachRestored(const brain::v1::Hello& hello, StreamId stream, uint64_t seed,
                                              uint64_t generation);
  // Whether a session (being created, live or kept) holds the robot.
  bool Knows(const std::string& robot_id) const;
  // `robot_id`'s kept brain (`expired` once idle_keep has passed at `now`, though not reaped
  // yet), and whether `token` is its resume token.
  struct KeptBrain {
    int slot = -1;
    bool token_matches = false;
    bool expired = false;
  };
  std::optional<KeptBrain> Kept(const std::string& robot_id, const std::string& token, absl::Time now) const;
  // Forgets `robot_id`'s kept brain when it is still kept: a newer copy of it (another daemon's
  // checkpoint) replaces it. Its slot is released and no copy of it is written. False when it is
  // not kept (any more).
  bool DropKept(const std::string& robot_id);
  // The brain reserved for (robot_id, stream) exists in `slot`. If the session is gone meanwhile,
  // the slot is released (unbound: nobody's brain).
  void CompleteCreate(const std::string& robot_id, StreamId stream, int slot);
  // Creating the reserved brain failed: forget the reservation.
  void AbortCreate(const std::string& robot_id, StreamId stream);
  // The stream ended. Its brain is kept for idle_keep (released at once when idle_keep is 0).
  // No effect unless `stream` is the robot's current stream; repeating it is harmless.
  void Detach(const std::string& robot_id, StreamId stream, absl::Time now);
  // Releases brains detached for idle_keep or longer; returns how many.
  int ExpireIdle(absl::Time now);

  int live() const;                // sessions with a stream (including ones still being created)
  int kept() const;                // detached sessions whose brain is kept
  int slots_held() const;          // slots owned by sessions plus reservations
  int64_t slots_released() const;  // total handed to the releaser

  // ---- Checkpoints (the Checkpointer, under its own lock) ----

  // The brain a slot holds whose copies are still wanted: the robot's current generation.
  struct SlotBrain {
    std::string robot_id;
    uint64_t generation = 0;
    std::array<uint8_t, 32> token_sha256{};
    // The cycle this daemon last wrote of this brain: an unchanged brain is not written again (a
    // kept copy that expires must not overwrite the file of a daemon the robot moved to).
    std::optional<uint64_t> written_cycle;
  };
  std::optional<SlotBrain> BrainIn(int slot) const;
  // Whether BrainIn(slot) has a brain, without copying its name (the engine thread asks often).
  bool CopiesWanted(int slot) const;
  // The engine freed `slot`; `copy_on_its_way`: its final copy is queued or being written.
  void SlotFreed(int slot, bool copy_on_its_way);
  // The robot has nothing on its way to disk any more (its last write done or dropped).
  void Settled(const std::string& robot_id);
  // A copy of the robot's brain of `generation` at `cycle` reached its file (SlotBrain's
  // written_cycle from then on).
  void Written(const std::string& robot_id, uint64_t generation, uint64_t cycle);
  // The robot's current generation (0 for a robot never seen).
  uint64_t Generation(const std::string& robot_id) const;
  // The robot's place, or nullopt for one never seen.
  std::optional<BrainPlace> PlaceOf(const std::string& robot_id) const;
  // Waits up to `timeout` until the robot's brain is not releasing or saving (its file is then the
  // newest copy, unless a session holds it again); false then. For the Hello of a robot no session
  // holds.
  bool AwaitSettled(const std::string& robot_id, absl::Duration timeout) const;

 private:
  struct Robot {
    BrainPlace place = BrainPlace::kOnDisk;
    uint64_t generation = 0;
    std::optional<uint64_t> written_cycle;  // of the current generation
    // The session, while the place is kCreating, kLive or kKept.
    StreamId stream = 0;
    bool attached = false;  // the stream is live (a brain being created may have lost it)
    int slot = -1;          // -1 while being created
    uint64_t seed = 0;
    uint32_t sensor_count = 0;
    uint32_t motor_count = 0;
    std::string session_id;
    std::string resume_token;
    std::array<uint8_t, 32> token_sha256{};  // what its checkpoints carry
    absl::Time detached_since;
  };
  struct Binding {
    std::string robot_id;
    uint64_t generation = 0;
  };

  static bool HasSession(const Robot& r);
  // The slot's binding when it is of its robot's current generation, else nullptr.
  const Binding* CurrentBindingLocked(int slot) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ApplyLocked(Robot& r, BrainEvent event, bool copy = false) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Reserves a slot for a new session of `robot_id` (evicting if full) and fills in its record.
  absl::StatusOr<SessionGrant> ReserveLocked(const brain::v1::Hello& hello, StreamId stream, uint64_t seed,
                                             uint64_t generation, std::string resume_token, bool resumed)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends the robot's session: its slot is released (or its reservation dropped). `event`:
  // kReleased (its final copy is written when brains are saved) or kGaveWay (never written).
  void EndSessionLocked(Robot& r, BrainEvent event) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void HandOverSlotLocked(int slot) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Frees a slot for a reservation: releases the longest-detached kept brain. False when none.
  bool EvictOldestKeptLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void PublishLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int capacity_;
  const absl::Duration idle_keep_;
  const bool saves_brains_;
  telemetry::Metrics* const metrics_;
  mutable absl::Mutex mu_;
  SlotReleaser releaser_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, Robot> robots_ ABSL_GUARDED_BY(mu_);         // every robot seen since start
  std::vector<std::optional<Binding>> slots_ ABSL_GUARDED_BY(mu_);  // slot -> whose brain of which generation
  int slots_held_ ABSL_GUARDED_BY(mu_) = 0;
  int live_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t slots_released_ ABSL_GUARDED_BY(mu_) = 0;
  absl::BitGen bitgen_ ABSL_GUARDED_BY(mu_);  // seeds only (not secret)
};

}  // namespace fieldbrain::server
