// The real PiCar-X on a Robot HAT: RobotBody over the HAT's PWM and ADC (robot_hat.h), two motor
// direction lines and the ultrasonic ranger, with SunFounder's calibration applied.
//
// Wiring (picarx/picarx.py defaults): servos P0 camera pan, P1 camera tilt, P2 steering (timer 0);
// wheels P13 left and P12 right (timer 3) with direction lines D4 (BCM 23) left and D5 (BCM 24)
// right; grayscale A0-A2 (left, middle, right); battery A4; ultrasonic D2 trigger (BCM 27), D3
// echo (BCM 22). The MCU's reset line is BCM 5.
//
// Commands are applied as picarx.py does: the steering angle is clamped to +-30 deg, then its
// offset added; pan and tilt servos turn the other way (angle = offset - command); the drive is
// SunFounder's speed (-100..100; the adapter gives at most +-50) with one wheel slowed in a turn
// (WheelSpeedsFor), and each wheel's direction flipped by its calibration.
#pragma once

#include <optional>

#include "client/picarx/hardware/calibration.h"
#include "client/picarx/hardware/robot_body.h"
#include "client/picarx/hardware/robot_hat.h"
#include "client/picarx/hardware/ultrasonic.h"

namespace fieldbrain::picarx {

inline constexpr int kPanChannel = 0, kTiltChannel = 1, kSteeringChannel = 2;
inline constexpr int kLeftMotorChannel = 13, kRightMotorChannel = 12;
inline constexpr unsigned kLeftDirectionGpio = 23, kRightDirectionGpio = 24;
inline constexpr unsigned kTriggerGpio = 27, kEchoGpio = 22, kMcuResetGpio = 5;
inline constexpr int kGrayscaleChannels[3] = {0, 1, 2};
inline constexpr int kBatteryChannel = 4;
inline constexpr float kSteeringLimitDeg = 30.0f;

// Each wheel's speed, forward-positive (-100..100), as picarx.py's forward() and backward() set
// them: in a turn one wheel is slowed by (100 - |angle|) / 100, going forward the left one when
// the steering angle is positive and the right one when it is negative, in reverse the other way
// round. `steer_deg` is clamped to +-kSteeringLimitDeg.
struct WheelSpeeds {
  float left = 0, right = 0;
};
WheelSpeeds WheelSpeedsFor(float drive, float steer_deg);

// The reward the car gives itself for a command, judged by the reading after it, without wheel
// encoders to measure progress: -1 when the obstacle or cliff reflex had to cut the forward drive;
// else 0.1 x drive / 50, less up to 0.5 as the range ahead falls under 15 cm. A proxy: it cannot
// tell spinning wheels from driving. client/python/examples/picarx_drive.py uses the same.
inline constexpr float kProgressReward = 0.1f, kNearM = 0.15f, kNearPenalty = 0.5f;
float ProxyReward(const HardwareCommand& applied, const RawReading& after);

class PicarxHardware final : public RobotBody {
 public:
  PicarxHardware(RobotHat& hat, GpioLine& left_direction, GpioLine& right_direction, Ultrasonic& ranger,
                 Calibration calibration)
      : hat_(hat), left_dir_(left_direction), right_dir_(right_direction), ranger_(ranger), cal_(calibration) {}

  // Sets the servo and wheel timers, then stops (wheels 0, servos centred).
  absl::Status Init();

  absl::StatusOr<RawReading> Read() override;
  absl::Status Apply(const HardwareCommand& command) override;
  std::optional<float> Reward() const override { return reward_; }
  absl::Status Stop() override;

 private:
  absl::Status SetWheel(int channel, GpioLine& direction, float speed, int calibration);
  absl::Status SetWheels(float left_speed, float right_speed);
  absl::Status SetServos(float steering_deg, float pan_deg, float tilt_deg);

  RobotHat& hat_;
  GpioLine& left_dir_;
  GpioLine& right_dir_;
  Ultrasonic& ranger_;
  const Calibration cal_;
  HardwareCommand applied_;
  bool judged_ = true;  // applied_ has had its reward
  std::optional<float> reward_;
};

}  // namespace fieldbrain::picarx
