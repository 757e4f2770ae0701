// The start-up self-check of an engine: a canary batch (fixed seeds, fixed inputs, a few cycles)
// on the engine and on the CPU engine, the reference, and the largest difference between them. A
// card whose kernels, driver or memory compute something else is caught before a robot is served.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "gpu/engine.h"

namespace fieldbrain {

struct CanaryReport {
  int robots = 0;
  int cycles = 0;
  double max_output_diff = 0.0;  // motors, predictions, confidence, over every cycle
  double max_field_diff = 0.0;   // the fields after the last cycle
  double seconds = 0.0;          // both engines, brains made and released
};

// The parity tolerances after kCanaryCycles cycles. One cycle leaves fields within 1e-5 of the
// CPU engine's (tests/gpu/cuda_engine_test.cc: rounding of tree sums and contraction, a few ulp
// through contractive maps); three cycles at most add up three of those, 3e-5, and the outputs
// average over the field, so they move less. 1e-4 keeps a margin of three; a wrong index, term or
// neighbour moves values by 1e-3 or more.
inline constexpr int kCanaryCycles = 3;
inline constexpr double kCanaryOutputTol = 1e-4;
inline constexpr double kCanaryFieldTol = 1e-4;

// Runs the canary on `engine` and on a CPU engine of the same shape. Its brains are made, cycled
// and released again: the engine serves the same slots afterwards, only its counters of batches
// and copies include the canary's three, and which buffer holds which slot's field has moved.
// An error of `engine` (a device error) is returned as it is.
absl::StatusOr<CanaryReport> RunCanary(Engine& engine);
bool CanaryPassed(const CanaryReport& report);
std::string DescribeCanary(const CanaryReport& report);

}  // namespace fieldbrain
