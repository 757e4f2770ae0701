// One simulated PiCar-X: a sim::World, the PiCar-X adapter and a policy (the brain through a
// BrainClient, or a baseline), stepped at a fixed control rate or in lockstep on the caller's
// thread. Statistics go into a window that a reporter thread takes every second, and every tick's
// outcome into a trace for the learning curve.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/brain_client.h"
#include "client/sim/linear_actor_critic.h"
#include "client/sim/local_policy.h"
#include "client/sim/world.h"
#include "client/tools/latency_histogram.h"

namespace fieldbrain::sim {

// Who drives: the brain, or a baseline to compare it with in the same world.
enum class Policy {
  kBrain,        // motors from the brain server
  kRandomHeld,   // a uniformly random command, held for kRandomHoldTicks ticks
  kForward,      // full drive ahead, wheels straight
  kActorCritic,  // a linear actor-critic on the raw sensors (client/sim/linear_actor_critic.h)
  kReactive,     // a hand-written driver from the distance sensor (client/sim/reactive_driver.h)
};
inline constexpr int kRandomHoldTicks = 25;  // 0.5 s at 50 Hz
// "brain", "random-held", "forward", "actor-critic", "reactive"; nullopt for anything else.
std::optional<Policy> PolicyFromName(std::string_view name);
const char* PolicyName(Policy policy);
// The robot-side driver of a baseline policy; nullptr for kBrain. `seed` draws its randomness
// (random-held's commands, the actor-critic's exploration).
std::unique_ptr<LocalPolicy> MakeLocalPolicy(Policy policy, uint64_t seed, const ActorCriticConfig& actor_critic);

// One tick's outcome, for learning curves.
struct TickOutcome {
  bool blocked = false;  // the move ended against a wall or box
  float reward = 0.0f;
};

// Counters over a span of time; Merge adds spans.
struct RobotStats {
  uint64_t cycles = 0;       // Steps taken
  uint64_t answered = 0;     // Steps that got a MotorFrame (round_trip covers these)
  uint64_t safe_stops = 0;
  std::map<std::string, uint64_t> stop_reasons;  // "deadline", "link_down", "server:SUPERSEDED"
  std::map<std::string, uint64_t> reflexes;      // robot-side reflexes that cut the drive
  uint64_t collisions = 0;
  uint64_t blocked_ticks = 0;  // ticks whose move ended against a wall or box
  double reward = 0;         // sum of the world's rewards
  double confidence_sum = 0; // over answered OK frames
  uint64_t confidence_n = 0;
  double distance_m = 0;
  LatencyHistogram round_trip;

  void Merge(const RobotStats& other);
};

struct SimRobotOptions {
  Policy policy = Policy::kBrain;
  bool send_reward = true;  // false: frames carry no reward (the brain learns from nothing)
  // false: no 2 cm obstacle reflex, so a car pushing into a wall keeps paying for it (issue 9's room)
  bool obstacle_reflex = true;
  double hz = 50;
  // Lockstep: a frame the server answered RATE_LIMITED (not run) is sent again, so every tick is
  // the brain's answer whatever the machine's speed.
  bool resend_rate_limited = false;
  absl::Duration deadline = absl::Milliseconds(20);
  // The seed of a baseline's randomness; unset: the world's seed.
  std::optional<uint64_t> policy_seed;
  ActorCriticConfig actor_critic;  // for Policy::kActorCritic
};

class SimRobot {
 public:
  // `client` is required for Policy::kBrain and unused (may be null) otherwise.
  SimRobot(std::unique_ptr<client::BrainClient> client, WorldConfig world, uint64_t world_seed,
           SimRobotOptions options);

  // Steps at `hz` until `stop` is set or `end` passes.
  void Run(const std::atomic<bool>& stop, absl::Time end);
  // `ticks` steps as fast as the policy answers (each waits for its motors; the world advances
  // 1/hz per tick), so the outcome does not depend on timing. Stops early when `stop` is set.
  void RunLockstep(const std::atomic<bool>& stop, int64_t ticks);

  // The stats since the last call.
  RobotStats TakeWindow();
  // Every tick's outcome so far (call when the robot is not running).
  const std::vector<TickOutcome>& trace() const { return trace_; }

  client::BrainClient* client() { return client_.get(); }
  const SimRobotOptions& options() const { return options_; }

 private:
  // One tick: sensors, the policy's command, the world's step, the stats.
  void Tick();
  const std::unique_ptr<client::BrainClient> client_;
  const SimRobotOptions options_;
  World world_;
  const absl::Duration period_;
  const std::unique_ptr<LocalPolicy> local_policy_;  // null for the brain
  int64_t ticks_ = 0;
  std::optional<float> reward_;  // judges the previous tick's action; none before the first
  std::vector<TickOutcome> trace_;
  absl::Mutex mu_;
  RobotStats window_ ABSL_GUARDED_BY(mu_);
};

// Learning-curve figures from one robot's trace: blocked ticks per 1000 and reward per tick over
// the first and the last `span` ticks, and the longest run of consecutive blocked ticks (overall
// and starting after tick `settle`).
struct TraceFigures {
  double blocked_per_1000_first = 0, blocked_per_1000_last = 0;
  double reward_per_tick_first = 0, reward_per_tick_last = 0;
  int64_t longest_blocked_run = 0, longest_blocked_run_after_settle = 0;
};
TraceFigures FiguresOf(const std::vector<TickOutcome>& trace, int64_t span = 1000, int64_t settle = 2000);

// Blocked ticks per 1000 and reward per tick over consecutive windows of `span` ticks (a last,
// shorter window included), for learning curves.
struct WindowFigures {
  double blocked_per_1000 = 0;
  double reward_per_tick = 0;
};
std::vector<WindowFigures> WindowsOf(const std::vector<TickOutcome>& trace, int64_t span = 2000);

}  // namespace fieldbrain::sim
