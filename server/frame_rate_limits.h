// FrameRateLimits: every robot's frame-rate limit (a TokenBucket per robot id), kept across its
// streams: a robot that reconnects finds its bucket as it left it, so reconnecting never refills
// the burst. Buckets that are full again hold nothing a new one would not, and are dropped when
// a shard grows past its bound. Thread-safe; no allocation once a robot has a bucket.
//
// The buckets are spread over kShards shards by a hash of the robot id, each with its own lock:
// every frame of every robot takes one, so one daemon-wide lock would put all gRPC threads in
// one queue.
#pragma once

#include <array>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "server/token_bucket.h"

namespace fieldbrain::server {

class FrameRateLimits {
 public:
  static constexpr int kShards = 16;

  // rate_hz 0: no limit. `max_robots`: robots the table keeps buckets for before it drops full
  // ones (spread over the shards, with some room for an uneven spread).
  FrameRateLimits(double rate_hz, double burst, int max_robots);

  // Takes one frame's token of `robot_id` at `now`; false when it has none (RATE_LIMITED).
  bool TryTake(absl::string_view robot_id, TokenBucket::Clock::time_point now);

  // Buckets held now, over all shards (tests, diagnostics).
  size_t buckets() const;

 private:
  struct Shard {
    mutable absl::Mutex mu;
    absl::flat_hash_map<std::string, TokenBucket> buckets ABSL_GUARDED_BY(mu);
  };

  const double rate_hz_;
  const double burst_;
  const size_t per_shard_;
  std::array<Shard, kShards> shards_;
};

}  // namespace fieldbrain::server
