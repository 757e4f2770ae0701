// Issue 9's bar for a brain that learns to drive, in lockstep on the CPU engine: 8 held-out seeds
// (3001-3008, never used for tuning; docs/brain.md), 10,000 ticks each, random rooms, the
// PiCar-X adapter without its obstacle reflex. Without the reflex a blocked tick is a collision
// that keeps costing -1, as in the independent world the issue was measured in; with it, a car
// at a wall rests there at no cost, which is a different question (docs/brain.md reports both).
//
// Against random commands held for 0.5 s and the same brain with the reward withheld, measured
// in the same run: blocked ticks in the last 1000 at most half of random-held's and fewer than
// in the brain's own first 1000; reward per tick in the last 1000 above random-held's, and above
// the reward-off brain's for at least 7 of the 8 seeds; no car blocked for more than 250 ticks in
// a row after tick 2000.
#include <algorithm>
#include <cstdio>
#include <random>
#include <vector>

#include "client/picarx/picarx_adapter.h"
#include "client/sim/world.h"
#include "gpu/engine.h"
#include "gtest/gtest.h"

namespace fieldbrain::testing {
namespace {

constexpr uint64_t kFirstSeed = 3001;
constexpr int kRobots = 8;
constexpr int kTicks = 10000;
constexpr int kWindow = 1000;
constexpr int kHoldTicks = 25;  // random-held: a new command every 0.5 s at 50 Hz
constexpr double kTickS = 0.02;

enum class Policy { kBrain, kBrainRewardOff, kRandomHeld };

struct RobotFigures {
  double blocked_first = 0, blocked_last = 0;  // blocked ticks in the first and last 1000
  double reward_first = 0, reward_last = 0;    // mean reward per tick in the same windows
  int longest_after_2000 = 0;                  // longest run of consecutive blocked ticks
};

// The adapter as the robot runs it, but with a range reading that never trips the 2 cm reflex.
picarx::HardwareCommand WithoutObstacleReflex(std::span<const float> motors, picarx::RawReading reading) {
  reading.ultrasonic_m = picarx::kUltrasonicMaxM;
  return picarx::ToHardware(motors, reading, /*safe_stop=*/false);
}

std::vector<RobotFigures> Drive(Policy policy) {
  EngineConfig config;
  config.shape = FieldShape::Small();
  config.max_robots = kRobots;
  config.max_batch = kRobots;
  config.threads = 2;
  auto made = MakeEngine("cpu", config);
  EXPECT_TRUE(made.ok()) << made.status();
  Engine& engine = **made;
  std::vector<int> slots;
  std::vector<sim::World> worlds;
  for (int i = 0; i < kRobots; ++i) {
    const uint64_t seed = kFirstSeed + uint64_t(i);
    BrainSpec spec;
    spec.seed = seed;
    spec.sensor_count = picarx::kSensorCount;
    spec.motor_count = picarx::kMotorCount;
    slots.push_back(*engine.CreateBrain(spec));
    sim::WorldConfig world;
    world.arena = sim::ArenaConfig::Random(seed);
    worlds.emplace_back(world, seed);
  }
  std::mt19937_64 prng(99);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<std::vector<float>> held(kRobots, std::vector<float>(picarx::kMotorCount));
  std::vector<float> reward(kRobots, 0.0f);
  std::vector<int> run(kRobots, 0);
  std::vector<RobotFigures> figures(kRobots);
  std::vector<picarx::RawReading> readings(kRobots);
  for (int t = 0; t < kTicks; ++t) {
    auto in = engine.inputs();
    for (int i = 0; i < kRobots; ++i) {
      readings[i] = worlds[i].Read();
      const picarx::Sensors s = picarx::NormalizeSensors(readings[i]);
      in[i].slot = slots[i];
      in[i].reward = policy == Policy::kBrainRewardOff ? 0.0f : reward[i];
      std::copy(s.values.begin(), s.values.end(), in[i].sensors);
    }
    if (policy != Policy::kRandomHeld) {
      EXPECT_TRUE(engine.RunBatch(kRobots).ok());
    }
    for (int i = 0; i < kRobots; ++i) {
      std::vector<float> motors(picarx::kMotorCount);
      switch (policy) {
        case Policy::kBrain:
        case Policy::kBrainRewardOff:
          std::copy_n(engine.outputs()[i].motors, picarx::kMotorCount, motors.begin());
          break;
        case Policy::kRandomHeld:
          if (t % kHoldTicks == 0)
            for (float& m : held[i]) m = uniform(prng);
          motors = held[i];
          break;
      }
      const sim::StepOutcome out = worlds[i].Step(WithoutObstacleReflex(motors, readings[i]), kTickS);
      reward[i] = float(out.reward);
      RobotFigures& f = figures[i];
      if (t < kWindow) {
        f.blocked_first += out.collided;
        f.reward_first += out.reward / kWindow;
      }
      if (t >= kTicks - kWindow) {
        f.blocked_last += out.collided;
        f.reward_last += out.reward / kWindow;
      }
      run[i] = out.collided ? run[i] + 1 : 0;
      if (t >= 2000) f.longest_after_2000 = std::max(f.longest_after_2000, run[i]);
    }
  }
  return figures;
}

struct Means {
  double blocked_first = 0, blocked_last = 0, reward_first = 0, reward_last = 0;
  int longest_after_2000 = 0;
};

Means Summarise(const char* name, const std::vector<RobotFigures>& figures) {
  Means m;
  for (const RobotFigures& f : figures) {
    m.blocked_first += f.blocked_first / kRobots;
    m.blocked_last += f.blocked_last / kRobots;
    m.reward_first += f.reward_first / kRobots;
    m.reward_last += f.reward_last / kRobots;
    m.longest_after_2000 = std::max(m.longest_after_2000, f.longest_after_2000);
  }
  std::printf("%-18s blocked/1000 %6.1f -> %6.1f   reward/tick %+.4f -> %+.4f   longest blocked after 2000: %d\n",
              name, m.blocked_first, m.blocked_last, m.reward_first, m.reward_last, m.longest_after_2000);
  return m;
}

TEST(DrivingBehaviour, RewardedBrainBeatsRandomHeldAndItsRewardOffSelfOnHeldOutRooms) {
  const std::vector<RobotFigures> brain = Drive(Policy::kBrain);
  const std::vector<RobotFigures> reward_off = Drive(Policy::kBrainRewardOff);
  const std::vector<RobotFigures> random_held = Drive(Policy::kRandomHeld);
  const Means b = Summarise("brain, reward on", brain);
  Summarise("brain, reward off", reward_off);
  const Means rh = Summarise("random-held", random_held);
  int above_reward_off = 0;
  for (int i = 0; i < kRobots; ++i) above_reward_off += brain[i].reward_last > reward_off[i].reward_last ? 1 : 0;
  std::printf("reward on above reward off in %d of %d seeds\n", above_reward_off, kRobots);

  EXPECT_LE(b.blocked_last, 0.5 * rh.blocked_last);
  EXPECT_LT(b.blocked_last, b.blocked_first);
  EXPECT_GT(b.reward_last, rh.reward_last);
  EXPECT_GE(above_reward_off, 7);
  EXPECT_LE(b.longest_after_2000, 250);
}

}  // namespace
}  // namespace fieldbrain::testing
