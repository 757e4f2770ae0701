// The SunFounder Robot HAT's microcontroller (I2C address 0x14 on bus 1): PWM outputs P0-P13 and
// the ADC inputs A0-A4, spoken in its register protocol. Facts from SunFounder's robot-hat
// library (v2.0: robot_hat/pwm.py, adc.py, i2c.py) and its onboard-MCU documentation; cited in
// client/picarx/README.md.
//
// Every transfer is 3 bytes written: a register and a 16-bit value, high byte first (the firmware
// always reads 3 bytes; a shorter write can leave it out of step). An ADC read writes the
// channel's register with value 0, then reads the result as two single bytes, high then low.
#pragma once

#include <cstdint>

#include "client/picarx/hardware/devices.h"

namespace fieldbrain::picarx {

inline constexpr int kRobotHatAddress = 0x14;
inline constexpr double kRobotHatClockHz = 72e6;
inline constexpr uint16_t kAdcMax = 4095;      // 12 bits over 0..3.3 V
inline constexpr double kAdcReferenceV = 3.3;
inline constexpr double kBatteryDivider = 3.0;  // A4 sees the battery through 20k/10k

// Register addresses.
inline constexpr uint8_t kRegPulse = 0x20;     // + channel: pulse width in timer counts
inline constexpr uint8_t kRegPrescaler = 0x40; // + timer (0-3): prescaler - 1
inline constexpr uint8_t kRegPeriod = 0x44;    // + timer (0-3): auto-reload (period) in counts
inline constexpr uint8_t kRegAdc = 0x10;       // | (7 - channel)

// Channels 0-15 share four timers, four channels each.
constexpr int TimerOfChannel(int channel) { return channel / 4; }

class RobotHat {
 public:
  explicit RobotHat(I2cBus& bus) : bus_(bus) {}

  absl::Status WriteRegister(uint8_t reg, uint16_t value);
  // A timer's period (auto-reload, in counts) and prescaler (the divider, >= 1; the register
  // holds prescaler - 1). Frequency = 72 MHz / prescaler / period.
  absl::Status SetPeriod(int timer, uint16_t period);
  absl::Status SetPrescaler(int timer, uint16_t prescaler);
  // A channel's pulse width in counts of its timer (0..period).
  absl::Status SetPulse(int channel, uint16_t counts);
  // One ADC conversion, 0..kAdcMax.
  absl::StatusOr<uint16_t> ReadAdc(int channel);

 private:
  I2cBus& bus_;
};

// Servos: 50 Hz on a period of 4095 counts (prescaler 352 from 72 MHz), pulses from 500 us at
// -90 deg to 2500 us at +90 deg (robot_hat/servo.py).
inline constexpr uint16_t kServoPeriod = 4095;
inline constexpr uint16_t kServoPrescaler = 352;  // round(72e6 / 50 / 4095)
uint16_t ServoPulseCounts(float angle_deg);      // clamped to +-90 deg

// Wheel motors: PWM period 4095 counts, prescaler 10 (about 1.76 kHz; picarx/picarx.py).
inline constexpr uint16_t kMotorPeriod = 4095;
inline constexpr uint16_t kMotorPrescaler = 10;
// SunFounder's speed scale, -100..100, to pulse counts and direction as picarx.py does it: a
// moving wheel gets 50 % + |speed| / 2 (the motors stall below half duty), a stopped one 0.
struct WheelDrive {
  uint16_t pulse_counts = 0;
  bool reverse = false;  // the direction line's level: high = reverse
};
WheelDrive WheelDriveForSpeed(float speed, int direction_calibration);

// Volts from an ADC reading, and the battery's volts from A4's reading.
double AdcVolts(uint16_t raw);
double BatteryVolts(uint16_t raw_a4);

}  // namespace fieldbrain::picarx
