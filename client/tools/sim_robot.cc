#include "client/tools/sim_robot.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "client/sim/reactive_driver.h"
#include "client/sim/simple_policies.h"

namespace fieldbrain::sim {

void RobotStats::Merge(const RobotStats& o) {
  cycles += o.cycles;
  answered += o.answered;
  safe_stops += o.safe_stops;
  for (const auto& [k, v] : o.stop_reasons) stop_reasons[k] += v;
  for (const auto& [k, v] : o.reflexes) reflexes[k] += v;
  collisions += o.collisions;
  blocked_ticks += o.blocked_ticks;
  reward += o.reward;
  confidence_sum += o.confidence_sum;
  confidence_n += o.confidence_n;
  distance_m += o.distance_m;
  round_trip.Merge(o.round_trip);
}

std::optional<Policy> PolicyFromName(std::string_view name) {
  if (name == "brain") return Policy::kBrain;
  if (name == "random-held") return Policy::kRandomHeld;
  if (name == "forward") return Policy::kForward;
  if (name == "actor-critic") return Policy::kActorCritic;
  if (name == "reactive") return Policy::kReactive;
  return std::nullopt;
}

const char* PolicyName(Policy policy) {
  switch (policy) {
    case Policy::kBrain: return "brain";
    case Policy::kRandomHeld: return "random-held";
    case Policy::kForward: return "forward";
    case Policy::kActorCritic: return "actor-critic";
    case Policy::kReactive: return "reactive";
  }
  return "unknown";
}

std::unique_ptr<LocalPolicy> MakeLocalPolicy(Policy policy, uint64_t seed, const ActorCriticConfig& actor_critic) {
  switch (policy) {
    case Policy::kBrain: return nullptr;
    case Policy::kRandomHeld: return std::make_unique<RandomHeldPolicy>(kRandomHoldTicks, seed);
    case Policy::kForward: return std::make_unique<ForwardPolicy>();
    case Policy::kActorCritic: return std::make_unique<LinearActorCritic>(actor_critic, seed);
    case Policy::kReactive: return std::make_unique<ReactiveDriver>();
  }
  return nullptr;
}

SimRobot::SimRobot(std::unique_ptr<client::BrainClient> client, WorldConfig world, uint64_t world_seed,
                   SimRobotOptions options)
    : client_(std::move(client)), options_(options), world_(std::move(world), world_seed),
      period_(absl::Seconds(1.0 / options.hz)),
      local_policy_(MakeLocalPolicy(options.policy, options.policy_seed.value_or(world_seed), options.actor_critic)) {}

void SimRobot::Tick() {
  const picarx::RawReading reading = world_.Read();
  client::StepResult r;
  const picarx::Sensors sensors = picarx::NormalizeSensors(reading);
  const std::optional<float> reward = options_.send_reward ? reward_ : std::nullopt;
  if (local_policy_ != nullptr) {
    const Motors motors = local_policy_->Act(sensors.values, reward);
    r.motors.assign(motors.begin(), motors.end());
    r.safe_stop = false;
  } else {
    r = client_->Step(sensors.values, reward, options_.deadline);
    while (options_.resend_rate_limited && r.cause == client::StopCause::kServer &&
           r.status == brain::v1::RATE_LIMITED) {
      absl::SleepFor(absl::Milliseconds(2));
      r = client_->Step(sensors.values, reward, options_.deadline);
    }
  }
  const picarx::HardwareCommand cmd = picarx::ToHardware(r.motors, reading, r.safe_stop,
                                                         picarx::ReflexSet{.obstacle = options_.obstacle_reflex});
  const int collisions_before = world_.collisions();
  const double distance_before = world_.distance_m();
  const StepOutcome outcome = world_.Step(cmd, absl::ToDoubleSeconds(period_));
  reward_ = static_cast<float>(outcome.reward);
  ++ticks_;
  trace_.push_back(TickOutcome{outcome.collided, static_cast<float>(outcome.reward)});

  absl::MutexLock lock(&mu_);
  RobotStats& w = window_;
  ++w.cycles;
  const bool answered = options_.policy != Policy::kBrain || r.cause == client::StopCause::kNone ||
                        r.cause == client::StopCause::kServer;
  if (answered) {
    ++w.answered;
    if (options_.policy == Policy::kBrain) w.round_trip.Record(r.round_trip);
  }
  if (r.safe_stop) {
    ++w.safe_stops;
    std::string key = client::StopCauseName(r.cause);
    if (r.cause == client::StopCause::kServer) {
      key = absl::StrCat("server:", brain::v1::FrameStatus_Name(r.status));
    }
    ++w.stop_reasons[key];
  } else if (options_.policy == Policy::kBrain) {
    w.confidence_sum += r.confidence;
    ++w.confidence_n;
  }
  if (cmd.reflex != picarx::Reflex::kNone && cmd.reflex != picarx::Reflex::kSafeStop) {
    ++w.reflexes[picarx::ReflexName(cmd.reflex)];
  }
  w.collisions += static_cast<uint64_t>(world_.collisions() - collisions_before);
  w.blocked_ticks += outcome.collided ? 1 : 0;
  w.reward += outcome.reward;
  w.distance_m += world_.distance_m() - distance_before;
}

void SimRobot::Run(const std::atomic<bool>& stop, absl::Time end) {
  absl::Time next = absl::Now();
  while (!stop.load(std::memory_order_relaxed) && absl::Now() < end) {
    Tick();
    // Fixed rate; after an overrun of more than a period, start over instead of bursting.
    next += period_;
    const absl::Time now = absl::Now();
    if (next < now - period_) next = now;
    if (next > now) absl::SleepFor(next - now);
  }
}

void SimRobot::RunLockstep(const std::atomic<bool>& stop, int64_t ticks) {
  trace_.reserve(trace_.size() + size_t(ticks));
  for (int64_t i = 0; i < ticks && !stop.load(std::memory_order_relaxed); ++i) Tick();
}

TraceFigures FiguresOf(const std::vector<TickOutcome>& trace, int64_t span, int64_t settle) {
  TraceFigures f;
  const int64_t n = int64_t(trace.size());
  auto over = [&](int64_t begin, int64_t end, double& blocked_per_1000, double& reward_per_tick) {
    begin = std::max<int64_t>(begin, 0);
    end = std::min(end, n);
    if (end <= begin) return;
    int64_t blocked = 0;
    double reward = 0;
    for (int64_t i = begin; i < end; ++i) {
      blocked += trace[size_t(i)].blocked ? 1 : 0;
      reward += trace[size_t(i)].reward;
    }
    blocked_per_1000 = 1000.0 * double(blocked) / double(end - begin);
    reward_per_tick = reward / double(end - begin);
  };
  over(0, span, f.blocked_per_1000_first, f.reward_per_tick_first);
  over(n - span, n, f.blocked_per_1000_last, f.reward_per_tick_last);
  int64_t run = 0, run_after = 0;  // run_after counts only the ticks from `settle` on
  for (int64_t i = 0; i < n; ++i) {
    const bool blocked = trace[size_t(i)].blocked;
    run = blocked ? run + 1 : 0;
    run_after = blocked && i >= settle ? run_after + 1 : 0;
    f.longest_blocked_run = std::max(f.longest_blocked_run, run);
    f.longest_blocked_run_after_settle = std::max(f.longest_blocked_run_after_settle, run_after);
  }
  return f;
}

std::vector<WindowFigures> WindowsOf(const std::vector<TickOutcome>& trace, int64_t span) {
  std::vector<WindowFigures> windows;
  span = std::max<int64_t>(span, 1);
  const int64_t n = int64_t(trace.size());
  for (int64_t begin = 0; begin < n; begin += span) {
    const int64_t end = std::min(begin + span, n);
    int64_t blocked = 0;
    double reward = 0;
    for (int64_t i = begin; i < end; ++i) {
      blocked += trace[size_t(i)].blocked ? 1 : 0;
      reward += trace[size_t(i)].reward;
    }
    windows.push_back(WindowFigures{1000.0 * double(blocked) / double(end - begin), reward / double(end - begin)});
  }
  return windows;
}

RobotStats SimRobot::TakeWindow() {
  absl::MutexLock lock(&mu_);
  return std::exchange(window_, RobotStats());
}

}  // namespace fieldbrain::sim
