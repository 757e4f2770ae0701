#include "client/picarx/picarx_adapter.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace fieldbrain::picarx {
namespace {

constexpr std::array<std::string_view, kSensorCount> kSensorNames = {
    "ultrasonic",  "grayscale_left", "grayscale_middle", "grayscale_right",
    "battery",     "steering",       "pan",              "tilt",
    "left_speed",  "right_speed",    "line_detected",    "cliff_detected"};
constexpr std::array<std::string_view, kMotorCount> kMotorNames = {"drive", "steer", "pan",
                                                                   "tilt"};

// Linear map of [lo, hi] onto [-1, 1], clamped.
float Normalize(float v, float lo, float hi) {
  return std::clamp(2.0f * (v - lo) / (hi - lo) - 1.0f, -1.0f, 1.0f);
}

float Flag(bool b) { return b ? 1.0f : -1.0f; }

// A motor value as a finite number in [-1, 1].
float MotorValue(std::span<const float> motors, int k) {
  if (k >= static_cast<int>(motors.size()) || !std::isfinite(motors[k])) return 0.0f;
  return std::clamp(motors[k], -1.0f, 1.0f);
}

}  // namespace

const char* ReflexName(Reflex reflex) {
  switch (reflex) {
    case Reflex::kNone: return "none";
    case Reflex::kSafeStop: return "safe_stop";
    case Reflex::kLowBattery: return "low_battery";
    case Reflex::kObstacle: return "obstacle";
    case Reflex::kCliff: return "cliff";
  }
  return "unknown";
}

std::span<const std::string_view> SensorNames() { return kSensorNames; }
std::span<const std::string_view> MotorNames() { return kMotorNames; }

brain::v1::RobotProfile MakeProfile(std::string robot_id, float control_hz, bool has_reward) {
  brain::v1::RobotProfile profile;
  profile.set_robot_id(std::move(robot_id));
  profile.set_robot_type("picarx");
  profile.set_sensor_count(kSensorCount);
  profile.set_motor_count(kMotorCount);
  for (std::string_view name : kSensorNames) profile.add_sensor_names(std::string(name));
  for (std::string_view name : kMotorNames) profile.add_motor_names(std::string(name));
  profile.set_has_reward(has_reward);
  profile.set_control_hz(control_hz);
  return profile;
}

Sensors NormalizeSensors(const RawReading& r) {
  Sensors out;
  // Each entry: raw value, its range, and the normalised value to use when it is unusable.
  struct Channel {
    float value, lo, hi, safe;
    bool valid;
  };
  const auto ranged = [](float v, float lo, float hi, float safe) {
    return Channel{v, lo, hi, safe, std::isfinite(v)};
  };
  const std::array<Channel, 10> analog = {
      Channel{r.ultrasonic_m, 0.0f, kUltrasonicMaxM, -1.0f,
              std::isfinite(r.ultrasonic_m) && r.ultrasonic_m >= 0.0f},
      ranged(r.grayscale[0], 0.0f, kGrayscaleMax, 0.0f),
      ranged(r.grayscale[1], 0.0f, kGrayscaleMax, 0.0f),
      ranged(r.grayscale[2], 0.0f, kGrayscaleMax, 0.0f),
      ranged(r.battery_v, kBatteryMinV, kBatteryMaxV, 0.0f),
      ranged(r.steering_deg, -kSteeringRangeDeg, kSteeringRangeDeg, 0.0f),
      ranged(r.pan_deg, -kPanRangeDeg, kPanRangeDeg, 0.0f),
      ranged(r.tilt_deg, kTiltMinDeg, kTiltMaxDeg, 0.0f),
      ranged(r.left_speed, -kMotorSpeedMax, kMotorSpeedMax, 0.0f),
      ranged(r.right_speed, -kMotorSpeedMax, kMotorSpeedMax, 0.0f),
  };
  for (size_t i = 0; i < analog.size(); ++i) {
    const Channel& c = analog[i];
    if (c.valid) {
      out.values[i] = Normalize(c.value, c.lo, c.hi);
    } else {
      out.values[i] = c.safe;
      out.invalid_mask |= 1u << i;
    }
  }
  out.values[10] = Flag(r.line_detected);
  out.values[11] = Flag(r.cliff_detected);
  return out;
}

HardwareCommand ToHardware(std::span<const float> motors, const RawReading& reading,
                           bool safe_stop, ReflexSet reflexes) {
  HardwareCommand cmd;
  cmd.drive_duty_pct = MotorValue(motors, 0) * kDriveDutyMaxPct;
  cmd.steering_deg = MotorValue(motors, 1) * kSteerCmdMaxDeg;
  cmd.pan_deg = MotorValue(motors, 2) * kPanCmdMaxDeg;
  cmd.tilt_deg = MotorValue(motors, 3) * kTiltCmdMaxDeg;

  // Fail safe: a reading the robot cannot trust counts as the dangerous case. An unreadable
  // battery (non-finite) may be a flat one; an unreadable distance (non-finite, or negative:
  // SunFounder's driver returns -1/-2 on a lost echo or timeout) may be a wall. Written so that
  // NaN lands on the safe side (every comparison with NaN is false).
  const bool battery_ok = std::isfinite(reading.battery_v) && reading.battery_v >= kLowBatteryV;
  const bool path_clear =
      std::isfinite(reading.ultrasonic_m) && reading.ultrasonic_m >= kObstacleStopM;
  if (safe_stop) {
    cmd.drive_duty_pct = 0;
    cmd.reflex = Reflex::kSafeStop;
  } else if (!battery_ok) {
    cmd.drive_duty_pct = 0;
    cmd.reflex = Reflex::kLowBattery;
  } else if (reflexes.obstacle && !path_clear && cmd.drive_duty_pct > 0) {
    cmd.drive_duty_pct = 0;
    cmd.reflex = Reflex::kObstacle;
  } else if (reading.cliff_detected && cmd.drive_duty_pct > 0) {
    cmd.drive_duty_pct = 0;
    cmd.reflex = Reflex::kCliff;
  }
  return cmd;
}

}  // namespace fieldbrain::picarx
