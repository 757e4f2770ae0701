#include "server/profile_validator.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace fieldbrain::server {

absl::Status ValidateProfile(const brain::v1::RobotProfile& p,
                             const brain::v1::ServerLimits& limits) {
  if (p.robot_id().empty() || p.robot_id().size() > kMaxRobotIdBytes) {
    return absl::InvalidArgumentError(absl::StrCat("robot_id must be 1-", kMaxRobotIdBytes,
                                                   " bytes, got ", p.robot_id().size()));
  }
  if (p.sensor_count() < 1 || p.sensor_count() > limits.max_sensors()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sensor_count must be in [1, ", limits.max_sensors(), "], got ", p.sensor_count()));
  }
  if (p.motor_count() < 1 || p.motor_count() > limits.max_motors()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "motor_count must be in [1, ", limits.max_motors(), "], got ", p.motor_count()));
  }
  if (p.sensor_names_size() != 0 &&
      p.sensor_names_size() != static_cast<int>(p.sensor_count())) {
    return absl::InvalidArgumentError(absl::StrCat("sensor_names has ", p.sensor_names_size(),
                                                   " names for ", p.sensor_count(), " sensors"));
  }
  if (p.motor_names_size() != 0 && p.motor_names_size() != static_cast<int>(p.motor_count())) {
    return absl::InvalidArgumentError(absl::StrCat("motor_names has ", p.motor_names_size(),
                                                   " names for ", p.motor_count(), " motors"));
  }
  if (!std::isfinite(p.control_hz()) || p.control_hz() < 0.0f) {
    return absl::InvalidArgumentError(
        absl::StrCat("control_hz must be finite and >= 0, got ", p.control_hz()));
  }
  return absl::OkStatus();
}

}  // namespace fieldbrain::server
