// Slot and id lists for HRR tests and benchmarks: Range(b, n) = {b, b+1, ..., b+n-1}.
#pragma once

#include <cstdint>
#include <numeric>
#include <vector>

namespace fieldbrain::hrr::testing {

inline std::vector<int32_t> Range(int begin, int n) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), begin);
  return v;
}

inline std::vector<uint64_t> Ids(int begin, int n) {
  std::vector<uint64_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), uint64_t(begin));
  return v;
}

}  // namespace fieldbrain::hrr::testing
