// Round trips as the benchmarks print them: a phase's frame count, p50, p99 and max, in
// microseconds, on one line (the caller ends it, after whatever it adds).
#pragma once

#include <algorithm>
#include <cstdio>
#include <vector>

namespace fieldbrain::bench {

// The q-quantile of `sorted` (ascending, not empty).
inline double Quantile(const std::vector<double>& sorted, double q) {
  return sorted[std::min(sorted.size() - 1, size_t(q * double(sorted.size())))];
}

// Sorts `us` and prints "<name> frames N  p50 ...  p99 ...  max ..." without the newline.
inline void PrintLatencies(const char* name, int name_width, std::vector<double>& us) {
  if (us.empty()) {
    std::printf("%-*s no frames", name_width, name);
    return;
  }
  std::sort(us.begin(), us.end());
  std::printf("%-*s frames %6zu  p50 %8.0f us  p99 %8.0f us  max %8.0f us", name_width, name, us.size(),
              Quantile(us, 0.50), Quantile(us, 0.99), us.back());
}

}  // namespace fieldbrain::bench
