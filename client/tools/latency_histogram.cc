#include "client/tools/latency_histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace fieldbrain::sim {

int LatencyHistogram::BucketOf(uint64_t us) {
  if (us < kLinear) return static_cast<int>(us);
  const int e = std::bit_width(us) - 1;  // us in [2^e, 2^(e+1)), e >= 6
  const int sub = static_cast<int>((us >> (e - kSubBits)) & ((1 << kSubBits) - 1));
  return std::min(kLinear + (e - 6) * (1 << kSubBits) + sub, kBuckets - 1);
}

double LatencyHistogram::BucketMid(int bucket) {
  if (bucket < kLinear) return bucket + 0.5;
  const int e = 6 + (bucket - kLinear) / (1 << kSubBits);
  const int sub = (bucket - kLinear) % (1 << kSubBits);
  const double width = std::ldexp(1.0, e - kSubBits);
  return std::ldexp(1.0, e) + (sub + 0.5) * width;
}

void LatencyHistogram::Record(absl::Duration d) {
  const uint64_t us = static_cast<uint64_t>(std::max<int64_t>(0, absl::ToInt64Microseconds(d)));
  ++buckets_[BucketOf(us)];
  ++count_;
  max_us_ = std::max(max_us_, us);
}

void LatencyHistogram::Merge(const LatencyHistogram& other) {
  for (int i = 0; i < kBuckets; ++i) buckets_[i] += other.buckets_[i];
  count_ += other.count_;
  max_us_ = std::max(max_us_, other.max_us_);
}

absl::Duration LatencyHistogram::Percentile(double q) const {
  if (count_ == 0) return absl::ZeroDuration();
  const double clamped = std::clamp(q, 0.0, 1.0);
  const uint64_t rank = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(clamped * count_)));
  uint64_t seen = 0;
  for (int i = 0; i < kBuckets; ++i) {
    seen += buckets_[i];
    if (seen >= rank) {
      return absl::Microseconds(std::min(BucketMid(i), static_cast<double>(max_us_)));
    }
  }
  return max();
}

}  // namespace fieldbrain::sim
