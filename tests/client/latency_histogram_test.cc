#include "client/tools/latency_histogram.h"

#include "gtest/gtest.h"

namespace fieldbrain::sim {
namespace {

double Us(absl::Duration d) { return absl::ToDoubleMicroseconds(d); }

TEST(LatencyHistogramTest, EmptyIsZero) {
  LatencyHistogram h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.Percentile(0.5), absl::ZeroDuration());
}

TEST(LatencyHistogramTest, PercentilesOfAUniformSpreadWithinThreePercent) {
  LatencyHistogram h;
  for (int us = 1; us <= 10000; ++us) h.Record(absl::Microseconds(us));
  EXPECT_EQ(h.count(), 10000u);
  EXPECT_NEAR(Us(h.Percentile(0.5)), 5000, 150);
  EXPECT_NEAR(Us(h.Percentile(0.9)), 9000, 270);
  EXPECT_NEAR(Us(h.Percentile(0.99)), 9900, 300);
  EXPECT_EQ(Us(h.max()), 10000);
  EXPECT_LE(Us(h.Percentile(1.0)), 10000);
}

TEST(LatencyHistogramTest, SmallValuesAreExactToAMicrosecond) {
  LatencyHistogram h;
  for (int i = 0; i < 90; ++i) h.Record(absl::Microseconds(20));
  for (int i = 0; i < 10; ++i) h.Record(absl::Microseconds(45));
  EXPECT_NEAR(Us(h.Percentile(0.5)), 20, 1);
  EXPECT_NEAR(Us(h.Percentile(0.95)), 45, 1);
}

TEST(LatencyHistogramTest, MergeAddsCountsAndKeepsTheMax) {
  LatencyHistogram a, b;
  for (int i = 0; i < 100; ++i) a.Record(absl::Milliseconds(1));
  for (int i = 0; i < 100; ++i) b.Record(absl::Milliseconds(3));
  a.Merge(b);
  EXPECT_EQ(a.count(), 200u);
  EXPECT_NEAR(Us(a.Percentile(0.25)), 1000, 30);
  EXPECT_NEAR(Us(a.Percentile(0.75)), 3000, 90);
  EXPECT_EQ(Us(a.max()), 3000);
}

}  // namespace
}  // namespace fieldbrain::sim
