// A PiCar-X's calibration, read from the file SunFounder's tools write
// (/opt/picar-x/picar-x.conf, robot_hat's fileDB format: "key = value" lines, '#' comments), so a
// car calibrated with SunFounder's picarx library drives straight with ours.
//
//   picarx_dir_servo       steering servo offset, degrees, added after the +-30 deg clamp
//   picarx_cam_pan_servo   camera pan offset, degrees
//   picarx_cam_tilt_servo  camera tilt offset, degrees
//   picarx_dir_motor       [left, right]: 1 or -1, a motor wired the other way round
//   line_reference         [L, M, R]: grayscale ADC at or below which a channel sees the line
//   cliff_reference        [L, M, R]: grayscale ADC at or below which a channel sees no floor
//
// Spaces in values are ignored and a later line wins, as in fileDB; unknown keys are ignored (the
// file holds other robots' keys too). Unlike fileDB we also read the file's last line, which
// fileDB skips.
#pragma once

#include <array>
#include <string>

#include "absl/status/statusor.h"

namespace fieldbrain::picarx {

struct Calibration {
  float steering_offset_deg = 0;
  float pan_offset_deg = 0;
  float tilt_offset_deg = 0;
  std::array<int, 2> motor_direction = {1, 1};
  std::array<float, 3> line_reference = {1000, 1000, 1000};
  std::array<float, 3> cliff_reference = {500, 500, 500};
};

inline constexpr char kDefaultCalibrationPath[] = "/opt/picar-x/picar-x.conf";

// Parses a calibration file's text. A known key with a malformed value is refused, naming the
// line, the key and what was expected; keys that are absent keep their defaults.
absl::StatusOr<Calibration> ParseCalibration(const std::string& text);

// Reads and parses `path`. A missing file is NotFound (the caller may run uncalibrated); an
// unreadable or malformed one is refused with the reason.
absl::StatusOr<Calibration> ReadCalibration(const std::string& path);

}  // namespace fieldbrain::picarx
