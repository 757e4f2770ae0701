// Checks of a Hello's RobotProfile; a bad profile ends the stream with INVALID_ARGUMENT.
#pragma once

#include "absl/status/status.h"
#include "brain/v1/brain.pb.h"

namespace fieldbrain::server {

inline constexpr int kMaxRobotIdBytes = 128;

// robot_id 1-128 bytes; sensor_count in [1, max_sensors]; motor_count in [1, max_motors];
// sensor_names and motor_names each empty or exactly one per sensor/motor; control_hz finite and
// not negative.
absl::Status ValidateProfile(const brain::v1::RobotProfile& profile,
                             const brain::v1::ServerLimits& limits);

}  // namespace fieldbrain::server
