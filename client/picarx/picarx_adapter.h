// The SunFounder PiCar-X as a fieldbrain robot: raw hardware readings to 12 normalised sensors,
// 4 normalised motors to hardware commands, and the reflexes the robot keeps for itself.
//
// Sensors (each mapped linearly onto [-1, 1] from its hardware range, then clamped):
//   0 ultrasonic_m   0..4 m            6 pan_deg         -90..90 deg
//   1-3 grayscale    ADC 0..4095 (L,M,R) 7 tilt_deg       -35..65 deg
//   4 battery_v      6.0..8.4 V        8-9 left/right motor speed -100..100
//   5 steering_deg   -30..30 deg       10 line_detected, 11 cliff_detected: false -1, true 1
// A non-finite reading (or a negative ultrasonic distance, which is how the sensor reports a lost
// echo) is replaced by a safe value and flagged: ultrasonic -1 (as if an obstacle were near, so the
// brain stays cautious), every other sensor 0 (mid-range).
//
// Motors [drive, steer, pan, tilt] in [-1, 1] map to wheel duty +-50 %, steering +-25 deg,
// pan +-45 deg, tilt +-30 deg (non-finite -> 0, then clamped).
//
// Reflexes, applied after the mapping, in this order:
//   safe stop (no usable motor frame)        drive 0 (BrainClient's safe stop zeroes the rest)
//   battery below kLowBatteryV (6.4 V)       drive 0: 3.2 V per cell protects the 2S pack
//     or unreadable (non-finite)             (reflex kLowBattery)
//   ultrasonic below kObstacleStopM (2 cm)   no forward drive; reversing away stays allowed
//     or unreadable (non-finite, negative)   (reflex kObstacle)
//   cliff detected                           no forward drive; reversing away stays allowed
// Blocking only forward drive for obstacle and cliff lets the brain back out of the situation
// that triggered the reflex instead of freezing there. The reflexes fail safe: a battery or
// distance reading the robot cannot trust (SunFounder's ultrasonic returns -1/-2 on a lost echo
// or timeout) is treated like the dangerous reading it might hide.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "brain/v1/brain.pb.h"

namespace fieldbrain::picarx {

inline constexpr int kSensorCount = 12;
inline constexpr int kMotorCount = 4;
inline constexpr float kLowBatteryV = 6.4f;
inline constexpr float kObstacleStopM = 0.02f;

// Hardware ranges of the readings and commands.
inline constexpr float kUltrasonicMaxM = 4.0f;
inline constexpr float kGrayscaleMax = 4095.0f;
inline constexpr float kBatteryMinV = 6.0f, kBatteryMaxV = 8.4f;
inline constexpr float kSteeringRangeDeg = 30.0f;
inline constexpr float kPanRangeDeg = 90.0f;
inline constexpr float kTiltMinDeg = -35.0f, kTiltMaxDeg = 65.0f;
inline constexpr float kMotorSpeedMax = 100.0f;
inline constexpr float kDriveDutyMaxPct = 50.0f;
inline constexpr float kSteerCmdMaxDeg = 25.0f;
inline constexpr float kPanCmdMaxDeg = 45.0f;
inline constexpr float kTiltCmdMaxDeg = 30.0f;

// One reading of the robot's hardware, in hardware units.
struct RawReading {
  float ultrasonic_m = kUltrasonicMaxM;
  std::array<float, 3> grayscale = {0, 0, 0};  // left, middle, right ADC
  float battery_v = kBatteryMaxV;
  float steering_deg = 0;
  float pan_deg = 0;
  float tilt_deg = 0;
  float left_speed = 0;   // rear motors, -100..100
  float right_speed = 0;
  bool line_detected = false;
  bool cliff_detected = false;
};

struct Sensors {
  std::array<float, kSensorCount> values{};
  uint32_t invalid_mask = 0;  // bit i set: sensor i was non-finite or impossible, replaced
};

enum class Reflex { kNone, kSafeStop, kLowBattery, kObstacle, kCliff };
const char* ReflexName(Reflex reflex);

// What the hardware is told to do.
struct HardwareCommand {
  float drive_duty_pct = 0;  // -50..50, positive forward
  float steering_deg = 0;    // -25..25
  float pan_deg = 0;         // -45..45
  float tilt_deg = 0;        // -30..30
  Reflex reflex = Reflex::kNone;  // the reflex that changed the drive, if any
};

// Names in sensor/motor order, for RobotProfile.
std::span<const std::string_view> SensorNames();
std::span<const std::string_view> MotorNames();

// A complete profile: robot_type "picarx", 12 sensors, 4 motors, names, has_reward.
brain::v1::RobotProfile MakeProfile(std::string robot_id, float control_hz, bool has_reward);

Sensors NormalizeSensors(const RawReading& reading);

// Which reflexes act. A real car keeps them all; a simulated world may switch the obstacle reflex
// off so that pushing into a wall keeps costing, which is the world the brain must learn in
// (docs/brain.md: with the reflex a car can rest at a wall for free).
struct ReflexSet {
  bool obstacle = true;
};

// `motors` must hold kMotorCount values (missing ones count as 0). `reading` feeds the reflexes.
// Safe stop, low battery and cliff always act.
HardwareCommand ToHardware(std::span<const float> motors, const RawReading& reading,
                           bool safe_stop, ReflexSet reflexes = {});

}  // namespace fieldbrain::picarx
