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

// The parity tolerances after kCanaryCycles cycles: three times the one-cycle bounds of
// tests/gpu/cuda_engine_test.cc (fields 1e-7, outputs 1e-6). Both engines compute every element
// with the same functions and no FMA contraction, so only sum orders differ (a few 1e-9 in a
// field after a cycle); a wrong index, term or neighbour, or a card that computes otherwise,
// moves values by 1e-3 or more.
inline constexpr int kCanaryCycles = 3;
inline constexpr double kCanaryOutputTol = 3e-6;
inline constexpr double kCanaryFieldTol = 3e-7;

// Runs the canary on `engine` and on a CPU engine of the same shape. Its brains are made, cycled
// and released again: the engine serves the same slots afterwards, only its counters of batches
// and copies include the canary's three, and which buffer holds which slot's field has moved.
// An error of `engine` (a device error) is returned as it is.
absl::StatusOr<CanaryReport> RunCanary(Engine& engine);
bool CanaryPassed(const CanaryReport& report);
std::string DescribeCanary(const CanaryReport& report);

}  // namespace fieldbrain
