// SessionTable: robot_id -> session (brain slot, seed, resume token, live stream or detached since).
//
// Sessions outlive connections (DESIGN.md section 6): when a stream ends its brain is kept for
// idle_keep, and a Hello with the same robot_id and the Welcome's resume_token gets it back.
// One live stream per robot_id. The table decides; the engine thread creates and frees brains:
// every slot the table gives up goes to the SlotReleaser exactly once (the table forgets the slot
// in the same step, so a cancelled stream, an idle expiry, an eviction and a replacement can never
// free one slot twice).
//
// Thread-safe. The releaser runs under the table's lock, so it must only hand the slot on (the
// scheduler's inbox) and never call back into the table.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/any_invocable.h"
#include "absl/functional/function_ref.h"
#include "absl/random/random.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "brain/v1/brain.pb.h"
#include "telemetry/metrics.h"

namespace fieldbrain::server {

using StreamId = uint64_t;

// What a Hello was granted. slot < 0: no brain yet; the caller creates one and reports with
// CompleteCreate (or AbortCreate when that failed).
struct SessionGrant {
  std::string session_id;
  std::string resume_token;
  uint64_t seed = 0;
  int slot = -1;
  bool resumed = false;
  bool needs_brain() const { return slot < 0; }
};

class SessionTable {
 public:
  using SlotReleaser = absl::AnyInvocable<void(int slot)>;

  // `capacity`: brain slots in the engine. `metrics` (nullable, not owned) gets
  // brain_sessions_active, brain_slots_capacity and brain_slots_used.
  SessionTable(int capacity, absl::Duration idle_keep, SlotReleaser releaser,
               telemetry::Metrics* metrics = nullptr);
  SessionTable(const SessionTable&) = delete;
  SessionTable& operator=(const SessionTable&) = delete;

  // Claims hello.profile().robot_id() for `stream`.
  //  - ALREADY_EXISTS when another stream is live for this robot_id.
  //  - A kept brain (detached less than idle_keep ago) comes back (resumed) when the Hello carries
  //    its resume token and a profile with the same sensor and motor counts. Without its token, or
  //    with other counts, the Hello is refused with FAILED_PRECONDITION, saying how to resume or
  //    start fresh: a kept brain is never replaced by accident. Hello.fresh discards it and
  //    reserves a new one, as does any Hello once the brain has expired.
  //  - Resume tokens and session ids come from OpenSSL's CSPRNG (RAND_bytes); UNAVAILABLE if it
  //    fails. Tokens are compared in constant time.
  //  - Reserving when every slot is held evicts the brain detached the longest; with none
  //    detached: RESOURCE_EXHAUSTED.
  absl::StatusOr<SessionGrant> Attach(const brain::v1::Hello& hello, StreamId stream,
                                      absl::Time now);
  // A brain that comes back from a checkpoint (the Hello's token matched the file's): a new
  // session with that token and seed, granted as resumed (the caller restores the brain into the
  // reserved slot). ALREADY_EXISTS / FAILED_PRECONDITION / RESOURCE_EXHAUSTED as Attach when the
  // table meanwhile has a session for the id or no slot.
  absl::StatusOr<SessionGrant> AttachRestored(const brain::v1::Hello& hello, StreamId stream, uint64_t seed);
  // Whether the table has a session (live, being created or kept) for `robot_id`.
  bool Knows(const std::string& robot_id) const;
  // `robot_id`'s kept brain (detached, holding a slot; `expired` once idle_keep has passed at
  // `now`, though not reaped yet), and whether `token` is its resume token.
  struct KeptBrain {
    int slot = -1;
    bool token_matches = false;
    bool expired = false;
  };
  std::optional<KeptBrain> Kept(const std::string& robot_id, const std::string& token, absl::Time now) const;
  // Forgets `robot_id`'s kept brain, releasing its slot, when it is still kept: a newer copy of it
  // (another daemon's checkpoint) replaces it. `before_release` runs first, under the table's lock
  // (it must not call back into the table). False when it is not kept (any more).
  bool DropKept(const std::string& robot_id, absl::FunctionRef<void()> before_release);
  // The brain reserved for (robot_id, stream) exists in `slot`. If the session is gone meanwhile,
  // the slot is released.
  void CompleteCreate(const std::string& robot_id, StreamId stream, int slot);
  // Creating the reserved brain failed: forget the reservation.
  void AbortCreate(const std::string& robot_id, StreamId stream);
  // The stream ended. Its brain is kept for idle_keep (released at once when idle_keep is 0).
  // No effect unless `stream` is the robot's current stream; repeating it is harmless.
  void Detach(const std::string& robot_id, StreamId stream, absl::Time now);
  // Releases brains detached for idle_keep or longer; returns how many.
  int ExpireIdle(absl::Time now);

  int live() const;               // sessions with a stream (including ones still being created)
  int kept() const;               // detached sessions whose brain is kept
  int slots_held() const;         // slots owned by sessions plus reservations
  int64_t slots_released() const;  // total handed to the releaser

 private:
  enum class State { kCreating, kLive, kDetached };
  struct Session {
    State state = State::kCreating;
    StreamId stream = 0;
    int slot = -1;
    uint64_t seed = 0;
    uint32_t sensor_count = 0;
    uint32_t motor_count = 0;
    std::string session_id;
    std::string resume_token;
    absl::Time detached_since;
  };

  // Forgets `robot_id`'s session, releasing its slot if it has one.
  void EraseLocked(absl::flat_hash_map<std::string, Session>::iterator it)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Gives a held slot up (slots_held_ drops by one) / hands a slot to the releaser.
  void ReleaseSlotLocked(int slot) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void HandOverSlotLocked(int slot) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Frees a slot for a reservation: evicts the longest-detached session. False when none exists.
  bool EvictOldestDetachedLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void PublishLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int capacity_;
  const absl::Duration idle_keep_;
  telemetry::Metrics* const metrics_;
  mutable absl::Mutex mu_;
  SlotReleaser releaser_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, Session> sessions_ ABSL_GUARDED_BY(mu_);
  int slots_held_ ABSL_GUARDED_BY(mu_) = 0;
  int live_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t slots_released_ ABSL_GUARDED_BY(mu_) = 0;
  absl::BitGen bitgen_ ABSL_GUARDED_BY(mu_);  // seeds only (not secret)
};

}  // namespace fieldbrain::server
