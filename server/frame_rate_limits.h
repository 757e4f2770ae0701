// FrameRateLimits: every robot's frame-rate limit (a TokenBucket per robot id), kept across its
// streams: a robot that reconnects finds its bucket as it left it, so reconnecting never refills
// the burst. Buckets that are full again hold nothing a new one would not, and are dropped when
// the table grows past its bound. Thread-safe; no allocation once a robot has a bucket.
#pragma once

#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "server/token_bucket.h"

namespace fieldbrain::server {

class FrameRateLimits {
 public:
  // rate_hz 0: no limit. `max_robots`: robots the table keeps buckets for before it drops full
  // ones.
  FrameRateLimits(double rate_hz, double burst, int max_robots);

  // Takes one frame's token of `robot_id` at `now`; false when it has none (RATE_LIMITED).
  bool TryTake(absl::string_view robot_id, TokenBucket::Clock::time_point now);

 private:
  const double rate_hz_;
  const double burst_;
  const size_t max_robots_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, TokenBucket> buckets_ ABSL_GUARDED_BY(mu_);
};

}  // namespace fieldbrain::server
