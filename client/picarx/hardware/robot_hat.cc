#include "client/picarx/hardware/robot_hat.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace fieldbrain::picarx {

absl::Status RobotHat::WriteRegister(uint8_t reg, uint16_t value) {
  const std::array<uint8_t, 3> bytes = {reg, uint8_t(value >> 8), uint8_t(value & 0xff)};
  return bus_.Write(bytes);
}

absl::Status RobotHat::SetPeriod(int timer, uint16_t period) {
  return WriteRegister(uint8_t(kRegPeriod + timer), period);
}

absl::Status RobotHat::SetPrescaler(int timer, uint16_t prescaler) {
  return WriteRegister(uint8_t(kRegPrescaler + timer), uint16_t(std::max<int>(prescaler, 1) - 1));
}

absl::Status RobotHat::SetPulse(int channel, uint16_t counts) {
  return WriteRegister(uint8_t(kRegPulse + channel), counts);
}

absl::StatusOr<uint16_t> RobotHat::ReadAdc(int channel) {
  if (channel < 0 || channel > 7) return absl::InvalidArgumentError(absl::StrCat("no ADC channel A", channel));
  if (absl::Status s = WriteRegister(uint8_t(kRegAdc | (7 - channel)), 0); !s.ok()) return s;
  std::array<uint8_t, 1> high{}, low{};
  if (absl::Status s = bus_.Read(high); !s.ok()) return s;
  if (absl::Status s = bus_.Read(low); !s.ok()) return s;
  const uint16_t raw = uint16_t(high[0] << 8 | low[0]);
  if (raw > kAdcMax) {
    return absl::DataLossError(absl::StrCat("ADC A", channel, " read ", raw, ", over 12 bits: the MCU is out of step"));
  }
  return raw;
}

uint16_t ServoPulseCounts(float angle_deg) {
  const double angle = std::isfinite(angle_deg) ? std::clamp<double>(angle_deg, -90.0, 90.0) : 0.0;
  const double us = 500.0 + (angle + 90.0) / 180.0 * 2000.0;
  return uint16_t(us / 20000.0 * kServoPeriod);
}

WheelDrive WheelDriveForSpeed(float speed, int direction_calibration) {
  const double s = std::isfinite(speed) ? std::clamp<double>(speed, -100.0, 100.0) : 0.0;
  WheelDrive w;
  const int direction = (s >= 0 ? 1 : -1) * (direction_calibration < 0 ? -1 : 1);
  w.reverse = direction < 0;
  const double magnitude = std::abs(s);
  const double percent = magnitude == 0.0 ? 0.0 : std::floor(magnitude / 2.0) + 50.0;
  w.pulse_counts = uint16_t(percent / 100.0 * kMotorPeriod);
  return w;
}

double AdcVolts(uint16_t raw) { return double(raw) * kAdcReferenceV / kAdcMax; }

double BatteryVolts(uint16_t raw_a4) { return AdcVolts(raw_a4) * kBatteryDivider; }

}  // namespace fieldbrain::picarx
