// The baselines brain-sim compares the brain with, and the learning-curve figures of a trace.
#include "client/tools/sim_robot.h"

#include <atomic>
#include <vector>

#include "gtest/gtest.h"

namespace fieldbrain::sim {
namespace {

TEST(SimRobotTest, FiguresOfATrace) {
  std::vector<TickOutcome> trace(5000);
  for (int i = 0; i < 1000; i += 10) trace[size_t(i)] = {true, -1.0f};   // first 1000: 100 blocked
  for (int i = 1000; i < 4000; ++i) trace[size_t(i)] = {false, 0.1f};
  for (int i = 1500; i < 2300; ++i) trace[size_t(i)] = {true, -1.0f};   // 800 in a row, 300 after 2000
  for (int i = 4000; i < 5000; ++i) trace[size_t(i)] = {i % 100 == 0, i % 100 == 0 ? -1.0f : 0.05f};
  const TraceFigures f = FiguresOf(trace);
  EXPECT_DOUBLE_EQ(f.blocked_per_1000_first, 100.0);
  EXPECT_DOUBLE_EQ(f.blocked_per_1000_last, 10.0);
  EXPECT_NEAR(f.reward_per_tick_first, -0.1, 1e-9);
  EXPECT_NEAR(f.reward_per_tick_last, (990 * 0.05 - 10) / 1000.0, 1e-6);
  EXPECT_EQ(f.longest_blocked_run, 800);
  EXPECT_EQ(f.longest_blocked_run_after_settle, 300);
}

TEST(SimRobotTest, BaselinesNeedNoServerAndRepeatForASeed) {
  for (Policy p : {Policy::kRandomHeld, Policy::kForward, Policy::kActorCritic, Policy::kReactive}) {
    std::vector<std::vector<TickOutcome>> runs;
    for (int r = 0; r < 2; ++r) {
      SimRobotOptions o;
      o.policy = p;
      SimRobot robot(nullptr, WorldConfig{ArenaConfig::Random(7), RobotConfig{}}, 7, o);
      std::atomic<bool> stop{false};
      robot.RunLockstep(stop, 2000);
      ASSERT_EQ(robot.trace().size(), 2000u);
      const RobotStats stats = robot.TakeWindow();
      EXPECT_EQ(stats.cycles, 2000u);
      EXPECT_EQ(stats.safe_stops, 0u);
      runs.push_back(robot.trace());
    }
    for (size_t i = 0; i < runs[0].size(); ++i) {
      ASSERT_EQ(runs[0][i].blocked, runs[1][i].blocked) << PolicyName(p) << " tick " << i;
      ASSERT_EQ(runs[0][i].reward, runs[1][i].reward);
    }
  }
  // Forward reaches something within 2000 ticks (40 s) in a room of at most 5 m, where the car's
  // own obstacle reflex stops it (the baseline goes through the same adapter as the brain).
  SimRobotOptions forward;
  forward.policy = Policy::kForward;
  SimRobot robot(nullptr, WorldConfig{ArenaConfig::Random(3), RobotConfig{}}, 3, forward);
  std::atomic<bool> stop{false};
  robot.RunLockstep(stop, 2000);
  EXPECT_GT(robot.TakeWindow().reflexes["obstacle"], 100u);
  for (Policy p : {Policy::kBrain, Policy::kRandomHeld, Policy::kForward, Policy::kActorCritic, Policy::kReactive}) {
    EXPECT_EQ(PolicyFromName(PolicyName(p)), p);
  }
  EXPECT_FALSE(PolicyFromName("walk").has_value());
}

// --brain_seed: the same room driven with other draws of a baseline's randomness.
TEST(SimRobotTest, APolicySeedChangesTheDrawNotTheRoom) {
  auto drive = [](std::optional<uint64_t> policy_seed) {
    SimRobotOptions o;
    o.policy = Policy::kRandomHeld;
    o.policy_seed = policy_seed;
    SimRobot robot(nullptr, WorldConfig{ArenaConfig::Random(11), RobotConfig{}}, 11, o);
    std::atomic<bool> stop{false};
    robot.RunLockstep(stop, 1000);
    std::vector<float> rewards;
    for (const TickOutcome& t : robot.trace()) rewards.push_back(t.reward);
    return rewards;
  };
  EXPECT_EQ(drive(std::nullopt), drive(11)) << "unset: the world's seed";
  EXPECT_NE(drive(11), drive(12));
}

TEST(SimRobotTest, WindowsOfATrace) {
  std::vector<TickOutcome> trace(5000, TickOutcome{false, 0.1f});
  for (int i = 0; i < 2000; i += 20) trace[size_t(i)] = {true, -1.0f};  // 100 in the first window
  const std::vector<WindowFigures> w = WindowsOf(trace, 2000);
  ASSERT_EQ(w.size(), 3u) << "two whole windows and the last 1000 ticks";
  EXPECT_DOUBLE_EQ(w[0].blocked_per_1000, 50.0);
  EXPECT_NEAR(w[0].reward_per_tick, (1900 * 0.1 - 100) / 2000.0, 1e-6);
  EXPECT_DOUBLE_EQ(w[1].blocked_per_1000, 0.0);
  EXPECT_NEAR(w[2].reward_per_tick, 0.1, 1e-6);
  EXPECT_TRUE(WindowsOf({}, 2000).empty());
}

}  // namespace
}  // namespace fieldbrain::sim
