#include "server/brain_directory.h"

#include <algorithm>
#include <utility>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "server/checkpoint/checkpoint_reader.h"

namespace fieldbrain::server {
namespace {

// Token comparison in time independent of where the strings differ (the length is not secret:
// every token has 32 hex digits).
bool TokensEqual(const std::string& a, const std::string& b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

// Secrets (resume tokens) and ids from OpenSSL's CSPRNG; absl::BitGen is not fit for secrets.
absl::StatusOr<std::string> RandomHex(int bytes) {
  std::string raw(static_cast<size_t>(bytes), '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(raw.data()), bytes) != 1) {
    return absl::UnavailableError("the system's random number generator failed; try again");
  }
  return absl::BytesToHexString(raw);
}

absl::Status SlotsExhausted(int capacity) {
  return absl::ResourceExhaustedError(
      absl::StrCat("all ", capacity, " brain slots are in use by live robots; try again later"));
}

}  // namespace

BrainPlace NextPlace(BrainPlace place, BrainEvent event, bool copy) {
  using P = BrainPlace;
  switch (event) {
    case BrainEvent::kReserved:
      return P::kCreating;
    case BrainEvent::kCreated:
    case BrainEvent::kCreatedAlone:
    case BrainEvent::kCreateFailed:
      switch (place) {
        case P::kCreating:
          if (event == BrainEvent::kCreated) return P::kLive;
          return event == BrainEvent::kCreatedAlone ? P::kKept : P::kOnDisk;
        case P::kLive:
        case P::kKept:
        case P::kReleasing:
        case P::kSaving:
        case P::kOnDisk: return place;  // a brain made for a session that is gone
      }
      break;
    case BrainEvent::kResumed:
      switch (place) {
        case P::kKept: return P::kLive;
        case P::kCreating:
        case P::kLive:
        case P::kReleasing:
        case P::kSaving:
        case P::kOnDisk: return place;
      }
      break;
    case BrainEvent::kDetached:
      switch (place) {
        case P::kLive: return P::kKept;
        case P::kCreating:  // its brain is kept once made
        case P::kKept:
        case P::kReleasing:
        case P::kSaving:
        case P::kOnDisk: return place;
      }
      break;
    case BrainEvent::kReleased:
      switch (place) {
        case P::kLive:
        case P::kKept: return copy ? P::kReleasing : P::kOnDisk;
        case P::kCreating: return P::kOnDisk;  // a reservation without its brain yet
        case P::kReleasing:
        case P::kSaving:
        case P::kOnDisk: return place;
      }
      break;
    case BrainEvent::kFreed:
      switch (place) {
        case P::kReleasing: return copy ? P::kSaving : P::kOnDisk;
        case P::kCreating:
        case P::kLive:
        case P::kKept:
        case P::kSaving:
        case P::kOnDisk: return place;
      }
      break;
    case BrainEvent::kSettled:
      switch (place) {
        case P::kSaving: return P::kOnDisk;
        case P::kCreating:
        case P::kLive:  // a periodic copy written: the brain stays in its slot
        case P::kKept:
        case P::kReleasing:
        case P::kOnDisk: return place;
      }
      break;
    case BrainEvent::kGaveWay:
      switch (place) {
        case P::kKept: return P::kOnDisk;
        case P::kCreating:
        case P::kLive:
        case P::kReleasing:
        case P::kSaving:
        case P::kOnDisk: return place;
      }
      break;
  }
  return place;  // not reached: every place and event is named above
}

const char* BrainPlaceName(BrainPlace place) {
  switch (place) {
    case BrainPlace::kCreating: return "being created";
    case BrainPlace::kLive: return "live";
    case BrainPlace::kKept: return "kept";
    case BrainPlace::kReleasing: return "releasing";
    case BrainPlace::kSaving: return "being saved";
    case BrainPlace::kOnDisk: return "on disk";
  }
  return "unknown";
}

BrainDirectory::BrainDirectory(int capacity, absl::Duration idle_keep, bool saves_brains, SlotReleaser releaser,
                               telemetry::Metrics* metrics)
    : capacity_(capacity), idle_keep_(idle_keep), saves_brains_(saves_brains), metrics_(metrics),
      releaser_(std::move(releaser)), slots_(size_t(std::max(capacity, 0))) {
  if (metrics_ != nullptr) metrics_->SetSlotsTotal(capacity_);
}

bool BrainDirectory::HasSession(const Robot& r) {
  switch (r.place) {
    case BrainPlace::kCreating:
    case BrainPlace::kLive:
    case BrainPlace::kKept: return true;
    case BrainPlace::kReleasing:
    case BrainPlace::kSaving:
    case BrainPlace::kOnDisk: return false;
  }
  return false;
}

void BrainDirectory::ApplyLocked(Robot& r, BrainEvent event, bool copy) { r.place = NextPlace(r.place, event, copy); }

absl::StatusOr<SessionGrant> BrainDirectory::Attach(const brain::v1::Hello& hello, StreamId stream, absl::Time now,
                                                    uint64_t on_disk_generation) {
  const brain::v1::RobotProfile& profile = hello.profile();
  absl::MutexLock lock(&mu_);
  auto it = robots_.find(profile.robot_id());
  if (it != robots_.end() && HasSession(it->second)) {
    Robot& r = it->second;
    if (r.attached) {
      return absl::AlreadyExistsError(absl::StrCat(
          "robot_id \"", profile.robot_id(),
          "\" already has a live stream; close it first (one live stream per robot)"));
    }
    const bool kept = r.place == BrainPlace::kKept && now - r.detached_since < idle_keep_;
    if (kept && !hello.fresh()) {
      // A kept brain is only ever taken back with its token, or discarded on purpose (fresh).
      if (hello.resume_token().empty() || !TokensEqual(hello.resume_token(), r.resume_token)) {
        return absl::FailedPreconditionError(absl::StrCat(
            "robot_id \"", profile.robot_id(), "\" has a kept brain (detached ",
            absl::FormatDuration(absl::Trunc(now - r.detached_since, absl::Seconds(1))),
            " ago); send the resume_token of its last Welcome to resume it, or fresh=true to discard it "
            "and start a new brain"));
      }
      if (r.sensor_count != profile.sensor_count() || r.motor_count != profile.motor_count()) {
        return absl::FailedPreconditionError(absl::StrCat(
            "the kept brain of robot_id \"", profile.robot_id(), "\" has ", r.sensor_count, " sensors and ",
            r.motor_count, " motors, this Hello's profile ", profile.sensor_count(), " and ",
            profile.motor_count(), "; send fresh=true to discard it and start a new brain"));
      }
      ApplyLocked(r, BrainEvent::kResumed);
      r.stream = stream;
      r.attached = true;
      ++live_;
      PublishLocked();
      return SessionGrant{r.session_id, r.resume_token, r.seed, r.generation, r.slot, /*resumed=*/true};
    }
    // Expired, or discarded by a fresh Hello: the new brain's generation leaves the old one's
    // copies unwritten.
    EndSessionLocked(r, BrainEvent::kReleased);
  }
  if (slots_held_ >= capacity_ && !EvictOldestKeptLocked()) return SlotsExhausted(capacity_);
  absl::StatusOr<std::string> token = RandomHex(16);
  if (!token.ok()) return token.status();
  uint64_t seed = hello.seed();
  while (seed == 0) seed = absl::Uniform<uint64_t>(bitgen_);
  const uint64_t seen = it != robots_.end() ? it->second.generation : 0;
  return ReserveLocked(hello, stream, seed, std::max(seen, on_disk_generation) + 1, *std::move(token),
                       /*resumed=*/false);
}

absl::StatusOr<SessionGrant> BrainDirectory::AttachRestored(const brain::v1::Hello& hello, StreamId stream,
                                                            uint64_t seed, uint64_t generation) {
  const brain::v1::RobotProfile& profile = hello.profile();
  absl::MutexLock lock(&mu_);
  if (auto it = robots_.find(profile.robot_id()); it != robots_.end() && HasSession(it->second)) {
    return absl::AlreadyExistsError(absl::StrCat("robot_id \"", profile.robot_id(),
                                                 "\" connected again while its checkpoint was read; retry"));
  }
  if (slots_held_ >= capacity_ && !EvictOldestKeptLocked()) return SlotsExhausted(capacity_);
  return ReserveLocked(hello, stream, seed, generation, hello.resume_token(), /*resumed=*/true);
}

absl::StatusOr<SessionGrant> BrainDirectory::ReserveLocked(const brain::v1::Hello& hello, StreamId stream,
                                                           uint64_t seed, uint64_t generation,
                                                           std::string resume_token, bool resumed) {
  absl::StatusOr<std::string> session_id = RandomHex(8);
  if (!session_id.ok()) return session_id.status();
  Robot& r = robots_[hello.profile().robot_id()];
  ApplyLocked(r, BrainEvent::kReserved);
  // A restored brain of an older generation than one seen here stays older: its copies are not
  // written over the newer brain's.
  const uint64_t brain_generation = generation;
  r.generation = std::max(r.generation, generation);
  r.written_cycle.reset();
  r.stream = stream;
  r.attached = true;
  r.slot = -1;
  r.seed = seed;
  r.sensor_count = hello.profile().sensor_count();
  r.motor_count = hello.profile().motor_count();
  r.session_id = absl::StrCat("s-", *session_id);
  r.resume_token = std::move(resume_token);
  r.token_sha256 = CheckpointReader::TokenHash(r.resume_token);
  ++slots_held_;  // the reservation holds a slot until CompleteCreate or AbortCreate
  ++live_;
  PublishLocked();
  return SessionGrant{r.session_id, r.resume_token, r.seed, brain_generation, /*slot=*/-1, resumed};
}

bool BrainDirectory::Knows(const std::string& robot_id) const {
  absl::MutexLock lock(&mu_);
  auto it = robots_.find(robot_id);
  return it != robots_.end() && HasSession(it->second);
}

std::optional<BrainDirectory::KeptBrain> BrainDirectory::Kept(const std::string& robot_id, const std::string& token,
                                                              absl::Time now) const {
  absl::MutexLock lock(&mu_);
  auto it = robots_.find(robot_id);
  if (it == robots_.end() || it->second.place != BrainPlace::kKept) return std::nullopt;
  const Robot& r = it->second;
  return KeptBrain{r.slot, !token.empty() && TokensEqual(token, r.resume_token), now - r.detached_since >= idle_keep_};
}

bool BrainDirectory::DropKept(const std::string& robot_id) {
  absl::MutexLock lock(&mu_);
  auto it = robots_.find(robot_id);
  if (it == robots_.end() || it->second.place != BrainPlace::kKept) return false;
  EndSessionLocked(it->second, BrainEvent::kGaveWay);
  return true;
}

void BrainDirectory::CompleteCreate(const std::string& robot_id, StreamId stream, int slot) {
  absl::MutexLock lock(&mu_);
  auto it = robots_.find(robot_id);
  if (it == robots_.end() || it->second.place != BrainPlace::kCreating || it->second.stream != stream) {
    HandOverSlotLocked(slot);  // nobody owns this brain any more; its reservation is gone
    return;
  }
  Robot& r = it->second;
  r.slot = slot;
  if (slot >= 0 && size_t(slot) < slots_.size()) slots_[size_t(slot)] = Binding{robot_id, r.generation};
  ApplyLocked(r, r.attached ? BrainEvent::kCreated : BrainEvent::kCreatedAlone);
}

void BrainDirectory::AbortCreate(const std::string& robot_id, StreamId stream) {
  absl::MutexLock lock(&mu_);
  auto it = robots_.find(robot_id);
  if (it == robots_.end() || it->second.place != BrainPlace::kCreating || it->second.stream != stream) return;
  Robot& r = it->second;
  if (r.attached) --live_;
  r.attached = false;
  --slots_held_;
  ApplyLocked(r, BrainEvent::kCreateFailed);
  PublishLocked();
}

void BrainDirectory::Detach(const std::string& robot_id, StreamId stream, absl::Time now) {
  absl::MutexLock lock(&mu_);
  auto it = robots_.find(robot_id);
  if (it == robots_.end() || !HasSession(it->second) || it->second.stream != stream || !it->second.attached) return;
  Robot& r = it->second;
  --live_;
  r.attached = false;
  r.detached_since = now;
  ApplyLocked(r, BrainEvent::kDetached);
  PublishLocked();
  if (idle_keep_ <= absl::ZeroDuration() && r.place == BrainPlace::kKept) EndSessionLocked(r, BrainEvent::kReleased);
}

int BrainDirectory::ExpireIdle(absl::Time now) {
  absl::MutexLock lock(&mu_);
  int expired = 0;
  for (auto& [robot_id, r] : robots_) {
    // A detached session still waiting for its brain expires once the brain is made.
    if (r.place == BrainPlace::kKept && now - r.detached_since >= idle_keep_) {
      EndSessionLocked(r, BrainEvent::kReleased);
      ++expired;
    }
  }
  return expired;
}

void BrainDirectory::EndSessionLocked(Robot& r, BrainEvent event) {
  if (r.attached) --live_;
  r.attached = false;
  r.stream = 0;
  r.resume_token.clear();  // the secret is not kept past its session; checkpoints carry its hash
  --slots_held_;  // its slot, or its reservation
  const bool copy = event == BrainEvent::kReleased && saves_brains_;
  if (r.slot >= 0) {
    if (!copy && size_t(r.slot) < slots_.size()) slots_[size_t(r.slot)].reset();
    HandOverSlotLocked(std::exchange(r.slot, -1));
  }
  ApplyLocked(r, event, copy);
  PublishLocked();
}

void BrainDirectory::HandOverSlotLocked(int slot) {
  ++slots_released_;
  releaser_(slot);
}

bool BrainDirectory::EvictOldestKeptLocked() {
  Robot* oldest = nullptr;
  for (auto& [robot_id, r] : robots_) {
    if (r.place != BrainPlace::kKept) continue;
    if (oldest == nullptr || r.detached_since < oldest->detached_since) oldest = &r;
  }
  if (oldest == nullptr) return false;
  EndSessionLocked(*oldest, BrainEvent::kReleased);
  return true;
}

int BrainDirectory::live() const {
  absl::MutexLock lock(&mu_);
  return live_;
}

int BrainDirectory::kept() const {
  absl::MutexLock lock(&mu_);
  int n = 0;
  for (const auto& [id, r] : robots_) n += HasSession(r) && !r.attached ? 1 : 0;
  return n;
}

int BrainDirectory::slots_held() const {
  absl::MutexLock lock(&mu_);
  return slots_held_;
}

int64_t BrainDirectory::slots_released() const {
  absl::MutexLock lock(&mu_);
  return slots_released_;
}

void BrainDirectory::PublishLocked() {
  if (metrics_ == nullptr) return;
  metrics_->SetSessionsActive(live_);
  metrics_->SetSlotsUsed(slots_held_);
}

const BrainDirectory::Binding* BrainDirectory::CurrentBindingLocked(int slot) const {
  if (slot < 0 || size_t(slot) >= slots_.size() || !slots_[size_t(slot)].has_value()) return nullptr;
  const Binding& b = *slots_[size_t(slot)];
  // An old brain of the robot (a newer one was granted since): never written.
  return b.generation == robots_.at(b.robot_id).generation ? &b : nullptr;
}

std::optional<BrainDirectory::SlotBrain> BrainDirectory::BrainIn(int slot) const {
  absl::MutexLock lock(&mu_);
  const Binding* b = CurrentBindingLocked(slot);
  if (b == nullptr) return std::nullopt;
  const Robot& r = robots_.at(b->robot_id);
  return SlotBrain{b->robot_id, b->generation, r.token_sha256, r.written_cycle};
}

bool BrainDirectory::CopiesWanted(int slot) const {
  absl::MutexLock lock(&mu_);
  return CurrentBindingLocked(slot) != nullptr;
}

void BrainDirectory::SlotFreed(int slot, bool copy_on_its_way) {
  absl::MutexLock lock(&mu_);
  if (slot < 0 || size_t(slot) >= slots_.size() || !slots_[size_t(slot)].has_value()) return;
  const Binding b = *std::exchange(slots_[size_t(slot)], std::nullopt);
  Robot& r = robots_.at(b.robot_id);
  if (b.generation == r.generation) ApplyLocked(r, BrainEvent::kFreed, copy_on_its_way);
}

void BrainDirectory::Settled(const std::string& robot_id) {
  absl::MutexLock lock(&mu_);
  if (auto it = robots_.find(robot_id); it != robots_.end()) ApplyLocked(it->second, BrainEvent::kSettled);
}

void BrainDirectory::Written(const std::string& robot_id, uint64_t generation, uint64_t cycle) {
  absl::MutexLock lock(&mu_);
  if (auto it = robots_.find(robot_id); it != robots_.end() && it->second.generation == generation) {
    it->second.written_cycle = cycle;
  }
}

uint64_t BrainDirectory::Generation(const std::string& robot_id) const {
  absl::MutexLock lock(&mu_);
  auto it = robots_.find(robot_id);
  return it == robots_.end() ? 0 : it->second.generation;
}

std::optional<BrainPlace> BrainDirectory::PlaceOf(const std::string& robot_id) const {
  absl::MutexLock lock(&mu_);
  auto it = robots_.find(robot_id);
  if (it == robots_.end()) return std::nullopt;
  return it->second.place;
}

bool BrainDirectory::AwaitSettled(const std::string& robot_id, absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  auto settled = [this, &robot_id]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = robots_.find(robot_id);
    if (it == robots_.end()) return true;
    switch (it->second.place) {
      case BrainPlace::kReleasing:
      case BrainPlace::kSaving: return false;
      case BrainPlace::kCreating:
      case BrainPlace::kLive:
      case BrainPlace::kKept:
      case BrainPlace::kOnDisk: return true;
    }
    return true;
  };
  return mu_.AwaitWithTimeout(absl::Condition(&settled), timeout);
}

}  // namespace fieldbrain::server
