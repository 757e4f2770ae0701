// The devices of devices.h on Linux: I2C through /dev/i2c-N (linux/i2c-dev.h) and GPIO lines
// through libgpiod (v1 API, Debian's libgpiod-dev). Each owns its file descriptor or line and
// releases it on destruction.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "client/picarx/hardware/devices.h"

struct gpiod_chip;
struct gpiod_line;

namespace fieldbrain::picarx {

class LinuxI2cBus final : public I2cBus {
 public:
  // Opens `device` (e.g. "/dev/i2c-1") and binds it to 7-bit `address`. The error names the
  // device and says what to check (the I2C interface enabled, the user in group i2c).
  static absl::StatusOr<std::unique_ptr<LinuxI2cBus>> Open(const std::string& device, int address);
  ~LinuxI2cBus() override;
  absl::Status Write(std::span<const uint8_t> bytes) override;
  absl::Status Read(std::span<uint8_t> bytes) override;

 private:
  LinuxI2cBus(std::string device, int address, int fd) : device_(std::move(device)), address_(address), fd_(fd) {}
  const std::string device_;
  const int address_;
  const int fd_;
};

// A GPIO chip ("gpiochip0"); lines requested from it stay valid while the chip lives.
class GpioChip {
 public:
  static absl::StatusOr<std::unique_ptr<GpioChip>> Open(const std::string& name);
  ~GpioChip();
  GpioChip(const GpioChip&) = delete;
  GpioChip& operator=(const GpioChip&) = delete;

  // `offset` is the line's number on the chip (the BCM GPIO number on a Raspberry Pi).
  absl::StatusOr<std::unique_ptr<GpioLine>> RequestOutput(unsigned offset, bool initial_high);
  absl::StatusOr<std::unique_ptr<GpioLine>> RequestInput(unsigned offset);  // with a pull-down

 private:
  GpioChip(std::string name, gpiod_chip* chip) : name_(std::move(name)), chip_(chip) {}
  const std::string name_;
  gpiod_chip* const chip_;
};

// The steady clock: a Pi has no real-time clock, and NTP stepping the wall clock must not stretch
// a tick's sleep or an echo's timing.
class SystemClock final : public Clock {
 public:
  absl::Time Now() override {
    return absl::UnixEpoch() + absl::FromChrono(std::chrono::steady_clock::now().time_since_epoch());
  }
  void SleepFor(absl::Duration d) override { absl::SleepFor(d); }
};

}  // namespace fieldbrain::picarx
