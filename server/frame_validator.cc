#include "server/frame_validator.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace fieldbrain::server {

FrameVerdict ValidateFrame(const brain::v1::SensorFrame& frame, int sensor_count) {
  using brain::v1::FrameStatus;
  if (frame.values_size() != sensor_count) {
    return {brain::v1::WRONG_SENSOR_COUNT,
            absl::StrCat("expected ", sensor_count, " sensor values, got ", frame.values_size())};
  }
  // Non-finite first over the whole frame: NaN also fails every range comparison.
  for (int i = 0; i < frame.values_size(); ++i) {
    if (!std::isfinite(frame.values(i))) {
      return {brain::v1::NON_FINITE, absl::StrCat("value ", i, " is ", frame.values(i))};
    }
  }
  if (frame.has_reward() && !std::isfinite(frame.reward())) {
    return {brain::v1::NON_FINITE, absl::StrCat("reward is ", frame.reward())};
  }
  for (int i = 0; i < frame.values_size(); ++i) {
    const float v = frame.values(i);
    if (v < -1.0f || v > 1.0f) {
      return {brain::v1::OUT_OF_RANGE, absl::StrCat("value ", i, " is ", v, ", outside [-1, 1]")};
    }
  }
  if (frame.has_reward() && (frame.reward() < -1.0f || frame.reward() > 1.0f)) {
    return {brain::v1::OUT_OF_RANGE,
            absl::StrCat("reward is ", frame.reward(), ", outside [-1, 1]")};
  }
  return {};
}

}  // namespace fieldbrain::server
