// FrameRateLimits: a robot's frame-rate limit is its own, kept across its streams, and the table
// stays bounded without forgetting a robot that is still over its rate.
#include "server/frame_rate_limits.h"

#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace fieldbrain::server {
namespace {

using Clock = TokenBucket::Clock;
const Clock::time_point kT0 = Clock::time_point() + std::chrono::hours(1);

TEST(FrameRateLimitsTest, ABurstIsTheRobotsOwnAndDoesNotRefillByAskingAgain) {
  FrameRateLimits limits(/*rate_hz=*/10, /*burst=*/3, /*max_robots=*/8);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(limits.TryTake("car", kT0)) << i;
  EXPECT_FALSE(limits.TryTake("car", kT0)) << "over its burst";
  // A reconnect is the same robot id asking again: the bucket is as it was left.
  EXPECT_FALSE(limits.TryTake("car", kT0 + std::chrono::milliseconds(50)));
  EXPECT_TRUE(limits.TryTake("car", kT0 + std::chrono::milliseconds(100))) << "one token per 100 ms";
  EXPECT_TRUE(limits.TryTake("arm", kT0)) << "another robot has its own bucket";
}

TEST(FrameRateLimitsTest, NoRateMeansNoLimitAndNoBuckets) {
  FrameRateLimits limits(0, 1, 8);
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(limits.TryTake("car", kT0));
  EXPECT_EQ(limits.buckets(), 0u);
}

TEST(FrameRateLimitsTest, TheTableDropsFullBucketsButNeverOneStillOverItsRate) {
  constexpr int kMaxRobots = 32;
  FrameRateLimits limits(/*rate_hz=*/1, /*burst=*/1, kMaxRobots);
  ASSERT_TRUE(limits.TryTake("busy", kT0));
  // Many robots pass by, each once, while "busy" has not refilled (1 token per second).
  for (int i = 0; i < 50 * kMaxRobots; ++i) {
    const Clock::time_point t = kT0 + std::chrono::microseconds(i);
    ASSERT_TRUE(limits.TryTake(absl::StrCat("passer-", i), t)) << i;
  }
  EXPECT_FALSE(limits.TryTake("busy", kT0 + std::chrono::milliseconds(500))) << "its bucket was forgotten";
  EXPECT_GT(limits.buckets(), size_t(kMaxRobots)) << "none of the passers is full yet: all are kept";
  // A second later every bucket is full again: robots arriving one per second keep the table at
  // its bound (each shard drops its full buckets when it reaches its share).
  for (int i = 0; i < 4 * kMaxRobots; ++i) {
    limits.TryTake(absl::StrCat("late-", i), kT0 + std::chrono::seconds(10 + i));
  }
  EXPECT_LE(limits.buckets(), size_t(FrameRateLimits::kShards) * (kMaxRobots / FrameRateLimits::kShards + 4));
}

TEST(FrameRateLimitsTest, ThreadsOfManyRobotsEachGetExactlyTheirBurst) {
  FrameRateLimits limits(/*rate_hz=*/0.001, /*burst=*/100, 64);
  std::vector<std::thread> threads;
  std::vector<int> granted(8, 0);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 400; ++i) granted[size_t(t)] += limits.TryTake(absl::StrCat("robot-", t % 4), kT0) ? 1 : 0;
    });
  }
  for (std::thread& th : threads) th.join();
  for (int r = 0; r < 4; ++r) EXPECT_EQ(granted[size_t(r)] + granted[size_t(r + 4)], 100) << "robot-" << r;
}

}  // namespace
}  // namespace fieldbrain::server
