// The three things the PiCar-X brainstem needs from the machine, each behind a small interface so
// that tests drive the brainstem with fakes (tests/client/picarx_fakes.h) and the robot with the
// Linux kernel's own interfaces (linux_devices.h).
#pragma once

#include <cstdint>
#include <span>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace fieldbrain::picarx {

// One I2C device at a fixed address: plain reads and writes, no register protocol.
class I2cBus {
 public:
  virtual ~I2cBus() = default;
  virtual absl::Status Write(std::span<const uint8_t> bytes) = 0;
  virtual absl::Status Read(std::span<uint8_t> bytes) = 0;
};

// One GPIO line, requested as an output or an input when it was opened.
class GpioLine {
 public:
  virtual ~GpioLine() = default;
  virtual absl::Status Set(bool high) = 0;   // outputs only
  virtual absl::StatusOr<bool> Get() = 0;    // inputs only
};

// Monotonic time (never stepped by NTP) and sleeping. The ultrasonic ranger times its echo with
// it, and the brainstem its ticks.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual absl::Time Now() = 0;
  virtual void SleepFor(absl::Duration d) = 0;
};

}  // namespace fieldbrain::picarx
