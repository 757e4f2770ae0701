// Arbitrary bytes as SunFounder's calibration file: refused with a reason or parsed into values
// the car can use (finite offsets within 45 degrees, motor directions of +-1).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "client/picarx/hardware/calibration.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<fieldbrain::picarx::Calibration> c = fieldbrain::picarx::ParseCalibration(text);
  if (!c.ok()) return 0;
  for (float offset : {c->steering_offset_deg, c->pan_offset_deg, c->tilt_offset_deg}) {
    if (!std::isfinite(offset) || std::abs(offset) > 45.0f) __builtin_trap();
  }
  for (int d : c->motor_direction) {
    if (d != 1 && d != -1) __builtin_trap();
  }
  for (float r : c->line_reference) {
    if (!(r >= 0 && r <= 4095)) __builtin_trap();
  }
  return 0;
}
