#include "server/frame_rate_limits.h"

#include <algorithm>

namespace fieldbrain::server {

FrameRateLimits::FrameRateLimits(double rate_hz, double burst, int max_robots)
    : rate_hz_(rate_hz), burst_(burst), max_robots_(size_t(std::max(max_robots, 1))) {}

bool FrameRateLimits::TryTake(absl::string_view robot_id, TokenBucket::Clock::time_point now) {
  if (rate_hz_ <= 0) return true;
  absl::MutexLock lock(&mu_);
  auto it = buckets_.find(robot_id);
  if (it == buckets_.end()) {
    if (buckets_.size() >= max_robots_) {
      absl::erase_if(buckets_, [now](const auto& entry) { return entry.second.FullAt(now); });
    }
    it = buckets_.try_emplace(std::string(robot_id), rate_hz_, burst_).first;
  }
  return it->second.TryTake(now);
}

}  // namespace fieldbrain::server
