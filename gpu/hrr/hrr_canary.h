// The start-up self-check of an HRR backend: one round trip (random vectors, bind, unbind, back to
// real values, cleanup) on the backend and on the CPU backend, the reference.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace fieldbrain::hrr {

struct HrrCanaryReport {
  double max_value_diff = 0.0;  // the unbound vector's real values, backend against CPU
  bool same_cleanup = false;    // both clean the unbound vector up to the same item
  double seconds = 0.0;
};

// The values of the round trip are ~1/sqrt(D) (0.03 at D = 1024); the backends agree to ~1e-7 on
// each step (tests/hrr/hrr_gpu_test.cc), and four steps keep that under 1e-6. 1e-5 leaves a margin
// of ten; a wrong bin, scale or transform moves values by 1e-3 or more.
inline constexpr double kHrrCanaryTol = 1e-5;

// Runs the round trip on a space of `backend` ("cuda") and on a CPU space. An error of the
// backend is returned as it is.
absl::StatusOr<HrrCanaryReport> RunHrrCanary(std::string_view backend);
bool HrrCanaryPassed(const HrrCanaryReport& report);
std::string DescribeHrrCanary(const HrrCanaryReport& report);

}  // namespace fieldbrain::hrr
