#include "client/tools/sim_robot.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"

namespace fieldbrain::sim {

void RobotStats::Merge(const RobotStats& o) {
  cycles += o.cycles;
  answered += o.answered;
  safe_stops += o.safe_stops;
  for (const auto& [k, v] : o.stop_reasons) stop_reasons[k] += v;
  for (const auto& [k, v] : o.reflexes) reflexes[k] += v;
  collisions += o.collisions;
  reward += o.reward;
  confidence_sum += o.confidence_sum;
  confidence_n += o.confidence_n;
  distance_m += o.distance_m;
  round_trip.Merge(o.round_trip);
}

SimRobot::SimRobot(std::unique_ptr<client::BrainClient> client, uint64_t world_seed, double hz,
                   absl::Duration deadline)
    : client_(std::move(client)), world_(WorldConfig{}, world_seed),
      period_(absl::Seconds(1.0 / hz)), deadline_(deadline) {}

void SimRobot::Run(const std::atomic<bool>& stop, absl::Time end) {
  std::optional<float> reward;  // judges the previous tick's action; none before the first
  absl::Time next = absl::Now();
  while (!stop.load(std::memory_order_relaxed) && absl::Now() < end) {
    const picarx::RawReading reading = world_.Read();
    const picarx::Sensors sensors = picarx::NormalizeSensors(reading);
    const client::StepResult r = client_->Step(sensors.values, reward, deadline_);
    const picarx::HardwareCommand cmd = picarx::ToHardware(r.motors, reading, r.safe_stop);
    const int collisions_before = world_.collisions();
    const double distance_before = world_.distance_m();
    const StepOutcome outcome = world_.Step(cmd, absl::ToDoubleSeconds(period_));
    reward = static_cast<float>(outcome.reward);

    {
      absl::MutexLock lock(&mu_);
      RobotStats& w = window_;
      ++w.cycles;
      const bool answered = r.cause == client::StopCause::kNone ||
                            r.cause == client::StopCause::kServer;
      if (answered) {
        ++w.answered;
        w.round_trip.Record(r.round_trip);
      }
      if (r.safe_stop) {
        ++w.safe_stops;
        std::string key = client::StopCauseName(r.cause);
        if (r.cause == client::StopCause::kServer) {
          key = absl::StrCat("server:", brain::v1::FrameStatus_Name(r.status));
        }
        ++w.stop_reasons[key];
      } else {
        w.confidence_sum += r.confidence;
        ++w.confidence_n;
      }
      if (cmd.reflex != picarx::Reflex::kNone && cmd.reflex != picarx::Reflex::kSafeStop) {
        ++w.reflexes[picarx::ReflexName(cmd.reflex)];
      }
      w.collisions += static_cast<uint64_t>(world_.collisions() - collisions_before);
      w.reward += outcome.reward;
      w.distance_m += world_.distance_m() - distance_before;
    }

    // Fixed rate; after an overrun of more than a period, start over instead of bursting.
    next += period_;
    const absl::Time now = absl::Now();
    if (next < now - period_) next = now;
    if (next > now) absl::SleepFor(next - now);
  }
}

RobotStats SimRobot::TakeWindow() {
  absl::MutexLock lock(&mu_);
  return std::exchange(window_, RobotStats());
}

}  // namespace fieldbrain::sim
