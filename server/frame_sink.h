// Where the answer to a submitted frame goes: the stream that sent it.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <string_view>

#include "brain/v1/brain.pb.h"

namespace fieldbrain::server {

using Clock = std::chrono::steady_clock;

// One frame's outcome. The views are valid only during FrameSink::Deliver.
struct FrameAnswer {
  uint64_t seq = 0;
  brain::v1::FrameStatus status = brain::v1::FRAME_STATUS_UNSPECIFIED;
  std::string_view detail;         // empty when OK
  std::span<const float> motors;   // the engine row (kMaxMotors values) when OK, else empty
  float confidence = 0.0f;
  float prediction_error = 0.0f;
  uint64_t cycle = 0;              // the brain's cycle count after this frame
  Clock::time_point arrival;       // when the frame arrived (for server_time_us and metrics)
};

class FrameSink {
 public:
  // Called exactly once per submitted frame, from the engine thread or from the thread whose
  // newer frame superseded it. Must not call back into the scheduler.
  virtual void Deliver(const FrameAnswer& answer) = 0;

 protected:
  ~FrameSink() = default;
};

}  // namespace fieldbrain::server
