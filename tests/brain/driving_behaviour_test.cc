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
//
// Random-held does not learn, but one draw of its commands is a poor estimate of what it scores:
// over these 8 rooms its last-1000 blocked figure ranges from 3 to 77 across draws (docs/brain.md).
// The brain is held to random-held's expectation, the mean of kRandomHeldDraws draws; they are
// cheap (the engine is built but never run for them).
#include <algorithm>
#include <cstdio>
#include <random>
#include <vector>

#include "client/picarx/picarx_adapter.h"
#include "client/sim/world.h"
#include "client/tools/sim_robot.h"
#include "gpu/engine.h"
#include "gtest/gtest.h"

namespace fieldbrain::testing {
namespace {

constexpr uint64_t kFirstSeed = 3001;
constexpr int kRobots = 8;
constexpr int kTicks = 10000;
constexpr double kTickS = 0.02;
constexpr int kRandomHeldDraws = 16;

enum class Driver { kBrain, kBrainRewardOff, kRandomHeld };

// The adapter as the robot runs it, without the 2 cm obstacle reflex (brain-sim --reflex=off).
picarx::HardwareCommand WithoutObstacleReflex(std::span<const float> motors, const picarx::RawReading& reading) {
  return picarx::ToHardware(motors, reading, /*safe_stop=*/false, picarx::ReflexSet{.obstacle = false});
}

// Each robot's learning-curve figures (brain-sim's: first and last 1000 ticks, settle 2000).
// `draw` picks random-held's commands.
std::vector<sim::TraceFigures> Drive(Driver driver, uint64_t draw = 0) {
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
  std::mt19937_64 prng(99 + draw);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<std::vector<float>> held(kRobots, std::vector<float>(picarx::kMotorCount));
  std::vector<float> reward(kRobots, 0.0f);
  std::vector<std::vector<sim::TickOutcome>> traces(kRobots);
  std::vector<picarx::RawReading> readings(kRobots);
  for (int t = 0; t < kTicks; ++t) {
    auto in = engine.inputs();
    for (int i = 0; i < kRobots; ++i) {
      readings[i] = worlds[i].Read();
      const picarx::Sensors s = picarx::NormalizeSensors(readings[i]);
      in[i].slot = slots[i];
      in[i].reward = driver == Driver::kBrainRewardOff ? 0.0f : reward[i];
      std::copy(s.values.begin(), s.values.end(), in[i].sensors);
    }
    if (driver != Driver::kRandomHeld) {
      EXPECT_TRUE(engine.RunBatch(kRobots).ok());
    }
    for (int i = 0; i < kRobots; ++i) {
      std::vector<float> motors(picarx::kMotorCount);
      switch (driver) {
        case Driver::kBrain:
        case Driver::kBrainRewardOff:
          std::copy_n(engine.outputs()[i].motors, picarx::kMotorCount, motors.begin());
          break;
        case Driver::kRandomHeld:
          if (t % sim::kRandomHoldTicks == 0)
            for (float& m : held[i]) m = uniform(prng);
          motors = held[i];
          break;
      }
      const sim::StepOutcome out = worlds[i].Step(WithoutObstacleReflex(motors, readings[i]), kTickS);
      reward[i] = float(out.reward);
      traces[i].push_back(sim::TickOutcome{out.collided, reward[i]});
    }
  }
  std::vector<sim::TraceFigures> figures;
  for (const auto& trace : traces) figures.push_back(sim::FiguresOf(trace));
  return figures;
}

struct Means {
  double blocked_first = 0, blocked_last = 0, reward_first = 0, reward_last = 0;
  int64_t longest_after_2000 = 0;
};

// Means over every robot (of every draw) in `figures`.
Means Summarise(const char* name, const std::vector<sim::TraceFigures>& figures) {
  Means m;
  const double n = double(figures.size());
  for (const sim::TraceFigures& f : figures) {
    m.blocked_first += f.blocked_per_1000_first / n;
    m.blocked_last += f.blocked_per_1000_last / n;
    m.reward_first += f.reward_per_tick_first / n;
    m.reward_last += f.reward_per_tick_last / n;
    m.longest_after_2000 = std::max(m.longest_after_2000, f.longest_blocked_run_after_settle);
  }
  std::printf("%-18s blocked/1000 %6.1f -> %6.1f   reward/tick %+.4f -> %+.4f   longest blocked after 2000: %lld\n",
              name, m.blocked_first, m.blocked_last, m.reward_first, m.reward_last,
              static_cast<long long>(m.longest_after_2000));
  return m;
}

TEST(DrivingBehaviour, RewardedBrainBeatsRandomHeldAndItsRewardOffSelfOnHeldOutRooms) {
  const std::vector<sim::TraceFigures> brain = Drive(Driver::kBrain);
  const std::vector<sim::TraceFigures> reward_off = Drive(Driver::kBrainRewardOff);
  std::vector<sim::TraceFigures> random_held;
  double fewest = 1e9, most = 0;
  for (int draw = 0; draw < kRandomHeldDraws; ++draw) {
    const std::vector<sim::TraceFigures> one = Drive(Driver::kRandomHeld, uint64_t(draw));
    double blocked_last = 0;
    for (const sim::TraceFigures& f : one) blocked_last += f.blocked_per_1000_last / kRobots;
    fewest = std::min(fewest, blocked_last);
    most = std::max(most, blocked_last);
    random_held.insert(random_held.end(), one.begin(), one.end());
  }
  const Means b = Summarise("brain, reward on", brain);
  Summarise("brain, reward off", reward_off);
  const Means rh = Summarise("random-held", random_held);
  std::printf("random-held's last-1000 blocked over %d draws: %.1f to %.1f\n", kRandomHeldDraws, fewest, most);
  int above_reward_off = 0;
  for (int i = 0; i < kRobots; ++i) above_reward_off += brain[i].reward_per_tick_last > reward_off[i].reward_per_tick_last ? 1 : 0;
  std::printf("reward on above reward off in %d of %d seeds\n", above_reward_off, kRobots);

  EXPECT_LE(b.blocked_last, 0.5 * rh.blocked_last);
  EXPECT_LT(b.blocked_last, b.blocked_first);
  EXPECT_GT(b.reward_last, rh.reward_last);
  EXPECT_GE(above_reward_off, 7);
  EXPECT_LE(b.longest_after_2000, 250);
}

}  // namespace
}  // namespace fieldbrain::testing
