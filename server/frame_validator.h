// Per-frame checks of a SensorFrame against its robot's profile (DESIGN.md section 3). A frame
// that fails is answered in-stream with the status, the detail and zero motors; the stream stays up.
#pragma once

#include <string>

#include "brain/v1/brain.pb.h"

namespace fieldbrain::server {

struct FrameVerdict {
  brain::v1::FrameStatus status = brain::v1::OK;
  std::string detail;  // empty when OK; names the first offending value otherwise
  bool ok() const { return status == brain::v1::OK; }
};

// Checks, in this order: the value count equals `sensor_count` (WRONG_SENSOR_COUNT); every value
// and the reward are finite (NON_FINITE); every value and the reward lie in [-1, 1] (OUT_OF_RANGE).
FrameVerdict ValidateFrame(const brain::v1::SensorFrame& frame, int sensor_count);

}  // namespace fieldbrain::server
