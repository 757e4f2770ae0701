// A log-linear latency histogram: 1 us buckets below 64 us, then 32 buckets per power of two
// (about 3 % resolution) up to hours. Fixed size, no allocation per sample, mergeable, so every
// robot thread keeps its own and the reporter adds them up. Not thread-safe.
#pragma once

#include <array>
#include <cstdint>

#include "absl/time/time.h"

namespace fieldbrain::sim {

class LatencyHistogram {
 public:
  void Record(absl::Duration d);
  void Merge(const LatencyHistogram& other);
  void Reset() { *this = LatencyHistogram(); }

  uint64_t count() const { return count_; }
  absl::Duration max() const { return absl::Microseconds(max_us_); }
  // The q-quantile (q in [0, 1]) as the midpoint of its bucket, never above max(); zero when
  // empty.
  absl::Duration Percentile(double q) const;

 private:
  static constexpr int kLinear = 64;
  static constexpr int kSubBits = 5;  // 32 buckets per power of two
  static constexpr int kBuckets = kLinear + (40 - 6) * (1 << kSubBits);
  static int BucketOf(uint64_t us);
  static double BucketMid(int bucket);

  std::array<uint64_t, kBuckets> buckets_{};
  uint64_t count_ = 0;
  uint64_t max_us_ = 0;
};

}  // namespace fieldbrain::sim
