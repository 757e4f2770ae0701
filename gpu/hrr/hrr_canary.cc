#include "gpu/hrr/hrr_canary.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <memory>
#include <vector>

#include "absl/strings/str_format.h"
#include "gpu/hrr/hrr_space.h"

namespace fieldbrain::hrr {
namespace {

constexpr int kDim = 1024;
constexpr int kItems = 4;  // a, b and two distractors; slot 4 holds a (x) b, slot 5 the unbound vector
constexpr uint64_t kSeed = 0xCA2A23;

struct RoundTrip {
  std::vector<float> values;
  int32_t cleaned_up = -1;
};

absl::StatusOr<RoundTrip> Run(HrrSpace& s) {
  const std::array<int32_t, kItems> items = {0, 1, 2, 3};
  const std::array<uint64_t, kItems> ids = {11, 12, 13, 14};
  const std::array<int32_t, 1> a = {0}, b = {1}, bound = {4}, unbound = {5};
  RoundTrip out;
  out.values.resize(kDim);
  std::array<float, 1> cosine{};
  if (absl::Status st = s.Random(items, VectorKind::kGaussian, kSeed, ids); !st.ok()) return st;
  if (absl::Status st = s.Bind(bound, a, b); !st.ok()) return st;
  if (absl::Status st = s.Unbind(unbound, bound, a); !st.ok()) return st;
  if (absl::Status st = s.Get(unbound, out.values); !st.ok()) return st;
  if (absl::Status st = s.Cleanup(unbound, 0, kItems, 1, std::span<int32_t>(&out.cleaned_up, 1), cosine); !st.ok())
    return st;
  return out;
}

}  // namespace

absl::StatusOr<HrrCanaryReport> RunHrrCanary(std::string_view backend) {
  const auto start = std::chrono::steady_clock::now();
  const HrrConfig config{kDim, kItems + 2, kItems};
  absl::StatusOr<std::unique_ptr<HrrSpace>> tested = MakeHrrSpace(backend, config, HrrStorage{});
  if (!tested.ok()) return tested.status();
  absl::StatusOr<std::unique_ptr<HrrSpace>> cpu = MakeHrrSpace("cpu", config, HrrStorage{});
  if (!cpu.ok()) return cpu.status();
  absl::StatusOr<RoundTrip> x = Run(**tested);
  if (!x.ok()) return x.status();
  absl::StatusOr<RoundTrip> y = Run(**cpu);
  if (!y.ok()) return y.status();
  HrrCanaryReport report;
  for (int i = 0; i < kDim; ++i) {
    const double d = std::fabs(double(x->values[size_t(i)]) - double(y->values[size_t(i)]));
    report.max_value_diff = std::isnan(d) ? INFINITY : std::max(report.max_value_diff, d);
  }
  report.same_cleanup = x->cleaned_up == y->cleaned_up && y->cleaned_up == 1;  // unbind(a (x) b, a) ~ b
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

bool HrrCanaryPassed(const HrrCanaryReport& r) { return r.max_value_diff <= kHrrCanaryTol && r.same_cleanup; }

std::string DescribeHrrCanary(const HrrCanaryReport& r) {
  return absl::StrFormat(
      "an HRR round trip against the CPU backend: values differ by at most %.3g (tolerance %.0e), cleanup %s, "
      "%.3f s",
      r.max_value_diff, kHrrCanaryTol, r.same_cleanup ? "agrees" : "DISAGREES", r.seconds);
}

}  // namespace fieldbrain::hrr
