#include "server/frame_rate_limits.h"

#include <algorithm>

#include "absl/hash/hash.h"

namespace fieldbrain::server {

FrameRateLimits::FrameRateLimits(double rate_hz, double burst, int max_robots)
    : rate_hz_(rate_hz), burst_(burst), per_shard_(size_t(std::max(max_robots, 1)) / kShards + 4) {}

bool FrameRateLimits::TryTake(absl::string_view robot_id, TokenBucket::Clock::time_point now) {
  if (rate_hz_ <= 0) return true;
  Shard& shard = shards_[absl::HashOf(robot_id) % kShards];
  absl::MutexLock lock(&shard.mu);
  auto it = shard.buckets.find(robot_id);
  if (it == shard.buckets.end()) {
    if (shard.buckets.size() >= per_shard_) {
      absl::erase_if(shard.buckets, [now](const auto& entry) { return entry.second.FullAt(now); });
    }
    it = shard.buckets.try_emplace(std::string(robot_id), rate_hz_, burst_).first;
  }
  return it->second.TryTake(now);
}

size_t FrameRateLimits::buckets() const {
  size_t n = 0;
  for (const Shard& shard : shards_) {
    absl::MutexLock lock(&shard.mu);
    n += shard.buckets.size();
  }
  return n;
}

}  // namespace fieldbrain::server
