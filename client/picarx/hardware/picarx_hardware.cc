#include "client/picarx/hardware/picarx_hardware.h"

#include <algorithm>
#include <cmath>

namespace fieldbrain::picarx {
namespace {

absl::Status FirstError(std::initializer_list<absl::Status> all) {
  for (const absl::Status& s : all) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace

WheelSpeeds WheelSpeedsFor(float drive, float steer_deg) {
  const float steer = std::clamp(steer_deg, -kSteeringLimitDeg, kSteeringLimitDeg);
  WheelSpeeds w{drive, drive};
  if (steer == 0 || !std::isfinite(steer)) return w;
  const float slow = (100.0f - std::abs(steer)) / 100.0f;
  if ((drive >= 0) == (steer > 0)) {
    w.left *= slow;
  } else {
    w.right *= slow;
  }
  return w;
}

float ProxyReward(const HardwareCommand& applied, const RawReading& after) {
  if (applied.reflex == Reflex::kObstacle || applied.reflex == Reflex::kCliff) return -1.0f;
  float reward = kProgressReward * applied.drive_duty_pct / kDriveDutyMaxPct;
  const float d = after.ultrasonic_m;
  if (std::isfinite(d) && d >= 0 && d < kNearM) reward -= kNearPenalty * (kNearM - d) / kNearM;
  return std::clamp(reward, -1.0f, 1.0f);
}

absl::Status PicarxHardware::Init() {
  const int servo_timer = TimerOfChannel(kSteeringChannel);
  const int motor_timer = TimerOfChannel(kLeftMotorChannel);
  if (absl::Status s = FirstError({hat_.SetPeriod(servo_timer, kServoPeriod),
                                   hat_.SetPrescaler(servo_timer, kServoPrescaler),
                                   hat_.SetPeriod(motor_timer, kMotorPeriod),
                                   hat_.SetPrescaler(motor_timer, kMotorPrescaler)});
      !s.ok()) {
    return s;
  }
  return Stop();
}

absl::StatusOr<RawReading> PicarxHardware::Read() {
  RawReading r;
  absl::StatusOr<float> range = ranger_.ReadMetres();
  if (!range.ok()) return range.status();
  r.ultrasonic_m = *range;
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<uint16_t> g = hat_.ReadAdc(kGrayscaleChannels[i]);
    if (!g.ok()) return g.status();
    r.grayscale[i] = float(*g);
    r.line_detected = r.line_detected || r.grayscale[i] <= cal_.line_reference[i];
    r.cliff_detected = r.cliff_detected || r.grayscale[i] <= cal_.cliff_reference[i];
  }
  absl::StatusOr<uint16_t> battery = hat_.ReadAdc(kBatteryChannel);
  if (!battery.ok()) return battery.status();
  r.battery_v = float(BatteryVolts(*battery));
  // What the servos and wheels were last told: the PiCar-X has no feedback from them.
  r.steering_deg = applied_.steering_deg;
  r.pan_deg = applied_.pan_deg;
  r.tilt_deg = applied_.tilt_deg;
  const WheelSpeeds wheels = WheelSpeedsFor(applied_.drive_duty_pct, applied_.steering_deg);
  r.left_speed = wheels.left;
  r.right_speed = wheels.right;
  if (!judged_) {
    reward_ = ProxyReward(applied_, r);
    judged_ = true;
  }
  return r;
}

absl::Status PicarxHardware::Apply(const HardwareCommand& command) {
  const float steer = std::clamp(command.steering_deg, -kSteeringLimitDeg, kSteeringLimitDeg);
  const WheelSpeeds wheels = WheelSpeedsFor(command.drive_duty_pct, steer);
  // Motor 1 (left) turns at +speed and motor 2 (right) at -speed for the car to go forward.
  const float left = wheels.left;
  const float right = -wheels.right;
  absl::Status s = FirstError({SetServos(steer, command.pan_deg, command.tilt_deg), SetWheels(left, right)});
  if (!s.ok()) return s;
  applied_ = command;
  applied_.steering_deg = steer;
  judged_ = false;
  return absl::OkStatus();
}

absl::Status PicarxHardware::Stop() {
  applied_ = HardwareCommand{};
  judged_ = true;
  // Both attempted even if one fails: a stuck servo must not keep the wheels turning.
  const absl::Status wheels = SetWheels(0, 0);
  const absl::Status servos = SetServos(0, 0, 0);
  return FirstError({wheels, servos});
}

absl::Status PicarxHardware::SetWheel(int channel, GpioLine& direction, float speed, int calibration) {
  const WheelDrive drive = WheelDriveForSpeed(speed, calibration);
  // Direction first, so a wheel never spins up the old way; if it cannot be set, the wheel stops.
  if (absl::Status s = direction.Set(drive.reverse); !s.ok()) {
    hat_.SetPulse(channel, 0).IgnoreError();  // the direction error is the one to report
    return s;
  }
  return hat_.SetPulse(channel, drive.pulse_counts);
}

absl::Status PicarxHardware::SetWheels(float left_speed, float right_speed) {
  const absl::Status left = SetWheel(kLeftMotorChannel, left_dir_, left_speed, cal_.motor_direction[0]);
  const absl::Status right = SetWheel(kRightMotorChannel, right_dir_, right_speed, cal_.motor_direction[1]);
  return FirstError({left, right});
}

absl::Status PicarxHardware::SetServos(float steering_deg, float pan_deg, float tilt_deg) {
  return FirstError({hat_.SetPulse(kSteeringChannel, ServoPulseCounts(steering_deg + cal_.steering_offset_deg)),
                     hat_.SetPulse(kPanChannel, ServoPulseCounts(cal_.pan_offset_deg - pan_deg)),
                     hat_.SetPulse(kTiltChannel, ServoPulseCounts(cal_.tilt_offset_deg - tilt_deg))});
}

}  // namespace fieldbrain::picarx
