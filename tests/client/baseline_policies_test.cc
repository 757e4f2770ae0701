// The robot-side baselines brain-sim compares the brain with (client/sim): the reactive driver is
// a ceiling worth the name in rooms it was not written for, and the linear actor-critic learns
// what its math says it learns.
#include <cmath>
#include <vector>

#include "client/picarx/picarx_adapter.h"
#include "client/sim/linear_actor_critic.h"
#include "client/sim/reactive_driver.h"
#include "client/sim/simple_policies.h"
#include "client/sim/world.h"
#include "gtest/gtest.h"

namespace fieldbrain::sim {
namespace {

struct Drive {
  double reward_per_tick = 0;
  double blocked_per_1000 = 0;
};

// `policy` in random room `seed` for `ticks` lockstep ticks at 50 Hz, without the obstacle reflex.
Drive DriveIn(LocalPolicy& policy, uint64_t seed, int ticks) {
  World world(WorldConfig{ArenaConfig::Random(seed), RobotConfig{}}, seed);
  std::optional<float> reward;
  Drive d;
  for (int t = 0; t < ticks; ++t) {
    const picarx::RawReading raw = world.Read();
    const Motors m = policy.Act(picarx::NormalizeSensors(raw).values, reward);
    const StepOutcome o = world.Step(picarx::ToHardware(m, raw, false, picarx::ReflexSet{.obstacle = false}), 0.02);
    reward = float(o.reward);
    d.reward_per_tick += o.reward / ticks;
    d.blocked_per_1000 += o.collided ? 1000.0 / ticks : 0.0;
  }
  return d;
}

// Rooms 3001-3008 are the driving behaviour test's, never used to pick the driver's settings
// (rooms 201-216 were).
TEST(ReactiveDriverTest, DrivesOnAndRarelyBumpsInRoomsItWasNotTunedOn) {
  Drive reactive, random;
  for (uint64_t seed = 3001; seed <= 3008; ++seed) {
    ReactiveDriver driver;
    RandomHeldPolicy held(25, seed);
    const Drive r = DriveIn(driver, seed, 6000);
    const Drive h = DriveIn(held, seed, 6000);
    reactive.reward_per_tick += r.reward_per_tick / 8;
    reactive.blocked_per_1000 += r.blocked_per_1000 / 8;
    random.reward_per_tick += h.reward_per_tick / 8;
    random.blocked_per_1000 += h.blocked_per_1000 / 8;
    EXPECT_GT(r.reward_per_tick, 0.02) << "room " << seed << ": it must make progress in every room";
  }
  std::printf("reactive: reward/tick %.4f blocked/1000 %.2f; random-held: %.4f %.2f\n", reactive.reward_per_tick,
              reactive.blocked_per_1000, random.reward_per_tick, random.blocked_per_1000);
  EXPECT_GT(reactive.reward_per_tick, 0.05) << "0.25 m/s flat out earns 0.1 per tick";
  EXPECT_LT(reactive.blocked_per_1000, 8.0);
  EXPECT_LT(reactive.blocked_per_1000, random.blocked_per_1000 / 3);
}

TEST(ReactiveDriverTest, SweepsTheSensorAndBacksOffFromAWallAhead) {
  ReactiveDriver driver;
  std::vector<float> sensors(picarx::kSensorCount, 0.0f);
  sensors[0] = 1.0f;  // 4 m: nothing near
  std::vector<float> pans;
  for (int t = 0; t < 8; ++t) pans.push_back(driver.Act(sensors, std::nullopt)[2]);
  EXPECT_EQ(pans, (std::vector<float>{1, 0, -1, 0, 1, 0, -1, 0})) << "left, ahead, right, ahead";
  sensors[0] = -0.9f;  // 0.2 m, seen ahead on this tick
  const Motors m = driver.Act(sensors, std::nullopt);
  EXPECT_LT(m[0], 0.0f) << "backs off";
}

// The critic's TD(lambda) fixed point under a constant reward: V = r / (1 - gamma).
TEST(LinearActorCriticTest, TheCriticLearnsTheDiscountedReturnOfAConstantReward) {
  ActorCriticConfig c;
  c.critic_rate = 1.0;
  c.actor_rate = 0.0;
  c.gamma = 0.9;
  LinearActorCritic ac(c, 1);
  std::vector<float> sensors(picarx::kSensorCount, 0.5f);
  for (int t = 0; t < 20000; ++t) ac.Act(sensors, 0.2f);
  EXPECT_NEAR(ac.Value(sensors), 0.2 / (1 - 0.9), 0.02);
  EXPECT_NEAR(ac.last_td_error(), 0.0, 1e-3);
}

// A bandit: the reward is the drive command just given. The actor's mean drive climbs towards 1;
// its steer, unrewarded, only wanders (a random walk driven by the exploration noise).
TEST(LinearActorCriticTest, TheActorMovesItsMeanTowardsRewardedCommands) {
  ActorCriticConfig c;
  c.critic_rate = 0.3;
  c.actor_rate = 0.05;
  c.lambda = 0.0;
  c.gamma = 0.0;
  c.noise = 0.3;
  LinearActorCritic ac(c, 7);
  std::vector<float> sensors(picarx::kSensorCount, 0.0f);
  std::optional<float> reward;
  EXPECT_EQ(ac.Mean(sensors)[0], 0.0f);
  for (int t = 0; t < 20000; ++t) reward = ac.Act(sensors, reward)[0];
  EXPECT_GT(ac.Mean(sensors)[0], 0.8f);
  EXPECT_LT(std::abs(ac.Mean(sensors)[1]), 0.5f);
}

TEST(LinearActorCriticTest, RepeatsForASeedExploresDifferentlyForAnotherAndIgnoresNonFiniteInput) {
  auto run = [](uint64_t seed) {
    LinearActorCritic ac(ActorCriticConfig{}, seed);
    std::vector<float> sensors(picarx::kSensorCount, 0.1f);
    sensors[3] = std::nanf("");
    std::vector<float> out;
    std::optional<float> reward;
    for (int t = 0; t < 200; ++t) {
      const Motors m = ac.Act(sensors, reward);
      for (float v : m) {
        EXPECT_TRUE(std::isfinite(v));
        EXPECT_LE(std::abs(v), 1.0f);
      }
      out.insert(out.end(), m.begin(), m.end());
      reward = m[0] > 0 ? 0.1f : -0.1f;
    }
    return out;
  };
  EXPECT_EQ(run(5), run(5));
  EXPECT_NE(run(5), run(6));
}

}  // namespace
}  // namespace fieldbrain::sim
