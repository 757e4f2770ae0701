// RobotBody: what the brainstem drives, the real PiCar-X (picarx_hardware.h) or the simulated
// arena of --dry-run (client/picarx/brainstem/simulated_body.h).
#pragma once

#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/picarx/picarx_adapter.h"

namespace fieldbrain::picarx {

class RobotBody {
 public:
  virtual ~RobotBody() = default;
  // The sensors now, in hardware units. An error is a hardware failure.
  virtual absl::StatusOr<RawReading> Read() = 0;
  // Drives the motors and servos. An error is a hardware failure.
  virtual absl::Status Apply(const HardwareCommand& command) = 0;
  // The reward for the last command applied, in [-1, 1], as far as the body knows it (the real car
  // judges it by the next Read); none before the first.
  virtual std::optional<float> Reward() const = 0;
  // Wheels stopped and servos centred. Safe to call at any time and repeatedly; tries every
  // output even when one fails, and returns the first error.
  virtual absl::Status Stop() = 0;
};

}  // namespace fieldbrain::picarx
