// TokenBucket: a robot's frame-rate limit. Up to `burst` frames may arrive at once, and on average
// `rate_hz` per second after that; a frame beyond it is refused (the stream answers it
// RATE_LIMITED, not run). A rate of 0 means no limit. Not thread-safe (FrameRateLimits holds
// every robot's, each under its shard's lock).
#pragma once

#include <algorithm>
#include <chrono>

namespace fieldbrain::server {

class TokenBucket {
 public:
  using Clock = std::chrono::steady_clock;

  TokenBucket(double rate_hz, double burst) : rate_hz_(rate_hz), burst_(std::max(burst, 1.0)), tokens_(burst_) {}

  // Whether the bucket has refilled to its burst by `now` (it then holds nothing a new one would
  // not).
  bool FullAt(Clock::time_point now) const {
    if (rate_hz_ <= 0 || last_ == Clock::time_point{}) return true;
    return tokens_ + std::chrono::duration<double>(now - last_).count() * rate_hz_ >= burst_;
  }

  // Takes one frame's token at `now`; false when there is none.
  bool TryTake(Clock::time_point now) {
    if (rate_hz_ <= 0) return true;
    if (last_ != Clock::time_point{}) {
      const double seconds = std::chrono::duration<double>(now - last_).count();
      tokens_ = std::min(burst_, tokens_ + std::max(seconds, 0.0) * rate_hz_);
    }
    last_ = now;
    if (tokens_ < 1.0) return false;
    tokens_ -= 1.0;
    return true;
  }

 private:
  const double rate_hz_;
  const double burst_;
  double tokens_;
  Clock::time_point last_{};
};

}  // namespace fieldbrain::server
