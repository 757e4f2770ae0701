// Fakes of client/picarx/hardware/devices.h and robot_body.h for the brainstem's tests: every
// write is logged, reads are scripted, and any of them can be made to fail.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <span>
#include <vector>

#include "client/picarx/hardware/devices.h"
#include "client/picarx/hardware/robot_body.h"

namespace fieldbrain::testing {

class FakeI2cBus final : public picarx::I2cBus {
 public:
  absl::Status Write(std::span<const uint8_t> bytes) override {
    if (fail_) return absl::UnavailableError("i2c write to 0x14 on /dev/i2c-1 failed: Remote I/O error");
    writes.emplace_back(bytes.begin(), bytes.end());
    return absl::OkStatus();
  }
  absl::Status Read(std::span<uint8_t> bytes) override {
    if (fail_) return absl::UnavailableError("i2c read from 0x14 on /dev/i2c-1 failed: Remote I/O error");
    for (uint8_t& b : bytes) {
      b = reads.empty() ? 0 : reads.front();
      if (!reads.empty()) reads.pop_front();
    }
    return absl::OkStatus();
  }
  void set_fail(bool fail) { fail_ = fail; }
  // Queues an ADC answer: high byte, then low byte.
  void QueueAdc(uint16_t value) {
    reads.push_back(uint8_t(value >> 8));
    reads.push_back(uint8_t(value & 0xff));
  }

  std::vector<std::vector<uint8_t>> writes;
  std::deque<uint8_t> reads;

 private:
  bool fail_ = false;
};

// Time moves only when the code under test looks at it or sleeps: each Now() advances it by
// `tick`, so busy-waits terminate.
class FakeClock final : public picarx::Clock {
 public:
  explicit FakeClock(absl::Duration tick = absl::Microseconds(5)) : tick_(tick) {}
  absl::Time Now() override {
    now_ += tick_;
    return now_;
  }
  void SleepFor(absl::Duration d) override { now_ += d; }
  absl::Time peek() const { return now_; }

 private:
  absl::Time now_ = absl::UnixEpoch() + absl::Hours(1);
  const absl::Duration tick_;
};

class FakeGpioLine final : public picarx::GpioLine {
 public:
  // An output logs its levels; an input answers `level` (a function of nothing, so tests can tie it
  // to a clock).
  absl::Status Set(bool high) override {
    if (fail) return absl::UnavailableError("gpio gpiochip0:23: set failed: Device or resource busy");
    levels.push_back(high);
    if (on_set) on_set(high);
    return absl::OkStatus();
  }
  absl::StatusOr<bool> Get() override {
    if (fail) return absl::UnavailableError("gpio gpiochip0:22: read failed: Device or resource busy");
    return level ? level() : false;
  }
  std::vector<bool> levels;
  std::function<void(bool)> on_set;
  std::function<bool()> level;
  bool fail = false;
};

// A body whose readings are scripted and whose commands are logged.
class FakeBody final : public picarx::RobotBody {
 public:
  absl::StatusOr<picarx::RawReading> Read() override {
    if (fail_read) return absl::UnavailableError("i2c read failed: Remote I/O error");
    return reading;
  }
  absl::Status Apply(const picarx::HardwareCommand& command) override {
    if (fail_apply) return absl::UnavailableError("i2c write failed: Remote I/O error");
    applied.push_back(command);
    return absl::OkStatus();
  }
  std::optional<float> Reward() const override { return reward; }
  absl::Status Stop() override {
    ++stops;
    return absl::OkStatus();
  }
  picarx::RawReading reading;
  std::vector<picarx::HardwareCommand> applied;
  std::optional<float> reward;
  int stops = 0;
  bool fail_read = false, fail_apply = false;
};

}  // namespace fieldbrain::testing
