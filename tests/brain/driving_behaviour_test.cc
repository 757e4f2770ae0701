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
//
// Issue 23's bar, on held-out rooms 5001-5008 (never tuned on) with the default brain seed (the
// room's), 12,000 ticks: the brain improves (reward per tick over the last 2000 ticks above the
// first 2000, blocked per 1000 below), it drives (last-1000 reward above 0 on the mean over the 8
// rooms and above -0.005 in every room), and it beats the linear actor-critic on the raw sensors
// with the settings tuned on rooms 201-232 (client/sim/linear_actor_critic.h), averaged over
// kActorCriticDraws draws of its exploration noise: fewer blocked ticks and more reward per tick
// in the last 1000.
#include <algorithm>
#include <cstdio>
#include <vector>

#include "client/tools/sim_robot.h"
#include "gtest/gtest.h"
#include "tests/brain/lockstep_drive.h"

namespace fieldbrain::testing {
namespace {

constexpr int kRobots = 8;
constexpr int kRandomHeldDraws = 16;
constexpr int kActorCriticDraws = 4;

// Which rooms and for how long: robot i drives room first_room + i (its brain's seed too).
struct Course {
  uint64_t first_room = 3001;
  int ticks = 10000;
};

// Each robot's trace of blocked ticks and rewards. `draw` picks random-held's commands and the
// actor-critic's exploration noise.
std::vector<std::vector<sim::TickOutcome>> Drive(Driver driver, Course course = {}, uint64_t draw = 0) {
  const std::vector<Car> cars = ConsecutiveCars(course.first_room, kRobots);
  auto traces = DriveInLockstep(driver, cars, {.ticks = course.ticks, .draw = draw});
  EXPECT_TRUE(traces.ok()) << traces.status();
  return traces.ok() ? *std::move(traces) : std::vector<std::vector<sim::TickOutcome>>(kRobots);
}

// Each robot's figures over the first and last `span` ticks (settle 2000).
std::vector<sim::TraceFigures> Figures(const std::vector<std::vector<sim::TickOutcome>>& traces, int64_t span = 1000) {
  std::vector<sim::TraceFigures> figures;
  for (const auto& trace : traces) figures.push_back(sim::FiguresOf(trace, span));
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
  const std::vector<sim::TraceFigures> brain = Figures(Drive(Driver::kBrain));
  const std::vector<sim::TraceFigures> reward_off = Figures(Drive(Driver::kBrainRewardOff));
  std::vector<sim::TraceFigures> random_held;
  double fewest = 1e9, most = 0;
  for (int draw = 0; draw < kRandomHeldDraws; ++draw) {
    const std::vector<sim::TraceFigures> one = Figures(Drive(Driver::kRandomHeld, {}, uint64_t(draw)));
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

TEST(DrivingBehaviour, BrainImprovesDrivesAndBeatsATunedLinearActorCriticOnHeldOutRooms) {
  const Course held_out{.first_room = 5001, .ticks = 12000};
  const std::vector<std::vector<sim::TickOutcome>> brain = Drive(Driver::kBrain, held_out);
  std::vector<sim::TraceFigures> learner;
  for (int draw = 1; draw <= kActorCriticDraws; ++draw) {
    const std::vector<sim::TraceFigures> one = Figures(Drive(Driver::kActorCritic, held_out, uint64_t(draw)));
    learner.insert(learner.end(), one.begin(), one.end());
  }
  const Means halves = Summarise("brain, 2000-tick", Figures(brain, 2000));
  const std::vector<sim::TraceFigures> last_1000 = Figures(brain);
  const Means b = Summarise("brain, reward on", last_1000);
  const Means ac = Summarise("actor-critic", learner);
  double worst_room = 1.0;
  for (int i = 0; i < kRobots; ++i) {
    std::printf("room %llu: last-1000 reward/tick %+.4f, blocked/1000 %.1f\n",
                static_cast<unsigned long long>(held_out.first_room + uint64_t(i)), last_1000[i].reward_per_tick_last,
                last_1000[i].blocked_per_1000_last);
    worst_room = std::min(worst_room, last_1000[i].reward_per_tick_last);
  }

  // It improves.
  EXPECT_GT(halves.reward_last, halves.reward_first);
  EXPECT_LT(halves.blocked_last, halves.blocked_first);
  // It drives.
  EXPECT_GT(b.reward_last, 0.0);
  EXPECT_GT(worst_room, -0.005);
  // It beats the learner a roboticist would pick instead.
  EXPECT_LT(b.blocked_last, ac.blocked_last);
  EXPECT_GT(b.reward_last, ac.reward_last);
}

}  // namespace
}  // namespace fieldbrain::testing
