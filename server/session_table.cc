#include "server/session_table.h"

#include <utility>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

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

}  // namespace

SessionTable::SessionTable(int capacity, absl::Duration idle_keep, SlotReleaser releaser,
                           telemetry::Metrics* metrics)
    : capacity_(capacity), idle_keep_(idle_keep), metrics_(metrics),
      releaser_(std::move(releaser)) {
  if (metrics_ != nullptr) metrics_->SetSlotsTotal(capacity_);
}

absl::StatusOr<SessionGrant> SessionTable::Attach(const brain::v1::Hello& hello, StreamId stream,
                                                  absl::Time now) {
  const brain::v1::RobotProfile& profile = hello.profile();
  absl::MutexLock lock(&mu_);
  auto it = sessions_.find(profile.robot_id());
  if (it != sessions_.end()) {
    Session& s = it->second;
    if (s.state != State::kDetached) {
      return absl::AlreadyExistsError(absl::StrCat(
          "robot_id \"", profile.robot_id(),
          "\" already has a live stream; close it first (one live stream per robot)"));
    }
    const bool kept = s.slot >= 0 && now - s.detached_since < idle_keep_;
    if (kept && !hello.fresh()) {
      // A kept brain is only ever taken back with its token, or discarded on purpose (fresh).
      if (hello.resume_token().empty() || !TokensEqual(hello.resume_token(), s.resume_token)) {
        return absl::FailedPreconditionError(absl::StrCat(
            "robot_id \"", profile.robot_id(), "\" has a kept brain (detached ",
            absl::FormatDuration(absl::Trunc(now - s.detached_since, absl::Seconds(1))),
            " ago); send the resume_token of its last Welcome to resume it, or fresh=true to discard it "
            "and start a new brain"));
      }
      if (s.sensor_count != profile.sensor_count() || s.motor_count != profile.motor_count()) {
        return absl::FailedPreconditionError(absl::StrCat(
            "the kept brain of robot_id \"", profile.robot_id(), "\" has ", s.sensor_count, " sensors and ",
            s.motor_count, " motors, this Hello's profile ", profile.sensor_count(), " and ",
            profile.motor_count(), "; send fresh=true to discard it and start a new brain"));
      }
      s.state = State::kLive;
      s.stream = stream;
      ++live_;
      PublishLocked();
      return SessionGrant{s.session_id, s.resume_token, s.seed, s.slot, /*resumed=*/true};
    }
    EraseLocked(it);  // expired, or discarded by a fresh Hello
  }
  if (slots_held_ >= capacity_ && !EvictOldestDetachedLocked()) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "all ", capacity_, " brain slots are in use by live robots; try again later"));
  }
  Session s;
  s.state = State::kCreating;
  s.stream = stream;
  s.seed = hello.seed();
  while (s.seed == 0) s.seed = absl::Uniform<uint64_t>(bitgen_);
  s.sensor_count = profile.sensor_count();
  s.motor_count = profile.motor_count();
  absl::StatusOr<std::string> session_id = RandomHex(8);
  absl::StatusOr<std::string> token = RandomHex(16);
  if (!session_id.ok() || !token.ok()) return session_id.ok() ? token.status() : session_id.status();
  s.session_id = absl::StrCat("s-", *session_id);
  s.resume_token = *std::move(token);
  SessionGrant grant{s.session_id, s.resume_token, s.seed, /*slot=*/-1, /*resumed=*/false};
  sessions_.emplace(profile.robot_id(), std::move(s));
  ++slots_held_;  // the reservation holds a slot until CompleteCreate or AbortCreate
  ++live_;
  PublishLocked();
  return grant;
}

absl::StatusOr<SessionGrant> SessionTable::AttachRestored(const brain::v1::Hello& hello, StreamId stream,
                                                          uint64_t seed) {
  const brain::v1::RobotProfile& profile = hello.profile();
  absl::MutexLock lock(&mu_);
  if (sessions_.contains(profile.robot_id())) {
    return absl::AlreadyExistsError(absl::StrCat("robot_id \"", profile.robot_id(),
                                                 "\" connected again while its checkpoint was read; retry"));
  }
  if (slots_held_ >= capacity_ && !EvictOldestDetachedLocked()) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "all ", capacity_, " brain slots are in use by live robots; try again later"));
  }
  absl::StatusOr<std::string> session_id = RandomHex(8);
  if (!session_id.ok()) return session_id.status();
  Session s;
  s.state = State::kCreating;
  s.stream = stream;
  s.seed = seed;
  s.sensor_count = profile.sensor_count();
  s.motor_count = profile.motor_count();
  s.session_id = absl::StrCat("s-", *session_id);
  s.resume_token = hello.resume_token();
  SessionGrant grant{s.session_id, s.resume_token, s.seed, /*slot=*/-1, /*resumed=*/true};
  sessions_.emplace(profile.robot_id(), std::move(s));
  ++slots_held_;
  ++live_;
  PublishLocked();
  return grant;
}

bool SessionTable::Knows(const std::string& robot_id) const {
  absl::MutexLock lock(&mu_);
  return sessions_.contains(robot_id);
}

std::optional<SessionTable::KeptBrain> SessionTable::Kept(const std::string& robot_id, const std::string& token,
                                                         absl::Time now) const {
  absl::MutexLock lock(&mu_);
  auto it = sessions_.find(robot_id);
  if (it == sessions_.end() || it->second.state != State::kDetached || it->second.slot < 0) return std::nullopt;
  const Session& s = it->second;
  return KeptBrain{s.slot, !token.empty() && TokensEqual(token, s.resume_token), now - s.detached_since >= idle_keep_};
}

bool SessionTable::DropKept(const std::string& robot_id, absl::FunctionRef<void()> before_release) {
  absl::MutexLock lock(&mu_);
  auto it = sessions_.find(robot_id);
  if (it == sessions_.end() || it->second.state != State::kDetached || it->second.slot < 0) return false;
  before_release();
  EraseLocked(it);
  return true;
}

void SessionTable::CompleteCreate(const std::string& robot_id, StreamId stream, int slot) {
  absl::MutexLock lock(&mu_);
  auto it = sessions_.find(robot_id);
  if (it == sessions_.end() || it->second.stream != stream || it->second.slot >= 0) {
    HandOverSlotLocked(slot);  // nobody owns this brain any more; its reservation is gone
    return;
  }
  it->second.slot = slot;
  if (it->second.state == State::kCreating) it->second.state = State::kLive;
}

void SessionTable::AbortCreate(const std::string& robot_id, StreamId stream) {
  absl::MutexLock lock(&mu_);
  auto it = sessions_.find(robot_id);
  if (it == sessions_.end() || it->second.stream != stream || it->second.slot >= 0) return;
  EraseLocked(it);
}

void SessionTable::Detach(const std::string& robot_id, StreamId stream, absl::Time now) {
  absl::MutexLock lock(&mu_);
  auto it = sessions_.find(robot_id);
  if (it == sessions_.end() || it->second.stream != stream ||
      it->second.state == State::kDetached) {
    return;
  }
  --live_;
  PublishLocked();
  it->second.state = State::kDetached;
  it->second.detached_since = now;
  if (idle_keep_ <= absl::ZeroDuration() && it->second.slot >= 0) EraseLocked(it);
}

int SessionTable::ExpireIdle(absl::Time now) {
  absl::MutexLock lock(&mu_);
  int expired = 0;
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    auto next = std::next(it);
    const Session& s = it->second;
    // A detached session still waiting for its brain (slot < 0) expires when the brain arrives.
    if (s.state == State::kDetached && s.slot >= 0 && now - s.detached_since >= idle_keep_) {
      EraseLocked(it);
      ++expired;
    }
    it = next;
  }
  return expired;
}

int SessionTable::live() const {
  absl::MutexLock lock(&mu_);
  return live_;
}

int SessionTable::kept() const {
  absl::MutexLock lock(&mu_);
  int n = 0;
  for (const auto& [id, s] : sessions_) n += s.state == State::kDetached ? 1 : 0;
  return n;
}

int SessionTable::slots_held() const {
  absl::MutexLock lock(&mu_);
  return slots_held_;
}

int64_t SessionTable::slots_released() const {
  absl::MutexLock lock(&mu_);
  return slots_released_;
}

void SessionTable::EraseLocked(absl::flat_hash_map<std::string, Session>::iterator it) {
  if (it->second.state != State::kDetached) --live_;
  if (it->second.slot >= 0) {
    ReleaseSlotLocked(it->second.slot);
  } else {
    --slots_held_;  // a reservation without its brain yet
  }
  sessions_.erase(it);
  PublishLocked();
}

void SessionTable::ReleaseSlotLocked(int slot) {
  --slots_held_;
  HandOverSlotLocked(slot);
}

void SessionTable::HandOverSlotLocked(int slot) {
  ++slots_released_;
  releaser_(slot);
}

bool SessionTable::EvictOldestDetachedLocked() {
  auto oldest = sessions_.end();
  for (auto it = sessions_.begin(); it != sessions_.end(); ++it) {
    const Session& s = it->second;
    if (s.state != State::kDetached || s.slot < 0) continue;
    if (oldest == sessions_.end() || s.detached_since < oldest->second.detached_since) oldest = it;
  }
  if (oldest == sessions_.end()) return false;
  EraseLocked(oldest);
  return true;
}

void SessionTable::PublishLocked() {
  if (metrics_ == nullptr) return;
  metrics_->SetSessionsActive(live_);
  metrics_->SetSlotsUsed(slots_held_);
}

}  // namespace fieldbrain::server
