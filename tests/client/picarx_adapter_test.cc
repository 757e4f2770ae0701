// The PiCar-X mapping both ways with real numbers, clamping, invalid readings and reflexes.
#include "client/picarx/picarx_adapter.h"

#include <cmath>
#include <limits>
#include <vector>

#include "gtest/gtest.h"

namespace fieldbrain::picarx {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

RawReading Nominal() {
  RawReading r;
  r.ultrasonic_m = 1.0f;
  r.grayscale = {0.0f, 4095.0f, 1023.75f};
  r.battery_v = 7.8f;
  r.steering_deg = 15.0f;
  r.pan_deg = -45.0f;
  r.tilt_deg = 40.0f;
  r.left_speed = 50.0f;
  r.right_speed = -100.0f;
  r.line_detected = true;
  r.cliff_detected = false;
  return r;
}

TEST(PicarxAdapterTest, NormalizesEachSensorFromItsHardwareRange) {
  const Sensors s = NormalizeSensors(Nominal());
  EXPECT_EQ(s.invalid_mask, 0u);
  EXPECT_FLOAT_EQ(s.values[0], -0.5f);   // 1 m of 0..4 m
  EXPECT_FLOAT_EQ(s.values[1], -1.0f);   // ADC 0
  EXPECT_FLOAT_EQ(s.values[2], 1.0f);    // ADC 4095
  EXPECT_FLOAT_EQ(s.values[3], -0.5f);   // ADC 1023.75 = a quarter
  EXPECT_NEAR(s.values[4], 0.5f, 1e-6);  // 7.8 V of 6.0..8.4 V
  EXPECT_FLOAT_EQ(s.values[5], 0.5f);    // 15 of +-30 deg
  EXPECT_FLOAT_EQ(s.values[6], -0.5f);   // -45 of +-90 deg
  EXPECT_FLOAT_EQ(s.values[7], 0.5f);    // 40 deg of -35..65: (40+35)/100*2-1
  EXPECT_FLOAT_EQ(s.values[8], 0.5f);
  EXPECT_FLOAT_EQ(s.values[9], -1.0f);
  EXPECT_FLOAT_EQ(s.values[10], 1.0f);   // line
  EXPECT_FLOAT_EQ(s.values[11], -1.0f);  // no cliff
}

TEST(PicarxAdapterTest, ClampsReadingsOutsideTheirRanges) {
  RawReading r = Nominal();
  r.ultrasonic_m = 9.0f;     // beyond the 4 m range
  r.grayscale[0] = 5000.0f;
  r.battery_v = 5.0f;
  r.tilt_deg = -80.0f;
  r.left_speed = 250.0f;
  const Sensors s = NormalizeSensors(r);
  EXPECT_EQ(s.invalid_mask, 0u);
  EXPECT_FLOAT_EQ(s.values[0], 1.0f);
  EXPECT_FLOAT_EQ(s.values[1], 1.0f);
  EXPECT_FLOAT_EQ(s.values[4], -1.0f);
  EXPECT_FLOAT_EQ(s.values[7], -1.0f);
  EXPECT_FLOAT_EQ(s.values[8], 1.0f);
  for (float v : s.values) {
    EXPECT_GE(v, -1.0f);
    EXPECT_LE(v, 1.0f);
  }
}

TEST(PicarxAdapterTest, InvalidReadingsGetSafeValuesAndFlags) {
  RawReading r = Nominal();
  r.ultrasonic_m = -1.0f;  // lost echo
  r.grayscale[1] = kNaN;
  r.battery_v = std::numeric_limits<float>::infinity();
  const Sensors s = NormalizeSensors(r);
  EXPECT_EQ(s.invalid_mask, (1u << 0) | (1u << 2) | (1u << 4));
  EXPECT_FLOAT_EQ(s.values[0], -1.0f);  // treated as near: cautious
  EXPECT_FLOAT_EQ(s.values[2], 0.0f);
  EXPECT_FLOAT_EQ(s.values[4], 0.0f);
  EXPECT_FLOAT_EQ(s.values[1], -1.0f);  // neighbours untouched
  for (float v : s.values) EXPECT_TRUE(std::isfinite(v));
}

TEST(PicarxAdapterTest, MapsMotorsToHardwareCommands) {
  const std::vector<float> motors = {0.5f, -1.0f, 0.2f, -0.5f};
  const HardwareCommand c = ToHardware(motors, Nominal(), false);
  EXPECT_FLOAT_EQ(c.drive_duty_pct, 25.0f);
  EXPECT_FLOAT_EQ(c.steering_deg, -25.0f);
  EXPECT_FLOAT_EQ(c.pan_deg, 9.0f);
  EXPECT_FLOAT_EQ(c.tilt_deg, -15.0f);
  EXPECT_EQ(c.reflex, Reflex::kNone);
}

TEST(PicarxAdapterTest, ClampsMotorsAndZeroesNonFiniteOnes) {
  const std::vector<float> motors = {3.0f, kNaN, -7.0f};  // tilt missing
  const HardwareCommand c = ToHardware(motors, Nominal(), false);
  EXPECT_FLOAT_EQ(c.drive_duty_pct, 50.0f);
  EXPECT_FLOAT_EQ(c.steering_deg, 0.0f);
  EXPECT_FLOAT_EQ(c.pan_deg, -45.0f);
  EXPECT_FLOAT_EQ(c.tilt_deg, 0.0f);
}

TEST(PicarxAdapterTest, SafeStopZeroesTheDrive) {
  const std::vector<float> motors = {0.8f, 0.4f, 0.0f, 0.0f};
  const HardwareCommand c = ToHardware(motors, Nominal(), true);
  EXPECT_FLOAT_EQ(c.drive_duty_pct, 0.0f);
  EXPECT_EQ(c.reflex, Reflex::kSafeStop);
}

TEST(PicarxAdapterTest, LowBatteryStopsDriveBothWays) {
  RawReading r = Nominal();
  r.battery_v = 6.39f;
  EXPECT_FLOAT_EQ(ToHardware(std::vector<float>{0.8f, 0, 0, 0}, r, false).drive_duty_pct, 0.0f);
  const HardwareCommand back = ToHardware(std::vector<float>{-0.8f, 0.4f, 0, 0}, r, false);
  EXPECT_FLOAT_EQ(back.drive_duty_pct, 0.0f);
  EXPECT_FLOAT_EQ(back.steering_deg, 10.0f);  // only the drive is cut
  EXPECT_EQ(back.reflex, Reflex::kLowBattery);
  r.battery_v = 6.41f;
  EXPECT_FLOAT_EQ(ToHardware(std::vector<float>{0.8f, 0, 0, 0}, r, false).drive_duty_pct, 40.0f);
}

TEST(PicarxAdapterTest, ObstacleUnderTwoCentimetresBlocksForwardOnly) {
  RawReading r = Nominal();
  r.ultrasonic_m = 0.015f;
  const HardwareCommand fwd = ToHardware(std::vector<float>{0.6f, 0, 0, 0}, r, false);
  EXPECT_FLOAT_EQ(fwd.drive_duty_pct, 0.0f);
  EXPECT_EQ(fwd.reflex, Reflex::kObstacle);
  const HardwareCommand rev = ToHardware(std::vector<float>{-0.6f, 0, 0, 0}, r, false);
  EXPECT_FLOAT_EQ(rev.drive_duty_pct, -30.0f);
  EXPECT_EQ(rev.reflex, Reflex::kNone);
  r.ultrasonic_m = 0.025f;
  EXPECT_FLOAT_EQ(ToHardware(std::vector<float>{0.6f, 0, 0, 0}, r, false).drive_duty_pct, 30.0f);
}

TEST(PicarxAdapterTest, ObstacleReflexCanBeSwitchedOffButTheOthersCannot) {
  RawReading r = Nominal();
  r.ultrasonic_m = 0.015f;
  const ReflexSet no_obstacle{.obstacle = false};
  const HardwareCommand fwd = ToHardware(std::vector<float>{0.6f, 0, 0, 0}, r, false, no_obstacle);
  EXPECT_FLOAT_EQ(fwd.drive_duty_pct, 30.0f);
  EXPECT_EQ(fwd.reflex, Reflex::kNone);
  r.cliff_detected = true;
  EXPECT_EQ(ToHardware(std::vector<float>{0.6f, 0, 0, 0}, r, false, no_obstacle).reflex, Reflex::kCliff);
  r.cliff_detected = false;
  r.battery_v = 6.0f;
  EXPECT_EQ(ToHardware(std::vector<float>{0.6f, 0, 0, 0}, r, false, no_obstacle).reflex, Reflex::kLowBattery);
  EXPECT_EQ(ToHardware(std::vector<float>{0.6f, 0, 0, 0}, r, true, no_obstacle).reflex, Reflex::kSafeStop);
}

// The sensor cannot be trusted, so the robot assumes the worst: an unreadable distance (NaN, or
// SunFounder's -1/-2 error codes) is an obstacle and blocks forward drive; reversing stays allowed.
TEST(PicarxAdapterTest, InvalidUltrasonicBlocksForwardOnly) {
  for (float bad : {kNaN, -1.0f, -2.0f, std::numeric_limits<float>::infinity()}) {
    RawReading r = Nominal();
    r.ultrasonic_m = bad;
    const HardwareCommand fwd = ToHardware(std::vector<float>{0.6f, 0, 0, 0}, r, false);
    EXPECT_FLOAT_EQ(fwd.drive_duty_pct, 0.0f) << "ultrasonic " << bad;
    EXPECT_EQ(fwd.reflex, Reflex::kObstacle) << "ultrasonic " << bad;
    const HardwareCommand rev = ToHardware(std::vector<float>{-0.6f, 0, 0, 0}, r, false);
    EXPECT_FLOAT_EQ(rev.drive_duty_pct, -30.0f) << "ultrasonic " << bad;
    EXPECT_EQ(rev.reflex, Reflex::kNone) << "ultrasonic " << bad;
  }
}

// An unreadable battery may be a flat one: the drive stops both ways, as under 6.4 V.
TEST(PicarxAdapterTest, InvalidBatteryStopsDriveBothWays) {
  for (float bad : {kNaN, std::numeric_limits<float>::infinity()}) {
    RawReading r = Nominal();
    r.battery_v = bad;
    const HardwareCommand fwd = ToHardware(std::vector<float>{0.8f, 0, 0, 0}, r, false);
    EXPECT_FLOAT_EQ(fwd.drive_duty_pct, 0.0f) << "battery " << bad;
    EXPECT_EQ(fwd.reflex, Reflex::kLowBattery) << "battery " << bad;
    const HardwareCommand back = ToHardware(std::vector<float>{-0.8f, 0.4f, 0, 0}, r, false);
    EXPECT_FLOAT_EQ(back.drive_duty_pct, 0.0f) << "battery " << bad;
    EXPECT_FLOAT_EQ(back.steering_deg, 10.0f) << "battery " << bad;
    EXPECT_EQ(back.reflex, Reflex::kLowBattery) << "battery " << bad;
  }
}

TEST(PicarxAdapterTest, CliffBlocksForwardOnly) {
  RawReading r = Nominal();
  r.cliff_detected = true;
  const HardwareCommand fwd = ToHardware(std::vector<float>{1.0f, 0, 0, 0}, r, false);
  EXPECT_FLOAT_EQ(fwd.drive_duty_pct, 0.0f);
  EXPECT_EQ(fwd.reflex, Reflex::kCliff);
  EXPECT_FLOAT_EQ(ToHardware(std::vector<float>{-1.0f, 0, 0, 0}, r, false).drive_duty_pct,
                  -50.0f);
}

TEST(PicarxAdapterTest, ProfileNamesEverySensorAndMotor) {
  const brain::v1::RobotProfile p = MakeProfile("car-7", 50.0f, true);
  EXPECT_EQ(p.robot_id(), "car-7");
  EXPECT_EQ(p.robot_type(), "picarx");
  EXPECT_EQ(p.sensor_count(), 12u);
  EXPECT_EQ(p.motor_count(), 4u);
  ASSERT_EQ(p.sensor_names_size(), 12);
  ASSERT_EQ(p.motor_names_size(), 4);
  EXPECT_EQ(p.sensor_names(0), "ultrasonic");
  EXPECT_EQ(p.sensor_names(11), "cliff_detected");
  EXPECT_EQ(p.motor_names(0), "drive");
  EXPECT_EQ(p.motor_names(3), "tilt");
  EXPECT_TRUE(p.has_reward());
  EXPECT_FLOAT_EQ(p.control_hz(), 50.0f);
}

}  // namespace
}  // namespace fieldbrain::picarx
