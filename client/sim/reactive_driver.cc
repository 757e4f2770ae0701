#include "client/sim/reactive_driver.h"

#include <algorithm>

namespace fieldbrain::sim {
namespace {

// Sensor 0 is the ultrasonic distance, 0..4 m mapped onto [-1, 1] (picarx_adapter.h).
double DistanceM(std::span<const float> sensors) {
  if (sensors.empty()) return 0;
  return (double(sensors[0]) + 1.0) * 0.5 * double(picarx::kUltrasonicMaxM);
}

}  // namespace

ReactiveDriver::ReactiveDriver(ReactiveDriverConfig config) : config_(config) {}

Motors ReactiveDriver::Act(std::span<const float> sensors, std::optional<float> /*reward*/) {
  // The reading is of the direction the pan servo was sent to on the previous tick.
  seen_m_[looking_] = DistanceM(sensors);
  const double ahead = seen_m_[kAhead];
  const double left = seen_m_[kLeft];
  const double right = seen_m_[kRight];
  // Positive steer turns left (positive heading change), like positive pan looks left.
  const float towards_room = left >= right ? 1.0f : -1.0f;

  Motors m{};
  if (backing_ticks_ == 0 && (ahead < config_.back_off_m || std::min(left, right) < config_.side_close_m)) {
    backing_ticks_ = config_.back_off_ticks;
    turning_ticks_ = config_.turn_out_ticks;
    if (tick_ - last_back_off_ > config_.keep_turn_ticks) turn_ = towards_room;
    last_back_off_ = tick_;
  }
  if (backing_ticks_ > 0) {
    --backing_ticks_;
    // Reversing with the wheels turned away from the escape side swings the nose towards it.
    m[0] = -0.8f;
    m[1] = -turn_;
  } else if (turning_ticks_ > 0) {
    --turning_ticks_;
    m[0] = float(config_.min_speed);
    m[1] = turn_;
  } else {
    const double t = std::clamp((ahead - config_.slow_m) / (config_.fast_m - config_.slow_m), 0.0, 1.0);
    m[0] = float(config_.min_speed + (1.0 - config_.min_speed) * t);
    double steer = config_.steer_gain * (left - right);
    // Something ahead: turn towards the room at full lock rather than by the difference alone.
    if (ahead < config_.fast_m) steer = double(towards_room) * std::max(std::abs(steer), 1.0 - t);
    m[1] = float(std::clamp(steer, -1.0, 1.0));
  }
  // Next tick's look: ahead on even ticks, the sides in turn on odd ones.
  ++tick_;
  looking_ = tick_ % 2 == 0 ? kAhead : (tick_ % 4 == 1 ? kLeft : kRight);
  m[2] = looking_ == kLeft ? config_.sweep_pan : looking_ == kRight ? -config_.sweep_pan : 0.0f;
  m[3] = 0.0f;
  return m;
}

}  // namespace fieldbrain::sim
