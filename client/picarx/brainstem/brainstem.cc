#include "client/picarx/brainstem/brainstem.h"

#include <optional>

#include "absl/strings/str_cat.h"

namespace fieldbrain::picarx {

absl::Status Brainstem::Fail(absl::Status error) {
  if (absl::Status stopped = body_.Stop(); !stopped.ok()) {
    return absl::Status(error.code(), absl::StrCat(error.message(), "; stopping the car also failed: ",
                                                   stopped.message()));
  }
  return error;
}

absl::Status Brainstem::Tick() {
  absl::StatusOr<RawReading> reading = body_.Read();
  if (!reading.ok()) return Fail(reading.status());
  const Sensors sensors = NormalizeSensors(*reading);
  const std::optional<float> reward = options_.send_reward ? body_.Reward() : std::nullopt;
  const client::StepResult r = client_.Step(sensors.values, reward, options_.deadline);
  const HardwareCommand command = ToHardware(r.motors, *reading, r.safe_stop, options_.reflexes);
  if (absl::Status s = body_.Apply(command); !s.ok()) return Fail(s);

  ++stats_.ticks;
  if (r.safe_stop) {
    ++stats_.safe_stops[client::StopCauseName(r.cause)];
  } else {
    ++stats_.answered;
  }
  if (command.reflex != Reflex::kNone && command.reflex != Reflex::kSafeStop) {
    ++stats_.reflexes[ReflexName(command.reflex)];
  }
  if (const std::optional<float> judged = body_.Reward(); judged.has_value()) stats_.reward += *judged;
  return absl::OkStatus();
}

absl::Status Brainstem::Run(const std::atomic<bool>& stop, int64_t max_ticks) {
  const absl::Duration period = absl::Seconds(1.0 / options_.hz);
  absl::Time next = clock_.Now();
  absl::Status result;
  while (!stop.load() && (max_ticks <= 0 || stats_.ticks < max_ticks)) {
    if (absl::Status s = Tick(); !s.ok()) {
      result = s;  // Tick has stopped the body
      break;
    }
    next += period;
    const absl::Time now = clock_.Now();
    if (now > next) {
      ++stats_.overruns;
      next = now;  // late: start the next tick at once, and do not try to catch up
    } else {
      clock_.SleepFor(next - now);
    }
  }
  if (absl::Status s = body_.Stop(); !s.ok() && result.ok()) result = s;
  return result;
}

}  // namespace fieldbrain::picarx
